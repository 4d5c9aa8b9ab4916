//! surge's connections to the app under test, plain or TLS (`tls`): TCP_NODELAY, and quick ACKs on
//! Linux, under TLS as well (the TCP socket below it re-arms them).
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

pub mod tls;

pub use tls::{Alpn, TlsArgs};

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper::Uri;
use hyper_util::client::legacy::connect::{Connected, Connection};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tokio_tungstenite::{tungstenite, WebSocketStream};

/// The probe's TLS handshake (and any other, unless the run sets its own bound) fails when it has
/// not finished by then: a server that accepts and stays silent must not hang a run.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Where to connect: a URL's host and port, and whether to speak TLS (https, wss).
#[derive(Debug, Clone, PartialEq)]
pub struct Endpoint {
    /// The URL's host (SNI, certificate name, `--resolve` key).
    pub host: String,
    /// The URL's port (80 / 443 by default).
    pub port: u16,
    /// https:// or wss://.
    pub tls: bool,
}

impl Endpoint {
    /// The endpoint of an http, https, ws or wss URL.
    pub fn from_uri(uri: &Uri) -> Result<Endpoint, SetupError> {
        let tls = match uri.scheme_str() {
            Some("http" | "ws") => false,
            Some("https" | "wss") => true,
            Some(s) => return Err(SetupError::Scheme(s.to_string())),
            None => return Err(SetupError::NoScheme),
        };
        let host = uri.host().ok_or(SetupError::NoHost)?.to_string();
        let port = uri.port_u16().unwrap_or(if tls { 443 } else { 80 });
        Ok(Endpoint { host, port, tls })
    }

    /// `host:port`.
    pub fn authority(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }
}

/// A target or TLS setting that is wrong, found before any user connects: each is one line
/// naming the URL part, flag or file.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// A scheme other than http(s) / ws(s).
    #[error("scheme {0} not supported (use http or https)")]
    Scheme(String),
    /// No scheme.
    #[error("missing http:// or https://")]
    NoScheme,
    /// No host.
    #[error("no host")]
    NoHost,
    /// A `--resolve` that is not HOST:PORT:ADDR.
    #[error("--resolve {text}: {why} (expected HOST:PORT:ADDR, e.g. app.example:443:127.0.0.1)")]
    Resolve {
        /// As given.
        text: String,
        /// What is wrong.
        why: &'static str,
    },
    /// rustls refused the protocol set-up.
    #[error("TLS setup: {0}")]
    Tls(rustls::Error),
    /// A `--ca-cert` file that cannot be read as PEM.
    #[error("--ca-cert {}: {err}", path.display())]
    CaCertPem {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        err: rustls::pki_types::pem::Error,
    },
    /// A `--ca-cert` with no certificate in it.
    #[error("--ca-cert {}: no PEM certificate in the file", .0.display())]
    CaCertEmpty(std::path::PathBuf),
    /// A `--ca-cert` certificate rustls refuses.
    #[error("--ca-cert {}: {err}", path.display())]
    CaCertBad {
        /// The file.
        path: std::path::PathBuf,
        /// rustls' reason.
        err: rustls::Error,
    },
    /// Nothing to verify certificates with.
    #[error("no trusted CA: the platform's store is empty and no --ca-cert was given (or use --insecure)")]
    NoRoots,
    /// A host that cannot be a TLS server name.
    #[error("{0}: not a valid TLS server name")]
    ServerName(String),
    /// `bench --http2` against a server that does not offer h2.
    #[error("TLS to {0}: the server did not agree to HTTP/2 (ALPN h2)")]
    NoH2(String),
    /// The target's host name has no address: a typo, or a name only another network knows.
    #[error("cannot resolve the target's host {host}: {reason} (check the URL, or give its address with --resolve {host}:{port}:ADDR)")]
    Unresolved {
        /// The URL's host.
        host: String,
        /// The URL's port.
        port: u16,
        /// What the resolver said.
        reason: String,
    },
    /// The probe's handshake failed (certificate expired, unknown issuer, ...).
    #[error(transparent)]
    Dial(#[from] DialError),
}

/// Why a connection could not be opened. `Tls` holds one readable reason (see `tls::reason`).
#[derive(Debug, thiserror::Error)]
pub enum DialError {
    /// The TCP connection failed (refused, unreachable, ...).
    #[error("connect {addr}: {source}")]
    Connect {
        /// `host:port`, with the `--resolve` address when one applies.
        addr: String,
        /// What the socket said.
        source: io::Error,
    },
    /// TCP connected but the TLS handshake failed or timed out.
    #[error("TLS handshake with {addr}: {reason}")]
    Tls {
        /// `host:port` as in the URL.
        addr: String,
        /// Why, in a few words (certificate expired, unknown issuer, name mismatch, ...).
        reason: String,
    },
}

impl From<DialError> for io::Error {
    fn from(e: DialError) -> io::Error {
        match e {
            DialError::Connect { source, .. } => source,
            e @ DialError::Tls { .. } => io::Error::other(e.to_string()),
        }
    }
}

/// How a run connects: the one TLS client config (built once, shared by every connection) and
/// the `--resolve` overrides.
#[derive(Debug, Clone, Default)]
pub struct Dialer {
    tls: Option<(Arc<rustls::ClientConfig>, bool)>,
    resolve: Vec<tls::Resolve>,
    /// Bound of each handshake during the run (None: [`HANDSHAKE_TIMEOUT`]); a loaded server may
    /// take longer than the probe's 10 s, and that is a measurement, not a configuration error.
    handshake_timeout: Option<Duration>,
}

impl Dialer {
    /// The run's dialer from its flags; the TLS config is built only when the target needs it.
    pub fn new(args: &TlsArgs, need_tls: bool, alpn: Alpn) -> Result<Dialer, SetupError> {
        let tls = if need_tls {
            let config = args.client_config(alpn)?;
            Some((config, args.insecure))
        } else {
            None
        };
        Ok(Dialer {
            tls,
            resolve: args.resolves()?,
            handshake_timeout: None,
        })
    }

    /// The same dialer with each handshake of the run bounded by `t` (replay: --message-timeout,
    /// bench: --timeout); the probe keeps [`HANDSHAKE_TIMEOUT`].
    pub fn with_handshake_timeout(mut self, t: Duration) -> Dialer {
        self.handshake_timeout = Some(t);
        self
    }

    /// Certificates are not checked (`--insecure` on a TLS target).
    pub fn insecure(&self) -> bool {
        self.tls.as_ref().is_some_and(|(_, insecure)| *insecure)
    }

    /// Opens a connection to `ep` (TLS when it says so), TCP_NODELAY set.
    pub async fn connect(&self, ep: &Endpoint) -> Result<Stream, DialError> {
        let bound = self.handshake_timeout.unwrap_or(HANDSHAKE_TIMEOUT);
        self.connect_within(ep, bound).await
    }

    async fn connect_within(&self, ep: &Endpoint, bound: Duration) -> Result<Stream, DialError> {
        let resolved = self
            .resolve
            .iter()
            .find(|r| r.port == ep.port && r.host.eq_ignore_ascii_case(&ep.host));
        let tcp = match resolved {
            Some(r) => TcpStream::connect((r.addr, r.port)).await,
            None => TcpStream::connect(ep.authority()).await,
        };
        let addr = || match resolved {
            Some(r) => format!(
                "{} ({})",
                ep.authority(),
                std::net::SocketAddr::new(r.addr, r.port)
            ),
            None => ep.authority(),
        };
        let tcp = tcp.map_err(|source| DialError::Connect {
            addr: addr(),
            source,
        })?;
        tcp.set_nodelay(true).map_err(|source| DialError::Connect {
            addr: addr(),
            source,
        })?;
        let tcp = Tcp { tcp, rearm: false };
        if !ep.tls {
            return Ok(Stream(Io::Plain(tcp)));
        }
        let tls_err = |reason: String| DialError::Tls {
            addr: ep.authority(),
            reason,
        };
        let (config, _) = self
            .tls
            .as_ref()
            .ok_or_else(|| tls_err("no TLS configuration for this run (internal)".into()))?;
        let connector = tokio_rustls::TlsConnector::from(config.clone());
        let name = tls::server_name(&ep.host).map_err(|e| tls_err(e.to_string()))?;
        match tokio::time::timeout(bound, connector.connect(name, tcp)).await {
            Err(_) => Err(tls_err(format!("no handshake answer within {bound:?}"))),
            Ok(Err(e)) => Err(tls_err(tls::reason(&e, &ep.host))),
            Ok(Ok(s)) => Ok(Stream(Io::Tls(Box::new(s)))),
        }
    }

    /// One connection before a run starts its users, so a certificate problem stops the run at
    /// once with one line instead of failing every user: `Err` for a TLS failure (and for an
    /// `h2` run whose server does not agree to HTTP/2), and, over http too, for a host name
    /// that does not resolve (a typo in the URL is the user's input, not the app failing: it
    /// failed every session as `connect_error`, and bench counted it as `connect:
    /// Uncategorized`). A refused TCP connection is left to the run, which reports it per
    /// session.
    pub async fn probe(&self, ep: &Endpoint, alpn: Alpn) -> Result<(), SetupError> {
        self.resolves(ep).await?;
        if !ep.tls {
            return Ok(());
        }
        match self.connect_within(ep, HANDSHAKE_TIMEOUT).await {
            Ok(s) if alpn == Alpn::H2 && s.alpn() != Some(b"h2") => {
                Err(SetupError::NoH2(ep.authority()))
            }
            Ok(_) | Err(DialError::Connect { .. }) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }
}

impl Dialer {
    /// `Err` when `ep`'s host has no address (unless `--resolve` gives it one). A resolver that
    /// does not answer within [`HANDSHAKE_TIMEOUT`] is left to the run, as a refused connect.
    async fn resolves(&self, ep: &Endpoint) -> Result<(), SetupError> {
        let overridden = (self.resolve.iter())
            .any(|r| r.port == ep.port && r.host.eq_ignore_ascii_case(&ep.host));
        if overridden {
            return Ok(());
        }
        let unresolved = |reason: String| SetupError::Unresolved {
            host: ep.host.clone(),
            port: ep.port,
            reason,
        };
        match tokio::time::timeout(HANDSHAKE_TIMEOUT, tokio::net::lookup_host(ep.authority())).await
        {
            Ok(Ok(mut addrs)) => match addrs.next() {
                Some(_) => Ok(()),
                None => Err(unresolved("no address".into())),
            },
            Ok(Err(e)) => Err(unresolved(
                (e.to_string())
                    .trim_start_matches("failed to lookup address information: ")
                    .to_string(),
            )),
            Err(_) => Ok(()),
        }
    }
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

/// A client TCP socket that re-arms quick ACKs before a read that follows received data (see
/// the module docs); TLS runs on top of it, so TLS connections get the same timing.
pub struct Tcp {
    tcp: TcpStream,
    /// Data arrived since the last quick ACK.
    rearm: bool,
}

impl AsyncRead for Tcp {
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

impl AsyncWrite for Tcp {
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

/// A connection to the target, plain or TLS, with quick ACKs either way. Used as is by WebSocket
/// clients and `h1`, and through [`TokioIo`] by hyper.
pub struct Stream(Io);

enum Io {
    Plain(Tcp),
    /// Boxed: a TLS session is a few KB, and most runs are plain.
    Tls(Box<TlsStream<Tcp>>),
}

impl Stream {
    #[cfg(test)]
    fn tcp(&self) -> &Tcp {
        match &self.0 {
            Io::Plain(t) => t,
            Io::Tls(s) => s.get_ref().0,
        }
    }

    /// Forgets that data arrived, so the next read does not quick-ACK (`h1` calls it after
    /// sending a request: a response that arrives in one read then costs no extra syscall).
    pub fn settle(&mut self) {
        match &mut self.0 {
            Io::Plain(t) => t.rearm = false,
            Io::Tls(s) => s.get_mut().0.rearm = false,
        }
    }

    /// The protocol the TLS handshake agreed on (ALPN), if any.
    pub fn alpn(&self) -> Option<&[u8]> {
        match &self.0 {
            Io::Plain(_) => None,
            Io::Tls(s) => s.get_ref().1.alpn_protocol(),
        }
    }
}

/// Forwards one `AsyncRead`/`AsyncWrite` call to the plain or TLS stream.
macro_rules! both {
    ($self:ident, $s:ident => $e:expr) => {
        match &mut $self.get_mut().0 {
            Io::Plain($s) => {
                let $s = Pin::new($s);
                $e
            }
            Io::Tls($s) => {
                let $s = Pin::new(&mut **$s);
                $e
            }
        }
    };
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        both!(self, s => s.poll_read(cx, buf))
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        both!(self, s => s.poll_write(cx, buf))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        both!(self, s => s.poll_flush(cx))
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        both!(self, s => s.poll_shutdown(cx))
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        both!(self, s => s.poll_write_vectored(cx, bufs))
    }

    fn is_write_vectored(&self) -> bool {
        match &self.0 {
            Io::Plain(t) => t.is_write_vectored(),
            Io::Tls(s) => s.is_write_vectored(),
        }
    }
}

impl Connection for Stream {
    fn connected(&self) -> Connected {
        Connected::new()
    }
}

/// hyper-util's pooled client connector over a run's [`Dialer`] (used by `surge record`
/// upstream): http:// and https:// URIs.
#[derive(Clone, Default)]
pub struct Connector(pub Arc<Dialer>);

impl tower_service::Service<Uri> for Connector {
    type Response = TokioIo<Stream>;
    type Error = io::Error;
    type Future = Pin<Box<dyn Future<Output = io::Result<TokioIo<Stream>>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        let dialer = self.0.clone();
        Box::pin(async move {
            let ep = Endpoint::from_uri(&uri)
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
            Ok(TokioIo::new(dialer.connect(&ep).await?))
        })
    }
}

/// Opens a WebSocket (`ws://` or `wss://` request) through `dialer`: `surge record`'s upstream side.
pub async fn ws_connect(
    dialer: &Dialer,
    req: tungstenite::handshake::client::Request,
) -> Result<WebSocketStream<Stream>, tungstenite::Error> {
    let ep = Endpoint::from_uri(req.uri())
        .map_err(|e| tungstenite::Error::Io(io::Error::new(io::ErrorKind::InvalidInput, e)))?;
    let stream = dialer.connect(&ep).await.map_err(io::Error::from)?;
    let (ws, _) = tokio_tungstenite::client_async(req, stream).await?;
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
        let ep = Endpoint {
            host: "127.0.0.1".into(),
            port: addr.port(),
            tls: false,
        };
        let mut c = Dialer::default().connect(&ep).await.unwrap();
        assert!(c.tcp().tcp.nodelay().unwrap());
        for _ in 0..3 {
            c.write_all(b"ping").await.unwrap();
            let mut got = [0u8; 8];
            c.read_exact(&mut got).await.unwrap();
            assert_eq!(&got, b"headbody");
        }
        server.await.unwrap();
    }
}
