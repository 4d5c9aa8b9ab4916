//! The accept loop: one hyper connection task per client, graceful drain on shutdown.
//!
//! Invariant: after the shutdown future resolves no new connection is accepted, and [`serve`]
//! returns once every accepted request has been answered or the grace time passed.
//!
//! Limits against clients: at most `--max-connections` open client connections, every accepted
//! one counted (silent, mid-request, idle keep-alive, WebSocket); one more gets a prompt 503 and
//! is closed, so file descriptors never run out. At most [`REFUSING`] such answers are being
//! written at once (each for at most 1 s); a connection beyond those is closed at once, so a
//! flood of connections holds at most `--max-connections` + [`REFUSING`] sockets. The check and
//! the count happen in the one accept task, so the limit is exact however many connections
//! arrive at once (tests/it/limits.rs: `a_burst_of_first_requests_keeps_the_limits`). A connection's first byte must arrive within
//! `--header-timeout` of accept (one that sends nothing is closed, so silent sockets cannot hold
//! the places), and a request head within `--header-timeout` of its first byte (a client
//! trickling header bytes is cut).

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::router::Router;

/// Connections being told 503 (`--max-connections` reached) at most at once.
pub const REFUSING: usize = 64;

/// Accepts connections until `shutdown` resolves, then waits for in-flight requests, at most
/// `grace()` (read then, as a reload may have changed it; a hung client or worker cannot hold
/// the stop up); returns what is left of it.
pub async fn serve(
    listener: TcpListener,
    proxy: Arc<Router>,
    shutdown: impl Future<Output = ()>,
    grace: impl FnOnce() -> Duration,
    limits: Limits,
) -> Duration {
    let graceful = GracefulShutdown::new();
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .keep_alive(true)
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout);
    let open = Arc::new(AtomicUsize::new(0));
    let refusing = Arc::new(AtomicUsize::new(0));
    tokio::pin!(shutdown);
    let mut backoff = Duration::from_millis(5);
    loop {
        let (stream, client) = tokio::select! {
            r = listener.accept() => match r {
                Ok(pair) => { backoff = Duration::from_millis(5); pair }
                Err(e) => {
                    // Usually out of file descriptors: wait for some to close.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_secs(1));
                    continue;
                }
            },
            _ = &mut shutdown => break,
        };
        if open.load(Ordering::Relaxed) >= limits.max_connections {
            if refusing.load(Ordering::Relaxed) < REFUSING {
                let guard = Open::new(&refusing);
                tokio::spawn(async move {
                    refuse(stream, limits.max_connections).await;
                    drop(guard);
                });
            }
            continue;
        }
        let guard = Open::new(&open);
        let _ = stream.set_nodelay(true);
        let proxy = proxy.clone();
        let builder = builder.clone();
        let watcher = graceful.watcher();
        let header_timeout = limits.header_timeout;
        tokio::spawn(async move {
            // hyper's header timer starts only once the connection has sent a byte (its
            // version sniffing waits for one with no limit), so a connection that sends nothing
            // would hold a --max-connections place for ever: it gets --header-timeout from
            // accept to send its first byte.
            let mut one = [0u8; 1];
            match tokio::time::timeout(header_timeout, stream.peek(&mut one)).await {
                Ok(Ok(n)) if n > 0 => {}
                _ => {
                    tracing::debug!(%client, "connection sent nothing within --header-timeout; closed");
                    return;
                }
            }
            let svc = service_fn(move |req| {
                let proxy = proxy.clone();
                async move { Ok::<_, std::convert::Infallible>(proxy.handle(req, client).await) }
            });
            let conn = builder.serve_connection_with_upgrades(TokioIo::new(stream), svc);
            if let Err(e) = watcher.watch(conn.into_owned()).await {
                tracing::debug!(error = %e, "client connection ended");
            }
            drop(guard);
        });
    }
    drop(listener);
    tracing::info!("stopped accepting; finishing in-flight requests");
    let grace = grace();
    let start = tokio::time::Instant::now();
    if tokio::time::timeout(grace, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!(grace = ?grace, "requests still in flight after --stop-timeout: stopping workers");
    }
    grace.saturating_sub(start.elapsed())
}

/// Limits on what clients may hold (see the module docs).
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// `--max-connections`.
    pub max_connections: usize,
    /// `--header-timeout`.
    pub header_timeout: Duration,
}

/// One open client connection, counted until dropped.
struct Open(Arc<AtomicUsize>);

impl Open {
    fn new(n: &Arc<AtomicUsize>) -> Open {
        n.fetch_add(1, Ordering::Relaxed);
        Open(n.clone())
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Answers a connection beyond `--max-connections` with 503 and closes it, bounded in time.
async fn refuse(mut stream: TcpStream, max: usize) {
    let body = format!("manifold: too many connections (--max-connections {max})\n");
    let head = format!(
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nRetry-After: 1\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = tokio::time::timeout(Duration::from_secs(1), async {
        stream.write_all(head.as_bytes()).await?;
        stream.shutdown().await?;
        // Read what the client sent so closing does not reset the connection before it read
        // the answer.
        let mut sink = [0u8; 4096];
        while stream.read(&mut sink).await? > 0 {}
        Ok::<_, std::io::Error>(())
    })
    .await;
}
