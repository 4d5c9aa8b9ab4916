//! A worker's response read as fast as the worker writes it, into a [`Spool`], and sent to the
//! client at the client's pace: the lease ends when the worker has finished, not when the
//! client has read (Unicorn's and nginx's buffering, which sync workers need).
//!
//! What is not buffered (it streams, and holds the worker until the client has read it, as
//! before; the access log says `"streamed": true`): Server-Sent Events (`text/event-stream`), a
//! response the app marks with `X-Accel-Buffering: no` (nginx's header for the same thing; it is
//! not passed on), one whose Content-Length is above `--buffer-response`, and every response
//! when that is 0. A response of unknown length that grows past `--buffer-response` while the
//! client is behind is read no further until the client catches up: the worker is then held
//! for its last part, and the memory and disk a response takes stay bounded.
//!
//! The worker-side clocks are unchanged: the body is read through [`Leased`], so a worker
//! silent mid-body for `--request-timeout` is replaced and the response cut (the client gets
//! what came before, then the abort), and a client that leaves leaves the rest to be read and
//! thrown away while the worker finishes.

use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::{Body, Frame, SizeHint};
use hyper::header::{self, HeaderMap};
use tokio::sync::Notify;

use super::leased::Leased;
use super::spool::{Budget, Spool};
use super::BodyError;

/// Whether a response streams (holding its worker) instead of being buffered.
pub(super) fn streams(headers: &mut HeaderMap, limit: u64) -> bool {
    let marked = headers
        .remove("x-accel-buffering")
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"no"));
    let sse = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().starts_with("text/event-stream"));
    let large = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
        .is_some_and(|n| n > limit);
    limit == 0 || marked || sse || large
}

/// Between the task reading the worker and the client's body.
struct Shared {
    spool: Spool,
    /// `Some` once the worker's body ended (`Ok`) or failed.
    done: Option<Result<(), BodyError>>,
    reader_gone: bool,
    reader: Option<Waker>,
}

struct Chan {
    state: Mutex<Shared>,
    to_writer: Notify,
}

impl Chan {
    fn lock(&self) -> MutexGuard<'_, Shared> {
        // A panic while holding it leaves a consistent spool; go on with it.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Starts reading `body` from its worker into a spool (at most `cap` bytes unread; in memory up
/// to `memory` each, within `budget`); the body the client gets.
pub(super) fn buffer(
    body: Leased,
    budget: Arc<Budget>,
    memory: u64,
    cap: u64,
    hint: SizeHint,
) -> Buffered {
    let chan = Arc::new(Chan {
        state: Mutex::new(Shared {
            spool: Spool::new(budget, memory),
            done: None,
            reader_gone: false,
            reader: None,
        }),
        to_writer: Notify::new(),
    });
    tokio::spawn(fill(body, chan.clone(), cap));
    Buffered { chan, hint }
}

/// Reads the worker's body into the spool until it ends (the lease ends with it), waiting only
/// while `cap` bytes are unread.
async fn fill(mut body: Leased, chan: Arc<Chan>, cap: u64) {
    loop {
        loop {
            {
                let s = chan.lock();
                if s.reader_gone {
                    // Dropping `body` leaves the rest to `leased::finish_unread`.
                    return;
                }
                if s.spool.unread() < cap {
                    break;
                }
            }
            chan.to_writer.notified().await;
        }
        let frame = body.frame().await;
        let mut s = chan.lock();
        let end = match frame {
            Some(Ok(f)) => match f.into_data() {
                Ok(data) => match s.spool.push(data) {
                    Ok(()) => None,
                    Err(e) => {
                        tracing::warn!(error = %e, "buffering a response to a temporary file failed");
                        Some(Err(Box::new(e) as BodyError))
                    }
                },
                // Trailers are not passed on (HTTP/1.1 clients rarely ask for them).
                Err(_) => None,
            },
            Some(Err(e)) => Some(Err(e)),
            None => Some(Ok(())),
        };
        let stop = end.is_some();
        if let Some(end) = end {
            s.done = Some(end);
        }
        if let Some(w) = s.reader.take() {
            w.wake();
        }
        if stop {
            return;
        }
    }
}

/// The client's side of a buffered response.
pub(super) struct Buffered {
    chan: Arc<Chan>,
    hint: SizeHint,
}

impl Body for Buffered {
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        let mut s = self.chan.lock();
        match s.spool.pop() {
            Ok(Some(b)) => {
                drop(s);
                self.chan.to_writer.notify_one();
                return Poll::Ready(Some(Ok(Frame::data(b))));
            }
            Ok(None) => {}
            Err(e) => return Poll::Ready(Some(Err(Box::new(e)))),
        }
        match s.done.take() {
            Some(Ok(())) => {
                s.done = Some(Ok(()));
                Poll::Ready(None)
            }
            Some(Err(e)) => {
                // Cut: the next poll ends the body (hyper has aborted the response by then).
                s.done = Some(Ok(()));
                Poll::Ready(Some(Err(e)))
            }
            None => {
                s.reader = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        let s = self.chan.lock();
        matches!(s.done, Some(Ok(()))) && s.spool.unread() == 0
    }

    fn size_hint(&self) -> SizeHint {
        self.hint
    }
}

impl Drop for Buffered {
    fn drop(&mut self) {
        self.chan.lock().reader_gone = true;
        self.chan.to_writer.notify_one();
    }
}
