//! SIGTERM is Ctrl-C for surge (issue 29): `docker stop` and a Kubernetes Job's deadline send it,
//! and surge may be PID 1. A real `surge replay`, `surge bench` and `surge capacity` process
//! against a loopback server of known speed gets SIGTERM mid-run: it starts nothing new, writes
//! its session files and summary.json (capacity: capacity.json), and exits 143.

use crate::capacity::{recording, start_slots};
use crate::common::{self, fresh_dir, read_csv, session_csvs, summary, surge, terminate, Proc};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// Waits (bounded) until `dir/sessions/` holds at least `n` session files.
fn wait_files(dir: &Path, n: usize) {
    common::wait_sessions(dir, n, Duration::from_secs(30));
    assert!(
        session_csvs(dir).len() >= n,
        "{}: fewer than {n} sessions within 30 s",
        dir.display()
    );
}

/// summary.json agrees with the session files: every session started has its CSV, each ends
/// with PLAYBACK_DONE or PLAYBACK_FAIL, and the run says it was interrupted. Returns
/// (completed, failed).
fn assert_complete(run: &Path) -> (u64, u64) {
    let s = summary(run);
    assert_eq!(s["interrupted"], true, "{s}");
    let g = |k: &str| s["sessions"][k].as_u64().unwrap();
    let (started, completed, failed) = (g("started"), g("completed"), g("failed"));
    assert_eq!(started, completed + failed, "{s}");
    let files = session_csvs(run);
    assert_eq!(files.len() as u64, started);
    for f in &files {
        let rows = read_csv(f).rows;
        let last = &rows.last().unwrap()[3];
        assert!(
            last == "PLAYBACK_DONE" || last == "PLAYBACK_FAIL",
            "{}: ends with {last}",
            f.display()
        );
    }
    (completed, failed)
}

/// A replay of 4 users against 300 ms requests, stopped by SIGTERM while sessions run: exit
/// 143; without a grace period the sessions in flight are cut (failed, interrupted), with
/// `--stop-grace 20s` they end normally; either way every file is written and complete.
#[test]
fn sigterm_stops_a_replay_with_complete_results() {
    let url = start_slots(8, Duration::from_millis(300));
    let dir = fresh_dir("sigterm-replay");
    let rec = recording(&dir);
    for (grace, cut) in [("0s", true), ("20s", false)] {
        let run = dir.join(format!("run-{grace}"));
        let err = dir.join(format!("stderr-{grace}.txt"));
        let mut p = Proc(
            common::replay_cmd(&rec, &url, 4, &run)
                .args(["--think-time", "none", "--start-interval", "0"])
                .args(["--loaded-duration", "10m", "--stop-grace", grace])
                .stdout(Stdio::null())
                .stderr(std::fs::File::create(&err).unwrap())
                .spawn()
                .unwrap(),
        );
        wait_files(&run, 8);
        let t = Instant::now();
        assert_eq!(terminate(&mut p, Duration::from_secs(30)), Some(143));
        let stderr = std::fs::read_to_string(&err).unwrap();
        assert!(
            stderr.contains("SIGTERM, finishing partial results"),
            "{stderr}"
        );
        let (completed, failed) = assert_complete(&run);
        assert!(completed >= 8, "sessions before the signal completed");
        let s = summary(&run);
        if cut {
            // 4 users, each in a 300 ms request but for an instant between sessions: the
            // sessions in flight were cut.
            assert!((1..=4).contains(&failed), "{s}");
            assert_eq!(s["failures_by_kind"]["interrupted"].as_u64(), Some(failed));
        } else {
            // Each session in flight had ≤ 300 ms left (plus any wait for a slot): it ended.
            assert_eq!(failed, 0, "{s}");
            assert!(
                t.elapsed() < Duration::from_secs(20),
                "grace is a limit, not a wait"
            );
        }
    }
}

/// `surge bench -d 10m --json` against 50 ms requests, stopped by SIGTERM: requests in flight
/// end, the partial result is printed as JSON, exit 143.
#[test]
fn sigterm_stops_a_bench_with_its_result() {
    let url = start_slots(4, Duration::from_millis(50));
    let dir = fresh_dir("sigterm-bench");
    let out = dir.join("bench.json");
    let mut p = Proc(
        surge()
            .args(["bench", "-c", "2", "-t", "1", "-d", "10m", "--json", &url])
            .stdout(std::fs::File::create(&out).unwrap())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    // The bench prints only at its end: let it make requests first. A sleep, because nothing
    // of the running bench is observable from outside but the server's load.
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(terminate(&mut p, Duration::from_secs(30)), Some(143));
    let text = std::fs::read_to_string(&out).unwrap();
    let r: serde_json::Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    let requests = r["requests"].as_u64().unwrap();
    assert!(requests >= 2, "{r}");
    assert_eq!(
        r["ok"].as_u64(),
        Some(requests),
        "requests in flight ended, none cut: {r}"
    );
}

/// `surge capacity` with a first step far longer than the test, stopped by SIGTERM mid-step:
/// exit 143, the step's run directory complete (summary.json, session files) and capacity.json
/// saying the search was interrupted.
#[test]
fn sigterm_stops_a_capacity_search_with_its_files() {
    let url = start_slots(4, Duration::from_millis(100));
    let dir = fresh_dir("sigterm-capacity");
    let rec = recording(&dir);
    let out = dir.join("cap");
    let mut p = Proc(
        surge()
            .arg("capacity")
            .arg(&rec)
            .arg(&url)
            .args(["--slo", "page_load:p95<10s", "--think-time", "none"])
            .args([
                "--start",
                "2",
                "--step-sessions",
                "100000",
                "--step-max",
                "10m",
            ])
            .arg("--output-dir")
            .arg(&out)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let step = out.join("step-01");
    wait_files(&step, 4);
    assert_eq!(terminate(&mut p, Duration::from_secs(30)), Some(143));
    let (completed, _) = assert_complete(&step);
    assert!(completed >= 4);
    let c: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("capacity.json")).unwrap()).unwrap();
    assert_eq!(c["interrupted"], true, "{c}");
}
