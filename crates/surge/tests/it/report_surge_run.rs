//! `surge report` on a fresh `surge replay` run (not only shinycannon's): a small plain-HTTP app on
//! loopback, a hand-written recording (page, two assets, one slow API call), 4 users.

use crate::common;
use crate::segments_support;

use common::{
    fresh_dir, replay_argv, replay_async, replay_in_process, report_args, report_in_process,
    report_model, start_four_way_app, start_http,
};
use serde_json::Value;
use std::{
    path::{Path, PathBuf},
    time::Duration,
};

const API_DELAY_MS: u64 = 40;

/// Answers every request with 200; `/api/` paths after API_DELAY_MS.
fn start_app() -> u16 {
    start_http(|path| {
        if path.starts_with("/api/") {
            // why: the app's work: the API's answer time is what the report measures.
            std::thread::sleep(Duration::from_millis(API_DELAY_MS));
        }
        Some("200 OK")
    })
}

fn recording(port: u16) -> String {
    let ev = |t: &str, b: &str, e: &str, url: &str| {
        format!("{{\"type\":\"{t}\",\"begin\":\"2026-01-01T00:00:{b}Z\",\"end\":\"2026-01-01T00:00:{e}Z\",\"status\":200,\"url\":\"{url}\"}}\n")
    };
    format!(
        "# version: 1\n# target_url: http://127.0.0.1:{port}\n# target_type: surge/http\n{}{}{}{}",
        ev("REQ_HOME", "00.000", "00.010", "/"),
        ev("REQ_GET", "00.020", "00.025", "/app.js"),
        ev("REQ_GET", "00.030", "00.035", "/style.css"),
        ev("REQ_GET", "00.100", "00.150", "/api/data?day=1"),
    )
}

/// Replay 4 users with surge, then report: counts match the CSVs, classes are right (2 assets and
/// 1 API call per session) and the API call's p50 includes the server's delay.
#[test]
fn report_of_a_fresh_surge_replay() {
    let port = start_app();
    let dir = fresh_dir("report-surge-replay");
    let rec = dir.join("recording.log");
    std::fs::write(&rec, recording(port)).unwrap();
    let run = dir.join("run");
    let o = replay_in_process(
        &rec,
        &format!("http://127.0.0.1:{port}"),
        4,
        &run,
        &[
            "--start-interval",
            "50ms",
            "--think-time",
            "none",
            "--overwrite-output",
        ],
    );
    assert!(o.exit_code() == 0, "replay: {:?}", o.summary.checks);

    let files: Vec<PathBuf> = std::fs::read_dir(run.join("sessions"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    let starts: usize = files
        .iter()
        .map(|f| {
            std::fs::read_to_string(f)
                .unwrap()
                .lines()
                .filter(|l| {
                    let ev = l.split(',').nth(3).unwrap_or("");
                    ev.ends_with("_START") && ev != "PLAYBACK_SLEEPBEFORE_START"
                })
                .count()
        })
        .sum();

    let mut args = report_args(vec![run.clone()], &["fresh"]);
    args.page_load_limit = Duration::from_secs(1);
    let m = report_model(&args);
    let s = &m["runs"][0]["summary"];
    let n = files.len();
    assert!(n >= 4, "{n} sessions");
    assert_eq!(s["outcome"]["sessions"]["started"], n);
    assert_eq!(s["events"], starts);
    assert_eq!(s["outcome"]["sessions"]["completed"], n, "{s}");
    assert_eq!(s["outcome"]["sessions"]["failed"], 0);
    assert_eq!(s["classes"][0][0], n, "one Homepage per session");
    assert_eq!(s["classes"][1][0], 2 * n, "two JS/CSS per session");
    assert_eq!(s["classes"][3][0], n, "one Calculate (API GET) per session");
    assert!(
        s["classes"][3][1].as_i64().unwrap() >= API_DELAY_MS as i64,
        "{s}"
    );
    assert!(s["page_load"][0].as_u64().unwrap() == n as u64);

    // And the HTML file, when the runtime is built in (the binary's: report_fixtures.rs).
    if surge::report::runtime().is_ok() {
        let out = dir.join("report.html");
        let o = report_in_process(&[run.to_str().unwrap(), "-o", out.to_str().unwrap()]);
        assert!(o.is_ok(), "{o:?}");
        let html = std::fs::read_to_string(&out).unwrap();
        assert!(html.contains(&format!(
            "data-run=\"0\" data-k=\"events\" data-v=\"{starts}\""
        )));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The terminal row `name` of a replay's text: `[count, p50, p90, p99, max]`.
fn text_row(text: &str, name: &str) -> Vec<f64> {
    let line = (text.lines())
        .find(|l| l.starts_with(&format!("{name} ")))
        .unwrap_or_else(|| panic!("no row {name:?} in\n{text}"));
    let cols: Vec<f64> = (line[name.len()..].split_whitespace())
        .map(|c| c.parse().unwrap())
        .collect();
    assert_eq!(cols.len(), 5, "{line}");
    cols
}

/// One real run, three readers: summary.json (written by the replay), the terminal text (what
/// `surge replay` prints) and the report's model (read back from the session CSVs) state the
/// same count and percentiles for every event type, all events and whole sessions. The app's
/// API delay varies (0..59 ms) so the percentiles differ from each other; each is also checked
/// against nearest rank computed here from the CSV rows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn summary_json_terminal_and_report_agree_on_every_percentile() {
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let port = start_http(|path| {
        if path.starts_with("/api/") {
            let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            // why: the app's work, varied so that the percentiles differ from each other.
            std::thread::sleep(Duration::from_millis(n * 37 % 60));
        }
        Some("200 OK")
    });
    let dir = fresh_dir("rundir-percentiles-agree");
    let rec = dir.join("recording.log");
    std::fs::write(&rec, recording(port)).unwrap();
    let run = dir.join("run");
    let target = format!("http://127.0.0.1:{port}");
    let args = replay_argv(
        &rec,
        &target,
        6,
        &run,
        &[
            "--start-interval",
            "10ms",
            "--loaded-duration",
            "1500ms",
            "--think-time",
            "none",
            "--overwrite-output",
        ],
    );
    let outcome = replay_async(&args, std::future::pending()).await.unwrap();
    assert_eq!(outcome.exit_code(), 0, "{:?}", outcome.summary.checks);
    let text = surge::replay::replay_text(&outcome.summary, &run);
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("summary.json")).unwrap()).unwrap();
    let m = report_model(&report_args(vec![run.clone()], &["run"]));
    let report = &m["runs"][0]["summary"]["outcome"];
    report_states_summary_json(&json, report, &run);
    assert_eq!(json["sessions"]["failed"], 0, "{json}");

    let durations = segments_support::durations(&segments_support::sessions(&run));
    let mut names: Vec<&str> = vec!["overall", "session"];
    let kinds: Vec<String> = json["events"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    assert_eq!(kinds, ["REQ_GET", "REQ_HOME"]);
    names.extend(kinds.iter().map(String::as_str));
    for name in names {
        let (key_json, key_text, in_json, in_report) = match name {
            "overall" => (
                "overall",
                "all events",
                &json["overall"],
                &report["overall"],
            ),
            "session" => (
                "session",
                "session",
                &json["session_duration"],
                &report["session_duration"],
            ),
            k => (k, k, &json["events"][k], &report["events"][k]),
        };
        let want = &durations[key_json];
        let stats = ["count", "p50", "p90", "p95", "p99", "p99.9", "max", "mean"];
        for s in stats {
            assert_eq!(
                in_json[s], in_report[s],
                "{name} {s}: summary.json vs report"
            );
        }
        let row = text_row(&text, key_text);
        let from_json: Vec<f64> = ["count", "p50", "p90", "p99", "max"]
            .iter()
            .map(|s| in_json[s].as_f64().unwrap())
            .collect();
        assert_eq!(row, from_json, "{name}: terminal vs summary.json");
        let rank = |q: f64| segments_support::pct(want, q);
        assert_eq!(
            from_json,
            [
                want.len() as f64,
                rank(0.5),
                rank(0.9),
                rank(0.99),
                *want.last().unwrap() as f64
            ],
            "{name}: summary.json vs nearest rank of the CSV rows"
        );
    }
    assert!(durations["REQ_GET"].len() >= 12, "{durations:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// summary.json (what the replay computed as its sessions ended) and the report's
/// `summary.outcome` (what it computed from the session CSVs) state the same run: session counts,
/// failure rate, failures by kind, every failure group's kind, line, event type, reason (as the
/// CSV holds it: commas as `;`) and count in the same order, and every percentile. The counts are
/// also checked against the CSVs' last rows, counted here.
fn report_states_summary_json(json: &Value, report: &Value, run: &Path) {
    assert_eq!(report["sessions"], json["sessions"], "sessions");
    assert_eq!(report["failure_rate"], json["failure_rate"], "failure_rate");
    assert_eq!(
        report["failures_by_kind"], json["failures_by_kind"],
        "failures_by_kind"
    );
    let groups = |v: &Value, csv: bool| -> Vec<(String, u64, String, String, u64)> {
        (v["failures"].as_array().unwrap().iter())
            .map(|f| {
                let reason = f["reason"].as_str().unwrap();
                (
                    f["kind"].as_str().unwrap().to_string(),
                    f["line"].as_u64().unwrap(),
                    f["event"].as_str().unwrap_or("").to_string(),
                    if csv {
                        surge::rundir::csv_safe(reason)
                    } else {
                        reason.to_string()
                    },
                    f["count"].as_u64().unwrap(),
                )
            })
            .collect()
    };
    assert_eq!(groups(report, false), groups(json, true), "failures");
    for key in ["events", "overall", "session_duration"] {
        assert_eq!(report[key], json[key], "{key}: report vs summary.json");
    }
    // Independently: each CSV's last row, and a failure's kind from its comment.
    let (mut done, mut by_kind) = (0u64, std::collections::BTreeMap::<String, u64>::new());
    for f in common::session_csvs(run) {
        let text = std::fs::read_to_string(&f).unwrap();
        let last: Vec<&str> = text.lines().last().unwrap().splitn(7, ',').collect();
        match last[3] {
            "PLAYBACK_DONE" => done += 1,
            "PLAYBACK_FAIL" => {
                let kind = last[6].strip_prefix("kind=").unwrap().split(' ').next();
                *by_kind.entry(kind.unwrap().to_string()).or_default() += 1;
            }
            other => panic!("{}: ends with {other}", f.display()),
        }
    }
    assert_eq!(json["sessions"]["completed"], done, "completed vs the CSVs");
    assert_eq!(
        json["failures_by_kind"],
        serde_json::json!(by_kind),
        "kinds vs the CSVs"
    );
}

/// A run whose sessions fail three ways (wrong status, connection closed, timeout) at one line:
/// the report, reading only the CSVs, states the failures summary.json states, by kind and reason,
/// with the same counts and percentiles.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn summary_json_and_report_agree_on_every_failure() {
    let port = start_four_way_app();
    let dir = fresh_dir("rundir-failures-agree");
    let rec = dir.join("recording.log");
    std::fs::write(&rec, recording(port)).unwrap();
    let run = dir.join("run");
    let target = format!("http://127.0.0.1:{port}");
    let args = replay_argv(
        &rec,
        &target,
        8,
        &run,
        &[
            "--start-interval",
            "0",
            "--think-time",
            "none",
            "--message-timeout",
            "1s",
            "--overwrite-output",
        ],
    );
    let outcome = replay_async(&args, std::future::pending()).await.unwrap();
    assert_eq!(outcome.exit_code(), 1, "{:?}", outcome.summary.checks);
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("summary.json")).unwrap()).unwrap();
    assert_eq!(
        json["failures_by_kind"],
        serde_json::json!({"timeout": 2, "wrong_status": 2, "closed": 2}),
        "{json}"
    );
    let m = report_model(&report_args(vec![run.clone()], &["run"]));
    report_states_summary_json(&json, &m["runs"][0]["summary"]["outcome"], &run);
    // Each failed session's reason column points at its group.
    let s = &m["runs"][0]["sessions"];
    let pointed = (s["reason"].as_array().unwrap().iter()).filter(|r| r.as_i64() != Some(-1));
    assert_eq!(pointed.count(), 6);
    let _ = std::fs::remove_dir_all(&dir);
}
