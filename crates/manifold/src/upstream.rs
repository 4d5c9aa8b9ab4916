//! Connections to workers: HTTP/1.1 over loopback with TCP_NODELAY and quick ACKs.
//!
//! Why quick ACKs: R's httpuv writes a response as two packets (headers, then body) without
//! TCP_NODELAY, so Nagle holds the body until our ACK of the headers arrives; on a reused
//! connection Linux delays that ACK by ~40 ms (measured: p50 44 ms reused vs 0.9 ms fresh). Setting
//! TCP_QUICKACK before each read makes the ACK immediate and keeps the connection reuse. This small
//! wrapper is hand-written because no client library exposes per-read socket options.

use std::os::fd::AsRawFd;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Empty};
use hyper::body::Incoming;
use hyper::client::conn::http1;
use hyper::rt::{Read, ReadBufCursor, Write};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

/// Body type sent to workers.
pub type UpBody = BoxBody<Bytes, hyper::Error>;

/// One HTTP/1.1 connection to a worker.
///
/// The pool keeps idle ones per worker and hands one out with each lease, so a single-threaded
/// worker that serves one keep-alive connection at a time (Python's http.server, gunicorn sync)
/// always gets its next request on the connection it is already reading.
pub type Conn = http1::SendRequest<UpBody>;

/// How long after its last use an idle worker connection is still reused. Servers close idle
/// keep-alive connections on their own clock (gunicorn after 2 s, uvicorn and Node after 5 s), and
/// a request written just as the worker closes one is lost in flight: a GET is sent again
/// (`proxy::retry`), a POST that was written is a 502. Reusing only connections idle for less than
/// the shortest of those keeps manifold off the closing ones; a new loopback connection costs tens
/// of microseconds.
pub const REUSE_WITHIN: std::time::Duration = std::time::Duration::from_secs(1);

/// An idle connection a worker's pool slot keeps, and since when it is idle.
pub struct Idle {
    conn: Conn,
    since: tokio::time::Instant,
}

impl Idle {
    /// `conn`, idle from now.
    pub fn new(conn: Conn) -> Idle {
        Idle {
            conn,
            since: tokio::time::Instant::now(),
        }
    }

    /// Worth handing out: still open, and idle for less than [`REUSE_WITHIN`]. One that is not is
    /// dropped, which closes it.
    pub fn usable(&self) -> bool {
        !self.conn.is_closed() && self.since.elapsed() < REUSE_WITHIN
    }

    /// The same connection idle from now (its request just ended), unless the worker closed it.
    pub fn renewed(self) -> Option<Idle> {
        (!self.conn.is_closed()).then(|| Idle::new(self.conn))
    }

    /// The connection, to send on.
    pub fn into_conn(self) -> Conn {
        self.conn
    }
}

/// Why a worker could not be reached.
#[derive(Debug, thiserror::Error)]
pub enum UpstreamError {
    /// TCP connect failed.
    #[error("connect to port {port}: {source}")]
    Connect {
        /// Worker port.
        port: u16,
        /// OS error.
        source: std::io::Error,
    },
    /// HTTP-level failure (connection closed mid-request, bad response).
    #[error(transparent)]
    Http(#[from] hyper::Error),
}

/// Opens a new connection to a worker (TCP_NODELAY, quick ACKs, upgrades allowed).
///
/// # Errors
/// The port does not accept, or the HTTP handshake fails.
pub async fn connect(port: u16) -> Result<Conn, UpstreamError> {
    let tcp = TcpStream::connect(("127.0.0.1", port))
        .await
        .map_err(|source| UpstreamError::Connect { port, source })?;
    let _ = tcp.set_nodelay(true);
    let (sender, conn) = http1::handshake(QuickAck(TokioIo::new(tcp))).await?;
    tokio::spawn(async move {
        if let Err(e) = conn.with_upgrades().await {
            tracing::debug!(port, error = %e, "worker connection ended");
        }
    });
    Ok(sender)
}

/// Sends `req` on `conn` once it is ready for another request.
///
/// # Errors
/// The connection closed or the worker failed mid-request.
pub async fn send(
    conn: &mut Conn,
    req: Request<UpBody>,
) -> Result<Response<Incoming>, hyper::Error> {
    conn.ready().await?;
    conn.send_request(req).await
}

/// A request that got no response head: hyper's error, and the request itself when none of it
/// was written (hyper hands it back), so it can be sent again as it is.
pub struct Unsent {
    /// What went wrong.
    pub error: hyper::Error,
    /// The request, untouched (body included), if no byte of it went to the worker.
    pub request: Option<Request<UpBody>>,
}

/// [`send`], telling apart a request that never left (see [`Unsent`]).
///
/// # Errors
/// The connection closed or the worker failed before its response head.
pub async fn try_send(conn: &mut Conn, req: Request<UpBody>) -> Result<Response<Incoming>, Unsent> {
    if let Err(error) = conn.ready().await {
        return Err(Unsent {
            error,
            request: Some(req),
        });
    }
    conn.try_send_request(req).await.map_err(|mut e| Unsent {
        request: e.take_message(),
        error: e.into_error(),
    })
}

/// GETs `path` on a worker over a fresh connection and returns the status (readiness check).
///
/// # Errors
/// Connection or HTTP failure.
pub async fn probe(port: u16, path: &str) -> Result<StatusCode, UpstreamError> {
    let mut conn = connect(port).await?;
    let req = Request::get(path)
        .header(hyper::header::HOST, format!("127.0.0.1:{port}"))
        .header(hyper::header::CONNECTION, "close")
        .body(Empty::<Bytes>::new().map_err(|n| match n {}).boxed())
        .expect("valid probe request");
    let resp = send(&mut conn, req).await?;
    let status = resp.status();
    let _ = resp.into_body().collect().await;
    Ok(status)
}

/// A worker connection that re-arms TCP_QUICKACK before every read (see module docs).
pub struct QuickAck(TokioIo<TcpStream>);

fn quickack(s: &TcpStream) {
    let one: libc::c_int = 1;
    // SAFETY: setsockopt on a live fd with a pointer to a local int of the stated size.
    unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_QUICKACK,
            &one as *const libc::c_int as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
    }
}

impl Read for QuickAck {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: ReadBufCursor<'_>,
    ) -> Poll<std::io::Result<()>> {
        quickack(self.0.inner());
        Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl Write for QuickAck {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.0.is_write_vectored()
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.0).poll_write_vectored(cx, bufs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A kept-alive connection whose worker closed it before the request was written hands the
    /// request back untouched (what the proxy's retry rule relies on); one that the worker read
    /// and then closed unanswered does not.
    #[tokio::test]
    async fn a_request_never_written_comes_back() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let get = || {
            Request::get("/")
                .header(hyper::header::HOST, "w")
                .body(Empty::<Bytes>::new().map_err(|n| match n {}).boxed())
                .unwrap()
        };
        // Closed by the worker before the request: nothing is written, the request comes back.
        let mut conn = connect(port).await.unwrap();
        let (worker, _) = listener.accept().unwrap();
        drop(worker);
        let e = try_send(&mut conn, get()).await.unwrap_err();
        assert!(e.request.is_some(), "{}", e.error);
        // Read by the worker, then closed unanswered: not handed back.
        let mut conn = connect(port).await.unwrap();
        let (mut worker, _) = listener.accept().unwrap();
        let reader = std::thread::spawn(move || {
            let mut b = [0u8; 1024];
            let _ = std::io::Read::read(&mut worker, &mut b);
        });
        let e = try_send(&mut conn, get()).await.unwrap_err();
        reader.join().unwrap();
        assert!(e.request.is_none(), "{}", e.error);
    }
}
