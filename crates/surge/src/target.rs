//! The replay target: base URL parsing, one keep-alive HTTP/1 connection per simulated user (hyper's
//! connection API, no pool, over `net`'s no-delay, quick-ACK sockets, plain or TLS), and a per-user
//! cookie jar.

use crate::failure::Cause;
use crate::net;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper::{Request, Response, Uri};
use hyper_util::rt::TokioIo;
use std::sync::Arc;

/// Where requests go: `http(s)://host:port/prefix`, and how to connect there.
#[derive(Debug, Clone)]
pub struct Target {
    /// The URL's `host[:port]` (port only when written, as browsers send Host).
    pub authority: String,
    /// Path prefix without trailing slash ("" for the root).
    pub base_path: String,
    /// Host, port and TLS or not.
    pub endpoint: net::Endpoint,
    /// The run's connection settings (TLS config, `--resolve`), shared by every connection.
    pub dialer: Arc<net::Dialer>,
}

/// A target URL that is not one; starts with the URL (callers put the flag in front).
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    /// Not a URL at all.
    #[error("{url}: not a URL ({err})")]
    NotUrl {
        /// As given.
        url: String,
        /// hyper's reason.
        err: hyper::http::uri::InvalidUri,
    },
    /// A URL surge cannot connect to (scheme, host).
    #[error("{url}: {err}")]
    Url {
        /// As given.
        url: String,
        /// What is wrong.
        err: net::SetupError,
    },
}

impl Target {
    /// Parses `http(s)://host[:port][/prefix]`, connecting without TLS settings (see
    /// [`Target::with_tls`]). Errors start with the URL; callers put the flag it came from in front.
    pub fn parse(url: &str) -> Result<Target, TargetError> {
        let uri: Uri = url.parse().map_err(|err| TargetError::NotUrl {
            url: url.to_string(),
            err,
        })?;
        let endpoint = net::Endpoint::from_uri(&uri).map_err(|err| TargetError::Url {
            url: url.to_string(),
            err,
        })?;
        Ok(Target {
            authority: match uri.port_u16() {
                Some(p) => format!("{}:{p}", endpoint.host),
                None => endpoint.host.clone(),
            },
            base_path: uri.path().trim_end_matches('/').to_string(),
            endpoint,
            dialer: Arc::default(),
        })
    }

    /// The target with the run's TLS and `--resolve` flags (one TLS config for the whole run,
    /// offering HTTP/1.1, each handshake bounded by `handshake`); prints the `--insecure` warning.
    pub fn with_tls(
        mut self,
        flags: &net::TlsArgs,
        handshake: std::time::Duration,
    ) -> Result<Target, net::SetupError> {
        let dialer = net::Dialer::new(flags, self.endpoint.tls, net::Alpn::Http1)?
            .with_handshake_timeout(handshake);
        if dialer.insecure() {
            eprintln!(
                "surge: warning: --insecure: the certificate of {} is not verified",
                self.authority
            );
        }
        self.dialer = Arc::new(dialer);
        Ok(self)
    }

    /// One connection before the users start: a TLS failure (expired, unknown issuer, name
    /// mismatch, no answer) is returned as one line instead of failing every session.
    pub async fn probe(&self) -> Result<(), net::SetupError> {
        self.dialer.probe(&self.endpoint, net::Alpn::Http1).await
    }

    /// `http://host:port` or `https://host:port`.
    pub fn origin(&self) -> String {
        let scheme = if self.endpoint.tls { "https" } else { "http" };
        format!("{scheme}://{}", self.authority)
    }

    /// Path + query for a recorded URL (recorded URLs start with '/').
    pub fn path(&self, recorded: &str) -> String {
        if recorded.starts_with('/') {
            format!("{}{recorded}", self.base_path)
        } else {
            format!("{}/{recorded}", self.base_path)
        }
    }

    /// ws:// (wss:// for an https target) URL for a recorded WebSocket path.
    pub fn ws_url(&self, recorded: &str) -> String {
        let scheme = if self.endpoint.tls { "wss" } else { "ws" };
        format!("{scheme}://{}{}", self.authority, self.path(recorded))
    }
}

/// One user's keep-alive connection; reconnects when the server closes it. Dropping it closes the
/// connection, even mid-response.
#[derive(Default)]
pub struct Conn {
    sender: Option<SendRequest<Full<Bytes>>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl Drop for Conn {
    fn drop(&mut self) {
        if let Some(t) = &self.task {
            t.abort();
        }
    }
}

impl Conn {
    /// Sends a request, (re)connecting first if needed.
    pub async fn send(
        &mut self,
        target: &Target,
        req: Request<Full<Bytes>>,
    ) -> Result<Response<hyper::body::Incoming>, Cause> {
        if let Some(s) = &mut self.sender {
            if s.ready().await.is_err() {
                self.sender = None;
            }
        }
        if self.sender.is_none() {
            let tcp = connect(target).await?;
            // A small read-buffer cap keeps thousands of idle keep-alive users cheap: uncapped,
            // hyper grows each buffer towards 400 KB after a large asset (measured 184 KB/user at
            // 10,000 users replaying cranwhales).
            let (sender, conn) = hyper::client::conn::http1::Builder::new()
                .max_buf_size(16 * 1024)
                .handshake(TokioIo::new(tcp))
                .await
                .map_err(|e| handshake_error(target, e))?;
            if let Some(old) = self.task.replace(tokio::spawn(async move {
                let _ = conn.await;
            })) {
                old.abort();
            }
            self.sender = Some(sender);
        }
        let s = self.sender.as_mut().expect("connected above");
        match s.send_request(req).await {
            Ok(r) => Ok(r),
            Err(e) => {
                self.sender = None;
                Err(request_error(target, e))
            }
        }
    }
}

/// A connection to the target (TLS for https): no Nagle delay, quick ACKs (see `net`).
pub async fn connect(target: &Target) -> Result<net::Stream, Cause> {
    target
        .dialer
        .connect(&target.endpoint)
        .await
        .map_err(|e| Cause::ConnectError(e.to_string()))
}

fn handshake_error(target: &Target, e: hyper::Error) -> Cause {
    Cause::ConnectError(format!("HTTP handshake with {}: {e}", target.authority))
}

/// A request that got no response: the connection closed or broke under it.
fn request_error(target: &Target, e: hyper::Error) -> Cause {
    Cause::Closed(format!("request to {}: {e}", target.authority))
}

/// A streaming response (SSE) on a connection of its own, as a browser opens it; dropping it closes
/// the connection.
pub struct Stream {
    /// The response body, read by the player as events arrive.
    pub body: hyper::body::Incoming,
    conn: tokio::task::JoinHandle<()>,
    _sender: SendRequest<Full<Bytes>>,
}

impl Drop for Stream {
    fn drop(&mut self) {
        self.conn.abort();
    }
}

/// Sends one request on a fresh connection and returns the response head plus its body to stream.
pub async fn open_stream(
    target: &Target,
    req: Request<Full<Bytes>>,
) -> Result<(hyper::http::response::Parts, Stream), Cause> {
    let tcp = connect(target).await?;
    let (mut sender, conn) = hyper::client::conn::http1::Builder::new()
        .max_buf_size(16 * 1024)
        .handshake(TokioIo::new(tcp))
        .await
        .map_err(|e| handshake_error(target, e))?;
    let conn = tokio::spawn(async move {
        let _ = conn.await;
    });
    let resp = sender.send_request(req).await;
    let resp = match resp {
        Ok(r) => r,
        Err(e) => {
            conn.abort();
            return Err(request_error(target, e));
        }
    };
    let (parts, body) = resp.into_parts();
    Ok((
        parts,
        Stream {
            body,
            conn,
            _sender: sender,
        },
    ))
}

/// Reads a body to the end; keeps at most `keep` bytes of it (0 = discard). Fails when the server
/// sends nothing for `idle` (a stalled body must not hang a session).
pub async fn read_body(
    body: hyper::body::Incoming,
    keep: usize,
    idle: std::time::Duration,
) -> Result<Vec<u8>, Cause> {
    let mut body = body;
    let mut out = Vec::new();
    loop {
        let frame = match tokio::time::timeout(idle, body.frame()).await {
            Err(_) => {
                return Err(Cause::Timeout(format!(
                    "body stalled for {idle:?} (--message-timeout)"
                )))
            }
            Ok(None) => break,
            Ok(Some(f)) => f,
        };
        let frame = frame.map_err(|e| Cause::Closed(format!("reading body: {e}")))?;
        if let Ok(data) = frame.into_data() {
            if out.len() < keep {
                let take = (keep - out.len()).min(data.len());
                out.extend_from_slice(&data[..take]);
            }
        }
    }
    Ok(out)
}

/// Cookies of one simulated user (name, value), as a browser would keep them for one site.
#[derive(Default, Debug)]
pub struct CookieJar {
    cookies: Vec<(Box<str>, Box<str>)>,
}

impl CookieJar {
    /// Stores every Set-Cookie of a response (an expired or empty cookie is removed).
    pub fn store(&mut self, headers: &hyper::HeaderMap) {
        for v in headers.get_all(hyper::header::SET_COOKIE) {
            let Ok(s) = v.to_str() else { continue };
            let mut parts = s.split(';');
            let Some((name, value)) = parts.next().and_then(|p| p.split_once('=')) else {
                continue;
            };
            let (name, value) = (name.trim(), value.trim());
            let expired = parts.any(|a| {
                let a = a.trim().to_ascii_lowercase();
                a == "max-age=0" || a.starts_with("max-age=-")
            });
            self.cookies.retain(|(n, _)| &**n != name);
            if !expired && !value.is_empty() {
                self.cookies.push((name.into(), value.into()));
            }
        }
    }

    /// Whether a cookie of this name is set (a sign-in checks for its session cookie).
    pub fn has(&self, name: &str) -> bool {
        self.cookies.iter().any(|(n, _)| &**n == name)
    }

    /// The Cookie header value, if any cookie is set.
    pub fn header(&self) -> Option<String> {
        if self.cookies.is_empty() {
            return None;
        }
        let parts: Vec<String> = self
            .cookies
            .iter()
            .map(|(n, v)| format!("{n}={v}"))
            .collect();
        Some(parts.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn target_paths() {
        let t = Target::parse("http://127.0.0.1:3838/app/").unwrap();
        assert_eq!(t.authority, "127.0.0.1:3838");
        assert_eq!(t.path("/websocket/"), "/app/websocket/");
        assert_eq!(
            t.ws_url("/websocket/"),
            "ws://127.0.0.1:3838/app/websocket/"
        );
        let s = Target::parse("https://app.example/x").unwrap();
        assert_eq!(s.authority, "app.example");
        assert_eq!((s.endpoint.port, s.endpoint.tls), (443, true));
        assert_eq!(s.origin(), "https://app.example");
        assert_eq!(s.ws_url("/ws"), "wss://app.example/x/ws");
        assert!(Target::parse("ftp://x/").is_err());
        assert!(Target::parse("nonsense").is_err());
    }

    #[test]
    fn cookie_jar_sets_replaces_and_expires() {
        let mut h = hyper::HeaderMap::new();
        h.append("set-cookie", "a=1; Path=/".parse().unwrap());
        h.append("set-cookie", "b=2".parse().unwrap());
        let mut jar = CookieJar::default();
        jar.store(&h);
        assert_eq!(jar.header().unwrap(), "a=1; b=2");
        let mut h2 = hyper::HeaderMap::new();
        h2.append("set-cookie", "a=; Max-Age=0".parse().unwrap());
        h2.append("set-cookie", "b=3".parse().unwrap());
        jar.store(&h2);
        assert_eq!(jar.header().unwrap(), "b=3");
    }
}
