//! `--expect LINE~REGEX` (issue 33, Deliver 5): a loopback app whose `/api/status` answer turns
//! from `ready` to `broken` every other request; the sessions that got `broken` fail with kind
//! `content` at that line, nothing else fails, and summary.json and the report count them alike.

use crate::common;

use common::*;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

/// An HTTP/1.1 app on loopback: `/api/status` answers `{"state":"ready"}` on even requests and
/// `{"state":"broken"}` on odd ones (status 200 both); anything else `ok`. Its port.
fn flipping_app() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let n = Arc::new(AtomicU32::new(0));
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            let n = n.clone();
            std::thread::spawn(move || {
                let mut r = BufReader::new(s.try_clone().unwrap());
                let mut out = s;
                loop {
                    let mut line = String::new();
                    if r.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    let mut len = 0;
                    loop {
                        let mut h = String::new();
                        if r.read_line(&mut h).unwrap_or(0) == 0 {
                            return;
                        }
                        if h == "\r\n" {
                            break;
                        }
                        if let Some(v) = h.to_ascii_lowercase().strip_prefix("content-length:") {
                            len = v.trim().parse().unwrap_or(0);
                        }
                    }
                    let mut body = vec![0; len];
                    if r.read_exact(&mut body).is_err() {
                        return;
                    }
                    let path = line.split_whitespace().nth(1).unwrap_or("/");
                    let answer = if path == "/api/status" {
                        match n.fetch_add(1, Ordering::SeqCst) % 2 {
                            0 => r#"{"state":"ready"}"#,
                            _ => r#"{"state":"broken"}"#,
                        }
                    } else {
                        "ok"
                    };
                    let resp = format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\r\n{answer}",
                        answer.len()
                    );
                    if out.write_all(resp.as_bytes()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    port
}

fn recording(dir: &Path, port: u16) -> std::path::PathBuf {
    let ev = |t: &str, b: &str, url: &str| {
        format!("{{\"type\":\"{t}\",\"begin\":\"2026-01-01T00:00:00.{b}Z\",\"end\":\"2026-01-01T00:00:00.{b}Z\",\"status\":200,\"url\":\"{url}\"}}\n")
    };
    let p = dir.join("recording.log");
    std::fs::write(
        &p,
        format!(
            "# version: 1\n# target_url: http://127.0.0.1:{port}\n# target_type: surge/http\n{}{}{}",
            ev("REQ_HOME", "000", "/"),
            ev("REQ_GET", "010", "/api/status"),
            ev("REQ_GET", "020", "/app.js"),
        ),
    )
    .unwrap();
    p
}

/// 8 sessions, `--expect 5~"state":"ready"` on the flipping line: 4 fail with kind `content` at
/// line 5 (the reason names the check and quotes what came), the other 4 complete, no other kind
/// appears; the report states the same counts. A check on a line that is no request is refused.
#[test]
fn a_line_whose_answer_changes_fails_with_kind_content_only() {
    let port = flipping_app();
    let dir = fresh_dir("expect-content");
    let rec = recording(&dir, port);
    let run = dir.join("run");
    let o = replay_in_process(
        &rec,
        &format!("http://127.0.0.1:{port}"),
        8,
        &run,
        &[
            "--start-interval",
            "0s",
            "--think-time",
            "none",
            "--expect",
            "5~\"state\":\"ready\"",
            "--expect",
            "6~^ok$",
        ],
    );
    let s = summary(&run);
    assert_eq!(s["sessions"]["started"], 8, "{s}");
    assert_eq!(s["sessions"]["completed"], 4, "{s}");
    assert_eq!(s["sessions"]["failed"], 4, "{s}");
    let kinds = s["failures_by_kind"].as_object().unwrap();
    assert_eq!(kinds.len(), 1, "only content failures: {kinds:?}");
    assert_eq!(kinds["content"], 4);
    let f = &s["failures"][0];
    assert_eq!(
        (f["kind"].as_str(), f["line"].as_u64()),
        (Some("content"), Some(5))
    );
    let reason = f["reason"].as_str().unwrap();
    assert!(
        reason.contains("--expect 5~") && reason.contains("broken"),
        "{reason}"
    );
    assert_ne!(o.exit_code(), 0);

    let model = report_model(&report_args(vec![run.clone()], &["run"]));
    let out = &model["runs"][0]["summary"]["outcome"];
    assert_eq!(out["failures_by_kind"]["content"], 4, "{out}");

    let bad = surge()
        .arg("replay")
        .arg(&rec)
        .args(["--target", &format!("http://127.0.0.1:{port}")])
        .args(["--expect", "2~x", "--output-dir"])
        .arg(dir.join("bad"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&bad.stderr);
    assert_eq!(bad.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("--expect 2~x"), "{err}");
}

/// The same check on WebSocket messages, against the real Shiny fixture app (R, the Shiny
/// protocol over a WebSocket on loopback): the recording's `update` of line 16 sends `${n}` from
/// `--data`, 7 or 8 by turns, so R answers line 17 with `Result: 49` or `Result: 64`. With
/// `--expect '17~Result: 49\b'` the sessions that sent 8 fail with kind `content` at line 17;
/// the others, and a check of line 15's first answer that always holds, pass; nothing else fails.
#[test]
fn a_websocket_message_that_changes_fails_with_kind_content_only() {
    let (_r, port) = start_shiny();
    let dir = fresh_dir("expect-ws");
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/shiny-app");
    let text = std::fs::read_to_string(fixture.join("recording.log")).unwrap();
    let old = r#"\"n:shiny.number\":7}"#;
    assert_eq!(text.matches(old).count(), 1, "fixture recording changed");
    let rec = dir.join("recording.log");
    std::fs::write(&rec, text.replace(old, r#"\"n:shiny.number\":${n}}"#)).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[14].contains("Result: 100") && lines[16].contains("Result: 49"));
    let data = dir.join("n.csv");
    std::fs::write(&data, "n\n7\n8\n").unwrap();
    let run = dir.join("run");
    replay_in_process(
        &rec,
        &format!("http://127.0.0.1:{port}/"),
        6,
        &run,
        &[
            "--start-interval",
            "0s",
            "--think-time",
            "none",
            "--data",
            data.to_str().unwrap(),
            "--expect",
            r"17~Result: 49\b",
            "--expect",
            "15~Result: 100",
        ],
    );
    let s = summary(&run);
    assert_eq!(s["sessions"]["started"], 6, "{s}");
    assert_eq!(s["sessions"]["completed"], 3, "{s}");
    assert_eq!(s["sessions"]["failed"], 3, "{s}");
    let kinds = s["failures_by_kind"].as_object().unwrap();
    assert_eq!(kinds.len(), 1, "only content failures: {kinds:?}");
    assert_eq!(kinds["content"], 3);
    let f = &s["failures"][0];
    assert_eq!(
        (f["kind"].as_str(), f["line"].as_u64()),
        (Some("content"), Some(17))
    );
    let reason = f["reason"].as_str().unwrap();
    assert!(reason.contains("Result: 64"), "{reason}");
}
