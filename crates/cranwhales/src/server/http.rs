//! The accept loop: hyper HTTP/1.1 connections with a cap on open connections, a limit on header
//! size (431 beyond it) and a timeout for reading request heads (slow or idle clients are dropped),
//! so no client can tie up the server. Shuts down gracefully.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::ConnectInfo;
use axum::Router;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::{watch, Semaphore};
use tower::ServiceExt;

/// Per-connection limits.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Connections open at once; further ones wait in the kernel's backlog.
    pub max_connections: usize,
    /// Time allowed to send a request head (also closes idle keep-alive connections).
    pub header_timeout: Duration,
    /// Largest request head in bytes (at least 8192).
    pub max_header_bytes: usize,
}

/// Serves `router` on `listener` until `shutdown` resolves, then lets open requests finish.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: Limits,
    shutdown: impl Future<Output = ()>,
) {
    let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let (stop_tx, stop_rx) = watch::channel(false);
    tokio::pin!(shutdown);
    loop {
        let slot = tokio::select! {
            s = slots.clone().acquire_owned() => s.expect("semaphore never closed"),
            _ = &mut shutdown => break,
        };
        let (stream, addr) = tokio::select! {
            r = listener.accept() => match r {
                Ok(c) => c,
                Err(e) => {
                    // Out of file descriptors and the like: back off instead of spinning.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = &mut shutdown => break,
        };
        let _ = stream.set_nodelay(true);
        let router = router.clone();
        let mut stop = stop_rx.clone();
        tokio::spawn(async move {
            let _slot = slot;
            let svc = hyper::service::service_fn(move |mut req: hyper::Request<Incoming>| {
                req.extensions_mut().insert(ConnectInfo::<SocketAddr>(addr));
                router.clone().oneshot(req)
            });
            let conn = http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(limits.header_timeout)
                .max_buf_size(limits.max_header_bytes.max(8192))
                .serve_connection(TokioIo::new(stream), svc);
            tokio::pin!(conn);
            tokio::select! {
                _ = conn.as_mut() => {}
                _ = stop.changed() => {
                    conn.as_mut().graceful_shutdown();
                    let _ = tokio::time::timeout(Duration::from_secs(5), conn).await;
                }
            }
        });
    }
    let _ = stop_tx.send(true);
}
