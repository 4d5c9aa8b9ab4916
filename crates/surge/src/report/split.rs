//! The report's "Where the time goes" section: each recording line's mean time split by the
//! server's `Server-Timing` into queue (waiting for a worker), server (the work) and the rest
//! (network and client), as a table with a stacked bar per line, rendered here so it reads
//! without JavaScript.

use std::fmt::Write;

use super::html::esc;
use super::model::Model;

/// The page's sections from this module: the split and the explain ranking.
pub fn sections(m: &Model) -> String {
    section(m) + &explain(m)
}

/// `surge explain`'s ranking as a chart: per request or output, its p95 under load as a bar,
/// split into its time alone (compute) and the rest (waiting behind other sessions).
fn explain(m: &Model) -> String {
    let runs: Vec<_> = (m.runs.iter())
        .filter(|r| r.explain["rows"].is_array())
        .collect();
    if runs.is_empty() {
        return String::new();
    }
    let mut h = String::from(
        "<section id=\"explain\"><h2>Why it is slow (surge explain)</h2><p class=\"explain\">Each \
         request or output, costliest per session first: its time with one user alone (the server's \
         compute), and its p95 under load as a bar split into that time (blue) and waiting behind \
         other sessions (orange).</p><table class=\"classes\" id=\"explain-table\"><thead><tr>\
         <th>Request or output</th><th>Run</th><th>alone</th><th>cost/session</th><th>p50</th>\
         <th>p95</th><th>waiting</th><th style=\"width:34%\"></th></tr></thead><tbody>",
    );
    let f = |v: &serde_json::Value| v.as_f64().unwrap_or(0.0);
    let longest = (runs.iter())
        .flat_map(|r| r.explain["rows"].as_array().into_iter().flatten())
        .map(|row| f(&row["loaded_p95_ms"]).max(f(&row["solo_ms"])))
        .fold(1e-9, f64::max);
    for (i, r) in runs.iter().enumerate() {
        for row in r.explain["rows"].as_array().into_iter().flatten() {
            let (solo, p95) = (f(&row["solo_ms"]), f(&row["loaded_p95_ms"]));
            let wait = (p95 - solo).max(0.0);
            let text = |k: &str| row[k].as_str().unwrap_or_default().to_string();
            let _ = write!(
                h,
                "<tr data-run=\"{i}\"><th>{} {}</th><td>{}</td><td>{}</td><td data-k=\"cost\">{}</td>\
                 <td>{}</td><td>{}</td><td data-k=\"waiting\">{:.0}%</td><td style=\"text-align:left\">\
                 <span class=\"bar s\" style=\"width:{:.2}%\"></span><span class=\"bar q\" style=\"width:{:.2}%\"></span></td></tr>",
                esc(&text("kind")),
                esc(&text("label")),
                esc(&r.name),
                ms(solo),
                ms(f(&row["cost_ms"])),
                ms(f(&row["loaded_p50_ms"])),
                ms(p95),
                f(&row["waiting_share"]) * 100.0,
                100.0 * solo.min(p95.max(solo)) / longest,
                100.0 * wait / longest,
            );
        }
    }
    h.push_str(
        "</tbody></table><style>.bar{display:inline-block;height:10px;vertical-align:middle}\
         .bar.q{background:#c2410c}.bar.s{background:#3b6fb6}</style></section>",
    );
    h
}

/// The section, or nothing when no run's server sent `Server-Timing`.
pub fn section(m: &Model) -> String {
    if m.runs.iter().all(|r| r.timing.is_empty()) {
        return String::new();
    }
    let mut h = String::from(
        "<section id=\"timing\"><h2>Where the time goes</h2><p class=\"explain\">Each request line's \
         mean time, split by what the server said in <code>Server-Timing</code>: <b>queue</b> (waiting \
         for a worker, e.g. manifold's queue), <b>server</b> (the work), and the <b>rest</b> (network, \
         TLS, the client). The three parts sum to the time surge measured.</p>\
         <table class=\"classes\" id=\"timing-table\"><thead><tr><th>Recording line</th><th>Run</th>\
         <th>requests</th><th>measured</th><th>queue</th><th>server</th><th>rest</th>\
         <th style=\"width:34%\"></th></tr></thead><tbody>",
    );
    let longest = (m.runs.iter())
        .flat_map(|r| r.timing.iter().map(|s| s.measured_ms))
        .fold(0.0_f64, f64::max)
        .max(1e-9);
    for (i, r) in m.runs.iter().enumerate() {
        let rec = &m.recordings[r.recording];
        for s in &r.timing {
            let label = (rec.line.iter().position(|l| *l == s.line))
                .map_or(String::new(), |k| rec.label[k].clone());
            let pct = |v: f64| 100.0 * v / longest;
            let _ = write!(
                h,
                "<tr data-run=\"{i}\" data-line=\"{line}\"><th>{line}: {}</th><td>{}</td><td>{}</td>\
                 <td>{}</td><td data-k=\"queue\">{}</td><td data-k=\"server\">{}</td>\
                 <td data-k=\"rest\">{}</td><td style=\"text-align:left\">\
                 <span class=\"bar q\" style=\"width:{:.2}%\"></span><span class=\"bar s\" style=\"width:{:.2}%\"></span>\
                 <span class=\"bar r\" style=\"width:{:.2}%\"></span></td></tr>",
                esc(&label),
                esc(&r.name),
                s.n,
                ms(s.measured_ms),
                ms(s.queue_ms),
                ms(s.server_ms),
                ms(s.rest_ms),
                pct(s.queue_ms),
                pct(s.server_ms),
                pct(s.rest_ms),
                line = s.line,
            );
        }
    }
    h.push_str(
        "</tbody></table><p class=\"legend\"><span><span class=\"sw\" style=\"background:#c2410c\"></span>queue</span>\
         <span><span class=\"sw\" style=\"background:#3b6fb6\"></span>server</span>\
         <span><span class=\"sw\" style=\"background:#b8bcc4\"></span>rest</span></p>\
         <style>.bar{display:inline-block;height:10px;vertical-align:middle}.bar.q{background:#c2410c}\
         .bar.s{background:#3b6fb6}.bar.r{background:#b8bcc4}</style></section>",
    );
    h
}

/// Milliseconds with one decimal (a split of a 5 ms rest needs it).
pub fn ms(v: f64) -> String {
    if v >= 1000.0 {
        format!("{:.2} s", v / 1000.0)
    } else {
        format!("{v:.1} ms")
    }
}
