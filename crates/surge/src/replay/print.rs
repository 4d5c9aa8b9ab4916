//! The text summary of a replay (`--json` prints summary.json instead).

use super::RunSummary;
use std::fmt::Write as _;
use std::path::Path;

/// Human-readable replay result.
pub fn replay_text(r: &RunSummary, dir: &Path) -> String {
    let mut s = String::new();
    let (split, users) = (&r.split, r.plan.users);
    if let Some(seg) = &split.segment {
        let n = split.segment_users.unwrap_or(0);
        let _ = writeln!(s, "Segment {seg} of the plan: {n} of {users} users");
    }
    if let Some(n) = split.merged_segments {
        let _ = writeln!(s, "Merged from {n} segments ({users} users)");
    }
    if split.late_start_ms > 0 {
        let at = split.start_at.as_deref().unwrap_or("?");
        let _ = writeln!(
            s,
            "Late start: {} ms after --start-at {at}",
            split.late_start_ms
        );
    }
    let _ = writeln!(
        s,
        "Sessions: {} started, {} completed, {} failed ({:.1}%){}",
        r.outcome.sessions.started,
        r.outcome.sessions.completed,
        r.outcome.sessions.failed,
        r.outcome.failure_rate * 100.0,
        if r.interrupted { "  [interrupted]" } else { "" }
    );
    for (name, j) in &r.journeys {
        let (j, weight) = (&j.outcome, j.weight);
        let _ = writeln!(
            s,
            "  journey {name} (weight {}): {} started, {} failed ({:.1}%), session p50 {} ms, p90 {} ms",
            weight,
            j.sessions.started,
            j.sessions.failed,
            j.failure_rate * 100.0,
            j.percentiles.session_duration.p50,
            j.percentiles.session_duration.p90
        );
    }
    if !r.outcome.failures_by_kind.is_empty() {
        let kinds: Vec<String> = (r.outcome.failures_by_kind.iter())
            .map(|(k, n)| format!("{} {n}", k.name()))
            .collect();
        let _ = writeln!(s, "Failures by kind: {}", kinds.join(", "));
    }
    for f in r.outcome.failures.iter().take(5) {
        let _ = writeln!(s, "  {:>6} x {}", f.count, f.reason);
    }
    let _ = writeln!(
        s,
        "{:<22} {:>7} {:>9} {:>9} {:>9} {:>9}",
        "event (ms)", "count", "p50", "p90", "p99", "max"
    );
    let mut row = |name: &str, x: &crate::stats::Summary| {
        let _ = writeln!(
            s,
            "{:<22} {:>7} {:>9} {:>9} {:>9} {:>9}",
            name, x.count, x.p50, x.p90, x.p99, x.max
        );
    };
    let p = &r.outcome.percentiles;
    for (k, v) in &p.events {
        row(k.name(), v);
    }
    row("all events", &p.overall);
    row("session", &p.session_duration);
    for c in &r.checks {
        let _ = writeln!(
            s,
            "check {:<28} {} (value {:.3}, limit {})",
            c.check,
            if c.ok { "ok" } else { "FAILED" },
            c.value,
            c.limit
        );
    }
    let _ = writeln!(s, "Results: {}", dir.display());
    s
}
