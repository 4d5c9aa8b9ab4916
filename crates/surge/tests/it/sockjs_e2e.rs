//! SockJS end to end: the fixture R Shiny app behind a Shiny-Server-like front built on the real
//! `sockjs` npm library (tests/fixtures/sockjs-bridge/bridge.mjs: worker ids, `__token__`,
//! `/__sockjs__/n=/t=/w=/s=` URLs, Shiny Server's `N#0|m|` framing) with the real `sockjs-client` in
//! the page. A session is recorded through `surge record` in headless Chromium, giving the SockJS
//! form shinyloadtest records behind Shiny Server, then replayed through the bridge to real R.

use crate::common;

use common::*;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};
use surge::recording::{Kind, Recording};

/// Starts the bridge in front of R on `rport`; returns it and its base URL.
fn start_bridge(rport: u16, drop_after: u32) -> (Proc, String) {
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sockjs-bridge/bridge.mjs");
    assert!(
        repo().join("web/node_modules/sockjs").exists(),
        "web/node_modules/sockjs missing: run `make web` (cd web && npm ci)"
    );
    let mut cmd = Command::new("node");
    cmd.arg(script)
        .arg(rport.to_string())
        .arg(drop_after.to_string());
    spawn_listening(cmd, "the SockJS bridge (node)")
}

fn bridge_stats(base: &str) -> Value {
    let (status, body) = http_get(base, "/stats");
    assert_eq!(status, 200);
    serde_json::from_slice(&body).unwrap()
}

/// Results R computed, per Shiny session token (from SURGE_SESSION_LOG).
fn served(log: &Path) -> BTreeMap<String, Vec<String>> {
    let mut m: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for l in std::fs::read_to_string(log).unwrap_or_default().lines() {
        let mut w = l.split_whitespace();
        if let (Some(tok), Some(v)) = (w.next(), w.next()) {
            m.entry(tok.to_string()).or_default().push(v.to_string());
        }
    }
    m
}

#[test]
fn shiny_recorded_over_real_sockjs_in_chromium_replays_with_10_users() {
    let tmp = TempDir::new("sockjs");
    let log = tmp.path().join("r-sessions.txt");
    let (_r, rport) = start_shiny_env(&[("SURGE_SESSION_LOG", &log)]);
    let (_bridge, bridge) = start_bridge(rport, 0);

    let rec_path = tmp.path().join("recording.log");
    let (mut rec, proxy) = record_in_process(&bridge, &rec_path, &[]);
    drive_browser("shiny", &proxy, None);
    // Closing the tab closes the SockJS WebSocket, which ends the recording by itself.
    assert!(rec.wait(Duration::from_secs(20)).is_some());
    assert_eq!(served(&log).len(), 1, "the browser session reached R");

    // The recording has the shape of shinyloadtest's behind Shiny Server (see the fixture runs).
    let recording = Recording::load(&rec_path).unwrap();
    assert_eq!(recording.target_type.as_deref(), Some("R/Shiny"));
    let text = std::fs::read_to_string(&rec_path).unwrap();
    for needle in [
        r#""type":"REQ_TOK","#,
        r#""url":"/_w_${WORKER}/__token__?_="#,
        r#""url":"/__sockjs__/n=${ROBUST_ID}/t=${TOKEN}/w=${WORKER}/s=0/info?t="#,
        r#""url":"/__sockjs__/n=${ROBUST_ID}/t=${TOKEN}/w=${WORKER}/s=0/${SOCKJSID}/websocket""#,
        r#"{"type":"WS_RECV","#,
        r#""message":"o"}"#,
        r#""message":"[\"0#0|o|\"]""#,
        r#""message":"a[\"0#0|m|{\\\"config\\\":{\\\"workerId\\\":\\\"\\\",\\\"sessionId\\\":\\\"${SESSION}\\\""#,
        r#"Result: 343"#,
    ] {
        assert!(text.contains(needle), "recording lacks {needle}");
    }
    let kinds: Vec<Kind> = recording.events.iter().map(|e| e.kind).collect();
    for k in [
        Kind::ReqHome,
        Kind::ReqTok,
        Kind::ReqSinf,
        Kind::WsOpen,
        Kind::WsRecvInit,
        Kind::WsClose,
    ] {
        assert!(kinds.contains(&k), "recording lacks {k:?}");
    }

    let before = bridge_stats(&bridge);
    let run = tmp.path().join("run");
    let s = replay_clean(
        &rec_path,
        &bridge,
        10,
        &run,
        &["--start-interval", "100ms", "--message-timeout", "15s"],
    );
    let started = s["sessions"]["started"].as_u64().unwrap();
    assert_eq!(started, 10);

    // The bridge issued a worker and a token per session, served SockJS info, and opened one SockJS
    // connection per session; nothing was refused (placeholders were filled with live values).
    let after = bridge_stats(&bridge);
    for k in ["pages", "tokens", "info", "connections"] {
        let n = after[k].as_u64().unwrap() - before[k].as_u64().unwrap();
        assert_eq!(n, started, "{k}: {before} -> {after}");
    }
    assert_eq!(after["refused"].as_u64(), Some(0), "{after}");
    // R served each replayed session and computed the recorded inputs: 10^2, 7^2, 7^3.
    let sessions = served(&log);
    assert_eq!(sessions.len() as u64, 1 + started, "{sessions:?}");
    for results in sessions.values() {
        for want in ["100", "49", "343"] {
            assert!(
                results.iter().any(|r| r == want),
                "{results:?} lacks {want}"
            );
        }
    }

    // A bridge that drops each SockJS connection after relaying 1 message from R (the init config):
    // failed sessions with the SockJS close frame as reason, promptly, not after the message timeout.
    let (_dropper, dropper) = start_bridge(rport, 1);
    let run = tmp.path().join("run-drop");
    let t = Instant::now();
    let flags = ["--start-interval", "100ms", "--message-timeout", "10s"];
    let outcome = replay_in_process(&rec_path, &dropper, 3, &run, &flags);
    assert!(
        t.elapsed() < Duration::from_secs(8),
        "took {:?}",
        t.elapsed()
    );
    assert_eq!(outcome.exit_code(), 1);
    let s = summary(&run);
    assert_eq!(s["sessions"]["failed"].as_u64(), Some(3), "{s}");
    assert_eq!(bridge_stats(&dropper)["dropped"].as_u64(), Some(3));
    let reason = s["failures"][0]["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("WS_")
            && reason.ends_with(
                r#"server closed the SockJS session: c[3000,"bridge dropped the connection"]"#
            ),
        "{reason}"
    );
    assert_eq!(s["failures_by_kind"], serde_json::json!({ "closed": 3 }));
    for f in session_csvs(&run) {
        let last = read_csv(&f).rows.pop().unwrap();
        assert_eq!(last[3], "PLAYBACK_FAIL");
        assert!(last[6].contains("SockJS"), "{last:?}");
    }
}
