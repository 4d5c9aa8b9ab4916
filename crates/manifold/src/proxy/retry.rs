//! Getting a request to a worker: the leased worker's connection (kept-alive or new), one try,
//! and the cases where a request is sent to a worker once more instead of a 502: a refused
//! connect (to another worker), a kept-alive connection that closed before any byte of the
//! request was written (to the same worker, on a new connection: [`attempt`] states the rule),
//! and a GET or HEAD without a body whose worker died (or closed the connection) before sending
//! any byte of an answer (to another worker: [`send_retrying`]).

use std::sync::Arc;
use std::time::Duration;

use http_body_util::{BodyExt, Empty};
use hyper::body::Incoming;
use hyper::header;
use hyper::{Method, Request, Response};

use super::{fault, unavailable, within, ProxyBody};
use crate::pool::{Lease, Pool, Replace};
use crate::upstream::{self, UpBody};

/// One try of a request on a worker connection, bounded by `--request-timeout`.
pub(super) enum Attempt {
    /// The worker's response head arrived (on this connection).
    Answered(Response<Incoming>, upstream::Conn),
    /// No connection, or it failed before a response head; with the request when no byte of
    /// it was written (see [`attempt`]).
    Failed(upstream::UpstreamError, Option<Request<UpBody>>),
    /// No response head within `--request-timeout`.
    TimedOut,
}

/// Sends `req` on `conn` (if there is one), at most `limit` (zero: no limit) for the head.
///
/// The retry rule of a kept-alive connection: when it closed (its worker exited, or closed the
/// idle connection) before any byte of the request was written, hyper hands the request back,
/// untouched, body included; it is then sent once more, to the same worker on a new
/// connection, as safe as after a refused connect. The same worker, because it is usually well
/// (it closed an idle connection) and a sticky session (a Shiny app's) lives only there; if it
/// refuses the new connection it exited, and the request goes to another worker as after any
/// refused connect ([`connect_leased`]). A request that was written, even in part, and got no
/// answer is a 502 (the worker may have acted on it, or died of it).
pub(super) async fn attempt(
    conn: Result<upstream::Conn, upstream::UpstreamError>,
    req: Request<UpBody>,
    limit: Duration,
) -> Attempt {
    match conn {
        Ok(mut c) => match within(limit, upstream::try_send(&mut c, req)).await {
            Some(Ok(r)) => Attempt::Answered(r, c),
            Some(Err(u)) => Attempt::Failed(u.error.into(), u.request),
            None => Attempt::TimedOut,
        },
        Err(e) => Attempt::Failed(e, None),
    }
}

/// A connection to the leased worker: its idle one (`true`: pooled), or a new one. A worker
/// that refuses a new connection (dead or dying; nothing was sent) is replaced and the request
/// goes once to another worker instead of a 502.
pub(super) async fn connect_leased(
    pool: &Arc<Pool>,
    mut lease: Lease,
    upgrade: bool,
) -> Result<(Lease, Result<upstream::Conn, upstream::UpstreamError>, bool), Response<ProxyBody>> {
    // An upgraded connection is never reused, so upgrades get a fresh one.
    let pooled = if upgrade { None } else { lease.take_conn() };
    if let Some(mut c) = pooled {
        // An idle connection the worker closed (or left unusable) is replaced, not a 502.
        if c.ready().await.is_ok() {
            fault::hold(lease.port, &c).await;
            return Ok((lease, Ok(c), true));
        }
    }
    match upstream::connect(lease.port).await {
        Err(e @ upstream::UpstreamError::Connect { .. }) => {
            tracing::warn!(worker = lease.worker, error = %e, "worker refused the connection; trying another");
            pool.replace(lease.worker, Replace::Refused);
            drop(lease);
            let lease = pool.acquire(None).await.map_err(|e| unavailable(e, 1))?;
            let conn = upstream::connect(lease.port).await;
            Ok((lease, conn, false))
        }
        conn => Ok((lease, conn, false)),
    }
}

/// Sends `req` on `conn` (see [`attempt`]) and, at most once, sends it again instead of a 502:
/// when none of it was written on a kept-alive connection, to the same worker on a new
/// connection (its session stays there; see [`attempt`]); or, when it is a GET or HEAD without
/// a body and its worker died (or closed the connection) before any byte of an answer, to a
/// worker picked afresh (that worker is replaced, so the second try goes to another). Those are
/// idempotent, so a second worker may answer; a request with a body or another method that was
/// written is never sent twice, since the worker may have acted on it. A request that crashes
/// every worker it reaches kills at most two.
///
/// Returns the lease of the worker that answered (or failed), the attempt, and whether it was
/// sent again (the access log's `retried`).
pub(super) async fn send_retrying(
    pool: &Arc<Pool>,
    lease: Lease,
    conn: Result<upstream::Conn, upstream::UpstreamError>,
    pooled: bool,
    req: Request<UpBody>,
    limit: Duration,
) -> Result<(Lease, Attempt, bool), Response<ProxyBody>> {
    let again = idempotent_copy(&req);
    let (lease, unsent) = match attempt(conn, req, limit).await {
        Attempt::Failed(e, Some(unsent)) if pooled => {
            tracing::warn!(worker = lease.worker, error = %e, "kept-alive connection closed before the request was written; retrying once on a new connection to the same worker");
            pool.count_retry();
            // The lease's idle connection was taken, so this connects afresh to its worker.
            (lease, unsent)
        }
        Attempt::Failed(e, _) if again.is_some() => {
            tracing::warn!(worker = lease.worker, error = %e, "worker sent no byte of an answer to a GET/HEAD; retrying once on a worker picked afresh");
            // Dead (its exit may not be noticed yet) or dropping requests: out of rotation, so
            // the second try goes to another worker.
            pool.replace(lease.worker, Replace::NoAnswer);
            pool.count_retry();
            drop(lease);
            let l = pool.acquire(None).await.map_err(|e| unavailable(e, 1))?;
            (l, again.expect("checked"))
        }
        Attempt::Failed(e, _) => return Ok((lease, Attempt::Failed(e, None), false)),
        other => return Ok((lease, other, false)),
    };
    let (l, conn, _) = connect_leased(pool, lease, false).await?;
    let sent = match attempt(conn, unsent, limit).await {
        Attempt::Failed(e, _) => Attempt::Failed(e, None),
        other => other,
    };
    Ok((l, sent, true))
}

/// A copy of a GET or HEAD without a body (and not an upgrade), to send again.
fn idempotent_copy(req: &Request<UpBody>) -> Option<Request<UpBody>> {
    let h = req.headers();
    let bodiless = h
        .get(header::CONTENT_LENGTH)
        .is_none_or(|v| v.as_bytes() == b"0")
        && !h.contains_key(header::TRANSFER_ENCODING);
    let idempotent = matches!(*req.method(), Method::GET | Method::HEAD);
    if !idempotent || !bodiless || h.contains_key(header::UPGRADE) {
        return None;
    }
    let mut copy = Request::new(Empty::new().map_err(|n| match n {}).boxed());
    *copy.method_mut() = req.method().clone();
    *copy.uri_mut() = req.uri().clone();
    *copy.version_mut() = req.version();
    *copy.headers_mut() = h.clone();
    Some(copy)
}
