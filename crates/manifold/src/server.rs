//! The accept loop: one hyper connection task per client, graceful drain on shutdown.
//!
//! Invariant: after the shutdown future resolves no new connection is accepted, and [`serve`]
//! returns only when every accepted request has been answered.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;

use crate::proxy::Proxy;

/// Accepts connections until `shutdown` resolves, then waits for in-flight requests, at most
/// `grace` (a hung client or worker cannot hold the stop up); returns what is left of `grace`.
pub async fn serve(
    listener: TcpListener,
    proxy: Arc<Proxy>,
    shutdown: impl Future<Output = ()>,
    grace: Duration,
) -> Duration {
    let graceful = GracefulShutdown::new();
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder.http1().keep_alive(true);
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
        let _ = stream.set_nodelay(true);
        let proxy = proxy.clone();
        let svc = service_fn(move |req| {
            let proxy = proxy.clone();
            async move { Ok::<_, std::convert::Infallible>(proxy.handle(req, client).await) }
        });
        let conn = builder.serve_connection_with_upgrades(TokioIo::new(stream), svc);
        let conn = graceful.watch(conn.into_owned());
        tokio::spawn(async move {
            if let Err(e) = conn.await {
                tracing::debug!(error = %e, "client connection ended");
            }
        });
    }
    drop(listener);
    tracing::info!("stopped accepting; finishing in-flight requests");
    let start = tokio::time::Instant::now();
    if tokio::time::timeout(grace, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!(grace = ?grace, "requests still in flight after --stop-timeout: stopping workers");
    }
    grace.saturating_sub(start.elapsed())
}
