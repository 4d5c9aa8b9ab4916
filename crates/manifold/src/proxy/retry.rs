//! Getting a request to a worker: the leased worker's connection (kept-alive or new), one try,
//! and the two cases where a request is sent to a worker once more instead of a 502: a refused
//! connect, and a kept-alive connection that closed before any byte of an answer
//! ([`unanswered`] states the rule).

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::{Request, Response};

use super::{unavailable, within, ProxyBody};
use crate::pool::{Lease, Pool, Replace};
use crate::upstream::{self, UpBody};

/// One try of a request on a worker connection, bounded by `--request-timeout`.
pub(super) enum Attempt {
    /// The worker's response head arrived (on this connection).
    Answered(Response<Incoming>, upstream::Conn),
    /// No connection, or it failed before a response head.
    Failed(upstream::UpstreamError),
    /// No response head within `--request-timeout`.
    TimedOut,
}

/// Sends `req` on `conn` (if there is one), at most `limit` (zero: no limit) for the head.
pub(super) async fn attempt(
    conn: Result<upstream::Conn, upstream::UpstreamError>,
    req: Request<UpBody>,
    limit: Duration,
) -> Attempt {
    match conn {
        Ok(mut c) => match within(limit, upstream::send(&mut c, req)).await {
            Some(Ok(r)) => Attempt::Answered(r, c),
            Some(Err(e)) => Attempt::Failed(e.into()),
            None => Attempt::TimedOut,
        },
        Err(e) => Attempt::Failed(e),
    }
}

/// The retry rule for a kept-alive (pooled) connection: a request is sent once more, to a
/// worker picked afresh on a new connection, only when (1) it went out on a pooled connection,
/// (2) that connection failed while writing it or closed before any byte of an answer (hyper's
/// "incomplete message", "canceled" or "closed"; never a timeout or a bad answer), and (3) the
/// request has no body, so it can be sent again whole. Such a connection died idle (its worker
/// exited, or closed it) in the moment before it was used; the worker answered nothing, so
/// this is as safe to retry as a refused connect. Anything else is a 502.
pub(super) fn unanswered(e: &upstream::UpstreamError) -> bool {
    matches!(e, upstream::UpstreamError::Http(h)
        if h.is_incomplete_message() || h.is_canceled() || h.is_closed())
}

/// The empty body a bodiless request is sent again with.
pub(super) fn no_body() -> UpBody {
    http_body_util::Empty::<Bytes>::new()
        .map_err(|n| match n {})
        .boxed()
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
