//! What surge shows while a run goes, checked with real parts: a real Prometheus (Debian's
//! `prometheus`) scraping `--dashboard`'s `/metrics` during a replay, and `--manifold` polling a
//! real manifold (its Python fixture worker) into manifold.csv, the report and the capacity
//! search's scaling table. (The dashboard page in Chromium: web/e2e/surge-dashboard.mjs.)

use crate::common;

use common::{free_port, fresh_dir, surge, wait_port, wait_until, Proc};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A one-request recording (surge/http): GET `url`, recorded as taking 50 ms.
fn recording(dir: &Path, url: &str) -> PathBuf {
    let p = dir.join("recording.log");
    std::fs::write(
        &p,
        format!(
            "# version: 1\n# target_url: http://127.0.0.1:1\n# target_type: surge/http\n\
             {{\"type\":\"REQ_HOME\",\"begin\":\"2026-01-01T00:00:00.000Z\",\"end\":\"2026-01-01T00:00:00.050Z\",\"status\":200,\"url\":\"{url}\"}}\n"
        ),
    )
    .unwrap();
    p
}

/// GET over HTTP/1.0 (no chunked answer to decode); the body as text.
fn get(port: u16, path: &str) -> String {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").unwrap();
    let mut all = String::new();
    s.read_to_string(&mut all).unwrap();
    all.split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default()
}

/// Prometheus's value of an instant query (the first series), if any.
fn prom_query(port: u16, q: &str) -> Option<f64> {
    let enc: String = q
        .bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' | b'-' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect();
    let body = get(port, &format!("/api/v1/query?query={enc}"));
    let v: serde_json::Value =
        serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"));
    v["data"]["result"][0]["value"][1].as_str()?.parse().ok()
}

/// Prometheus on loopback scraping `target` every second, storage in `dir`.
fn start_prometheus(dir: &Path, target: &str) -> (Proc, u16) {
    let cfg = dir.join("prometheus.yml");
    std::fs::write(
        &cfg,
        format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: surge\n    \
             static_configs:\n      - targets: ['{target}']\n"
        ),
    )
    .unwrap();
    let port = free_port();
    let child = Command::new("prometheus")
        .arg(format!("--config.file={}", cfg.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.join("tsdb").display()
        ))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("prometheus.log")).unwrap())
        .spawn()
        .expect("prometheus (Debian package `prometheus`; scripts/install-deps.sh installs it)");
    let p = Proc(child);
    assert!(
        wait_port(port, Duration::from_secs(30)),
        "prometheus did not listen"
    );
    // Ready = the first scrape can happen.
    wait_until(Duration::from_secs(30), || {
        get(port, "/-/ready").contains("Ready")
    });
    (p, port)
}

/// A replay with `--dashboard` is scraped by a real Prometheus every second; at the end its
/// query API gives the session counters and the event count that summary.json gives, and it saw
/// the users while they ran.
#[test]
fn prometheus_scrapes_the_dashboard_during_a_run() {
    let app = common::start_http(|_| {
        // why: the app's work: sessions must overlap for the scrapes to see users running.
        std::thread::sleep(Duration::from_millis(20));
        Some("200 OK")
    });
    let dir = fresh_dir("live-prometheus");
    let rec = recording(&dir, "/");
    let dash = free_port();
    let (_prom, prom) = start_prometheus(&dir, &format!("127.0.0.1:{dash}"));
    let run = dir.join("run");
    let out = surge()
        .arg("replay")
        .arg(&rec)
        .arg(format!("http://127.0.0.1:{app}/"))
        .args([
            "--users",
            "4",
            "--start-interval",
            "0s",
            "--loaded-duration",
            "6s",
        ])
        .args([
            "--dashboard",
            &format!("127.0.0.1:{dash}"),
            "--dashboard-linger",
            "4s",
        ])
        .arg("--output-dir")
        .arg(&run)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains(&format!("dashboard at http://127.0.0.1:{dash}/")),
        "{stderr}"
    );
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("summary.json")).unwrap()).unwrap();
    let completed = summary["sessions"]["completed"].as_f64().unwrap();
    let failed = summary["sessions"]["failed"].as_f64().unwrap();
    assert!(completed > 20.0, "{summary}");
    // The target is gone now (stale): the last scraped value over the window.
    let last = |q: &str| prom_query(prom, &format!("max_over_time({q}[5m])"));
    assert_eq!(
        last("surge_sessions_total{outcome=\"done\"}"),
        Some(completed)
    );
    assert_eq!(
        last("surge_sessions_total{outcome=\"failed\"}"),
        Some(failed)
    );
    assert_eq!(
        last("surge_event_duration_seconds_count{type=\"REQ_HOME\"}"),
        Some(completed + failed)
    );
    assert_eq!(last("surge_users_active"), Some(4.0));
    // Scraped during the run too, not just after it: counts that grew.
    let scrapes = prom_query(prom, "count_over_time(surge_users_active[5m])").unwrap();
    assert!(scrapes >= 5.0, "{scrapes} scrapes");
    let min_done = prom_query(
        prom,
        "min_over_time(surge_sessions_total{outcome=\"done\"}[5m])",
    );
    assert!(min_done.unwrap() < completed, "{min_done:?} vs {completed}");
}

/// manifold and its Python fixture worker (one request at a time per worker).
fn manifold_cmd(port: u16, workers: &str) -> String {
    let bin = Path::new(env!("CARGO_BIN_EXE_surge")).with_file_name("manifold");
    assert!(
        bin.exists(),
        "{} missing: build the workspace (make build)",
        bin.display()
    );
    let worker = common::repo().join("crates/manifold/tests/fixtures/worker.py");
    format!(
        "{} --listen 127.0.0.1:{port} --min {workers} --max {workers} --stop-timeout 2s -- python3 {} {{port}}",
        bin.display(),
        worker.display()
    )
}

/// `--manifold` during a replay against a real manifold with 2 workers: manifold.csv has a row a
/// second, each with the 2 ready workers, some busy; the report's model carries them.
#[test]
fn replay_polls_manifold_into_manifold_csv() {
    let port = free_port();
    let child = Command::new("sh")
        .args(["-c", &format!("exec {}", manifold_cmd(port, "2"))])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let _m = Proc(child);
    assert!(
        wait_port(port, Duration::from_secs(60)),
        "manifold did not listen"
    );
    let dir = fresh_dir("live-manifold");
    let rec = recording(&dir, "/sleep?ms=100");
    let run = dir.join("run");
    let url = format!("http://127.0.0.1:{port}");
    let outcome = common::replay_with(&common::owned(&[
        rec.to_str().unwrap(),
        &format!("{url}/"),
        "--users",
        "3",
        "--start-interval",
        "0s",
        "--loaded-duration",
        "5s",
        "--manifold",
        &url,
        "--output-dir",
        run.to_str().unwrap(),
    ]));
    assert_eq!(outcome.exit_code(), 0, "{:?}", outcome.summary.checks);
    let csv = std::fs::read_to_string(run.join("manifold.csv")).unwrap();
    let rows: Vec<Vec<f64>> = (csv.lines().skip(1))
        .map(|l| l.split(',').map(|v| v.parse().unwrap()).collect())
        .collect();
    assert!(
        csv.starts_with("timestamp,ready,busy,starting,queue,saturation\n"),
        "{csv}"
    );
    assert!(rows.len() >= 4, "{csv}");
    assert!(
        rows.iter().all(|r| r[1] == 2.0),
        "2 ready workers in every row: {csv}"
    );
    assert!(rows.iter().any(|r| r[2] >= 1.0), "a busy worker: {csv}");
    let model = common::report_model(&common::report_args(vec![run], &[]));
    let points = model["runs"][0]["manifold"].as_array().unwrap();
    assert_eq!(points.len(), rows.len());
    assert_eq!(points[0][1], 2);
}

/// `surge capacity --workers 1,2 --manifold-cmd …` starts manifold at each count, searches, stops
/// it, and prints the table. Each worker serves one 100 ms request at a time, so with no think
/// time N users on c workers see p95 = ⌈N/c⌉ × 100 ms (plus overhead): page_load p95 < 450 ms
/// holds up to N = 4c. The table says users held and per worker for both counts, 2 workers hold
/// more than 1, and --audience divides by the larger count's users per worker.
#[test]
fn capacity_scaling_table_over_worker_counts() {
    let port = free_port();
    let dir = fresh_dir("live-scaling");
    let rec = recording(&dir, "/sleep?ms=100");
    let out_dir = dir.join("cap");
    let url = format!("http://127.0.0.1:{port}");
    let args = common::capacity_plan(&[
        rec.to_str().unwrap(),
        &format!("{url}/"),
        "--slo",
        "page_load:p95<450ms",
        "--think-time",
        "none",
        "--start",
        "2",
        "--step-sessions",
        "30",
        "--step-max",
        "15s",
        "--resolution",
        "25%",
        "--manifold",
        &url,
        "--workers",
        "1,2",
        "--audience",
        "100",
        "--manifold-cmd",
        &manifold_cmd(port, "{workers}"),
        "--output-dir",
        out_dir.to_str().unwrap(),
    ]);
    let run = surge::capacity::run_scaling(args, std::future::pending());
    let result = common::block_on(run).unwrap();
    // The table is what `surge capacity --workers` prints, after an exit status 0.
    let stdout = result.table.clone();
    assert_eq!(result.exit_code(), 0, "{stdout}");
    let scaling: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("scaling.json")).unwrap())
            .unwrap();
    let holds = |i: usize| scaling["rows"][i]["holds"].as_f64().unwrap();
    assert!(holds(0) >= 2.0 && holds(1) > holds(0), "{scaling}");
    let per = holds(1) / 2.0;
    assert_eq!(scaling["rows"][1]["per_worker"].as_f64(), Some(per));
    let needed = (100.0 / per).ceil() as u64;
    assert_eq!(scaling["audience"][1].as_u64(), Some(needed), "{scaling}");
    assert!(
        stdout.contains(&format!("--audience 100: {needed} workers")),
        "{stdout}"
    );
    assert!(
        stdout.contains("workers  holds (users)  breaks at  users per worker"),
        "{stdout}"
    );
    // Each count's answer has its ready workers from manifold.csv, and manifold is stopped.
    for w in [1, 2] {
        let cap: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(out_dir.join(format!("workers-{w}/capacity.json"))).unwrap(),
        )
        .unwrap();
        assert_eq!(cap["ready_workers"].as_u64(), Some(w), "{cap}");
    }
    assert!(
        std::net::TcpStream::connect(("127.0.0.1", port)).is_err(),
        "manifold still up"
    );
}

/// `surge bench --dashboard`: `/metrics` carries the request histogram (every request of the
/// run counted once), and `/` serves the page without a run directory.
#[test]
fn bench_dashboard_serves_the_request_histogram() {
    let app = common::start_http(|_| Some("200 OK"));
    let dash = free_port();
    let child = surge()
        .arg("bench")
        .arg(format!("http://127.0.0.1:{app}/"))
        .args([
            "-c",
            "4",
            "-n",
            "300",
            "--dashboard",
            &format!("127.0.0.1:{dash}"),
        ])
        .args(["--dashboard-linger", "30s"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut child = Proc(child);
    assert!(wait_port(dash, Duration::from_secs(30)), "no dashboard");
    let mut text = String::new();
    wait_until(Duration::from_secs(30), || {
        text = get(dash, "/metrics");
        text.contains("surge_bench_request_duration_seconds_count 300")
    });
    assert!(
        text.contains("surge_bench_request_duration_seconds_count 300"),
        "{text}"
    );
    assert!(
        text.contains("surge_bench_request_duration_seconds_bucket{le=\"+Inf\"} 300"),
        "{text}"
    );
    assert!(text.contains("surge_bench_errors_total 0"), "{text}");
    assert!(get(dash, "/").contains("surge bench"));
    // Ctrl-C ends the linger (long before its 30 s).
    let t = Instant::now();
    assert_eq!(
        common::interrupt(&mut child, Duration::from_secs(10)),
        Some(0)
    );
    assert!(t.elapsed() < Duration::from_secs(10));
}
