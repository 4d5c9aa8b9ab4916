//! Recycling: a worker past `--max-requests` (+ jitter), `--max-lifetime` or `--max-rss` (its
//! whole process group), or of an old generation after a reload, is replaced without a dip in
//! capacity.
//!
//! Steps: the worker is marked *due* and keeps serving; the supervisor starts a replacement
//! beside it (due workers do not count towards `--min`/`--max`); when a worker becomes ready, the
//! oldest due one goes [`State::Draining`]: no new requests, its sticky sessions and in-flight
//! requests go on; it is stopped once idle for [`QUIET`] or after its drain limit
//! (`--drain-timeout`, or `--request-timeout` when that is 0, so an in-flight request is never cut
//! before its own limit).

use std::collections::HashMap;
use std::fmt;
use std::time::Duration;

use tokio::time::Instant;

use super::{Inner, Pool, State};

/// Idle time after which a draining worker is stopped: covers the gap between a Shiny page load
/// and its WebSocket, and gives the app time to run its session-end handlers (R is single-threaded:
/// `onSessionEnded` runs only once R gets to the close; with 1 s, a loaded CI machine saw a worker
/// stopped before its last session's end handler ran).
pub const QUIET: Duration = Duration::from_secs(5);

/// Why a worker is recycled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recycle {
    /// Served this many requests (`--max-requests` + jitter).
    Requests(u64),
    /// Older than `--max-lifetime`.
    Lifetime,
    /// Its process group's RSS reached this many bytes (`--max-rss`).
    Rss(u64),
    /// A reload started a newer generation.
    Reload,
}

impl fmt::Display for Recycle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Recycle::Requests(n) => write!(f, "served {n} requests (--max-requests)"),
            Recycle::Lifetime => write!(f, "older than --max-lifetime"),
            Recycle::Rss(b) => write!(f, "RSS {} MiB reached --max-rss", b >> 20),
            Recycle::Reload => write!(f, "old generation (reload)"),
        }
    }
}

impl Pool {
    /// This worker's request limit: `--max-requests` plus a jitter in `0..=--max-requests-jitter`
    /// (so workers started together are not all recycled at once).
    pub(super) fn request_limit(&self, id: u64) -> Option<u64> {
        let n = self.cfg.max_requests?;
        let j = self.cfg.max_requests_jitter;
        if j == 0 {
            return Some(n);
        }
        // splitmix64 of the id and this run's seed: spread, and differs between runs.
        let mut z = (id ^ self.seed).wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        Some(n + z % (j + 1))
    }

    /// Marks ready worker `id` due; returns false if it already was (or is not ready).
    pub(super) fn mark_due(&self, st: &mut Inner, id: u64, why: Recycle) -> bool {
        let Some(slot) = st.slots.get_mut(&id) else {
            return false;
        };
        if slot.state != State::Ready || slot.due.is_some() {
            return false;
        }
        tracing::info!(worker = id, reason = %why, "worker due for recycling; starting its replacement");
        slot.due = Some(why);
        true
    }

    /// Tick: marks workers past `--max-lifetime` or `--max-rss` due (`rss` by process group).
    pub(super) fn check_limits(&self, st: &mut Inner, rss: Option<&HashMap<u32, u64>>) {
        let now = Instant::now();
        let mut due = Vec::new();
        for s in st.slots.values().filter(|s| s.state == State::Ready) {
            if self.cfg.max_lifetime.is_some_and(|l| now - s.started >= l) {
                due.push((s.worker.id, Recycle::Lifetime));
            } else if let (Some(limit), Some(rss)) = (self.cfg.max_rss, rss) {
                let used = rss.get(&s.worker.pid).copied().unwrap_or(0);
                if used >= limit {
                    due.push((s.worker.id, Recycle::Rss(used)));
                }
            }
        }
        for (id, why) in due {
            self.mark_due(st, id, why);
        }
    }

    /// A worker became ready: the oldest due worker (if any) stops taking new requests.
    pub(super) fn retire_one_due(&self, st: &mut Inner) {
        let oldest = st
            .slots
            .values_mut()
            .filter(|s| s.state == State::Ready && s.due.is_some())
            .min_by_key(|s| s.started);
        let Some(slot) = oldest else { return };
        slot.state = State::Draining;
        slot.draining_since = Some(Instant::now());
        let id = slot.worker.id;
        let why = slot.due.expect("due");
        tracing::info!(worker = id, reason = %why, "replacement ready; worker draining");
        match why {
            Recycle::Reload => {}
            _ => st.totals.recycles += 1,
        }
    }

    /// Tick: stops draining workers that are idle for [`QUIET`] or past their drain limit.
    pub(super) fn stop_drained(&self, st: &mut Inner) {
        let now = Instant::now();
        let limit = if self.cfg.drain_timeout.is_zero() {
            self.cfg.request_timeout
        } else {
            self.cfg.drain_timeout
        };
        for s in st.slots.values_mut().filter(|s| s.state == State::Draining) {
            let idle = s.busy == 0 && now - s.last_used >= QUIET;
            let since = s.draining_since.map_or(Duration::ZERO, |t| now - t);
            let over = !limit.is_zero() && since >= limit;
            if idle || over {
                if over && s.busy > 0 {
                    tracing::warn!(
                        worker = s.worker.id,
                        busy = s.busy,
                        "drain limit passed: stopping a draining worker with sessions open"
                    );
                } else {
                    tracing::info!(worker = s.worker.id, "drained worker stopped");
                }
                s.state = State::Stopping;
                s.worker.stop();
            }
        }
    }
}
