//! summary.json: the machine-readable result of a run, and computing it from the aggregate.

use super::{ReplayArgs, Shared};
use crate::checks::{CheckResult, Scope};
use crate::failure::FailureKind;
use crate::recording::Kind;
use crate::stats::{self, Summary};
use crate::timefmt;
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// summary.json: the machine-readable result of a run.
#[derive(Serialize, Debug)]
pub struct RunSummary {
    pub tool: String,
    pub recording: String,
    pub target: String,
    pub users: u32,
    pub start_interval_ms: u64,
    pub loaded_duration_ms: u64,
    pub think_time: String,
    pub message_timeout_ms: u64,
    /// Unix ms: run start, end of warm-up (last user started), planned end of the loaded phase, end.
    pub started_at_ms: i64,
    pub warmup_end_ms: i64,
    pub loaded_end_ms: i64,
    pub finished_at_ms: i64,
    pub duration_ms: i64,
    pub recording_duration_ms: i64,
    pub interrupted: bool,
    pub sessions: SessionCounts,
    pub failure_rate: f64,
    /// Failed sessions per kind of failure (`timeout`, `wrong_status`, `closed`, ...).
    pub failures_by_kind: BTreeMap<FailureKind, u64>,
    /// Failed sessions grouped by kind and recording line, most frequent first.
    pub failures: Vec<FailureCount>,
    /// Per event type (REQ_HOME, WS_RECV, ...): durations in ms.
    pub events: BTreeMap<String, Summary>,
    /// All events together, ms.
    pub overall: Summary,
    /// Whole completed sessions, ms.
    pub session_duration: Summary,
    pub checks: Vec<CheckResult>,
    pub ok: bool,
}

/// Session counts of a run.
#[derive(Serialize, Debug)]
pub struct SessionCounts {
    pub started: u64,
    pub completed: u64,
    pub failed: u64,
}

/// Sessions that failed the same way at the same recording line: the kind, where (line, event
/// type, URL), the first such failure's readable reason, and how many.
#[derive(Serialize, Debug)]
pub struct FailureCount {
    pub kind: FailureKind,
    /// recording.log line (0: before the first event).
    pub line: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event: Option<Kind>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    pub reason: String,
    pub count: u64,
}

/// The summary of a finished (or interrupted) run.
pub(super) fn summarize(
    sh: &Shared,
    args: &ReplayArgs,
    started_at_ms: i64,
    warmup: Duration,
    interrupted: bool,
) -> RunSummary {
    let agg = sh.agg.lock().expect("aggregate lock");
    let done = u64::from(sh.done.load(Ordering::Relaxed));
    let failed = u64::from(sh.failed.load(Ordering::Relaxed));
    let started = done + failed;
    let failure_rate = if started == 0 {
        0.0
    } else {
        failed as f64 / started as f64
    };
    let mut failures: Vec<FailureCount> = (agg.failures.iter())
        .map(|(&(kind, line), (f, count))| FailureCount {
            kind,
            line,
            event: f.at.map(|a| a.kind),
            url: f.url.clone(),
            reason: f.to_string(),
            count: *count,
        })
        .collect();
    failures.sort_by_key(|f| std::cmp::Reverse(f.count));
    let mut failures_by_kind = BTreeMap::new();
    for f in &failures {
        *failures_by_kind.entry(f.kind).or_insert(0) += f.count;
    }
    let mut checks_out = vec![CheckResult {
        check: format!("failure_rate<={}", args.max_failure_rate),
        value: failure_rate,
        limit: args.max_failure_rate,
        ok: failure_rate <= args.max_failure_rate && started > 0,
    }];
    let empty = stats::new_histogram();
    for t in &args.thresholds {
        let h = match t.scope {
            Scope::All => &agg.overall,
            Scope::Session => &agg.session,
            Scope::Kind(k) => agg.per_kind.get(&k).unwrap_or(&empty),
        };
        checks_out.push(t.eval(h));
    }
    let ok = checks_out.iter().all(|c| c.ok);
    let finished_at_ms = timefmt::now_ms();
    RunSummary {
        tool: format!("surge {}", env!("CARGO_PKG_VERSION")),
        recording: args.recording.display().to_string(),
        target: args.target.clone(),
        users: args.users,
        start_interval_ms: sh.interval.as_millis() as u64,
        loaded_duration_ms: args.loaded_duration.as_millis() as u64,
        think_time: args.think_time.name(),
        message_timeout_ms: args.message_timeout.as_millis() as u64,
        started_at_ms,
        warmup_end_ms: started_at_ms + warmup.as_millis() as i64,
        loaded_end_ms: started_at_ms + (warmup + args.loaded_duration).as_millis() as i64,
        finished_at_ms,
        duration_ms: finished_at_ms - started_at_ms,
        recording_duration_ms: sh.rec.duration_ms(),
        interrupted,
        sessions: SessionCounts {
            started,
            completed: done,
            failed,
        },
        failure_rate,
        failures_by_kind,
        failures,
        events: agg
            .per_kind
            .iter()
            .map(|(k, h)| (k.name().to_string(), stats::summarize(h, 1.0)))
            .collect(),
        overall: stats::summarize(&agg.overall, 1.0),
        session_duration: stats::summarize(&agg.session, 1.0),
        checks: checks_out,
        ok,
    }
}
