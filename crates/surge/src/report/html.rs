//! The report page: summary tables rendered here as plain HTML (they read without JavaScript),
//! chart containers, the data model as an inline JSON script and the chart runtime inlined.
//! Nothing refers outside the file.

use std::fmt::Write;

use super::{class::CLASS_NAMES, model::Model, stats::RunFigures};

/// Escapes text for HTML content and attributes.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

/// Human duration: "850 ms", "1.23 s", "4m 07s".
pub fn fmt_ms(ms: i64) -> String {
    let a = ms.abs();
    if a < 1000 {
        format!("{ms} ms")
    } else if a < 10_000 {
        format!("{:.2} s", ms as f64 / 1000.0)
    } else if a < 60_000 {
        format!("{:.1} s", ms as f64 / 1000.0)
    } else {
        let s = ms / 1000;
        format!("{}m {:02}s", s / 60, s % 60)
    }
}

/// Integer with thousands separators.
pub fn fmt_int(n: usize) -> String {
    let s = n.to_string();
    let mut o = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            o.push(',');
        }
        o.push(c);
    }
    o
}

fn ratio(v: f64, base: f64) -> String {
    if base == 0.0 {
        return String::new();
    }
    let r = v / base;
    let cls = if r > 1.1 {
        "up"
    } else if r < 0.9 {
        "down"
    } else {
        "same"
    };
    format!("<span class=\"ratio {cls}\">×{r:.2}</span>")
}

/// One row of the comparison table: a metric and its value per run.
struct Row<'a> {
    key: &'a str,
    label: String,
    values: Vec<i64>,
    ms: bool,
}

fn cell(v: i64, ms: bool) -> String {
    if ms {
        fmt_ms(v)
    } else {
        fmt_int(v.max(0) as usize)
    }
}

/// The summary table's rows: one per measure, one value per run.
fn summary_rows(m: &Model) -> Vec<Row<'static>> {
    let runs = &m.runs;
    let row = |key, label: String, ms, f: &dyn Fn(usize) -> i64| Row {
        key,
        label,
        values: (0..runs.len()).map(f).collect(),
        ms,
    };
    let count = |key, label: &str, f: fn(&RunFigures) -> usize| {
        row(key, label.into(), false, &|i| f(&runs[i].summary) as i64)
    };
    let mut rows = vec![
        count("workers", "Simulated users", |s| s.workers),
        count("sessions", "Sessions started", |s| s.sessions()),
        count("completed", "Sessions completed", |s| {
            s.outcome.sessions.completed as usize
        }),
        count("failed", "Sessions failed", |s| {
            s.outcome.sessions.failed as usize
        }),
    ];
    if runs
        .iter()
        .any(|r| r.summary.outcome.sessions.unfinished > 0)
    {
        rows.push(count("unfinished", "Sessions unfinished", |s| {
            s.outcome.sessions.unfinished as usize
        }));
    }
    rows.push(count("events", "Events replayed", |s| s.events));
    let duration = |i: usize| runs[i].duration_ms;
    rows.push(row("duration", "Run duration".into(), true, &duration));
    for (k, name, idx) in [
        ("pl_p50", "p50", 1),
        ("pl_p90", "p90", 2),
        ("pl_p99", "p99", 3),
        ("pl_max", "max", 4),
    ] {
        let label = format!("Page load {name}");
        let f = |i: usize| runs[i].summary.page_load.arr()[idx];
        rows.push(row(k, label, true, &f));
    }
    let over = format!("Page loads over {}", fmt_ms(m.page_load_limit_ms));
    rows.push(count("over_limit", &over, |s| s.over_limit));
    let sd = |i: usize| &runs[i].summary.outcome.percentiles.session_duration;
    let (p50, max) = (|i| sd(i).p50 as i64, |i| sd(i).max as i64);
    rows.push(row("sd_p50", "Session duration p50".into(), true, &p50));
    rows.push(row("sd_max", "Session duration max".into(), true, &max));
    rows
}

fn summary_table(m: &Model) -> String {
    let runs = &m.runs;
    let rows = summary_rows(m);
    let mut h = String::from("<table class=\"summary\" id=\"summary-table\"><thead><tr><th></th>");
    for r in runs {
        let _ = write!(h, "<th>{}</th>", esc(&r.name));
    }
    h.push_str("</tr></thead><tbody>");
    for row in rows {
        let _ = write!(h, "<tr><th>{}</th>", esc(&row.label));
        for (i, v) in row.values.iter().enumerate() {
            let rt = if i > 0 {
                ratio(*v as f64, row.values[0] as f64)
            } else {
                String::new()
            };
            let _ = write!(
                h,
                "<td data-run=\"{i}\" data-k=\"{}\" data-v=\"{v}\">{}{rt}</td>",
                row.key,
                cell(*v, row.ms)
            );
        }
        h.push_str("</tr>");
    }
    h.push_str("</tbody></table>");
    h
}

/// A mixed run's figures per journey (summary.json's split): sessions, failures, session and
/// event percentiles; empty when no run mixed journeys.
fn journey_table(m: &Model) -> String {
    if m.runs.iter().all(|r| r.journeys.is_empty()) {
        return String::new();
    }
    let mut h = String::from(
        "<table class=\"classes\" id=\"journey-table\"><thead><tr><th>Journey</th><th>Run</th>\
         <th>weight</th><th>sessions</th><th>failed</th><th>session p50</th><th>session p95</th>\
         <th>events p50</th><th>events p95</th><th>events p99</th></tr></thead><tbody>",
    );
    for (i, r) in m.runs.iter().enumerate() {
        for j in &r.journeys {
            let _ = write!(
                h,
                "<tr data-run=\"{i}\" data-journey=\"{}\"><th>{}</th><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&j.name),
                esc(&j.name),
                esc(&r.name),
                j.weight,
                j.sessions[0],
                j.sessions[2],
                cell(j.session.p50 as i64, true),
                cell(j.session.p95 as i64, true),
                cell(j.events.p50 as i64, true),
                cell(j.events.p95 as i64, true),
                cell(j.events.p99 as i64, true),
            );
        }
    }
    h.push_str("</tbody></table>");
    h
}

fn class_table(m: &Model) -> String {
    let mut h = String::from(
        "<table class=\"classes\" id=\"class-table\"><thead><tr><th>Event class</th><th>Run</th>\
         <th>events</th><th>p50</th><th>p90</th><th>p99</th><th>max</th></tr></thead><tbody>",
    );
    for (c, name) in CLASS_NAMES.iter().enumerate() {
        if m.runs.iter().all(|r| r.summary.classes[c].n == 0) {
            continue;
        }
        for (i, r) in m.runs.iter().enumerate() {
            let d = r.summary.classes[c].arr();
            let base = m.runs[0].summary.classes[c].arr();
            let _ = write!(h, "<tr class=\"c{c}\">");
            if i == 0 {
                let _ = write!(
                    h,
                    "<th rowspan=\"{}\"><i class=\"sw c{c}\"></i>{}</th>",
                    m.runs.len(),
                    esc(name)
                );
            }
            let _ = write!(
                h,
                "<td class=\"run\">{}</td><td>{}</td>",
                esc(&r.name),
                fmt_int(d[0] as usize)
            );
            for k in 1..5 {
                let rt = if i > 0 {
                    ratio(d[k] as f64, base[k] as f64)
                } else {
                    String::new()
                };
                let _ = write!(
                    h,
                    "<td data-run=\"{i}\" data-class=\"{c}\" data-stat=\"{k}\">{}{rt}</td>",
                    fmt_ms(d[k])
                );
            }
            h.push_str("</tr>");
        }
    }
    h.push_str("</tbody></table>");
    h
}

fn failures(m: &Model) -> String {
    let mut h = String::new();
    for r in &m.runs {
        if r.summary.outcome.failures.is_empty() {
            continue;
        }
        let _ = write!(
            h,
            "<div class=\"failures\"><b>{}</b> failures:<ul>",
            esc(&r.name)
        );
        for f in &r.summary.outcome.failures {
            // The kind, when the CSVs say it (shinycannon's do not).
            let kind = match f.kind {
                crate::failure::FailureKind::Unknown => String::new(),
                k => format!("<span class=\"dim\">{}</span> ", k.name()),
            };
            let _ = write!(
                h,
                "<li><span class=\"n\">{}×</span> {kind}{}</li>",
                fmt_int(f.count as usize),
                esc(&f.reason)
            );
        }
        h.push_str("</ul></div>");
    }
    if h.is_empty() {
        h.push_str("<p class=\"ok\">No session failed.</p>");
    }
    h
}

fn overview(m: &Model) -> String {
    let mut h = String::from("<ul class=\"overview\">");
    for (i, r) in m.runs.iter().enumerate() {
        let (s, n) = (&r.summary, &r.summary.outcome.sessions);
        let _ = write!(
            h,
            "<li data-run=\"{i}\"><b>{}</b>: {} user{}, <span data-k=\"sessions\">{}</span> sessions, \
             <span data-k=\"events\">{}</span> events in {} — {} completed, {} failed{}. \
             Page load p90 <b>{}</b>; <b>{}</b> of {} page loads over {}. \
             <span class=\"dim\">{}</span></li>",
            esc(&r.name),
            s.workers,
            if s.workers == 1 { "" } else { "s" },
            fmt_int(s.sessions()),
            fmt_int(s.events),
            fmt_ms(r.duration_ms),
            fmt_int(n.completed as usize),
            fmt_int(n.failed as usize),
            if n.unfinished > 0 { format!(", {} unfinished", fmt_int(n.unfinished as usize)) } else { String::new() },
            fmt_ms(s.page_load.p90),
            fmt_int(s.over_limit),
            fmt_int(s.page_load.n),
            fmt_ms(m.page_load_limit_ms),
            esc(&r.dir)
        );
    }
    h.push_str("</ul>");
    h
}

/// The report's "Inputs" section: each run's first uses and reuses, and per recording line the
/// durations of each; empty unless a run used `--data`.
fn inputs_section(m: &Model) -> String {
    if m.runs.iter().all(|r| r.inputs.with_data == 0) {
        return String::new();
    }
    let mut h = String::from(
        "<section id=\"inputs\"><h2>Inputs: first use vs reuse</h2><p class=\"explain\">Each session \
         replays an input: its <code>--data</code> row, or the recorded one. The first session of a run \
         to use an input meets the app's caches cold (a miss for each); later sessions reuse it (hits). \
         A run replaying the same input everywhere has one first use: its figures are hits, and the \
         misses it hides show in the first-use columns of a <code>--data</code> run.</p>\
         <table class=\"classes\" id=\"input-table\"><thead><tr><th>Run</th><th>sessions</th>\
         <th>inputs</th><th>first uses</th><th>reuses</th></tr></thead><tbody>",
    );
    for (i, r) in m.runs.iter().enumerate() {
        let u = &r.inputs;
        let _ = write!(
            h,
            "<tr data-run=\"{i}\"><th>{}</th><td>{}</td><td data-k=\"distinct\">{}</td>\
             <td data-k=\"first\">{}</td><td data-k=\"again\">{}</td></tr>",
            esc(&r.name),
            fmt_int(u.first + u.again),
            fmt_int(u.distinct),
            fmt_int(u.first),
            fmt_int(u.again)
        );
    }
    h.push_str(
        "</tbody></table><table class=\"classes\" id=\"input-lines\"><thead><tr><th>Recording line</th>\
         <th>Run</th><th>first use: events</th><th>p50</th><th>p90</th><th>reuse: events</th>\
         <th>p50</th><th>p90</th></tr></thead><tbody>",
    );
    let rec = &m.recordings[0];
    for (k, line) in rec.line.iter().enumerate() {
        for (i, r) in m.runs.iter().enumerate() {
            let Some(l) = r.inputs.lines.iter().find(|l| l.line == *line) else {
                continue;
            };
            let ms =
                |d: &super::stats::Dist, v: i64| if d.n == 0 { "–".into() } else { fmt_ms(v) };
            let _ = write!(
                h,
                "<tr data-run=\"{i}\" data-line=\"{line}\"><th>{line}: {}</th><td>{}</td>\
                 <td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&rec.label[k]),
                esc(&r.name),
                fmt_int(l.first.n),
                ms(&l.first, l.first.p50),
                ms(&l.first, l.first.p90),
                fmt_int(l.again.n),
                ms(&l.again, l.again.p50),
                ms(&l.again, l.again.p90),
            );
        }
    }
    h.push_str("</tbody></table></section>");
    h
}

const SECTIONS: &[(&str, &str, &str)] = &[
    ("gantt", "Sessions over the run",
     "One row per session, x = time since the run started, one rectangle per step coloured by class. Grey bands: warm-up (users still arriving) and cool-down (users finishing). Red ✕: a failed session. Steep, thin rows are fast; long rectangles are waiting users."),
    ("aligned", "Sessions aligned by their start",
     "The same sessions, each starting at 0. The red line is the page-load limit (--page-load-limit): a page that is still loading past it has lost its user."),
    ("duration", "Session duration vs the recording",
     "Each dot is a session, at the time it started. The dashed line is how long the recorded session took alone: dots far above it were slowed down by load."),
    ("waterfall", "Event waterfall of one session",
     "Every step of the chosen session against the recording (grey ghost bars). Pick another session in the list; the slowest one is shown first."),
    ("latency", "Latency per session over time",
     "Total time a session spent waiting on HTTP (page + assets) and on the server (Calculate), by session start."),
    ("lines", "Event duration by recording line",
     "Box plots (min, quartiles, max) of each recording line, slowest lines first (by p90). The label is the line's URL or message."),
    ("concurrency", "Concurrency and throughput",
     "Active sessions (line) and completed events per second (bars) over the run; for a run with a load shape (shape.csv), the users it asked for (dashed) and had (thin line), or for an open model the arrivals per second asked and achieved."),
    ("manifold", "Processes (manifold)",
     "manifold's workers polled every second during the run (--manifold): ready and busy workers, requests waiting in its queue (bars), and beside them the p95 of the events that ended in each interval (right axis)."),
];

/// Renders the full page. `data_json` is the serialised model; `runtime_js` the chart runtime.
pub fn render(m: &Model, data_json: &str, runtime_js: &str) -> String {
    let names: Vec<String> = m.runs.iter().map(|r| esc(&r.name)).collect();
    let title = format!("surge report: {}", names.join(" vs "));
    let rec = &m.recordings[0];
    let mut h = String::with_capacity(data_json.len() + runtime_js.len() + 32_000);
    let _ = write!(
        h,
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{title}</title><style>{CSS}</style></head><body><header><h1>{title}</h1>\
         <p class=\"sub\">Recording {} ({} events{}, {} alone) · page-load limit {} · made {}</p><nav>",
        esc(&rec.path),
        rec.line.len(),
        rec.target
            .as_deref()
            .map(|t| format!(", target {}", esc(t)))
            .unwrap_or_default(),
        fmt_ms(rec.duration_ms),
        fmt_ms(m.page_load_limit_ms),
        esc(&m.generated),
    );
    if m.capacity.is_some() {
        h.push_str("<a href=\"#capacity\">Capacity</a>");
    }
    h.push_str("<a href=\"#summary\">Summary</a>");
    if m.runs.iter().any(|r| r.inputs.with_data > 0) {
        h.push_str("<a href=\"#inputs\">Inputs</a>");
    }
    if m.runs.iter().any(|r| !r.timing.is_empty()) {
        h.push_str("<a href=\"#timing\">Where the time goes</a>");
    }
    for (id, t, _) in SECTIONS {
        if *id == "manifold" && m.runs.iter().all(|r| r.manifold.is_empty()) {
            continue;
        }
        let _ = write!(h, "<a href=\"#{id}\">{t}</a>");
    }
    h.push_str("</nav></header><main>");
    if !m.same_recording {
        h.push_str(
            "<div class=\"warn\" id=\"mixed-recordings\"><b>These runs replayed different recordings.</b> \
             Their numbers are not comparable step by step; per-line views use each run's own recording.</div>",
        );
    }
    if let Some(c) = &m.capacity {
        let _ = write!(
            h,
            "<section id=\"capacity\"><h2>Capacity</h2><p class=\"answer\"><b>{}</b></p>\
             <p class=\"explain\">Each step's value of every objective against its load ({}); a hollow mark is a step that broke an objective or the failure rate (at most {}%). The dashed line is each objective's limit, the vertical line the knee: the most load that held. The runs below are the last step that held and the first that broke.</p>\
             <div class=\"charts\" id=\"charts-capacity\"></div></section>",
            esc(&c.answer),
            esc(&c.unit),
            c.max_failure_rate * 100.0
        );
    }
    let _ = write!(
        h,
        "<section id=\"summary\"><h2>Summary</h2>{}<div class=\"cols{}\"><div>{}</div><div>{}{}{}</div></div>\
         <div class=\"legend\" id=\"legend\"></div></section>",
        overview(m),
        // Beyond 3 runs the two tables no longer fit side by side: one above the other.
        if m.runs.len() > 3 { " stack" } else { "" },
        summary_table(m),
        class_table(m),
        journey_table(m),
        failures(m)
    );
    h.push_str(&inputs_section(m));
    // "Where the time goes" and the explain ranking (report::split) go here, before the charts.
    h.push_str("<!--split-->");
    for (id, t, explain) in SECTIONS {
        if *id == "manifold" && m.runs.iter().all(|r| r.manifold.is_empty()) {
            continue;
        }
        let _ = write!(
            h,
            "<section id=\"{id}\"><h2>{t}</h2><p class=\"explain\">{explain}</p><div class=\"charts\" id=\"charts-{id}\"></div></section>"
        );
    }
    h.push_str("</main><noscript>Charts need JavaScript; the tables above do not.</noscript>");
    // `</` cannot close the script element once escaped; JSON and JS read `<\/` as `</`.
    let _ = write!(
        h,
        "<script type=\"application/json\" id=\"surge-data\">{}</script><script>{}</script></body></html>",
        data_json.replace("</", "<\\/"),
        runtime_js.replace("</script", "<\\/script")
    );
    h
}

const CSS: &str = r#"
:root{--fg:#1d2330;--dim:#667085;--line:#e4e7ec;--bg:#fff;--accent:#3b6fb6}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;color:var(--fg);background:#f7f8fa}
header{background:#fff;border-bottom:1px solid var(--line);padding:14px 24px 8px}
h1{font-size:20px;margin:0}
.sub{margin:2px 0 6px;color:var(--dim);font-size:12.5px;overflow-wrap:anywhere}
nav a{font-size:12.5px;margin-right:14px;color:var(--accent);text-decoration:none}
main{max-width:1240px;margin:0 auto;padding:8px 16px 40px}
section{background:#fff;border:1px solid var(--line);border-radius:8px;margin:16px 0;padding:12px 16px}
h2{font-size:16px;margin:2px 0 4px}
.explain{color:var(--dim);margin:0 0 8px;font-size:13px}
.overview{margin:4px 0 10px;padding-left:18px}
.dim{color:var(--dim);font-size:12px}
.cols{display:grid;grid-template-columns:minmax(0,1fr) minmax(0,1fr);gap:20px}
.cols.stack{grid-template-columns:minmax(0,1fr)}.cols>div{overflow-x:auto}
table.summary thead th{white-space:normal;vertical-align:bottom}
table{border-collapse:collapse;width:100%;font-size:13px;font-variant-numeric:tabular-nums}
th,td{padding:3px 8px;border-bottom:1px solid var(--line);text-align:right;white-space:nowrap}
th:first-child,table.classes td.run{text-align:left}
thead th{font-weight:600;border-bottom:2px solid var(--line)}
.ratio{font-size:11px;margin-left:6px;color:var(--dim)}
table.classes .ratio{display:block;margin:0;line-height:1.1}
.ratio.up{color:#c2410c}.ratio.down{color:#15803d}
.sw{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:6px;vertical-align:-1px}
.c0 .sw,.sw.c0{background:#3b6fb6}.sw.c1{background:#8ec1ea}.sw.c2{background:#f0a030}.sw.c3{background:#4aa564}.sw.c4{background:#b8bcc4}
.failures{font-size:13px;margin-top:10px}.failures ul{margin:4px 0;padding-left:18px}.failures .n{color:#c62828;font-weight:600}
.ok{color:#15803d;font-size:13px}
.warn{background:#fff4e5;border:1px solid #f0a030;border-radius:8px;padding:10px 14px;margin:16px 0}
.legend{margin-top:10px;font-size:12.5px;color:var(--dim)}
.legend span{margin-right:16px}
.facet{margin:6px 0 2px}
.facet h3{font-size:13px;margin:6px 0 0;color:var(--fg)}
.facet select{font-size:12.5px;margin-left:8px;max-width:560px}
.controls{font-size:12.5px;color:var(--dim);margin-bottom:4px}
.controls select,.controls button{font-size:12.5px;margin-left:6px}
.chart{width:100%}
"#;
