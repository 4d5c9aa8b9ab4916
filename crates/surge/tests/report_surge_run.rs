//! `surge report` on a fresh `surge replay` run (not only shinycannon's): a small plain-HTTP app on
//! loopback, a hand-written recording (page, two assets, one slow API call), 4 users.

mod common;

use common::{fresh_dir, replay_cmd, report_args, report_model, start_http, surge};
use std::{path::PathBuf, time::Duration};

const API_DELAY_MS: u64 = 40;

/// Answers every request with 200; `/api/` paths after API_DELAY_MS.
fn start_app() -> u16 {
    start_http(|path| {
        if path.starts_with("/api/") {
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
    let o = replay_cmd(&rec, &format!("http://127.0.0.1:{port}"), 4, &run)
        .args(["--start-interval", "50ms", "--think-time", "none"])
        .arg("--overwrite-output")
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "replay: {}",
        String::from_utf8_lossy(&o.stderr)
    );

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
    assert_eq!(s["sessions"], n);
    assert_eq!(s["events"], starts);
    assert_eq!(s["completed"], n, "{s}");
    assert_eq!(s["failed"], 0);
    assert_eq!(s["classes"][0][0], n, "one Homepage per session");
    assert_eq!(s["classes"][1][0], 2 * n, "two JS/CSS per session");
    assert_eq!(s["classes"][3][0], n, "one Calculate (API GET) per session");
    assert!(
        s["classes"][3][1].as_i64().unwrap() >= API_DELAY_MS as i64,
        "{s}"
    );
    assert!(s["page_load"][0].as_u64().unwrap() == n as u64);

    // And the HTML through the binary, when the runtime is built in.
    if surge::report::runtime().is_ok() {
        let out = dir.join("report.html");
        let o = surge()
            .arg("report")
            .arg(&run)
            .arg("-o")
            .arg(&out)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let html = std::fs::read_to_string(&out).unwrap();
        assert!(html.contains(&format!(
            "data-run=\"0\" data-k=\"events\" data-v=\"{starts}\""
        )));
    }
    let _ = std::fs::remove_dir_all(&dir);
}
