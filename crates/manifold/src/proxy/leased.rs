//! A worker's response body on its way to the client: it holds the lease (the worker's slot)
//! until the body ends, and applies `--request-timeout` to the body as *worker silence*.
//!
//! Why silence and not the whole response: gunicorn's `timeout` is worker silence too, and a
//! limit on the whole response would cut every large download and every Server-Sent Events or
//! streaming response at the limit, though the worker is doing its job. A worker that sends
//! its head and then nothing for `--request-timeout` is stuck the same way as one that sends no
//! head: the response is cut (hyper aborts it, so the client never takes a short body for a
//! whole one), the worker is replaced and the slot freed. Only time spent waiting on the worker
//! counts: while a slow client is not reading, the clock does not run. An SSE stream must send
//! something (a `:` comment line) more often than the limit; long-polling sends its head only
//! at the end, so the head limit covers it.
//!
//! A client that leaves mid-body does not free the slot of a worker still busy on it: the rest
//! of the body is read and thrown away in a task that keeps the lease until the body ends (slot
//! and connection freed), the worker falls silent for the limit (replaced), or the body is still
//! flowing after the limit (an endless stream: the connection is closed, which tells the worker
//! its client is gone, and the slot is freed).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::{Body, Frame, Incoming, SizeHint};
use tokio::time::{Instant, Sleep};

use super::BodyError;
use crate::pool::{Lease, Pool, Replace};

/// The error that cuts a response whose worker fell silent mid-body.
#[derive(Debug, thiserror::Error)]
#[error("worker {worker} sent nothing of its response body for {} (--request-timeout); it is being replaced", humantime::format_duration(*.limit))]
pub struct Stalled {
    /// Worker id.
    pub worker: u64,
    /// The limit that passed.
    pub limit: Duration,
}

/// A worker's response body that frees the worker when it ends, and is cut when the worker
/// falls silent for `stall` (zero: never).
pub(super) struct Leased {
    /// Always there until dropped (then perhaps handed to [`finish_unread`]).
    inner: Option<Incoming>,
    lease: Option<Lease>,
    pool: Arc<Pool>,
    stall: Duration,
    /// Runs only while waiting on the worker; made on the first wait.
    timer: Option<Pin<Box<Sleep>>>,
    /// The last poll returned Pending: the silence timer is running.
    waiting: bool,
}

impl Leased {
    /// Wraps the worker's body `inner`, holding `lease` until it ends.
    pub(super) fn new(inner: Incoming, lease: Lease, pool: Arc<Pool>, stall: Duration) -> Leased {
        Leased {
            inner: Some(inner),
            lease: Some(lease),
            pool,
            stall,
            timer: None,
            waiting: false,
        }
    }

    /// Whether the worker has now been silent for `stall` while we waited (arms the timer when
    /// a wait begins).
    fn silent_too_long(&mut self, cx: &mut Context<'_>) -> bool {
        if self.stall.is_zero() {
            return false;
        }
        if !self.waiting {
            self.waiting = true;
            let deadline = Instant::now() + self.stall;
            match &mut self.timer {
                Some(t) => t.as_mut().reset(deadline),
                None => self.timer = Some(Box::pin(tokio::time::sleep_until(deadline))),
            }
        }
        let timer = self.timer.as_mut().expect("armed while waiting");
        timer.as_mut().poll(cx).is_ready()
    }

    /// Replaces the silent worker and frees its slot; the error that aborts the response.
    fn cut(&mut self) -> BodyError {
        let lease = self.lease.take().expect("cut once, while leased");
        let worker = lease.worker;
        tracing::warn!(
            worker,
            "worker fell silent mid-body (--request-timeout); response cut"
        );
        self.pool.replace(worker, Replace::BodyTimeout);
        drop(lease);
        Box::new(Stalled {
            worker,
            limit: self.stall,
        })
    }
}

impl Body for Leased {
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        let this = &mut *self;
        let (Some(inner), Some(_)) = (this.inner.as_mut(), &this.lease) else {
            // Ended or cut already.
            return Poll::Ready(None);
        };
        match Pin::new(inner).poll_frame(cx) {
            Poll::Ready(None) => {
                this.lease = None;
                Poll::Ready(None)
            }
            Poll::Ready(Some(Ok(frame))) => {
                this.waiting = false;
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(e))) => {
                // The worker's connection failed mid-body: its slot is freed with it.
                this.lease = None;
                Poll::Ready(Some(Err(Box::new(e) as BodyError)))
            }
            Poll::Pending if this.silent_too_long(cx) => Poll::Ready(Some(Err(this.cut()))),
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.lease.is_none() || self.inner.as_ref().is_none_or(Body::is_end_stream)
    }

    fn size_hint(&self) -> SizeHint {
        self.inner
            .as_ref()
            .map_or_else(SizeHint::default, Body::size_hint)
    }
}

impl Drop for Leased {
    fn drop(&mut self) {
        // The client left mid-body: the worker is still busy on it (see the module docs).
        let Some(lease) = self.lease.take() else {
            return;
        };
        let Some(inner) = self.inner.take().filter(|b| !b.is_end_stream()) else {
            return;
        };
        if self.stall.is_zero() {
            return;
        }
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            return;
        };
        rt.spawn(finish_unread(inner, lease, self.pool.clone(), self.stall));
    }
}

/// Reads and discards the rest of a body whose client left, holding the lease until the body
/// ends, the worker is silent for `stall` (replaced), or `stall` has passed in all (closed).
async fn finish_unread(mut body: Incoming, lease: Lease, pool: Arc<Pool>, stall: Duration) {
    let limit = Instant::now() + stall;
    loop {
        match tokio::time::timeout(stall, body.frame()).await {
            Ok(Some(Ok(_))) if Instant::now() < limit => {}
            Ok(Some(Ok(_))) => {
                tracing::info!(
                    worker = lease.worker,
                    "client left a response still streaming after --request-timeout; closed"
                );
                return;
            }
            // Ended (the slot and connection are freed with the lease) or failed.
            Ok(_) => return,
            Err(_) => {
                tracing::warn!(
                    worker = lease.worker,
                    "client left and the worker fell silent mid-body (--request-timeout)"
                );
                pool.replace(lease.worker, Replace::BodyTimeout);
                return;
            }
        }
    }
}
