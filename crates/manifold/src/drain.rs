//! Draining: what a host does between SIGTERM and stopping, so a load balancer can move traffic
//! away without cutting the sessions it holds.
//!
//! On the first signal the pool is marked draining: `/__manifold__/status` answers 404 (HAProxy's
//! `http-check disable-on-404` then sends no new sessions here but keeps sticky ones), requests of
//! new sessions get 503, and requests of existing sessions (a sticky cookie naming a ready worker)
//! and open WebSockets go on. The drain ends once nothing has been in flight or queued for
//! [`QUIET`], or when `--drain-timeout` passes; then the server stops accepting and shuts down as
//! before (in-flight HTTP requests finish, workers stop, open WebSockets close).

use std::time::Duration;

use tokio::time::Instant;

use crate::pool::Pool;

/// How long the pool must stay idle before the drain ends early: covers the gap between a
/// session's page load and its WebSocket, when nothing of it is in flight.
pub const QUIET: Duration = Duration::from_secs(1);

const POLL: Duration = Duration::from_millis(50);

/// Marks `pool` draining, then waits until it has been idle for [`QUIET`] or `timeout` passed
/// (returns at once for a zero timeout).
pub async fn drain(pool: &Pool, timeout: Duration) {
    pool.start_draining();
    if timeout.is_zero() {
        return;
    }
    tracing::info!(timeout = ?timeout, "draining: existing sessions go on, new ones get 503");
    let deadline = Instant::now() + timeout;
    let mut quiet_since = None;
    loop {
        let now = Instant::now();
        if now >= deadline {
            let left = pool.pending();
            tracing::warn!(
                in_flight = left,
                "drain timeout: stopping with sessions still open"
            );
            return;
        }
        if pool.pending() == 0 {
            let since = *quiet_since.get_or_insert(now);
            if now - since >= QUIET {
                tracing::info!("drained: nothing in flight");
                return;
            }
        } else {
            quiet_since = None;
        }
        tokio::time::sleep(POLL).await;
    }
}
