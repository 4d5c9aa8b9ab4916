//! Proofs (a) and (b) against a real R Shiny app started here with Rscript, plus the failure cases:
//! a refused target, a target that dies mid-run, and Ctrl-C (SIGINT) during a run. surge records
//! and replays in-process, except for the SIGINT test (the binary's signal handler).

use crate::common;

use common::*;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;
use surge::recording::{Kind, Recording};

fn fixture_recording() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/shiny-app/recording.log")
}

/// Every run's CSVs: shinycannon's column header, two comment lines, 7 fields, known vocabulary,
/// and exactly one terminal row (PLAYBACK_DONE or PLAYBACK_FAIL) at the end.
fn assert_shinycannon_layout(run: &Path, vocabulary_allowed: &BTreeSet<String>) {
    assert!(run.join("recording.log").is_file());
    let csvs = session_csvs(run);
    assert!(!csvs.is_empty());
    for f in &csvs {
        let csv = read_csv(f);
        assert_eq!(
            csv.header,
            "session_id,worker_id,iteration,event,timestamp,input_line_number,comment"
        );
        assert_eq!(csv.comments.len(), 2, "{}", f.display());
        assert!(serde_json::from_str::<serde_json::Value>(csv.comments[1].trim()).is_ok());
        let name = f.file_stem().unwrap().to_string_lossy().to_string();
        for r in &csv.rows {
            assert_eq!(r.len(), 7, "{}: {r:?}", f.display());
            assert_eq!(format!("{}_{}_{}", r[0], r[1], r[2]), name);
            assert!(
                vocabulary_allowed.contains(&r[3]),
                "{}: unknown event {}",
                f.display(),
                r[3]
            );
            assert!(r[4].parse::<i64>().is_ok() && r[5].parse::<u32>().is_ok());
        }
        assert_eq!(csv.rows[0][3], "PLAYER_SESSION_CREATE");
        let last = &csv.rows.last().unwrap()[3];
        assert!(
            last == "PLAYBACK_DONE" || last == "PLAYBACK_FAIL",
            "{}: ends with {last}",
            f.display()
        );
        let terminals = csv
            .rows
            .iter()
            .filter(|r| r[3] == "PLAYBACK_DONE" || r[3] == "PLAYBACK_FAIL")
            .count();
        assert_eq!(terminals, 1);
        let ts: Vec<i64> = csv.rows.iter().map(|r| r[4].parse().unwrap()).collect();
        assert!(
            ts.windows(2).all(|w| w[0] <= w[1]),
            "{}: timestamps go back",
            f.display()
        );
    }
}

/// The event names shinycannon used in the real fixture runs (read from their CSVs).
fn fixture_vocabulary() -> BTreeSet<String> {
    let tmp = TempDir::new("vocab");
    let mut v = vocabulary(&shared().join("label-run"));
    for run in unzip_runs(tmp.path()) {
        v.extend(vocabulary(&run));
    }
    v
}

fn summary_counts(run: &Path) -> (u64, u64, u64) {
    let s = summary(run);
    let g = |k: &str| s["sessions"][k].as_u64().unwrap();
    (g("started"), g("completed"), g("failed"))
}

#[test]
fn shiny_session_recorded_in_chromium_replays_with_20_users() {
    let (_r, port) = start_shiny();
    let tmp = TempDir::new("shiny");
    let rec_path = tmp.path().join("recording.log");
    let target = format!("http://127.0.0.1:{port}/");
    let (mut recorder, proxy) = record_in_process(&target, &rec_path, &[]);
    drive_browser("shiny", &proxy, Some(&tmp.path().join("session.har")));
    // Closing the tab closes the WebSocket, which ends the recording by itself.
    let recorded = recorder.wait(Duration::from_secs(20));
    assert!(recorded.is_some(), "the recording did not end with the tab");

    let rec = Recording::load(&rec_path).unwrap();
    assert_eq!(rec.target_type.as_deref(), Some("R/Shiny"));
    let kinds: Vec<Kind> = rec.events.iter().map(|e| e.kind).collect();
    assert_eq!(kinds[0], Kind::ReqHome);
    assert_eq!(*kinds.last().unwrap(), Kind::WsClose);
    for k in [
        Kind::ReqGet,
        Kind::WsOpen,
        Kind::WsRecvInit,
        Kind::WsSend,
        Kind::WsRecv,
    ] {
        assert!(kinds.contains(&k), "recording lacks {k:?}");
    }
    let text = std::fs::read_to_string(&rec_path).unwrap();
    // The browser's interactions were recorded, and the live session id became a placeholder.
    assert!(
        text.contains(r#"\"n:shiny.number\":7"#),
        "input change recorded"
    );
    assert!(
        text.contains(r#"\"op\":\"cube\""#),
        "select change recorded"
    );
    assert!(text.contains(r#"Result: 343"#), "output recorded");
    assert!(text.contains("${SESSION}"));
    assert!(!text.contains("\"busy\""), "busy messages are skipped");

    let run = tmp.path().join("run");
    let s = replay_clean(
        &rec_path,
        &target,
        20,
        &run,
        &["--start-interval", "150ms", "--message-timeout", "20s"],
    );
    let g = |k: &str| s["sessions"][k].as_u64().unwrap();
    let (started, completed) = (g("started"), g("completed"));
    assert!(started >= 20 && completed == started);
    assert_eq!(session_csvs(&run).len() as u64, started);
    assert_shinycannon_layout(&run, &fixture_vocabulary());
    // Every completed session replayed every recorded event, in order, with the recorded line numbers.
    let want: Vec<u32> = rec.events.iter().map(|e| e.line).collect();
    for f in session_csvs(&run) {
        let lines: Vec<u32> = read_csv(&f)
            .rows
            .iter()
            .filter(|r| r[3].ends_with("_START") && r[3] != "PLAYBACK_SLEEPBEFORE_START")
            .map(|r| r[5].parse().unwrap())
            .collect();
        assert_eq!(lines, want, "{}", f.display());
    }
    // summary.json counts agree with the CSVs (independent count).
    let s = summary(&run);
    let ws_recv_rows = count_rows(&run, "WS_RECV_END");
    assert_eq!(
        s["events"]["WS_RECV"]["count"].as_u64().unwrap() as usize,
        ws_recv_rows
    );

    // The same session exported by the browser as HAR imports into a replayable recording.
    let har_rec = tmp.path().join("har.log");
    let hr = import_har(&tmp.path().join("session.har"), &har_rec);
    assert_eq!(hr.events[0].kind, Kind::ReqHome);
    assert!(hr.events.iter().any(|e| e.kind == Kind::WsOpen));
    let har_run = tmp.path().join("har-run");
    let outcome = replay_in_process(&har_rec, &target, 2, &har_run, &[]);
    assert_eq!(outcome.exit_code(), 0);
}

#[test]
fn refused_target_fails_sessions_with_reasons() {
    let tmp = TempDir::new("refused");
    let run = tmp.path().join("run");
    let port = free_port();
    let target = format!("http://127.0.0.1:{port}/");
    let outcome = replay_in_process(
        &fixture_recording(),
        &target,
        3,
        &run,
        &["--start-interval", "100ms", "--loaded-duration", "1s"],
    );
    assert_eq!(outcome.exit_code(), 1);
    let (started, completed, failed) = summary_counts(&run);
    assert!(started >= 3);
    assert_eq!((completed, failed), (0, started));
    assert_eq!(session_csvs(&run).len() as u64, started);
    let s = summary(&run);
    let reason = s["failures"][0]["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("REQ_HOME line 4: connect 127.0.0.1:"),
        "{reason}"
    );
    assert_eq!(s["failures"][0]["count"].as_u64(), Some(started));
    assert_eq!(s["failures"][0]["kind"], "connect_error");
    assert_eq!(
        s["failures_by_kind"],
        serde_json::json!({ "connect_error": started })
    );
    for f in session_csvs(&run) {
        let last = read_csv(&f).rows.pop().unwrap();
        assert_eq!((last[3].as_str(), last[5].as_str()), ("PLAYBACK_FAIL", "4"));
        assert!(last[6].contains("connect"));
    }
}

#[test]
fn target_dying_mid_run_counts_failures_and_writes_results() {
    let (mut r, port) = start_shiny();
    let tmp = TempDir::new("dies");
    let run = tmp.path().join("run");
    let target = format!("http://127.0.0.1:{port}/");
    let mut replay = spawn_replay(
        &fixture_recording(),
        &target,
        6,
        &run,
        &[
            "--start-interval",
            "300ms",
            "--loaded-duration",
            "4s",
            "--message-timeout",
            "5s",
        ],
    );
    // Kill the app once the first sessions have finished.
    wait_sessions(&run, 2, Duration::from_secs(30));
    let _ = r.0.kill();
    let _ = r.0.wait();
    let outcome = replay.wait(Duration::from_secs(60)).map(Result::unwrap);
    assert_eq!(outcome.map(|o| o.exit_code()), Some(1));
    let (started, completed, failed) = summary_counts(&run);
    assert!(completed >= 1, "sessions before the kill completed");
    assert!(failed >= 1, "sessions after the kill failed");
    assert_eq!(started, completed + failed);
    assert_eq!(session_csvs(&run).len() as u64, started);
    let s = summary(&run);
    let reasons: u64 = s["failures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["count"].as_u64().unwrap())
        .sum();
    assert_eq!(reasons, failed);
    let by_kind: u64 = (s["failures_by_kind"].as_object().unwrap().values())
        .map(|n| n.as_u64().unwrap())
        .sum();
    assert_eq!(by_kind, failed);
}

#[test]
fn sigint_writes_consistent_partial_results() {
    let (_r, port) = start_shiny();
    let tmp = TempDir::new("sigint");
    let run = tmp.path().join("run");
    let target = format!("http://127.0.0.1:{port}/");
    let mut replay = Proc(
        replay_cmd(&fixture_recording(), &target, 4, &run)
            .args(["--start-interval", "200ms", "--loaded-duration", "10m"])
            .stdout(Stdio::null())
            .spawn()
            .unwrap(),
    );
    // Two sessions ended: the users are looping, each in a session Ctrl-C will cut.
    wait_sessions(&run, 2, Duration::from_secs(30));
    assert_eq!(interrupt(&mut replay, Duration::from_secs(15)), Some(130));
    let s = summary(&run);
    assert_eq!(s["interrupted"], true);
    let (started, completed, failed) = summary_counts(&run);
    assert_eq!(started, completed + failed);
    assert_eq!(session_csvs(&run).len() as u64, started);
    assert!(failed >= 1, "sessions cut by Ctrl-C are recorded as failed");
    let allowed = fixture_vocabulary();
    assert_shinycannon_layout(&run, &allowed);
    let interrupted = session_csvs(&run)
        .iter()
        .filter(|f| read_csv(f).rows.last().unwrap()[6].contains("interrupted"))
        .count() as u64;
    assert_eq!(interrupted, failed);
    assert_eq!(s["failures_by_kind"]["interrupted"].as_u64(), Some(failed));
}
