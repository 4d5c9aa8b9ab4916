//! The report's verdict banners: a metric's values in a loaded run (`surge compare`'s and
//! `surge report --max-regression`'s one reading of a run directory), the regressions' section,
//! and the banner of a run whose load generator was saturated (its summary.json's `generator`).

use super::{html::esc, lines::Lines, load::Run, stats::page_load};
use crate::rundir::Ended;
use crate::verdict::{Metric, Samples, Verdict};

/// The values (ms) of `metric` in `run`; empty when the run has none (a line it never reached,
/// `latency` which only a bench result has).
pub fn samples(run: &Run, metric: Metric) -> Samples {
    let rec: &Lines = &run.recording;
    let mut v = Vec::new();
    for s in &run.sessions {
        match metric {
            Metric::PageLoad => v.extend(page_load(s, rec).map(|p| p as f64)),
            Metric::Session if s.outcome == Ended::Done => v.push((s.end - s.start) as f64),
            Metric::Session | Metric::Latency => {}
            Metric::Events | Metric::Line(_) | Metric::Kind(_) => {
                for e in s.events.iter().filter(|e| !e.failed) {
                    let keep = match metric {
                        Metric::Line(n) => e.line == n,
                        Metric::Kind(k) => rec.get(e.line).is_some_and(|l| l.kind == k),
                        _ => rec.get(e.line).is_some(),
                    };
                    if keep {
                        v.push((e.end - e.start) as f64);
                    }
                }
            }
        }
    }
    Samples::of(v)
}

/// The report's verdicts section: one row per `--max-regression`, the regressions marked.
pub fn section(verdicts: &[Verdict], base: &str, new: &str) -> String {
    let failed = verdicts.iter().filter(|v| v.regression).count();
    let mut h = format!(
        "<section id=\"verdicts\"><h2>Regressions</h2><div class=\"{}\"><b>{} of {} metrics regressed</b> ({} → {}): over the margin and beyond run-to-run noise (even the low end of the 95% bootstrap interval of the difference is over the margin).</div><ul>",
        if failed > 0 { "warn" } else { "explain" },
        failed,
        verdicts.len(),
        esc(base),
        esc(new)
    );
    for v in verdicts {
        h.push_str(&format!(
            "<li class=\"{}\">{}</li>",
            if v.regression { "regression" } else { "ok" },
            esc(&v.line())
        ));
    }
    h.push_str("</ul></section>");
    h
}

/// The banner of runs whose summary.json says the load generator was saturated (`generator`,
/// see [`crate::health`]); empty when none was (or a run has no summary.json: shinycannon's).
pub fn generator_banner(runs: &[Run]) -> String {
    let mut h = String::new();
    for run in runs {
        let Ok(text) = std::fs::read_to_string(run.dir.join("summary.json")) else {
            continue;
        };
        let Ok(s) = serde_json::from_str::<serde_json::Value>(&text) else {
            continue;
        };
        let g = &s["generator"];
        if g["saturated"] == true {
            h.push_str(&format!(
                "<div class=\"warn\" id=\"generator-saturated\"><b>{}: surge's host was saturated: these latencies include the load generator's delay.</b> CPU {:.0}% of {} core(s), event-loop lag p99 {} ms.</div>",
                esc(&run.name),
                g["cpu_max"].as_f64().unwrap_or(0.0) * 100.0,
                g["cores"].as_u64().unwrap_or(0),
                g["lag_p99_ms"].as_f64().unwrap_or(0.0)
            ));
        }
    }
    h
}
