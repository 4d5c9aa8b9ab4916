//! SockJS end to end: the fixture R Shiny app behind a Shiny-Server-like front built on the real
//! `sockjs` npm library (tests/fixtures/sockjs-bridge/bridge.mjs: worker ids, `__token__`,
//! `/__sockjs__/n=/t=/w=/s=` URLs, Shiny Server's `N#0|m|` framing). A session is recorded in
//! Chromium against R's plain WebSocket, rewritten into the SockJS form shinyloadtest records behind
//! Shiny Server (placeholders as in the fixture runs), and replayed through the bridge to real R.

mod common;

use common::*;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
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
    let mut child = Command::new("node")
        .arg(script)
        .arg(rport.to_string())
        .arg(drop_after.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("node not found");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let port: u16 = line
        .trim()
        .strip_prefix("listening ")
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("bridge printed {line:?}"));
    (Proc(child), format!("http://127.0.0.1:{port}/"))
}

fn bridge_stats(base: &str) -> Value {
    let hostport = base.trim_start_matches("http://").trim_end_matches('/');
    let mut s = TcpStream::connect(hostport).unwrap();
    write!(
        s,
        "GET /stats HTTP/1.0\r\nHost: {hostport}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut all = String::new();
    s.read_to_string(&mut all).unwrap();
    serde_json::from_str(all.split("\r\n\r\n").nth(1).unwrap()).unwrap()
}

/// Rewrites a plain-WebSocket Shiny recording into what shinyloadtest records behind Shiny Server:
/// assets under `_w_${WORKER}/`, REQ_TOK and REQ_SINF before the SockJS WebSocket, the `o` frame
/// and channel open, and every message in SockJS arrays with Shiny Server's `<hex id>#0|m|` prefix.
fn to_sockjs(plain: &str, target: &str) -> String {
    let sockjs = "/__sockjs__/n=${ROBUST_ID}/t=${TOKEN}/w=${WORKER}/s=0";
    let mut out = format!("# version: 1\n# target_url: {target}\n# target_type: R/Shiny\n");
    let (mut sent, mut received) = (1u32, 0u32);
    let mut push = |v: Value| {
        out.push_str(&v.to_string());
        out.push('\n');
    };
    for line in plain.lines().filter(|l| !l.starts_with('#')) {
        let mut v: Value = serde_json::from_str(line).unwrap();
        let begin = v["begin"].clone();
        match v["type"].as_str().unwrap() {
            "REQ_GET" => {
                v["url"] = json!(format!("/_w_${{WORKER}}{}", v["url"].as_str().unwrap()));
            }
            "WS_OPEN" => {
                let req = |kind: &str, url: String| json!({"type": kind, "begin": begin, "end": begin, "status": 200, "url": url});
                push(req("REQ_TOK", "/_w_${WORKER}/__token__?_=1".into()));
                push(req("REQ_SINF", format!("{sockjs}/info")));
                v["url"] = json!(format!("{sockjs}/${{SOCKJSID}}/websocket"));
                push(v);
                push(json!({"type": "WS_RECV", "begin": begin, "message": "o"}));
                push(json!({"type": "WS_SEND", "begin": begin, "message": r#"["0#0|o|"]"#}));
                continue;
            }
            "WS_SEND" => {
                let m = format!("{sent:X}#0|m|{}", v["message"].as_str().unwrap());
                v["message"] = json!(serde_json::to_string(&[m]).unwrap());
                sent += 1;
            }
            "WS_RECV" | "WS_RECV_INIT" => {
                let m = format!("{received:X}#0|m|{}", v["message"].as_str().unwrap());
                v["message"] = json!(format!("a{}", serde_json::to_string(&[m]).unwrap()));
                received += 1;
            }
            _ => {}
        }
        push(v);
    }
    out
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

fn record_plain(tmp: &Path, rport: u16) -> PathBuf {
    let rec_path = tmp.join("plain.log");
    let (mut rec, proxy) = start_record(&format!("http://127.0.0.1:{rport}/"), &rec_path);
    drive_browser("shiny", &proxy, None);
    assert_eq!(wait_exit(&mut rec, Duration::from_secs(20)), Some(0));
    rec_path
}

#[test]
fn shiny_over_real_sockjs_replays_with_10_users() {
    let tmp = TempDir::new("sockjs");
    let log = tmp.path().join("r-sessions.txt");
    let (_r, rport) = start_shiny_env(&[("SURGE_SESSION_LOG", &log)]);
    let plain = std::fs::read_to_string(record_plain(tmp.path(), rport)).unwrap();
    let recorded_sessions = served(&log).len();
    assert_eq!(recorded_sessions, 1, "the browser session reached R");

    let (_bridge, bridge) = start_bridge(rport, 0);
    let rec_path = tmp.path().join("recording.log");
    std::fs::write(&rec_path, to_sockjs(&plain, &bridge)).unwrap();
    let rec = Recording::load(&rec_path).unwrap();
    assert!(rec.is_shiny());
    let text = std::fs::read_to_string(&rec_path).unwrap();
    for needle in [
        "${SOCKJSID}/websocket",
        "n=${ROBUST_ID}/t=${TOKEN}/w=${WORKER}",
        r#"a[\"0#0|m|{\\\"config"#,
    ] {
        assert!(text.contains(needle), "{needle}");
    }
    assert!(rec.events.iter().any(|e| e.kind == Kind::ReqSinf));

    let run = tmp.path().join("run");
    let out = replay_cmd(&rec_path, &bridge, 10, &run)
        .args(["--start-interval", "100ms", "--message-timeout", "15s"])
        .stderr(Stdio::inherit())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    let s = summary(&run);
    let started = s["sessions"]["started"].as_u64().unwrap();
    assert_eq!(started, 10, "{stdout}");
    assert_eq!(s["sessions"]["failed"].as_u64(), Some(0), "{stdout}");

    // The bridge issued a worker and a token per session, served SockJS info, and opened one SockJS
    // connection per session; nothing was refused (placeholders were filled with live values).
    let b = bridge_stats(&bridge);
    for k in ["pages", "tokens", "info", "connections"] {
        assert_eq!(b[k].as_u64(), Some(started), "{k}: {b}");
    }
    assert_eq!(b["refused"].as_u64(), Some(0), "{b}");
    // R served each replayed session and computed the recorded inputs: 10^2, 7^2, 7^3.
    let sessions = served(&log);
    assert_eq!(sessions.len() as u64, 1 + started, "{sessions:?}");
    let replayed: Vec<_> = sessions.values().collect();
    for results in &replayed {
        for want in ["100", "49", "343"] {
            assert!(
                results.iter().any(|r| r == want),
                "{results:?} lacks {want}"
            );
        }
    }
}

#[test]
fn sockjs_connection_dropped_mid_session_fails_with_a_reason() {
    let tmp = TempDir::new("sockjs-drop");
    let log = tmp.path().join("r-sessions.txt");
    let (_r, rport) = start_shiny_env(&[("SURGE_SESSION_LOG", &log)]);
    let plain = std::fs::read_to_string(record_plain(tmp.path(), rport)).unwrap();
    // The bridge closes each SockJS connection after relaying 1 message from R (the init config).
    let (_bridge, bridge) = start_bridge(rport, 1);
    let rec_path = tmp.path().join("recording.log");
    std::fs::write(&rec_path, to_sockjs(&plain, &bridge)).unwrap();
    let run = tmp.path().join("run");
    let t = Instant::now();
    let out = replay_cmd(&rec_path, &bridge, 3, &run)
        .args(["--start-interval", "100ms", "--message-timeout", "10s"])
        .output()
        .unwrap();
    assert!(
        t.elapsed() < Duration::from_secs(8),
        "failed promptly, not after the message timeout: {:?}",
        t.elapsed()
    );
    assert_eq!(out.status.code(), Some(1));
    let s = summary(&run);
    assert_eq!(s["sessions"]["failed"].as_u64(), Some(3), "{s}");
    let b = bridge_stats(&bridge);
    assert_eq!(b["dropped"].as_u64(), Some(3), "{b}");
    let reason = s["failures"][0]["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("WS_")
            && reason.ends_with(
                r#"server closed the SockJS session: c[3000,"bridge dropped the connection"]"#
            ),
        "{reason}"
    );
    for f in session_csvs(&run) {
        let last = read_csv(&f).rows.pop().unwrap();
        assert_eq!(last[3], "PLAYBACK_FAIL");
    }
}
