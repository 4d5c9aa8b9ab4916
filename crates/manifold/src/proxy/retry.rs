//! Getting a request to a worker: the leased worker's connection (kept-alive or new), one try,
//! and the cases where a request is sent to a worker once more instead of a 502: a refused
//! connect (to another worker), a kept-alive connection that closed before any byte of the
//! request was written or, for a GET or HEAD without a body, before any byte of an answer (to
//! the same worker, on a new connection: [`attempt`], [`on_same_worker`]), and a GET or HEAD
//! without a body whose worker died (or closed the connection) before sending any byte of an
//! answer on a new connection (to another worker: [`send_retrying`]).

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
/// answer is a 502 (the worker may have acted on it, or died of it), unless it is a GET or HEAD
/// without a body ([`send_retrying`]).
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
///
/// - on a kept-alive connection, when none of it was written (see [`attempt`]), or when it is a
///   GET or HEAD without a body and got no byte of an answer: to the same worker on a new
///   connection, which is not replaced first ([`on_same_worker`]). The usual cause is benign:
///   the worker closed the idle connection (gunicorn after 2 s, uvicorn after 5 s) just as the
///   request was written on it, and a sticky session (a Shiny app's) lives only on that worker.
/// - on a new connection, when it is a GET or HEAD without a body and its worker died (or closed
///   the connection) before any byte of an answer: to a worker picked afresh (that worker is
///   replaced first, so the second try goes to another).
///
/// A GET or HEAD without a body is idempotent, so a second try may answer it; a request with a
/// body or another method that was written is never sent twice, since the worker may have acted
/// on it. A request reaches two workers at most (a worker that refused or reset a new connection
/// did not read it), so one that crashes every worker it reaches kills at most two.
///
/// Returns the lease of the worker that answered (or failed), the attempt, and whether it was
/// sent again (the access log's `retried`; counted in `connect_retries`).
pub(super) async fn send_retrying(
    pool: &Arc<Pool>,
    lease: Lease,
    conn: Result<upstream::Conn, upstream::UpstreamError>,
    pooled: bool,
    req: Request<UpBody>,
    limit: Duration,
) -> Result<(Lease, Attempt, bool), Response<ProxyBody>> {
    let again = idempotent_copy(&req);
    let worker = lease.worker;
    match attempt(conn, req, limit).await {
        Attempt::Failed(e, Some(unsent)) if pooled => {
            tracing::warn!(worker, error = %e, "kept-alive connection closed before the request was written; retrying once on a new connection to the same worker");
            // The lease's idle connection was taken, so this connects afresh to its worker.
            on_same_worker(pool, lease, unsent, limit).await
        }
        Attempt::Failed(e, _) if pooled && again.is_some() => {
            tracing::warn!(worker, error = %e, "worker sent no byte of an answer to a GET/HEAD on a kept-alive connection (it may have closed it as idle); retrying once on a new connection to the same worker");
            on_same_worker(pool, lease, again.expect("checked"), limit).await
        }
        Attempt::Failed(e, _) if again.is_some() => {
            tracing::warn!(worker, error = %e, "worker sent no byte of an answer to a GET/HEAD on a new connection; retrying once on a worker picked afresh");
            // Dead (its exit may not be noticed yet) or dropping requests: out of rotation, so
            // the second try goes to another worker.
            pool.replace(worker, Replace::NoAnswer);
            pool.count_retry();
            drop(lease);
            let l = pool.acquire(None).await.map_err(|e| unavailable(e, 1))?;
            let (l, conn, _) = connect_leased(pool, l, false).await?;
            let sent = attempt(conn, again.expect("checked"), limit).await;
            Ok((l, last(sent), true))
        }
        Attempt::Failed(e, _) => Ok((lease, Attempt::Failed(e, None), false)),
        other => Ok((lease, other, false)),
    }
}

/// The second try of [`send_retrying`] after a kept-alive connection failed: `req` to the same
/// worker on a new connection, its worker not replaced first.
///
/// If the worker refuses the new connection it exited: it is replaced and another worker takes
/// the request ([`connect_leased`]). If it resets the new connection before any byte of an
/// answer, or closes it before the request was written, it is exiting too (a worker that died on
/// the kept-alive connection closes that connection a moment before its listening socket, and
/// the new connection waiting unaccepted in that socket's queue is reset): it did not read the
/// request, so it is replaced and a worker picked afresh takes the request (a GET/HEAD, or one
/// handed back unsent). If it read the GET/HEAD and closed the new connection with no byte of an
/// answer, it is broken: it is replaced and the answer is a 502 (no third try).
async fn on_same_worker(
    pool: &Arc<Pool>,
    lease: Lease,
    req: Request<UpBody>,
    limit: Duration,
) -> Result<(Lease, Attempt, bool), Response<ProxyBody>> {
    let worker = lease.worker;
    let again = idempotent_copy(&req);
    let (l, conn, _) = connect_leased(pool, lease, false).await?;
    if l.worker != worker {
        // Refused: replaced and counted by `connect_leased`; the request goes to `l`'s worker.
        let sent = attempt(conn, req, limit).await;
        return Ok((l, last(sent), true));
    }
    // Counted once the retry has its connection (a test waits on it to let the worker go on).
    pool.count_retry();
    let sent = attempt(conn, req, limit).await;
    if let Attempt::Failed(e, unsent) = sent {
        if unsent.is_some() || (again.is_some() && reset(&e)) {
            tracing::warn!(worker, error = %e, "worker reset (or closed unused) its new connection before any byte of an answer: it is exiting; replacing it, the request goes to a worker picked afresh");
            // As after a refused connect, which this is in effect (counted above).
            pool.replace(worker, Replace::NoAnswer);
            drop(l);
            let l = pool.acquire(None).await.map_err(|e| unavailable(e, 1))?;
            let (l, conn, _) = connect_leased(pool, l, false).await?;
            let sent = attempt(conn, unsent.or(again).expect("checked"), limit).await;
            return Ok((l, last(sent), true));
        }
        if again.is_some() {
            tracing::warn!(worker, error = %e, "worker sent no byte of an answer to a GET/HEAD on a new connection either; replacing it");
            pool.replace(worker, Replace::NoAnswer);
        }
        return Ok((l, Attempt::Failed(e, None), true));
    }
    Ok((l, sent, true))
}

/// The last try's outcome: a failed one is not sent again, so it keeps no request.
fn last(sent: Attempt) -> Attempt {
    match sent {
        Attempt::Failed(e, _) => Attempt::Failed(e, None),
        other => other,
    }
}

/// Whether the worker reset the connection (or it broke under a write): an I/O error of that
/// kind anywhere in `e`'s chain.
fn reset(e: &upstream::UpstreamError) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(s) = source {
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            use std::io::ErrorKind::{BrokenPipe, ConnectionReset};
            return matches!(io.kind(), ConnectionReset | BrokenPipe);
        }
        source = s.source();
    }
    false
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
