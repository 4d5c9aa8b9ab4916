//! The periodic health probe: a ready worker that stops answering `--health-path` is replaced.
//!
//! Why only idle workers: a single-threaded worker busy with a request cannot answer a probe, and
//! a stuck request is already caught by `--request-timeout`. A worker must fail [`FAILURES`]
//! probes in a row, each given [`probe_timeout`], so one slow garbage collection does not cost a
//! restart.

use std::sync::{Arc, Weak};
use std::time::Duration;

use super::{Pool, Replace, State};

/// Failed probes in a row after which a worker is replaced.
pub const FAILURES: u32 = 2;

/// How long one probe may take: the interval, at most 10 s.
pub fn probe_timeout(interval: Duration) -> Duration {
    interval.min(Duration::from_secs(10))
}

/// With no health path or a zero interval, how often the loop looks whether a reload set them.
const DISABLED_RECHECK: Duration = Duration::from_secs(1);

/// Probes idle ready workers every `--health-interval` on `--health-path` (both read each round,
/// so a reload can change them) until the pool is gone or shutting down.
pub(super) async fn probe_loop(pool: Weak<Pool>) {
    loop {
        let (path, interval) = {
            let Some(p) = pool.upgrade() else { return };
            let cfg = p.cfg();
            (cfg.health_path.clone(), cfg.health_interval)
        };
        let Some(path) = path.filter(|_| !interval.is_zero()) else {
            tokio::time::sleep(DISABLED_RECHECK).await;
            continue;
        };
        tokio::time::sleep(interval).await;
        let Some(p) = pool.upgrade() else { return };
        let targets: Vec<(u64, u16)> = {
            let st = p.lock();
            if st.shutting_down {
                return;
            }
            st.slots
                .values()
                .filter(|s| s.state == State::Ready && s.busy == 0)
                .map(|s| (s.worker.id, s.worker.port))
                .collect()
        };
        drop(p);
        let probes = targets.into_iter().map(|(id, port)| {
            let (pool, path) = (pool.clone(), path.clone());
            async move {
                let ok = matches!(
                    tokio::time::timeout(
                        probe_timeout(interval),
                        crate::upstream::probe(port, &path)
                    )
                    .await,
                    Ok(Ok(s)) if s.is_success()
                );
                if let Some(p) = pool.upgrade() {
                    record(&p, id, ok);
                }
            }
        });
        futures_join(probes).await;
    }
}

/// Counts one probe result; replaces the worker at [`FAILURES`] in a row.
fn record(pool: &Arc<Pool>, id: u64, ok: bool) {
    let failures = {
        let mut st = pool.lock();
        let Some(slot) = st.slots.get_mut(&id) else {
            return;
        };
        slot.health_failures = if ok { 0 } else { slot.health_failures + 1 };
        slot.health_failures
    };
    if failures > 0 {
        tracing::warn!(worker = id, failures, "health probe failed");
    }
    if failures >= FAILURES {
        pool.replace(id, Replace::Unhealthy);
    }
}

/// Runs the probes concurrently (one slow worker does not delay the others' verdicts).
async fn futures_join(
    futs: impl Iterator<Item = impl std::future::Future<Output = ()> + Send + 'static>,
) {
    let mut set = tokio::task::JoinSet::new();
    for f in futs {
        set.spawn(f);
    }
    while set.join_next().await.is_some() {}
}
