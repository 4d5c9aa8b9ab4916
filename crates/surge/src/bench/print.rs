//! The text summary of a bench run (`--json` prints the serialized `BenchReport` instead).

use super::BenchReport;
use std::fmt::Write as _;

/// Human-readable bench result.
pub fn bench_text(r: &BenchReport) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "Target:       {}", r.url);
    let _ = writeln!(
        s,
        "Model:        {}{} ({} connections, {} threads)",
        r.model,
        r.rate.map(|x| format!(", {x} req/s")).unwrap_or_default(),
        r.connections,
        r.threads
    );
    if let Some(seg) = &r.segment {
        let _ = writeln!(s, "Segment:      {seg} of the schedule");
    }
    if let Some(n) = r.merged_segments {
        let _ = writeln!(s, "Merged:       {n} segments");
    }
    if let Some(at) = &r.start_at {
        let late = match r.late_start_ms {
            0 => String::new(),
            ms => format!(" (started {ms} ms late)"),
        };
        let _ = writeln!(s, "Start at:     {at}{late}");
    }
    let _ = writeln!(s, "Duration:     {:.2} s", r.duration_s);
    let _ = writeln!(
        s,
        "Requests:     {} ({} ok, {} answered with another status, {} without an answer)",
        r.requests,
        r.ok,
        r.answered - r.ok,
        r.requests - r.answered
    );
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
