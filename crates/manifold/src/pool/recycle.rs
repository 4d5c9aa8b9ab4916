//! Recycling: a worker past `--max-requests` (+ jitter), `--max-lifetime` or `--max-rss` (its
//! whole process group), or of an old generation after a reload, is replaced without a dip in
//! capacity.
//!
//! Steps: the worker is marked *due* and keeps serving; the supervisor starts a replacement
//! beside it while `--max` has room (due workers do not count towards `--min`, but every process
//! counts towards `--max`); when a worker becomes ready, the oldest due one goes
//! [`State::Draining`]: no new requests, its sticky sessions and in-flight requests go on. With
//! no room (`--max` processes, draining ones included), the replacement waits: the oldest due
//! worker drains first (one ready worker kept serving while another process will free a place)
//! and its replacement starts once it has exited. Once it has been idle for [`QUIET`] it gets one last request (the *barrier*:
//! `--health-path`, else `/`) and is stopped when that is answered; past its drain limit
//! (`--drain-timeout`, or `--request-timeout` when that is 0, so an in-flight request is never
//! cut before its own limit) it is stopped at once.
//!
//! Why the barrier: a single-threaded app runs what a closed session leaves behind after the
//! socket closed. httpuv (Shiny) sees the WebSocket close on its I/O thread and queues the close
//! callback, with the session's `onSessionEnded` handlers, for R's one thread, which may still be
//! busy; requests are queued the same way, in order. So an answer to a request sent after the
//! last socket closed means every end handler queued before it has run: the worker can be stopped
//! without cutting one, however loaded the machine. A fixed idle time cannot promise that (CI's
//! chaos run lost an `onSessionEnded` with 1 s; 5 s only made it rarer).

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Weak};
use std::time::Duration;

use tokio::time::Instant;

use super::{Inner, Pool, State};

/// Idle time after which a draining worker gets its barrier request: covers the gap between a
/// Shiny page load and its WebSocket (the session-end handlers are the barrier's business).
pub const QUIET: Duration = Duration::from_secs(1);

/// Longest wait for the barrier's answer when no drain limit applies (both timeouts 0).
const BARRIER_MAX: Duration = Duration::from_secs(60);

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
    /// Its last this many answers were 5xx (`--max-5xx`).
    Errors(u64),
}

impl fmt::Display for Recycle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Recycle::Requests(n) => write!(f, "served {n} requests (--max-requests)"),
            Recycle::Lifetime => write!(f, "older than --max-lifetime"),
            Recycle::Rss(b) => write!(f, "RSS {} MiB reached --max-rss", b >> 20),
            Recycle::Reload => write!(f, "old generation (reload)"),
            Recycle::Errors(n) => write!(f, "answered {n} 5xx in a row (--max-5xx)"),
        }
    }
}

impl Pool {
    /// This worker's request limit: `--max-requests` plus a jitter in `0..=--max-requests-jitter`
    /// (so workers started together are not all recycled at once).
    pub(super) fn request_limit(&self, id: u64) -> Option<u64> {
        let cfg = self.cfg();
        let n = cfg.max_requests?;
        let j = cfg.max_requests_jitter;
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

    /// Counts one answer of worker `id` (its own, not manifold's 502/504): `--max-5xx` 5xx in a
    /// row take it out of rotation as a recycle does (a replacement starts; once one is ready,
    /// this worker drains and stops). One answer below 500 resets the count.
    pub fn count_answer(&self, id: u64, server_error: bool) {
        let limit = self.cfg().max_5xx;
        let mut st = self.lock();
        let Some(slot) = st.slots.get_mut(&id) else {
            return;
        };
        if !server_error {
            slot.errors_in_row = 0;
            return;
        }
        slot.errors_in_row += 1;
        let n = slot.errors_in_row;
        if limit > 0 && n >= limit && self.mark_due(&mut st, id, Recycle::Errors(n)) {
            let _ = self.events.send(super::Event::Demand);
        }
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
        let (now, cfg) = (Instant::now(), self.cfg());
        let mut due = Vec::new();
        for s in st.slots.values().filter(|s| s.state == State::Ready) {
            if cfg.max_lifetime.is_some_and(|l| now - s.started >= l) {
                due.push((s.worker.id, Recycle::Lifetime));
            } else if let (Some(limit), Some(rss)) = (cfg.max_rss, rss) {
                let used = rss.get(&s.worker.pid()).copied().unwrap_or(0);
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

    /// Tick: stops draining workers past their drain limit; sends the barrier request to those
    /// idle for [`QUIET`] (see the module docs).
    pub(super) fn stop_drained(self: &Arc<Self>, st: &mut Inner) {
        let (now, cfg) = (Instant::now(), self.cfg());
        let limit = if cfg.drain_timeout.is_zero() {
            cfg.request_timeout
        } else {
            cfg.drain_timeout
        };
        let path = cfg.health_path.clone().unwrap_or_else(|| "/".into());
        for s in st.slots.values_mut().filter(|s| s.state == State::Draining) {
            let idle = s.busy == 0 && now - s.last_used >= QUIET;
            let since = s.draining_since.map_or(Duration::ZERO, |t| now - t);
            if !limit.is_zero() && since >= limit {
                if s.busy > 0 {
                    tracing::warn!(
                        worker = s.worker.id,
                        busy = s.busy,
                        "drain limit passed: stopping a draining worker with sessions open"
                    );
                } else {
                    tracing::info!(worker = s.worker.id, "drain limit passed: worker stopped");
                }
                s.state = State::Stopping;
                s.worker.stop();
            } else if idle && !s.barrier {
                s.barrier = true;
                // A single-threaded worker (Python's http.server) reads its open keep-alive
                // connection and accepts no other until it closes.
                s.conns.clear();
                let left = if limit.is_zero() {
                    BARRIER_MAX
                } else {
                    limit - since
                };
                let (id, port) = (s.worker.id, s.worker.port);
                tokio::spawn(barrier(Arc::downgrade(self), id, port, path.clone(), left));
            }
        }
    }
}

/// Sends drained worker `id` its last request and, once it is answered (or failed, or `left`
/// passed), stops the worker if it is still draining and idle; a request that came meanwhile
/// (a sticky session) puts it back to waiting for [`QUIET`].
async fn barrier(pool: Weak<Pool>, id: u64, port: u16, path: String, left: Duration) {
    let answered = tokio::time::timeout(left, crate::upstream::probe(port, &path)).await;
    let Some(p) = pool.upgrade() else { return };
    let mut st = p.lock();
    let Some(s) = st.slots.get_mut(&id) else {
        return;
    };
    s.barrier = false;
    if s.state == State::Draining && s.busy == 0 {
        let answered = matches!(answered, Ok(Ok(_)));
        tracing::info!(worker = id, answered, "drained worker stopped");
        s.state = State::Stopping;
        s.worker.stop();
    }
}
