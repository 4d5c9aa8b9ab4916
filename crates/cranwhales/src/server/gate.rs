//! The request-head gate: every byte a client sends passes through here before hyper parses it,
//! so the documented limits hold exactly and every refusal goes out in the `{"error": …}` envelope
//! (hyper's own answers to bad heads are bare, and its size limit is only approximate).
//!
//! The gate holds back each request head until it is complete, then checks it with httparse (the
//! parser hyper uses) and the few rules hyper adds: at most `max_header_bytes` bytes and
//! [`MAX_HEADERS`] lines, a valid URI, a valid `Content-Length` / `Transfer-Encoding`. A good head
//! is handed to hyper unchanged; a bad one is replaced by a stand-in request that the service
//! answers with the verdict's status (400, 408, 413, 414, 431) and `Connection: close`, so
//! pipelined answers stay in order. The API reads no request bodies: a request that announces one
//! is answered and its connection closed, so the gate never has to frame bodies.
//!
//! Writes fail once the client has accepted no bytes for the write timeout.

use std::collections::VecDeque;
use std::future::Future;
use std::io;
use std::mem::MaybeUninit;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{ready, Context, Poll, Waker};
use std::time::Duration;

use axum::http::StatusCode;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Sleep;

/// Header lines a request may have (hyper's limit too).
pub const MAX_HEADERS: usize = 100;
/// Longest request target hyper accepts; longer ones get 414.
pub const MAX_URI_BYTES: usize = u16::MAX as usize - 1;
/// Largest request body a client may announce; the API reads none, so this only decides between
/// answering (405/404 …) and refusing outright (413).
pub const MAX_BODY_BYTES: u64 = 65_536;

/// What the service must do with the next request hyper hands it.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// A checked head: route it; `close` when it announced a body (the connection ends after it).
    Pass { close: bool },
    /// A refused head (replaced by a stand-in): answer with this status and message, then close.
    Refuse(StatusCode, String),
}

/// Per-connection state shared by the gate (which reads) and the service (which answers).
#[derive(Default)]
pub struct Shared {
    verdicts: Mutex<VecDeque<Verdict>>,
    delivered: AtomicUsize,
    finished: AtomicUsize,
    /// The reader parked while a response was in flight: woken when it ends, so the header
    /// timeout starts (hyper may not poll the read side again by itself).
    parked: Mutex<Option<Waker>>,
}

impl Shared {
    /// The verdict of the next request, in the order the heads were handed to hyper.
    pub fn next_verdict(&self) -> Verdict {
        self.verdicts
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop_front()
            .unwrap_or(Verdict::Pass { close: true })
    }

    /// Called when a response has been sent whole (its body was dropped).
    pub fn response_done(&self) {
        self.finished.fetch_add(1, Ordering::Release);
        if let Some(w) = self.parked.lock().unwrap_or_else(|e| e.into_inner()).take() {
            w.wake();
        }
    }

    fn push(&self, v: Verdict) {
        self.verdicts
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push_back(v);
        self.delivered.fetch_add(1, Ordering::Release);
    }

    /// Requests handed to hyper whose responses are not finished.
    fn in_flight(&self) -> usize {
        self.delivered
            .load(Ordering::Acquire)
            .saturating_sub(self.finished.load(Ordering::Acquire))
    }
}

/// Limits the gate enforces.
#[derive(Debug, Clone, Copy)]
pub struct GateLimits {
    /// Largest request head in bytes (request line, headers, the empty line).
    pub max_header_bytes: usize,
    /// Time a client has to send a head once the connection is idle.
    pub header_timeout: Duration,
    /// Time a response may wait for the client to accept more bytes.
    pub write_timeout: Duration,
}

/// The stand-in request that carries a refusal through hyper.
const STAND_IN: &[u8] = b"GET / HTTP/1.1\r\n\r\n";

#[derive(Debug, Clone, Copy, PartialEq)]
enum Mode {
    /// Reading and checking heads.
    Heads,
    /// After a head with a body: bytes pass through untouched until hyper closes the connection.
    Body,
    /// A refusal was handed over; hyper closes the connection after answering it.
    Closed,
}

/// A connection as hyper sees it: heads checked on the way in, a write timeout on the way out.
pub struct Gated<S> {
    inner: S,
    shared: Arc<Shared>,
    limits: GateLimits,
    /// Bytes read from the client and not yet judged.
    pending: Vec<u8>,
    /// Where the search for the end of the head in `pending` resumes.
    scanned: usize,
    /// Judged bytes hyper has not read yet.
    out: Vec<u8>,
    out_pos: usize,
    mode: Mode,
    /// Runs while the connection waits for a head and no response is in flight.
    idle: Option<Pin<Box<Sleep>>>,
    /// Runs while a write cannot make progress.
    stalled: Option<Pin<Box<Sleep>>>,
}

impl<S> Gated<S> {
    /// Wraps a fresh connection.
    pub fn new(inner: S, shared: Arc<Shared>, limits: GateLimits) -> Self {
        Gated {
            inner,
            shared,
            limits,
            pending: Vec::new(),
            scanned: 0,
            out: Vec::new(),
            out_pos: 0,
            mode: Mode::Heads,
            idle: None,
            stalled: None,
        }
    }

    /// Judges the head at the start of `pending` if it is complete (or already too long).
    /// Returns whether something was handed over (`out` filled).
    fn judge(&mut self) -> bool {
        let max = self.limits.max_header_bytes;
        let scan = scan_head(&self.pending, self.scanned, max);
        let (len, body) = match scan {
            Scan::Partial(resume) => {
                self.scanned = resume;
                if self.pending.len() > max {
                    self.refuse(
                        StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
                        format!("request head is larger than {max} bytes (--max-header-bytes)"),
                    );
                    return true;
                }
                return false;
            }
            Scan::TooLarge(len) => {
                self.refuse(
                    StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
                    format!("request head of {len} bytes is larger than {max} bytes (--max-header-bytes)"),
                );
                return true;
            }
            Scan::Complete { len, body } => (len, body),
            Scan::Bad(status, message) => {
                self.refuse(status, message);
                return true;
            }
        };
        self.scanned = 0;
        self.idle = None;
        match body {
            Body::None => {
                self.out.extend(self.pending.drain(..len));
                self.shared.push(Verdict::Pass { close: false });
            }
            Body::Length(n) if n > MAX_BODY_BYTES => self.refuse(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("request body of {n} bytes: the API reads no request body (limit {MAX_BODY_BYTES} bytes)"),
            ),
            Body::Length(_) | Body::Chunked => {
                self.out.append(&mut self.pending);
                self.mode = Mode::Body;
                self.shared.push(Verdict::Pass { close: true });
            }
        }
        true
    }

    fn refuse(&mut self, status: StatusCode, message: String) {
        self.pending = Vec::new();
        self.scanned = 0;
        self.out.extend_from_slice(STAND_IN);
        self.mode = Mode::Closed;
        self.idle = None;
        self.shared.push(Verdict::Refuse(status, message));
    }

    /// The header timeout: armed while waiting for a head with no response in flight.
    fn poll_idle(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        if self.shared.in_flight() > 0 {
            self.idle = None;
            *self.shared.parked.lock().unwrap_or_else(|e| e.into_inner()) =
                Some(cx.waker().clone());
            // Re-check: the response may have ended before the waker was stored.
            if self.shared.in_flight() > 0 {
                return Poll::Pending;
            }
        }
        let limit = self.limits.header_timeout;
        self.idle
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)))
            .as_mut()
            .poll(cx)
    }

    fn check_write<T>(
        &mut self,
        cx: &mut Context<'_>,
        r: Poll<io::Result<T>>,
    ) -> Poll<io::Result<T>> {
        if r.is_ready() {
            self.stalled = None;
            return r;
        }
        let limit = self.limits.write_timeout;
        let timer = self
            .stalled
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
        if timer.as_mut().poll(cx).is_ready() {
            self.stalled = None;
            return Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "client stopped reading",
            )));
        }
        Poll::Pending
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Gated<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        dst: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            if this.out_pos < this.out.len() {
                let n = dst.remaining().min(this.out.len() - this.out_pos);
                dst.put_slice(&this.out[this.out_pos..this.out_pos + n]);
                this.out_pos += n;
                if this.out_pos == this.out.len() {
                    this.out.clear();
                    this.out_pos = 0;
                }
                return Poll::Ready(Ok(()));
            }
            match this.mode {
                // Nothing more is read: hyper answers the refusal and closes.
                Mode::Closed => return Poll::Pending,
                Mode::Body => return Pin::new(&mut this.inner).poll_read(cx, dst),
                Mode::Heads => {}
            }
            if !this.pending.is_empty() && this.judge() {
                continue;
            }
            if this.poll_idle(cx).is_ready() {
                if this.pending.is_empty() {
                    // An idle connection: end it quietly (EOF to hyper).
                    return Poll::Ready(Ok(()));
                }
                let limit = grammar::duration::format(this.limits.header_timeout);
                this.refuse(
                    StatusCode::REQUEST_TIMEOUT,
                    format!("request head not complete within {limit} (--header-timeout)"),
                );
                continue;
            }
            // Uninitialised: a zeroed 16 KiB on every read costs more than parsing the head.
            let mut chunk = [MaybeUninit::<u8>::uninit(); 16 * 1024];
            let mut buf = ReadBuf::uninit(&mut chunk);
            ready!(Pin::new(&mut this.inner).poll_read(cx, &mut buf))?;
            if buf.filled().is_empty() {
                // The client is gone; a partial head is dropped without an answer.
                this.pending.clear();
                return Poll::Ready(Ok(()));
            }
            this.pending.extend_from_slice(buf.filled());
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Gated<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.inner).poll_write(cx, buf);
        this.check_write(cx, r)
    }
    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        this.check_write(cx, r)
    }
    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.inner).poll_flush(cx);
        this.check_write(cx, r)
    }
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

/// What follows a head.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Body {
    None,
    Length(u64),
    Chunked,
}

/// The state of the head at the start of a buffer.
#[derive(Debug, PartialEq)]
enum Scan {
    /// Not complete; resume the search for its end at this offset.
    Partial(usize),
    /// Complete and valid: its length in bytes and what follows it.
    Complete { len: usize, body: Body },
    /// Complete, with this many bytes: more than the limit.
    TooLarge(usize),
    /// Complete (or hopeless) and invalid.
    Bad(StatusCode, String),
}

/// Finds the end of the head at the start of `buf` (searching from `from`) and checks it; a head
/// longer than `max` bytes is refused before anything else is looked at.
///
/// The end is the first empty line: `\n\n` or `\n\r\n` (httparse accepts bare LF line ends).
/// Empty lines before the request line are skipped, as httparse does.
fn scan_head(buf: &[u8], from: usize, max: usize) -> Scan {
    let mut at = from;
    while let Some(i) = memchr::memchr(b'\n', &buf[at..]).map(|i| at + i) {
        let end = match (buf.get(i + 1), buf.get(i + 2)) {
            (Some(b'\n'), _) => i + 2,
            (Some(b'\r'), Some(b'\n')) => i + 3,
            (None, _) | (Some(b'\r'), None) => return Scan::Partial(i),
            _ => {
                at = i + 1;
                continue;
            }
        };
        if end > max {
            return Scan::TooLarge(end);
        }
        match check_head(&buf[..end]) {
            // Only blank lines so far: the request line is still to come.
            Ok(None) => at = end,
            Ok(Some((len, body))) => return Scan::Complete { len, body },
            Err((status, message)) => return Scan::Bad(status, message),
        }
    }
    Scan::Partial(buf.len().saturating_sub(2).max(from))
}

/// Parses a complete head with httparse and applies hyper's extra rules (RFC 9112 §6).
/// `Ok(None)`: nothing but blank lines.
fn check_head(head: &[u8]) -> Result<Option<(usize, Body)>, (StatusCode, String)> {
    let bad = |m: String| (StatusCode::BAD_REQUEST, m);
    let mut headers = [const { MaybeUninit::<httparse::Header<'_>>::uninit() }; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut []);
    let len = match req.parse_with_uninit_headers(head, &mut headers) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(httparse::Error::TooManyHeaders) => {
            return Err((
                StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
                format!("request head has more than {MAX_HEADERS} header lines"),
            ))
        }
        Err(e) => return Err(bad(format!("malformed request head: {e}"))),
    };
    let path = req.path.unwrap_or("");
    if path.len() > MAX_URI_BYTES {
        return Err((
            StatusCode::URI_TOO_LONG,
            format!("request target is longer than {MAX_URI_BYTES} bytes"),
        ));
    }
    if axum::http::Uri::try_from(path.as_bytes()).is_err() {
        return Err(bad("malformed request target".into()));
    }
    let http10 = req.version == Some(0);
    let (mut length, mut chunked, mut encoded) = (None, false, false);
    for h in req.headers.iter() {
        if h.name.eq_ignore_ascii_case("transfer-encoding") {
            if http10 {
                return Err(bad("Transfer-Encoding in an HTTP/1.0 request".into()));
            }
            encoded = true;
            // Only the last coding of the last line counts, and it must be chunked.
            chunked = std::str::from_utf8(h.value)
                .ok()
                .and_then(|v| v.rsplit(',').next())
                .is_some_and(|c| c.trim().eq_ignore_ascii_case("chunked"));
        } else if h.name.eq_ignore_ascii_case("content-length") {
            let n = digits(h.value).ok_or_else(|| bad("invalid Content-Length".into()))?;
            if length.is_some_and(|l| l != n) {
                return Err(bad("conflicting Content-Length headers".into()));
            }
            length = Some(n);
        }
    }
    let body = match (encoded, length) {
        (true, _) if !chunked => return Err(bad("Transfer-Encoding must end in chunked".into())),
        (true, _) => Body::Chunked,
        (false, Some(n)) if n > 0 => Body::Length(n),
        _ => Body::None,
    };
    Ok(Some((len, body)))
}

/// A decimal number of only ASCII digits (no sign, no spaces), without overflow.
fn digits(v: &[u8]) -> Option<u64> {
    if v.is_empty() || v.len() > 19 || !v.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(v).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn complete(s: &str) -> (usize, Body) {
        match scan_head(s.as_bytes(), 0, usize::MAX) {
            Scan::Complete { len, body } => (len, body),
            other => panic!("{s:?}: {other:?}"),
        }
    }

    fn status(s: &str) -> StatusCode {
        match scan_head(s.as_bytes(), 0, usize::MAX) {
            Scan::Bad(st, _) => st,
            other => panic!("{s:?}: {other:?}"),
        }
    }

    #[test]
    fn finds_the_end_of_heads_like_httparse() {
        let head = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
        assert_eq!(complete(head), (head.len(), Body::None));
        assert_eq!(complete(&format!("{head}GET /next")).0, head.len());
        let lf = "GET / HTTP/1.1\nHost: x\n\n";
        assert_eq!(complete(lf).0, lf.len());
        // Leading blank lines belong to the head, as for httparse.
        assert_eq!(complete("\r\n\r\nGET / HTTP/1.1\r\n\r\n").0, 22);
        for partial in [
            "GET / HTTP/1.1\r\nHost: x\r\n",
            "GET / HTTP/1.1\r\n\r",
            "\r\n\r\n",
        ] {
            assert!(
                matches!(
                    scan_head(partial.as_bytes(), 0, usize::MAX),
                    Scan::Partial(_)
                ),
                "{partial:?}"
            );
        }
        // Resuming from where the last scan stopped finds the same end.
        let buf = b"GET / HTTP/1.1\r\nA: b\r\n\r\n";
        for split in 0..buf.len() {
            let Scan::Partial(resume) = scan_head(&buf[..split], 0, usize::MAX) else {
                continue;
            };
            assert_eq!(
                scan_head(buf, resume, usize::MAX),
                Scan::Complete {
                    len: buf.len(),
                    body: Body::None
                }
            );
        }
    }

    #[test]
    fn bodies_are_recognised() {
        let cl = "POST /api/days HTTP/1.1\r\nContent-Length: 12\r\n\r\n";
        assert_eq!(complete(cl).1, Body::Length(12));
        let zero = "POST / HTTP/1.1\r\nContent-Length: 0\r\n\r\n";
        assert_eq!(complete(zero).1, Body::None);
        let te = "POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\nContent-Length: 3\r\n\r\n";
        assert_eq!(complete(te).1, Body::Chunked);
    }

    #[test]
    fn bad_heads_get_their_status() {
        assert_eq!(status("GARBAGE\r\n\r\n"), StatusCode::BAD_REQUEST);
        assert_eq!(status("GET / HTTP/9.9\r\n\r\n"), StatusCode::BAD_REQUEST);
        assert_eq!(
            status("GET / HTTP/1.1\r\nbad header\r\n\r\n"),
            StatusCode::BAD_REQUEST
        );
        assert_eq!(
            status("GET http://[bad HTTP/1.1\r\n\r\n"),
            StatusCode::BAD_REQUEST
        );
        for cl in ["-1", "1 2", "x", "", "99999999999999999999"] {
            let h = format!("POST / HTTP/1.1\r\nContent-Length: {cl}\r\n\r\n");
            assert_eq!(status(&h), StatusCode::BAD_REQUEST, "{cl}");
        }
        let twice = "POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n";
        assert_eq!(status(twice), StatusCode::BAD_REQUEST);
        assert_eq!(
            status("POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n"),
            StatusCode::BAD_REQUEST
        );
        assert_eq!(
            status("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n"),
            StatusCode::BAD_REQUEST
        );
        let many = format!(
            "GET / HTTP/1.1\r\n{}\r\n",
            "A: b\r\n".repeat(MAX_HEADERS + 1)
        );
        assert_eq!(status(&many), StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE);
        let long = format!("GET /{} HTTP/1.1\r\n\r\n", "a".repeat(MAX_URI_BYTES));
        assert_eq!(status(&long), StatusCode::URI_TOO_LONG);
    }
}
