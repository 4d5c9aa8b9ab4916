//! A request body read whole from the client before any worker is leased, so a client that
//! uploads slowly holds a connection and a buffer, never a worker (gunicorn's deploy guide: with
//! sync workers the proxy must buffer slow clients; for R every worker is a sync worker).
//!
//! Limits: more than `--max-body` bytes (by Content-Length at once, or as they arrive) is a 413;
//! a body not whole within `--body-timeout` is a 408, counted from the end of the headers; that
//! clock is the client's own and never `--request-timeout`'s, which starts when the worker has
//! the request, so no worker is ever replaced for a client's slowness.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::{Body, Frame, Incoming, SizeHint};
use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::{Response, StatusCode};

use super::spool::{Budget, Spool};
use super::{plain, ProxyBody};
use crate::upstream::UpBody;

/// The settings a request body is read with.
#[derive(Clone, Copy)]
pub(super) struct BodyLimits {
    /// `--max-body`.
    pub max: u64,
    /// `--body-timeout` (zero: none).
    pub timeout: Duration,
    /// `--buffer-size`: bytes of one body kept in memory.
    pub memory: u64,
}

/// Reads the whole body of a request; its body for the worker, or manifold's own answer (413,
/// 408, 400). `headers` get the body's real length (the worker never sees chunked encoding).
pub(super) async fn read_whole(
    body: Incoming,
    headers: &mut HeaderMap,
    limits: BodyLimits,
    budget: &Arc<Budget>,
) -> Result<UpBody, Response<ProxyBody>> {
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limits.max) {
        return Err(too_large(limits.max));
    }
    let had_body = declared.is_some() || headers.contains_key(header::TRANSFER_ENCODING);
    let mut spool = Spool::new(budget.clone(), limits.memory);
    let read = fill(body, &mut spool, limits.max);
    let read = if limits.timeout.is_zero() {
        read.await
    } else {
        match tokio::time::timeout(limits.timeout, read).await {
            Ok(r) => r,
            Err(_) => return Err(timed_out(limits.timeout)),
        }
    };
    let len = match read {
        Ok(n) => n,
        Err(Failed::TooLarge) => return Err(too_large(limits.max)),
        Err(Failed::Client(e)) => {
            let mut r = plain(
                StatusCode::BAD_REQUEST,
                format!("manifold: reading the request body: {e}\n"),
            );
            close(&mut r);
            return Err(r);
        }
    };
    // The body goes whole: no Expect for the worker to answer, and its exact length.
    headers.remove(header::EXPECT);
    headers.remove(header::TRANSFER_ENCODING);
    if had_body || len > 0 {
        headers.insert(header::CONTENT_LENGTH, HeaderValue::from(len));
    }
    if spool.in_memory() {
        let all = spool.take_all().map_err(|e| spool_failed(&e))?;
        return Ok(Full::new(all).map_err(|n| match n {}).boxed());
    }
    Ok(Spooled { spool, len }.map_err(|n| match n {}).boxed())
}

enum Failed {
    TooLarge,
    Client(String),
}

/// Reads frames into `spool` until the body ends; its length.
async fn fill(mut body: Incoming, spool: &mut Spool, max: u64) -> Result<u64, Failed> {
    let mut len = 0u64;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| Failed::Client(e.to_string()))?;
        if let Ok(data) = frame.into_data() {
            len += data.len() as u64;
            if len > max {
                return Err(Failed::TooLarge);
            }
            spool
                .push(data)
                .map_err(|e| Failed::Client(format!("buffering to a temporary file: {e}")))?;
        }
    }
    Ok(len)
}

fn close(r: &mut Response<ProxyBody>) {
    // The rest of the body is not read: the connection cannot carry another request.
    r.headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
}

fn too_large(max: u64) -> Response<ProxyBody> {
    let mut r = plain(
        StatusCode::PAYLOAD_TOO_LARGE,
        format!("manifold: request body above --max-body ({max} bytes)\n"),
    );
    close(&mut r);
    r
}

fn timed_out(limit: Duration) -> Response<ProxyBody> {
    let mut r = plain(
        StatusCode::REQUEST_TIMEOUT,
        format!(
            "manifold: request body not received within {} (--body-timeout); no worker was used\n",
            humantime::format_duration(limit)
        ),
    );
    close(&mut r);
    r
}

fn spool_failed(e: &std::io::Error) -> Response<ProxyBody> {
    plain(
        StatusCode::INTERNAL_SERVER_ERROR,
        format!("manifold: buffering the request body: {e}\n"),
    )
}

/// A request body that went partly to a temporary file, read back as the worker takes it.
struct Spooled {
    spool: Spool,
    len: u64,
}

impl Body for Spooled {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        match self.spool.pop() {
            Ok(Some(b)) => Poll::Ready(Some(Ok(Frame::data(b)))),
            Ok(None) => Poll::Ready(None),
            Err(e) => {
                // The file went bad under us: the body ends short, and hyper, holding its
                // Content-Length, fails the request to the worker (a 502) rather than send less.
                tracing::warn!(error = %e, "reading a buffered request body back failed");
                Poll::Ready(None)
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.spool.unread() == 0
    }

    fn size_hint(&self) -> SizeHint {
        let mut h = SizeHint::new();
        h.set_upper(self.len);
        h
    }
}
