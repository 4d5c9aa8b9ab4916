//! Every request accounted for: its `X-Request-Id` (kept if the client sent a sane one, else
//! made here) and `X-Request-Start`, and, once its response body ended (or the client left), one
//! observation in each latency histogram and one access log line, by the same numbers.

use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use hyper::body::{Body, Frame, SizeHint};
use hyper::header::{HeaderMap, HeaderValue};
use tokio::time::Instant;

use crate::accesslog::{cut_path, AccessLog, Entry};
use crate::histogram::Histogram;

/// Header carrying the request id to the worker and back.
pub const REQUEST_ID: &str = "x-request-id";
/// Header carrying the arrival time (`t=` microseconds since the Unix epoch, as New Relic and
/// Heroku's router write it) to the worker and back.
pub const REQUEST_START: &str = "x-request-start";
/// Header telling the client where its time went (W3C Server Timing): `queue` (waiting for a
/// worker) and `app` (from sending to the worker until its response head), in milliseconds, the
/// same numbers as the access log's `queue_wait_s` and `upstream_s`; a load tester (surge) splits
/// each request's latency by them.
pub const SERVER_TIMING: &str = "server-timing";
/// Longest client-sent request id kept; a longer or non-printable one is replaced.
const MAX_ID: usize = 200;

/// The histograms and access log of one app.
pub struct Recorder {
    /// `manifold_request_duration_seconds`: arrival until the response body ended.
    pub duration: Histogram,
    /// `manifold_queue_wait_seconds`: time waiting for a worker.
    pub queue_wait: Histogram,
    /// `--access-log`, if set.
    pub log: Option<AccessLog>,
    /// The app name written in the log.
    pub app: String,
    seed: u64,
    next: AtomicU64,
}

impl Recorder {
    /// A recorder for app `app`, writing to `log` if given.
    pub fn new(app: String, log: Option<AccessLog>) -> Recorder {
        let mut seed = [0u8; 8];
        // SAFETY: getrandom writes at most seed.len() bytes into seed.
        let n = unsafe { libc::getrandom(seed.as_mut_ptr().cast(), seed.len(), 0) };
        let seed = if n == 8 {
            u64::from_ne_bytes(seed)
        } else {
            // No entropy source: time and pid still make ids unique per run.
            let t = SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .unwrap_or_default();
            t.as_nanos() as u64 ^ (u64::from(std::process::id()) << 40)
        };
        Recorder {
            duration: Histogram::default(),
            queue_wait: Histogram::default(),
            log,
            app,
            seed,
            next: AtomicU64::new(0),
        }
    }

    /// Sets `X-Request-Id` (kept if sane) and `X-Request-Start` on a request; returns the id.
    pub fn stamp(&self, headers: &mut HeaderMap, arrived: SystemTime) -> String {
        let kept = headers
            .get(REQUEST_ID)
            .and_then(|v| v.to_str().ok())
            .filter(|v| {
                !v.is_empty() && v.len() <= MAX_ID && v.bytes().all(|b| b.is_ascii_graphic())
            })
            .map(str::to_string);
        let id = kept.unwrap_or_else(|| {
            let n = self.next.fetch_add(1, Ordering::Relaxed);
            format!("{:016x}{:08x}", self.seed, n)
        });
        headers.insert(REQUEST_ID, HeaderValue::from_str(&id).expect("checked id"));
        if !headers.contains_key(REQUEST_START) {
            let us = arrived
                .duration_since(SystemTime::UNIX_EPOCH)
                .unwrap_or_default()
                .as_micros();
            headers.insert(
                REQUEST_START,
                HeaderValue::from_str(&format!("t={us}")).expect("digits"),
            );
        }
        id
    }
}

/// The `Server-Timing` value for a request: `queue;dur=12.300, app;dur=100.100;desc="<id>"`
/// (`app` only when a worker answered; its `desc` is the request id, so a client can find the
/// access log line).
pub fn server_timing(record: &Record) -> HeaderValue {
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let mut v = format!("queue;dur={:.3}", ms(record.queue_wait));
    if let Some(up) = record.upstream {
        v.push_str(&format!(
            ", app;dur={:.3};desc=\"{}\"",
            ms(up),
            record.id.replace('\\', "\\\\").replace('"', "\\\"")
        ));
    }
    HeaderValue::from_str(&v).expect("ascii: digits and a checked id")
}

/// What is known about a request when its response starts; finished by [`Accounted`].
pub struct Record {
    /// The recorder it goes to.
    pub rec: Arc<Recorder>,
    /// Wall-clock arrival (the log's `time`).
    pub arrived_at: SystemTime,
    /// Monotonic arrival.
    pub arrived: Instant,
    /// Request id.
    pub id: String,
    /// Method.
    pub method: String,
    /// Path and query.
    pub path: String,
    /// Status sent.
    pub status: u16,
    /// Time waiting for a worker.
    pub queue_wait: Duration,
    /// Time until the worker's response head, if one was asked.
    pub upstream: Option<Duration>,
    /// (worker id, generation) that answered.
    pub worker: Option<(u64, u64)>,
    /// The worker named by the sticky cookie.
    pub sticky: Option<u64>,
    /// The response streamed, holding its worker (see the access log's `streamed`).
    pub streamed: bool,
    /// Sent once more, to the same worker or another (see the access log's `retried`).
    pub retried: bool,
}

impl Record {
    fn finish(self, bytes: u64) {
        let total = self.arrived.elapsed();
        self.rec.duration.observe(self.status, total);
        self.rec.queue_wait.observe(self.status, self.queue_wait);
        if let Some(log) = &self.rec.log {
            log.write(&Entry {
                time: humantime::format_rfc3339_micros(self.arrived_at).to_string(),
                app: &self.rec.app,
                request_id: &self.id,
                method: &self.method,
                path: cut_path(&self.path),
                status: self.status,
                bytes,
                queue_wait_s: self.queue_wait.as_secs_f64(),
                upstream_s: self.upstream.map(|d| d.as_secs_f64()),
                duration_s: total.as_secs_f64(),
                worker: self.worker.map(|w| w.0),
                generation: self.worker.map(|w| w.1),
                sticky: self.sticky,
                streamed: self.streamed,
                retried: self.retried,
            });
        }
    }
}

/// A response body that counts its bytes and records the request when it ends or is dropped
/// (a client that leaves mid-body is still accounted for, with the bytes it got).
pub struct Accounted<B> {
    inner: B,
    bytes: u64,
    record: Option<Record>,
}

impl<B> Accounted<B> {
    /// Wraps `inner`; `record` is finished exactly once.
    pub fn new(inner: B, record: Record) -> Accounted<B> {
        Accounted {
            inner,
            bytes: 0,
            record: Some(record),
        }
    }
}

impl<B> Drop for Accounted<B> {
    fn drop(&mut self) {
        if let Some(r) = self.record.take() {
            r.finish(self.bytes);
        }
    }
}

impl<B: Body<Data = Bytes> + Unpin> Body for Accounted<B> {
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
        let r = Pin::new(&mut self.inner).poll_frame(cx);
        match &r {
            Poll::Ready(Some(Ok(f))) => {
                if let Some(d) = f.data_ref() {
                    self.bytes += d.len() as u64;
                }
            }
            Poll::Ready(None) => {
                let bytes = self.bytes;
                if let Some(rec) = self.record.take() {
                    rec.finish(bytes);
                }
            }
            _ => {}
        }
        r
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
