//! What the status page and metrics read from the pool: one consistent snapshot.

use serde::Serialize;

use super::State;

#[derive(Default, Serialize, Clone, Copy)]
/// Lifetime counters for status and metrics.
pub struct Totals {
    /// Requests a worker finished.
    pub served: u64,
    /// Requests refused because the queue was full.
    pub queue_full: u64,
    /// Requests that timed out in the queue.
    pub queue_timeouts: u64,
    /// Requests answered 502 (worker failed mid-request).
    pub bad_gateway: u64,
    /// Worker processes started.
    pub worker_starts: u64,
    /// Ready workers that exited without being asked to.
    pub worker_crashes: u64,
    /// Workers that never became ready.
    pub start_failures: u64,
    /// Idle workers stopped.
    pub idle_stops: u64,
    /// Requests answered 504 because the worker did not answer within --request-timeout.
    pub request_timeouts: u64,
    /// Ready workers replaced because they failed the health probe.
    pub health_replacements: u64,
    /// Requests sent to a worker once more instead of a 502 (a refused connect, a closed
    /// kept-alive connection, a GET/HEAD without an answer; see `proxy::retry`).
    pub connect_retries: u64,
    /// Workers recycled (--max-requests, --max-lifetime, --max-rss).
    pub recycles: u64,
    /// Reloads (SIGHUP) that brought a new generation into service.
    pub reloads: u64,
    /// Reloads given up because the new generation could not start (the old one kept serving).
    pub reload_failures: u64,
}

/// The last thing that went wrong, with when (status `last_error`).
#[derive(Debug, Clone, Serialize)]
pub struct LastError {
    /// One line saying what happened.
    pub message: String,
    /// When, RFC 3339 UTC.
    pub time: String,
}

impl LastError {
    /// What status shows: a given-up reload's error stands until a reload succeeds, so a later
    /// error (of the abandoned generation or any other) does not hide that the reload failed;
    /// such a later one is shown after it.
    pub(super) fn standing(
        reload: Option<&LastError>,
        last: Option<&LastError>,
    ) -> Option<LastError> {
        match (reload, last) {
            (Some(r), Some(l)) if l.message != r.message => Some(LastError {
                message: format!("{}; later: {}", r.message, l.message),
                time: l.time.clone(),
            }),
            (Some(r), _) => Some(r.clone()),
            (None, l) => l.cloned(),
        }
    }

    pub(super) fn now(message: String) -> LastError {
        LastError {
            message,
            time: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
        }
    }
}

/// One worker in the status JSON.
#[derive(Serialize)]
pub struct WorkerStatus {
    /// Pool-wide id.
    pub id: u64,
    /// Process id; `null` while a `--preload` fork is being asked for (its parent has not
    /// answered with the fork's pid yet), never a made-up 0.
    pub pid: Option<u32>,
    /// Loopback port.
    pub port: u16,
    /// Generation of the command it runs (1, then +1 per reload).
    pub generation: u64,
    /// Lifecycle state.
    pub state: State,
    /// Resident memory of its whole process group, bytes.
    pub rss_bytes: u64,
    /// Why it is due for recycling, if it is.
    pub recycle: Option<String>,
    /// Requests in progress.
    pub busy: usize,
    /// Requests finished.
    pub served: u64,
    /// Seconds since start.
    pub uptime_s: f64,
    /// Seconds since the last request finished.
    pub idle_s: f64,
}

/// A `--preload` parent in the status JSON: which process loaded the app that a generation's
/// workers are forked from (its forks show their own pids).
#[derive(Serialize)]
pub struct ParentStatus {
    /// The generation whose workers it forks.
    pub generation: u64,
    /// Its process id (and process group: its forks are in it).
    pub pid: u32,
}

/// Snapshot for `/__manifold__/status` and metrics.
#[derive(Serialize)]
pub struct Snapshot {
    /// Workers by id.
    pub workers: Vec<WorkerStatus>,
    /// Requests waiting.
    pub queue: usize,
    /// --queue-size.
    pub queue_size: usize,
    /// --min.
    pub min: usize,
    /// --max.
    pub max: usize,
    /// --per-worker.
    pub per_worker: usize,
    /// --spare.
    pub spare: usize,
    /// --request-timeout in seconds (0: off); with min, max, per-worker and spare it shows what
    /// a reload applied.
    pub request_timeout_s: f64,
    /// Counters.
    pub totals: Totals,
    /// Worker output lines dropped because the log writer was behind.
    pub output_lines_dropped: u64,
    /// Access log lines not written (the writer was behind, or a write failed: a full disk);
    /// filled in by the proxy, which holds the log.
    pub access_log_lines_dropped: u64,
    /// Last start failure, crash, 502 or 504, with its time.
    pub last_error: Option<LastError>,
    /// Generation new workers get (1, then +1 per reload).
    pub generation: u64,
    /// Every setting in force (a reload may have changed them) by its TOML key, from the
    /// settings table.
    pub settings: std::collections::BTreeMap<&'static str, String>,
    /// Whether the host is draining (SIGTERM received): it takes no new sessions.
    pub draining: bool,
    /// With `--preload`: the running parents, oldest generation first (empty without it).
    pub preload: Vec<ParentStatus>,
}
