//! Proof (c): record the cranwhales UI in headless Chromium through `surge record`, then replay it with
//! 200 users. Needs the cranwhales binary (built by `cargo test --workspace`); if it is missing the
//! test FAILS with a clear message. Set SURGE_SKIP_CRANWHALES=1 to skip it explicitly (it says so).

use crate::common;

use common::*;
use std::time::Duration;
use surge::recording::{Kind, Recording};

#[test]
fn cranwhales_ui_recorded_in_chromium_replays_with_200_users() {
    if std::env::var_os("SURGE_SKIP_CRANWHALES").is_some() {
        eprintln!("SKIPPED: cranwhales proof (SURGE_SKIP_CRANWHALES is set)");
        return;
    }
    let tmp = TempDir::new("cranwhales");
    let (_server, port) = start_cranwhales_with_samples(tmp.path());
    let target = format!("http://127.0.0.1:{port}/");
    let rec_path = tmp.path().join("recording.log");
    let (mut rec, proxy) = record_in_process(&target, &rec_path, &[]);
    drive_browser("cranwhales", &proxy, None);
    // No WebSocket to close: end the recording the way a user does (Ctrl-C: the stop signal).
    assert!(rec.stop(Duration::from_secs(10)).is_some());

    let recording = Recording::load(&rec_path).unwrap();
    assert_eq!(recording.target_type.as_deref(), Some("surge/http"));
    assert_eq!(recording.events[0].kind, Kind::ReqHome);
    let api: Vec<&str> = recording
        .events
        .iter()
        .filter(|e| e.url.starts_with("/api/"))
        .map(|e| &*e.url)
        .collect();
    assert!(api.len() >= 2, "the UI's API calls were recorded: {api:?}");
    assert!(
        api.iter().any(|u| u.contains("count=8")),
        "the changed control was recorded: {api:?}"
    );

    let run = tmp.path().join("run");
    let outcome = replay_in_process(&rec_path, &target, 200, &run, &["--start-interval", "10ms"]);
    let stdout = surge::replay::replay_text(&outcome.summary, &run);
    assert_eq!(outcome.exit_code(), 0, "{stdout}");
    let s = summary(&run);
    let started = s["sessions"]["started"].as_u64().unwrap();
    assert!(started >= 200, "{stdout}");
    assert_eq!(s["sessions"]["failed"].as_u64(), Some(0), "{stdout}");
    assert_eq!(session_csvs(&run).len() as u64, started);
    let http_rows = count_rows(&run, "REQ_GET_END");
    assert_eq!(
        s["events"]["REQ_GET"]["count"].as_u64().unwrap() as usize,
        http_rows
    );
    assert_eq!(
        http_rows as u64,
        started * (recording.events.len() as u64 - 1)
    );
}
