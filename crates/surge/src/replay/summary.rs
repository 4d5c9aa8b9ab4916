//! A replay's summary.json: its plan and timing (the `Head`) from the replay's own state, the
//! numbers from its aggregate, by the run directory's one summary ([`crate::rundir`]).

use super::shape::Shape;
use super::Shared;
use crate::rundir::{from_aggregate, Head, Plan, RunSummary, Split};
use crate::timefmt;
use std::sync::atomic::Ordering;

/// The summary of a finished (or interrupted) run.
pub(super) fn summarize(sh: &Shared, interrupted: bool) -> RunSummary {
    let agg = sh.agg.lock().expect("aggregate lock");
    let p = &sh.plan;
    let warmup = p.shape.warmup();
    let head = Head {
        plan: Plan {
            recording: p.rec().path.display().to_string(),
            target: p.url.clone(),
            users: p.shape.peak_users(),
            start_interval_ms: p.interval().as_millis() as u64,
            loaded_duration_ms: p.shape.end().saturating_sub(warmup).as_millis() as u64,
            think_time: p.think.name(),
            shape: (!matches!(p.shape, Shape::Ramp { .. })).then(|| p.shape.to_string()),
            message_timeout_ms: p.message_timeout.as_millis() as u64,
            insecure: p.target.dialer.insecure(),
        },
        started_at_ms: sh.start.unix_ms,
        warmup_ms: warmup.as_millis() as i64,
        finished_at_ms: timefmt::now_ms(),
        recording_duration_ms: p.rec().duration_ms(),
        interrupted,
        split: Split {
            segment: p.segment.map(|s| s.to_string()),
            start_at: p.start_at.map(timefmt::format_iso),
            late_start_ms: sh.start.late.as_millis() as u64,
            segment_users: p.segment.map(|_| p.users.len() as u32),
            merged_segments: None,
        },
    };
    let checks = (p.max_failure_rate, p.thresholds.as_slice());
    let mut summary = from_aggregate(head, &agg, checks);
    summary.arrivals_dropped = u64::from(sh.dropped.load(Ordering::Relaxed));
    summary
}
