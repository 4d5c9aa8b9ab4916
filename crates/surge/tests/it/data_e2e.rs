//! Different data per simulated user, on our cranwhales: `surge parametrize` turns the recorded
//! day into `${date}`, `--data days.csv --data-mode unique` gives 30 users 30 different days, and
//! the server's fetch counts (a loopback log source serving real cranlogs days) show the 30 cache
//! misses that the same-input run hides (1 fetch), and the report of the two shows them (each
//! session's first use or reuse of its input). Then `--capture` takes a day from a live answer
//! and sends it back; a capture that finds nothing fails the session with its reason.

use crate::common;

use common::*;
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn cranlogs() -> PathBuf {
    shared().join("../cranlogs")
}

/// A loopback cranlogs mirror (`/YYYY/YYYY-MM-DD.csv.gz`) that counts requests per day.
fn start_log_source(dir: PathBuf) -> (u16, Arc<Mutex<BTreeMap<String, u32>>>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let counts = Arc::new(Mutex::new(BTreeMap::new()));
    let c = counts.clone();
    std::thread::spawn(move || {
        for mut s in l.incoming().flatten() {
            let mut buf = [0u8; 4096];
            let n = s.read(&mut buf).unwrap_or(0);
            let head = String::from_utf8_lossy(&buf[..n]).to_string();
            let path = head.split_whitespace().nth(1).unwrap_or("/").to_string();
            let name = path.rsplit('/').next().unwrap_or("").to_string();
            let day = name.trim_end_matches(".csv.gz").to_string();
            *c.lock().unwrap().entry(day).or_insert(0) += 1;
            let (status, body) = match std::fs::read(dir.join(&name)) {
                Ok(b) => ("200 OK", b),
                Err(_) => ("404 Not Found", Vec::new()),
            };
            let head = format!(
                "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = s.write_all(head.as_bytes());
            let _ = s.write_all(&body);
        }
    });
    (port, counts)
}

fn recording(path: &Path, lines: &[(&str, u16, &str)]) {
    let mut text = String::from(
        "# version: 1\n# target_url: http://127.0.0.1:1/\n# target_type: surge/http\n",
    );
    for (i, (kind, status, url)) in lines.iter().enumerate() {
        text.push_str(&format!(
            "{{\"type\":\"{kind}\",\"begin\":\"2026-01-01T00:00:0{i}.000Z\",\"end\":\"2026-01-01T00:00:0{i}.050Z\",\"status\":{status},\"url\":\"{url}\"}}\n"
        ));
    }
    std::fs::write(path, text).unwrap();
}

/// `replay_in_process`, which must exit 0; returns what `surge replay` prints.
fn replay_ok(rec: &Path, target: &str, users: u32, run: &Path, flags: &[&str]) -> String {
    let outcome = replay_in_process(rec, target, users, run, flags);
    let text = surge::replay::replay_text(&outcome.summary, run);
    assert_eq!(outcome.exit_code(), 0, "{text}");
    text
}

fn run_ok(mut cmd: Command) -> String {
    let out = cmd.stderr(Stdio::piped()).output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(0), "{text}");
    text
}

#[test]
fn thirty_users_thirty_days_show_the_misses_a_same_input_run_hides() {
    cranwhales_bin(); // fails at once, saying how to build it, when it is missing
    let mut days: Vec<String> = std::fs::read_dir(cranlogs())
        .unwrap()
        .flatten()
        .map(|e| {
            e.file_name()
                .to_string_lossy()
                .trim_end_matches(".csv.gz")
                .to_string()
        })
        .filter(|d| d.len() == 10)
        .collect();
    days.sort();
    // The smallest days ingest fastest: 2012's.
    days.truncate(31);
    assert_eq!(
        days.len(),
        31,
        "31 cranlogs days in {}",
        cranlogs().display()
    );
    let (src_port, fetched) = start_log_source(cranlogs());
    let tmp = TempDir::new("data");
    let source = format!("http://127.0.0.1:{src_port}");
    let args = ["--no-sample", "--source-url", &source];
    let fetch = ["--fetch-burst", "1000", "--fetch-per-minute", "100000"];
    let args: Vec<&std::ffi::OsStr> = args
        .iter()
        .chain(&fetch)
        .map(std::ffi::OsStr::new)
        .collect();
    let (_server, port) = start_cranwhales(tmp.path(), &args, Duration::from_secs(60));
    let target = format!("http://127.0.0.1:{port}/");

    // A day nobody asked for yet answers 202 (fetching): the recording says so.
    let (first, others) = days.split_first().unwrap();
    let rec = tmp.path().join("recording.log");
    let day_url = format!("/api/days/{first}?count=8");
    recording(&rec, &[("REQ_HOME", 200, "/"), ("REQ_GET", 202, &day_url)]);
    let param = tmp.path().join("by-day.log");
    let out = run_ok({
        let mut c = surge();
        c.arg("parametrize")
            .arg(&rec)
            .arg(format!("date={first}"))
            .arg("-o")
            .arg(&param);
        c
    });
    assert!(out.contains("${date}: 1 places"), "{out}");
    assert!(std::fs::read_to_string(&param)
        .unwrap()
        .contains("/api/days/${date}?count=8"));

    let csv = tmp.path().join("days.csv");
    std::fs::write(&csv, format!("date\n{}\n", others.join("\n"))).unwrap();
    let run = tmp.path().join("run-data");
    let mut cmd = replay_cmd(&param, &target, 30, &run);
    cmd.args([
        "--start-interval",
        "20ms",
        "--think-time",
        "none",
        "--loaded-duration",
        "2s",
    ])
    .arg("--data")
    .arg(&csv)
    .args(["--data-mode", "unique"]);
    let out = run_ok(cmd);
    let s = summary(&run);
    assert_eq!(s["sessions"]["started"].as_u64(), Some(30), "{out}");
    assert_eq!(s["sessions"]["failed"].as_u64(), Some(0), "{out}");
    assert!(
        out.contains(&format!(
            "--data {}: all 30 rows used (--data-mode unique): no more sessions start",
            csv.display()
        )),
        "{out}"
    );
    // Each 202 started a fetch; the server works through them (--max-ingests) after the run.
    wait_until(Duration::from_secs(120), || {
        fetched.lock().unwrap().len() >= 30
    });
    let seen = fetched.lock().unwrap().clone();
    let distinct: Vec<&String> = seen.keys().filter(|d| others.contains(d)).collect();
    assert_eq!(distinct.len(), 30, "each user's day was fetched: {seen:?}");
    assert!(
        seen.values().all(|&n| n == 1),
        "no day fetched twice: {seen:?}"
    );

    // The same input for every user, as recorded once the day is stored (200): one day fetched
    // in all, every session served from the store and the cache.
    fetched.lock().unwrap().clear();
    wait_until(Duration::from_secs(120), || {
        http_get(&target, &day_url).0 == 200
    });
    let same = tmp.path().join("same.log");
    recording(&same, &[("REQ_HOME", 200, "/"), ("REQ_GET", 200, &day_url)]);
    let run = tmp.path().join("run-same");
    let mut cmd = replay_cmd(&same, &target, 30, &run);
    cmd.args(["--start-interval", "20ms", "--think-time", "none"]);
    let out = run_ok(cmd);
    let s = summary(&run);
    assert_eq!(s["sessions"]["failed"].as_u64(), Some(0), "{out}");
    assert!(s["sessions"]["started"].as_u64().unwrap() >= 30, "{out}");
    let seen = fetched.lock().unwrap().clone();
    assert_eq!(
        seen.len(),
        1,
        "the same-input run's day was fetched once: {seen:?}"
    );
    assert!(seen.values().all(|&n| n == 1), "{seen:?}");

    // The report shows it too: first use vs reuse of each session's input.
    first_use_in_the_report(&target, tmp.path(), first, others, &csv);

    // --capture: the first day of the live day list, sent back as ${FIRST}.
    let rec = tmp.path().join("capture.log");
    recording(
        &rec,
        &[
            ("REQ_HOME", 200, "/"),
            ("REQ_GET", 200, "/api/days"),
            ("REQ_GET", 200, "/api/days/${FIRST}?count=8"),
        ],
    );
    let run = tmp.path().join("run-capture");
    let flags = ["--start-interval", "20ms", "--think-time", "none"];
    let capture = [&flags[..], &["--capture", r"FIRST@5=(\d{4}-\d\d-\d\d)"]].concat();
    let out = replay_ok(&rec, &target, 5, &run, &capture);
    assert_eq!(
        summary(&run)["sessions"]["failed"].as_u64(),
        Some(0),
        "{out}"
    );

    let run = tmp.path().join("run-capture-miss");
    let miss = [&flags[..], &["--capture", "FIRST@5=never-there-(x)"]].concat();
    let outcome = replay_in_process(&rec, &target, 3, &run, &miss);
    assert_eq!(outcome.exit_code(), 1);
    let s = summary(&run);
    assert_eq!(s["sessions"]["failed"], s["sessions"]["started"]);
    let text = serde_json::to_string(&s).unwrap();
    assert!(text.contains("\"capture\""), "{text}");
    assert!(
        text.contains("--capture FIRST@5: never-there-(x) found nothing in the response"),
        "{text}"
    );
}

/// Waits (at most 3 minutes in all) until every day of `days` is stored (answers 200).
fn wait_stored(target: &str, days: &[String]) {
    let end = std::time::Instant::now() + Duration::from_secs(180);
    for d in days {
        let left = end.saturating_duration_since(std::time::Instant::now());
        let stored = || http_get(target, &format!("/api/days/{d}?count=8")).0 == 200;
        assert!(wait_until(left, stored), "{d} not stored");
    }
}

/// One recording, `${date}` at a count nobody asked for yet (so the server builds each day's
/// summary on its first request and serves it from memory after): 30 users all given `first`
/// (a one-row --data) vs 30 users each given their own stored day. The report of the two runs
/// counts the first uses each hides or shows: 1 vs 30, as many as the distinct days each sent.
fn first_use_in_the_report(
    target: &str,
    tmp: &Path,
    first: &str,
    others: &[String],
    days_csv: &Path,
) {
    wait_stored(target, others);
    let rec = tmp.join("stored.log");
    recording(
        &rec,
        &[
            ("REQ_HOME", 200, "/"),
            ("REQ_GET", 200, "/api/days/${date}?count=9"),
        ],
    );
    let one = tmp.join("one-day.csv");
    std::fs::write(&one, format!("date\n{first}\n")).unwrap();
    let mut runs = Vec::new();
    let per_user = days_csv.to_path_buf();
    for (name, csv, mode) in [
        ("same", &one, "sequential"),
        ("per-user", &per_user, "unique"),
    ] {
        let run = tmp.join(format!("run-{name}-count9"));
        let flags = ["--start-interval", "20ms", "--think-time", "none", "--data"];
        let data = [&flags[..], &[csv.to_str().unwrap(), "--data-mode", mode]].concat();
        let out = replay_ok(&rec, target, 30, &run, &data);
        assert_eq!(
            summary(&run)["sessions"]["failed"].as_u64(),
            Some(0),
            "{out}"
        );
        runs.push(run);
    }
    let sessions = |run: &Path| summary(run)["sessions"]["started"].as_u64().unwrap();
    let (n_same, n_per) = (sessions(&runs[0]), sessions(&runs[1]));
    assert_eq!(n_per, 30);
    let m = report_model(&report_args(runs.clone(), &["same day", "a day per user"]));
    let inputs = |i: usize| m["runs"][i]["inputs"].clone();
    let (same, per) = (inputs(0), inputs(1));
    // What each run sent, counted from the recording and the data files alone.
    assert_eq!(
        [
            &same["with_data"],
            &same["distinct"],
            &same["first"],
            &same["again"]
        ]
        .map(|v| v.as_u64()),
        [Some(n_same), Some(1), Some(1), Some(n_same - 1)],
        "{same}"
    );
    assert_eq!(
        [
            &per["with_data"],
            &per["distinct"],
            &per["first"],
            &per["again"]
        ]
        .map(|v| v.as_u64()),
        [Some(30), Some(30), Some(30), Some(0)],
        "{per}"
    );
    // The day request (recording line 5): [n, p50, p90, p99, max] in first-use and reusing
    // sessions.
    let day = |u: &serde_json::Value| {
        (u["lines"].as_array().unwrap().iter())
            .find(|l| l["line"] == 5)
            .unwrap()
            .clone()
    };
    let (ds, dp) = (day(&same), day(&per));
    assert_eq!(
        (ds["first"][0].as_u64(), ds["again"][0].as_u64()),
        (Some(1), Some(n_same - 1))
    );
    assert_eq!(
        (dp["first"][0].as_u64(), dp["again"][0].as_u64()),
        (Some(30), Some(0))
    );
    eprintln!(
        "day request p50/p90: same day (reuse) {}/{} ms, a day per user (first use) {}/{} ms",
        ds["again"][1], ds["again"][2], dp["first"][1], dp["first"][2]
    );
    // The page: its Inputs section with those counts.
    let html = tmp.join("report.html");
    let mut argv: Vec<&str> = runs.iter().map(|r| r.to_str().unwrap()).collect();
    argv.extend(["-o", html.to_str().unwrap()]);
    let out = format!("{:?}", report_in_process(&argv));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("<section id=\"inputs\">"), "{out}");
    assert!(
        page.contains("<tr data-run=\"1\"><th>run-per-user-count9</th><td>30</td><td data-k=\"distinct\">30</td><td data-k=\"first\">30</td><td data-k=\"again\">0</td></tr>"),
        "{out}"
    );
}

/// `surge record --param date=VALUE` writes the recorded value as `${date}` straight away.
#[test]
fn record_param_writes_the_placeholder() {
    let app = format!(
        "http://127.0.0.1:{}/",
        common::start_http(|_| Some("200 OK"))
    );
    let tmp = TempDir::new("record-param");
    let out = tmp.path().join("recording.log");
    let flags = ["--target-type", "surge/http", "--param", "date=2015-01-13"];
    let (mut rec, proxy) = record_in_process(&app, &out, &owned(&flags));
    assert_eq!(http_get(&proxy, "/").0, 200);
    assert_eq!(http_get(&proxy, "/api/days/2015-01-13?count=8").0, 200);
    assert!(rec.stop(Duration::from_secs(10)).is_some());
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(
        text.contains("\"url\":\"/api/days/${date}?count=8\""),
        "{text}"
    );
    assert!(!text.contains("2015-01-13"), "{text}");
}
