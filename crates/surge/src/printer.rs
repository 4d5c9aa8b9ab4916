//! Text output of `bench` and `replay` (the `--json` forms are the serialized structs).

use crate::bench::BenchReport;
use crate::replay::RunSummary;
use std::fmt::Write as _;
use std::path::Path;

/// Human-readable bench result.
pub fn bench_text(r: &BenchReport) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "Target:       {}", r.url);
    let _ = writeln!(
        s,
        "Model:        {}{} ({} connections)",
        r.model,
        r.rate.map(|x| format!(", {x} req/s")).unwrap_or_default(),
        r.connections
    );
    let _ = writeln!(s, "Duration:     {:.2} s", r.duration_s);
    let _ = writeln!(s, "Requests:     {} ({} ok)", r.requests, r.ok);
    let _ = writeln!(s, "Requests/sec: {:.1}", r.rps);
    let l = &r.latency_ms;
    let _ = writeln!(
        s,
        "Latency (ms): p50 {:.3}  p90 {:.3}  p99 {:.3}  p99.9 {:.3}  max {:.3}  mean {:.3}",
        l.p50, l.p90, l.p99, l.p999, l.max, l.mean
    );
    if r.model == "open" {
        let _ = writeln!(
            s,
            "Late starts:  {} (>10 ms behind schedule)",
            r.late_starts
        );
    }
    let codes: Vec<String> = r
        .status_codes
        .iter()
        .map(|(k, v)| format!("{k}: {v}"))
        .collect();
    let _ = writeln!(s, "Status codes: {}", codes.join(", "));
    if !r.errors.is_empty() {
        let _ = writeln!(s, "Errors:");
        for (k, v) in &r.errors {
            let _ = writeln!(s, "  {v:>8}  {k}");
        }
    }
    s
}

/// Human-readable replay result.
pub fn replay_text(r: &RunSummary, dir: &Path) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "Sessions: {} started, {} completed, {} failed ({:.1}%){}",
        r.sessions.started,
        r.sessions.completed,
        r.sessions.failed,
        r.failure_rate * 100.0,
        if r.interrupted { "  [interrupted]" } else { "" }
    );
    for f in r.failures.iter().take(5) {
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
    for (k, v) in &r.events {
        row(k, v);
    }
    row("all events", &r.overall);
    row("session", &r.session_duration);
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
