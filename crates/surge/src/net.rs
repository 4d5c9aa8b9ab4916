//! surge's TCP connections to the app under test: TCP_NODELAY, and quick ACKs on Linux.
//!
//! Why: R's web server (httpuv) writes a response as two packets (head, then body) with Nagle on,
//! so the body leaves only once the client has ACKed the head. On a keep-alive connection Linux
//! delays that ACK by ~40 ms (it expects to piggyback it on the next request), and surge would time
//! its own TCP stack instead of the server (measured on a Shiny app: every static asset 44 ms under
//! replay vs 0.7 ms for curl). So every client surge points at a target (replay, bench, the upstream
//! side of `record`) sets TCP_NODELAY (our requests leave at once) and, after each read that
//! returned data, sets TCP_QUICKACK before the next read: a pending ACK goes out immediately, and
//! the socket leaves delayed-ACK ("ping-pong") mode, which each request we send re-enters. One
//! setsockopt per read that returned data; none while a connection idles.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use hyper::Uri;
use hyper_util::client::legacy::connect::{Connected, Connection};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_tungstenite::{tungstenite, WebSocketStream};

/// Connects to `host:port` with TCP_NODELAY set.
pub async fn connect(authority: &str) -> io::Result<Stream> {
    let tcp = TcpStream::connect(authority).await?;
    tcp.set_nodelay(true)?;
    Ok(Stream { tcp, rearm: false })
}

/// Sends a pending ACK now and leaves delayed-ACK mode (Linux; a no-op elsewhere). Errors are
/// ignored: the option only changes timing.
#[cfg(any(target_os = "linux", target_os = "android"))]
pub fn quickack(tcp: &TcpStream) {
    use std::os::fd::AsRawFd;
    let one: libc::c_int = 1;
    // SAFETY: setsockopt on a live fd with a pointer to a local int of the stated size.
    unsafe {
        libc::setsockopt(
            tcp.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_QUICKACK,
            (&one as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
    }
}

/// Delayed ACKs cannot be turned off per read on this system.
#[cfg(not(any(target_os = "linux", target_os = "android")))]
pub fn quickack(_tcp: &TcpStream) {}

/// A client TCP connection that re-arms quick ACKs before a read that follows received data (see
/// the module docs). Used as is by WebSocket clients and through [`TokioIo`] by hyper.
pub struct Stream {
    tcp: TcpStream,
    /// Data arrived since the last quick ACK.
    rearm: bool,
}

impl AsyncRead for Stream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if self.rearm {
            quickack(&self.tcp);
            self.rearm = false;
        }
        let before = buf.filled().len();
        let r = Pin::new(&mut self.tcp).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.rearm = true;
        }
        r
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.tcp).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.tcp).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.tcp).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.tcp).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.tcp.is_write_vectored()
    }
}

impl Connection for Stream {
    fn connected(&self) -> Connected {
        Connected::new()
    }
}

/// hyper-util's pooled client connector built on [`connect`] (used by `surge record` upstream).
#[derive(Clone, Default)]
pub struct Connector;

impl tower_service::Service<Uri> for Connector {
    type Response = TokioIo<Stream>;
    type Error = io::Error;
    type Future = Pin<Box<dyn Future<Output = io::Result<TokioIo<Stream>>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        Box::pin(async move {
            let host = uri
                .host()
                .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "URL without host"))?;
            let port = uri.port_u16().unwrap_or(80);
            connect(&format!("{host}:{port}")).await.map(TokioIo::new)
        })
    }
}

/// Opens a WebSocket (`ws://` request) over [`connect`]: `surge record`'s upstream side.
pub async fn ws_connect(
    req: tungstenite::handshake::client::Request,
) -> Result<WebSocketStream<Stream>, tungstenite::Error> {
    let uri = req.uri();
    let host = uri.host().unwrap_or("127.0.0.1");
    let port = uri.port_u16().unwrap_or(80);
    let tcp = connect(&format!("{host}:{port}")).await?;
    let (ws, _) = tokio_tungstenite::client_async(req, tcp).await?;
    Ok(ws)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A server that answers each request in two writes with Nagle on (httpuv's pattern): through
    /// a plain keep-alive socket the second write waits for a delayed ACK; through `Stream` it does
    /// not. Timing lives in the Shiny regression test; this checks the bytes flow and the options.
    #[tokio::test]
    async fn stream_sets_nodelay_and_carries_bytes() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            let mut b = [0u8; 4];
            for _ in 0..3 {
                s.read_exact(&mut b).await.unwrap();
                s.write_all(b"head").await.unwrap();
                s.write_all(b"body").await.unwrap();
            }
        });
        let mut c = connect(&addr.to_string()).await.unwrap();
        assert!(c.tcp.nodelay().unwrap());
        for _ in 0..3 {
            c.write_all(b"ping").await.unwrap();
            let mut got = [0u8; 8];
            c.read_exact(&mut got).await.unwrap();
            assert_eq!(&got, b"headbody");
        }
        server.await.unwrap();
    }
}
