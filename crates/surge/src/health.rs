//! The load generator's own health during a run: a slow generator must not pass for a slow app.
//! [`Monitor`] samples, while a replay or bench runs, surge's CPU time (from `/proc/self/stat`,
//! as a share of the cores this process may use, e.g. 1 under `taskset -c 0`) over each second,
//! and the event loop's lag (how late a 50 ms tick wakes up). Past [`CPU_LIMIT`] or
//! [`LAG_LIMIT_MS`] the run is `saturated`: summary.json (or bench's JSON) says so under
//! `generator`, the terminal prints one warning line and the report shows a banner, because the
//! latencies then include the generator's own delay.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::time::Duration;
use tokio::time::Instant;

/// CPU share (of the cores surge may use) over any one-second window at or past which the
/// generator counts as saturated.
pub const CPU_LIMIT: f64 = 0.9;

/// Event-loop lag p99 (ms) at or past which the generator counts as saturated: a tick 100 ms late
/// delays every response read on that loop as much.
pub const LAG_LIMIT_MS: f64 = 100.0;

/// How often the lag probe ticks.
const TICK: Duration = Duration::from_millis(50);

/// What the generator went through during a run (summary.json's `generator`).
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Copy, PartialEq)]
#[schemars(deny_unknown_fields)]
pub struct Generator {
    /// Highest CPU share over a one-second window, as a fraction of `cores` (1.0: all busy).
    pub cpu_max: f64,
    /// Cores surge may run on (its CPU affinity).
    pub cores: u32,
    /// 99th percentile of the event loop's lag (ms): how late a 50 ms tick woke up.
    pub lag_p99_ms: f64,
    /// `cpu_max` ≥ 0.9 or `lag_p99_ms` ≥ 100: the latencies include the generator's delay.
    pub saturated: bool,
}

impl Generator {
    /// The one warning line when saturated.
    pub fn warning(&self) -> Option<String> {
        self.saturated.then(|| {
            format!(
                "warning: surge's host was saturated (CPU {:.0}% of {} core{}, event-loop lag p99 {:.0} ms): these latencies include the load generator's delay",
                self.cpu_max * 100.0,
                self.cores,
                if self.cores == 1 { "" } else { "s" },
                self.lag_p99_ms
            )
        })
    }
}

/// The sampler running beside a run; [`Monitor::finish`] stops it and gives the figures.
pub struct Monitor {
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<Generator>,
}

impl Monitor {
    /// Starts sampling on the current runtime (its lag is what this measures).
    pub fn start() -> Monitor {
        let (stop, rx) = tokio::sync::oneshot::channel();
        Monitor {
            stop,
            task: tokio::spawn(sample(rx)),
        }
    }

    /// Stops sampling: the run's figures.
    pub async fn finish(self) -> Generator {
        let _ = self.stop.send(());
        self.task.await.unwrap_or(Generator {
            cpu_max: 0.0,
            cores: cores(),
            lag_p99_ms: 0.0,
            saturated: false,
        })
    }
}

async fn sample(mut stop: tokio::sync::oneshot::Receiver<()>) -> Generator {
    let cores = cores();
    let mut lags: Vec<f64> = Vec::new();
    let mut cpu_max: f64 = 0.0;
    let (mut last_wall, mut last_cpu) = (Instant::now(), cpu_seconds());
    let mut next = Instant::now() + TICK;
    loop {
        tokio::select! {
            _ = tokio::time::sleep_until(next) => {}
            _ = &mut stop => break,
        }
        let now = Instant::now();
        lags.push(now.saturating_duration_since(next).as_secs_f64() * 1000.0);
        next = now + TICK;
        let wall = now.duration_since(last_wall).as_secs_f64();
        if wall >= 1.0 {
            let cpu = cpu_seconds();
            if let (Some(a), Some(b)) = (last_cpu, cpu) {
                cpu_max = cpu_max.max((b - a) / wall / f64::from(cores));
            }
            (last_wall, last_cpu) = (now, cpu);
        }
    }
    // A run shorter than a window: its whole length is the window.
    let wall = Instant::now().duration_since(last_wall).as_secs_f64();
    if wall >= 0.2 {
        if let (Some(a), Some(b)) = (last_cpu, cpu_seconds()) {
            cpu_max = cpu_max.max((b - a) / wall / f64::from(cores));
        }
    }
    lags.sort_by(f64::total_cmp);
    let lag_p99_ms = if lags.is_empty() {
        0.0
    } else {
        crate::stats::rank(&lags, 99.0)
    };
    let cpu_max = (cpu_max.min(1.0) * 1000.0).round() / 1000.0;
    let lag_p99_ms = (lag_p99_ms * 10.0).round() / 10.0;
    Generator {
        cpu_max,
        cores,
        lag_p99_ms,
        saturated: cpu_max >= CPU_LIMIT || lag_p99_ms >= LAG_LIMIT_MS,
    }
}

/// Cores this process may run on (its affinity mask under `taskset`).
fn cores() -> u32 {
    std::thread::available_parallelism().map_or(1, |n| n.get() as u32)
}

/// This process's CPU time so far (user + system, all threads), from `/proc/self/stat`; None
/// where there is no procfs.
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name (which may hold spaces): state is field 3, utime 14, stime 15.
    let rest = stat.rsplit_once(')')?.1;
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
    // SAFETY: sysconf only reads a constant of the system.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    (hz > 0).then(|| ticks / hz as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Spinning on the only core of a current-thread runtime: the CPU share reaches the limit
    /// and the ticks come late; idling does neither.
    #[test]
    fn a_busy_loop_is_saturated_and_an_idle_one_is_not() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let idle = rt.block_on(async {
            let m = Monitor::start();
            tokio::time::sleep(Duration::from_millis(1200)).await;
            m.finish().await
        });
        assert!(!idle.saturated, "{idle:?}");
        assert!(idle.warning().is_none());
        let busy = rt.block_on(async {
            let m = Monitor::start();
            tokio::task::yield_now().await;
            // Blocks the loop for 300 ms at a time: each tick is that late.
            for _ in 0..5 {
                let t = std::time::Instant::now();
                while t.elapsed() < Duration::from_millis(300) {}
                tokio::task::yield_now().await;
            }
            m.finish().await
        });
        assert!(busy.saturated, "{busy:?}");
        assert!(busy.lag_p99_ms >= LAG_LIMIT_MS, "{busy:?}");
        assert!(busy.warning().unwrap().contains("saturated"));
    }
}

/// Files a run keeps for itself beyond its users' connections (stdio, the run directory's
/// files, a session's CSV while it is written, the dashboard, the manifold poller).
const FD_RESERVE: u64 = 64;

/// Raises this process's open-file limit to its hard limit (a soft limit of 1,024 is common and
/// each user holds a connection), and returns the one warning line when `users` connections and
/// [`FD_RESERVE`] still exceed it: past it connections fail with "Too many open files", which
/// is the generator's limit, not the app's.
pub fn open_files_for(users: u64) -> Option<String> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit write or read only the struct passed.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
            return None;
        }
        if lim.rlim_cur < lim.rlim_max {
            let raised = libc::rlimit {
                rlim_cur: lim.rlim_max,
                rlim_max: lim.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                lim = raised;
            }
        }
    }
    let allowed = lim.rlim_cur;
    (users + FD_RESERVE > allowed).then(|| {
        format!(
            "surge replay: warning: {users} users need {users} connections and ~{FD_RESERVE} more \
             open files, but this process may open {allowed} (ulimit -n): connections past it fail \
             as connect_error (\"Too many open files\"); raise the hard limit or split the users \
             over processes (surge merge)"
        )
    })
}

#[cfg(test)]
mod fd_tests {
    use super::*;

    #[test]
    fn more_users_than_files_warn_and_few_do_not() {
        assert!(open_files_for(1).is_none());
        let line = open_files_for(u64::MAX / 2).expect("warns");
        assert!(line.contains("ulimit -n") && !line.contains('\n'), "{line}");
    }
}
