//! `surge compare` (issue 33, Deliver 4): replays of one loopback app whose answer time the test
//! sets; runs of the same app never regress, the app 20% slower does, naming the metric; a bad
//! spec is one line and exit status 2; `surge report` with the same flags shows the same verdicts.

use crate::common;

use common::*;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// An app that answers every request after the delay (ms) the test sets; its port.
fn app(delay_ms: Arc<AtomicU64>) -> u16 {
    start_http(move |_| {
        // why: the app's work: its answer time is what the compared runs measure.
        std::thread::sleep(Duration::from_millis(delay_ms.load(Ordering::SeqCst)));
        Some("200 OK")
    })
}

/// A page, two assets and three API calls (lines 4–9).
fn recording(dir: &Path, port: u16) -> PathBuf {
    let mut text =
        format!("# version: 1\n# target_url: http://127.0.0.1:{port}\n# target_type: surge/http\n");
    for (i, url) in ["/", "/app.js", "/style.css", "/api/1", "/api/2", "/api/3"]
        .iter()
        .enumerate()
    {
        let kind = if i == 0 { "REQ_HOME" } else { "REQ_GET" };
        text.push_str(&format!(
            "{{\"type\":\"{kind}\",\"begin\":\"2026-01-01T00:00:00.{i}00Z\",\"end\":\"2026-01-01T00:00:00.{i}20Z\",\"status\":200,\"url\":\"{url}\"}}\n"
        ));
    }
    let p = dir.join("recording.log");
    std::fs::write(&p, text).unwrap();
    p
}

/// 4 users for a second of loaded time, no think time: about 30 sessions, 180 events.
fn run(rec: &Path, port: u16, out: &Path) -> PathBuf {
    replay_clean(
        rec,
        &format!("http://127.0.0.1:{port}"),
        4,
        out,
        &[
            "--start-interval",
            "0s",
            "--loaded-duration",
            "1s",
            "--think-time",
            "none",
            "--overwrite-output",
        ],
    );
    out.to_path_buf()
}

const SPECS: [&str; 4] = [
    "page_load:p95:10%",
    "events:p50:10%",
    "session:mean:10%",
    "line7:p90:10%",
];

fn compare(base: &Path, new: &Path, extra: &[&str]) -> std::process::Output {
    let mut cmd = surge();
    cmd.arg("compare").arg(base).arg(new);
    for s in SPECS {
        cmd.args(["--max-regression", s]);
    }
    cmd.args(extra).output().unwrap()
}

/// Six runs of the same app, five consecutive pairs: every pair exits 0 with one ok line per
/// metric; then the app answers 20% slower (25 → 30 ms): exit 1, a regression line on stderr
/// naming each slowed metric, and `--json` says the same. The report given both runs and the
/// same flags shows the same verdict lines.
#[test]
fn same_app_never_regresses_and_a_slower_one_does() {
    let dir = fresh_dir("compare-runs");
    let delay = Arc::new(AtomicU64::new(25));
    let port = app(delay.clone());
    let rec = recording(&dir, port);
    let runs: Vec<PathBuf> = (0..6)
        .map(|i| run(&rec, port, &dir.join(format!("same{i}"))))
        .collect();
    for pair in runs.windows(2) {
        let out = compare(&pair[0], &pair[1], &[]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(0),
            "false regression: {stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(stdout.lines().count(), SPECS.len(), "{stdout}");
    }
    delay.store(30, Ordering::SeqCst);
    let slow = run(&rec, port, &dir.join("slow"));
    let json = dir.join("verdicts.json");
    let out = compare(&runs[5], &slow, &["--json", json.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let failed: Vec<&str> = stderr.lines().collect();
    assert!(
        failed.iter().any(|l| l.contains("events:p50:10%")),
        "{stderr}"
    );
    assert!(
        failed
            .iter()
            .all(|l| l.starts_with("surge compare: regression: ")),
        "{stderr}"
    );
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(doc["ok"], false);
    assert_eq!(doc["regressions"].as_u64(), Some(failed.len() as u64));
    let events = &doc["verdicts"][1];
    assert_eq!(events["spec"], "events:p50:10%");
    assert_eq!(events["regression"], true);
    assert!(events["low_ms"].as_f64().unwrap() > 0.0, "{events}");

    // The report shows the verdict lines compare printed.
    let page = dir.join("report.html");
    let mut args = vec![
        "report".to_string(),
        runs[5].display().to_string(),
        slow.display().to_string(),
        "-o".into(),
        page.display().to_string(),
    ];
    for s in SPECS {
        args.extend(["--max-regression".to_string(), s.to_string()]);
    }
    let rep = surge().args(&args).output().unwrap();
    assert_eq!(rep.status.code(), Some(0), "{rep:?}");
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("id=\"verdicts\""));
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let esc = line
            .replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;");
        assert!(html.contains(&esc), "report lacks {line}");
    }
}

/// A spec that is not METRIC:STAT:MARGIN, a metric a run has not, or no spec at all: exit 2
/// and one line naming it.
#[test]
fn bad_specs_are_one_line_and_exit_2() {
    let dir = fresh_dir("compare-bad");
    let port = app(Arc::new(AtomicU64::new(1)));
    let rec = recording(&dir, port);
    let a = run(&rec, port, &dir.join("a"));
    let cases: [(&[&str], &str); 5] = [
        (&["--max-regression", "pageload:p95:10%"], "unknown metric"),
        (
            &["--max-regression", "page_load:p97:10%"],
            "unknown statistic",
        ),
        (&["--max-regression", "page_load:p95:lots"], "margin"),
        (
            &["--max-regression", "latency:p95:10%"],
            "no values of latency",
        ),
        (&[], "no --max-regression"),
    ];
    for (flags, says) in cases {
        let out = surge()
            .arg("compare")
            .arg(&a)
            .arg(&a)
            .args(flags)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flags:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{flags:?}: {err}");
        assert!(err.contains(says), "{flags:?}: {err}");
    }
}

/// Bench results (`surge bench --json` files) compare by their latency histograms: the same app
/// twice is no regression, the app 20% slower (10 → 12 ms) is; the result carries `generator`.
#[test]
fn bench_results_compare_by_latency() {
    let dir = fresh_dir("compare-bench");
    let delay = Arc::new(AtomicU64::new(10));
    let port = app(delay.clone());
    let url = format!("http://127.0.0.1:{port}/");
    let bench = |name: &str| {
        let (code, json) = bench_in_process(&[&url, "-c", "4", "-n", "400"]);
        assert_eq!(code, Some(0), "{json}");
        assert!(json["generator"]["saturated"].is_boolean(), "{json}");
        let p = dir.join(name);
        std::fs::write(&p, json.to_string()).unwrap();
        p
    };
    let (a, b) = (bench("a.json"), bench("b.json"));
    delay.store(12, Ordering::SeqCst);
    let slow = bench("slow.json");
    let cmp = |x: &Path, y: &Path| {
        surge()
            .arg("compare")
            .arg(x)
            .arg(y)
            .args(["--max-regression", "latency:p50:10%"])
            .output()
            .unwrap()
    };
    let same = cmp(&a, &b);
    assert_eq!(same.status.code(), Some(0), "{same:?}");
    let worse = cmp(&b, &slow);
    let err = String::from_utf8_lossy(&worse.stderr);
    assert_eq!(worse.status.code(), Some(1), "{err}");
    assert!(err.contains("latency:p50:10%"), "{err}");
}
