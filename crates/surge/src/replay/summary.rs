//! summary.json: the machine-readable result of a run, and computing it from the aggregate.

use super::{ReplayArgs, Shared};
use crate::checks::CheckResult;
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

/// One failure reason and how many sessions failed with it.
#[derive(Serialize, Debug)]
pub struct FailureCount {
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
    let mut failures: Vec<FailureCount> = agg
        .failures
        .iter()
        .map(|(r, c)| FailureCount {
            reason: r.clone(),
            count: *c,
        })
        .collect();
    failures.sort_by_key(|f| std::cmp::Reverse(f.count));
    let mut checks_out = vec![CheckResult {
        check: format!("failure_rate<={}", args.max_failure_rate),
        value: failure_rate,
        limit: args.max_failure_rate,
        ok: failure_rate <= args.max_failure_rate && started > 0,
    }];
    let empty = stats::new_histogram();
    for t in &args.thresholds {
        let h = match t.scope.as_str() {
            "all" => &agg.overall,
            "session" => &agg.session,
            s => Kind::parse(s)
                .and_then(|k| agg.per_kind.get(&k))
                .unwrap_or(&empty),
        };
        checks_out.push(t.eval(h));
    }
    let ok = checks_out.iter().all(|c| c.ok);
    let finished_at_ms = timefmt::now_ms();
    RunSummary {
        tool: format!("surge {}", env!("CARGO_PKG_VERSION")),
        recording: args.recording.display().to_string(),
        target: args.app_url().unwrap_or_default().to_string(),
        users: args.users,
        start_interval_ms: sh.interval.as_millis() as u64,
        loaded_duration_ms: args.loaded_duration().as_millis() as u64,
        think_time: args.think_time.name(),
        message_timeout_ms: args.message_timeout.as_millis() as u64,
        started_at_ms,
        warmup_end_ms: started_at_ms + warmup.as_millis() as i64,
        loaded_end_ms: started_at_ms + (warmup + args.loaded_duration()).as_millis() as i64,
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
