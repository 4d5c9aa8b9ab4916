//! Thread per core: the connections are dealt to `--threads` OS threads ("lanes"), each running its
//! own single-threaded tokio runtime (its own reactor and timers), as wrk's threads do. One process
//! then behaves like that many `--segment` processes side by side. tokio's work-stealing runtime,
//! used before, shares one reactor between its workers and hands wakeups across threads: against
//! a loopback nginx its open-model p99 was ~3x that of 2 single-thread segments (bench/surge.sh,
//! part 3).

use super::conn::{conn_loop, fold, ConnStats};
use super::Plan;
use crate::stats;
use std::sync::Arc;
use tokio::sync::mpsc;

/// One lane's folded statistics, or why it could not run.
pub(super) type LaneResult = Result<ConnStats, LaneError>;

/// Why a lane could not run (counted as an error kind, like a failed request).
#[derive(Debug, thiserror::Error)]
pub(super) enum LaneError {
    /// Its tokio runtime could not be built.
    #[error("lane runtime: {0}")]
    Runtime(std::io::Error),
    /// Its OS thread could not be started.
    #[error("lane thread: {0}")]
    Thread(std::io::Error),
}

/// Starts `n` lanes: lane `l` runs connections l, l+n, l+2n, ... and sends its statistics when
/// they are all done; the channel closes when every lane has ended. When the process may run on
/// exactly `n` CPUs (taskset, a cpuset), lane `l` is pinned to the l-th, as `--segment`
/// processes each given one CPU would be; otherwise (e.g. a container's CPU quota over a larger
/// machine) the lanes float, so generators sharing a host do not all pin to its first CPUs.
pub(super) fn start(plan: &Arc<Plan>, n: usize) -> mpsc::UnboundedReceiver<LaneResult> {
    let (tx, rx) = mpsc::unbounded_channel();
    let cpus = allowed_cpus();
    let pin = n > 1 && cpus.len() == n;
    for lane in 0..n {
        let (plan, lane_tx) = (plan.clone(), tx.clone());
        let cpu = cpus.get(lane).copied().filter(|_| pin);
        let spawned = std::thread::Builder::new()
            .name(format!("surge-lane-{lane}"))
            .spawn(move || {
                if let Some(c) = cpu {
                    pin_to(c);
                }
                let r = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(LaneError::Runtime)
                    .map(|rt| rt.block_on(lane_loop(plan, lane, n)));
                let _ = lane_tx.send(r);
            });
        if let Err(e) = spawned {
            let _ = tx.send(Err(LaneError::Thread(e)));
        }
    }
    rx
}

async fn lane_loop(plan: Arc<Plan>, lane: usize, n: usize) -> ConnStats {
    let mut tasks = tokio::task::JoinSet::new();
    for id in (lane..plan.conns).step_by(n) {
        tasks.spawn(conn_loop(plan.clone(), id));
    }
    let mut all = ConnStats {
        hist: Some(stats::new_histogram()),
        ..Default::default()
    };
    while let Some(r) = tasks.join_next().await {
        match r {
            Ok(s) => fold(&mut all, s),
            Err(e) => *all.errors.entry(format!("task: {e}")).or_insert(0) += 1,
        }
    }
    all
}

/// The CPUs this process may run on (empty where unknown).
fn allowed_cpus() -> Vec<usize> {
    #[cfg(target_os = "linux")]
    if let Ok(set) = rustix::thread::sched_getaffinity(None) {
        return (0..rustix::thread::CpuSet::MAX_CPU)
            .filter(|&c| set.is_set(c))
            .collect();
    }
    Vec::new()
}

fn pin_to(cpu: usize) {
    #[cfg(target_os = "linux")]
    {
        let mut set = rustix::thread::CpuSet::new();
        set.set(cpu);
        // Best effort: an unpinned lane still runs.
        let _ = rustix::thread::sched_setaffinity(None, &set);
    }
    #[cfg(not(target_os = "linux"))]
    let _ = cpu;
}
