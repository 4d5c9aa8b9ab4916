//! The accept loop: hyper HTTP/1.1 connections behind the request-head gate ([`super::gate`]),
//! with a cap on open connections, so no client can tie up the server. On shutdown it stops
//! accepting, lets every request in flight (SSE progress streams included) finish within the
//! drain timeout, then cuts what is left.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::extract::ConnectInfo;
use axum::http::{header, HeaderValue};
use axum::response::IntoResponse;
use axum::Router;
use hyper::body::{Frame, Incoming, SizeHint};
use hyper::server::conn::http1;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::sync::{watch, Semaphore};
use tokio::task::JoinSet;
use tower::ServiceExt;

use super::error::ApiError;
use super::gate::{GateLimits, Gated, Shared, Verdict, MAX_HEADERS};

/// Per-connection limits and the shutdown grace period.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Connections open at once; further ones wait in the kernel's backlog.
    pub max_connections: usize,
    /// Time allowed to send a request head (also closes idle keep-alive connections).
    pub header_timeout: Duration,
    /// Largest request head in bytes.
    pub max_header_bytes: usize,
    /// Time a response may wait for the client to accept more bytes.
    pub write_timeout: Duration,
    /// After shutdown, how long requests in flight may take to finish before they are cut.
    pub drain_timeout: Duration,
}

/// How a drain ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Drained {
    /// Connections still open when the signal came.
    pub open: usize,
    /// Of those, connections cut at the drain timeout.
    pub cut: usize,
}

/// Serves `router` on `listener` until `shutdown` resolves, then drains (see the module doc).
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: Limits,
    shutdown: impl Future<Output = ()>,
) -> Drained {
    let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut conns = JoinSet::new();
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
        while conns.try_join_next().is_some() {}
        let _ = stream.set_nodelay(true);
        let conn = connection(stream, addr, router.clone(), limits, stop_rx.clone());
        conns.spawn(async move {
            let _slot = slot;
            conn.await;
        });
    }
    drop(listener);
    while conns.try_join_next().is_some() {}
    let open = conns.len();
    let _ = stop_tx.send(true);
    let finished = tokio::time::timeout(limits.drain_timeout, async {
        while conns.join_next().await.is_some() {}
    })
    .await;
    let cut = if finished.is_ok() { 0 } else { conns.len() };
    conns.shutdown().await;
    Drained { open, cut }
}

/// One client connection, until it closes or (after `stop`) its request in flight is answered.
async fn connection(
    stream: tokio::net::TcpStream,
    addr: SocketAddr,
    router: Router,
    limits: Limits,
    mut stop: watch::Receiver<bool>,
) {
    let shared = Arc::new(Shared::default());
    let gate = GateLimits {
        max_header_bytes: limits.max_header_bytes,
        header_timeout: limits.header_timeout,
        write_timeout: limits.write_timeout,
    };
    let io = TokioIo::new(Gated::new(stream, shared.clone(), gate));
    let svc = hyper::service::service_fn(move |mut req: hyper::Request<Incoming>| {
        let verdict = shared.next_verdict();
        let shared = shared.clone();
        let router = router.clone();
        async move {
            let (mut resp, close) = match verdict {
                Verdict::Refuse(status, message) => {
                    (ApiError::new(status, message).into_response(), true)
                }
                Verdict::Pass { close } => {
                    req.extensions_mut().insert(ConnectInfo::<SocketAddr>(addr));
                    let resp = router.oneshot(req).await.unwrap_or_else(|e| match e {});
                    (resp, close)
                }
            };
            if close {
                resp.headers_mut()
                    .insert(header::CONNECTION, HeaderValue::from_static("close"));
            }
            Ok::<_, std::convert::Infallible>(resp.map(|inner| Tracked { inner, shared }))
        }
    });
    // The gate has checked every head already; hyper's own limits are a backstop only.
    let conn = http1::Builder::new()
        .header_read_timeout(None)
        .max_headers(MAX_HEADERS)
        .max_buf_size((limits.max_header_bytes + 1).max(8192))
        .serve_connection(io, svc);
    tokio::pin!(conn);
    tokio::select! {
        _ = conn.as_mut() => {}
        _ = stop.changed() => {
            conn.as_mut().graceful_shutdown();
            let _ = conn.await;
        }
    }
}

/// A response body that tells the gate when it has been sent (dropped), so the header timeout
/// never runs while a response is still streaming.
struct Tracked {
    inner: axum::body::Body,
    shared: Arc<Shared>,
}

impl Drop for Tracked {
    fn drop(&mut self) {
        self.shared.response_done();
    }
}

impl hyper::body::Body for Tracked {
    type Data = axum::body::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        std::pin::Pin::new(&mut self.inner).poll_frame(cx)
    }
    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }
    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
