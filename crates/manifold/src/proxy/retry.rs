//! Getting a request to a worker: the leased worker's connection (kept-alive or new), one try,
//! and the two cases where a request is sent to a worker once more instead of a 502: a refused
//! connect, and a kept-alive connection that closed before any byte of the request was written
//! ([`attempt`] states the rule).

use std::sync::Arc;
use std::time::Duration;

use hyper::body::Incoming;
use hyper::{Request, Response};

use super::{unavailable, within, ProxyBody};
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
/// untouched, body included; it is then sent once more, to a worker picked afresh on a new
/// connection, as safe as after a refused connect. A request that was written, even in part,
/// and got no answer is a 502 (the worker may have acted on it, or died of it).
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
