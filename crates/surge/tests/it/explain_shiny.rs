//! `surge explain` on the Shiny protocol: a wait that ends in a message naming no output (here
//! `frozen`, as `freezeReactiveValue` sends it once the outputs are computed and before they are
//! flushed) belongs to the outputs that follow it. The server is a Shiny-protocol WebSocket server
//! on loopback with known costs: one "R process" (a lock) that computes a step, then answers it.

use crate::common::fresh_dir;
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Mutex;
use tokio_tungstenite::tungstenite::Message;

/// What the first step costs the server (reading the day and drawing the first plots).
const FIRST_MS: u64 = 300;
/// What the second step costs (the detail plot).
const SECOND_MS: u64 = 60;

/// One session as Shiny plays it: `config` when the socket opens; `init` → `progress` (which
/// replay neither records nor waits for), the first step's compute, `frozen`, then the outputs'
/// flush; `update` → the second step's compute, its flush, then a custom message. The compute
/// holds `r`: one single-threaded process, so concurrent sessions wait behind each other.
async fn session(tcp: TcpStream, r: Arc<Mutex<()>>) {
    let Ok(mut ws) = tokio_tungstenite::accept_async(tcp).await else {
        return;
    };
    let config = json!({"config": {"workerId": "", "sessionId": "s", "user": null}});
    if ws.send(Message::text(config.to_string())).await.is_err() {
        return;
    }
    while let Some(Ok(m)) = ws.next().await {
        let Message::Text(t) = m else { continue };
        let msg: Value = serde_json::from_str(t.as_str()).unwrap_or_default();
        let flush = |values: Value| json!({"errors": {}, "values": values, "inputMessages": []});
        let (cost, answer) = match msg["method"].as_str() {
            Some("init") => {
                let progress = json!({"progress": {"type": "binding", "message": {"id": "plot"}}});
                let _ = ws.send(Message::text(progress.to_string())).await;
                let frozen = json!({"frozen": {"ids": ["pick"]}});
                let values = flush(json!({"plot": {"src": "data:,"}, "total": "42"}));
                (FIRST_MS, vec![frozen, values])
            }
            Some("update") => {
                let values = flush(json!({"detail": {"src": "data:,"}}));
                (
                    SECOND_MS,
                    vec![values, json!({"custom": {"note": "drawn"}})],
                )
            }
            _ => continue,
        };
        {
            let _process = r.lock().await;
            // why: this sleep is the server's known compute, what explain must measure.
            tokio::time::sleep(Duration::from_millis(cost)).await;
        }
        for v in answer {
            if ws.send(Message::text(v.to_string())).await.is_err() {
                return;
            }
        }
    }
}

/// Starts the server on its own thread and runtime (its timing free of the test's); its URL.
fn start_shiny_protocol() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    l.set_nonblocking(true).unwrap();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let l = TcpListener::from_std(l).unwrap();
            let r = Arc::new(Mutex::new(()));
            while let Ok((tcp, _)) = l.accept().await {
                tokio::spawn(session(tcp, r.clone()));
            }
        });
    });
    format!("http://127.0.0.1:{port}/")
}

/// The session as a browser recorded it: open, init, config, frozen, the first outputs, an
/// update, the detail output, the custom message, close.
fn recording(dir: &Path) -> PathBuf {
    let at = |ms: u32| format!("2026-11-27T10:00:{:02}.{:03}Z", ms / 1000, ms % 1000);
    let ev = |ms: u32, kind: &str, key: &str, v: Value| {
        let mut o = json!({"type": kind, "begin": at(ms)});
        match v {
            Value::Null => {}
            Value::String(s) => o[key] = Value::String(s),
            v => o[key] = Value::String(v.to_string()),
        }
        o.to_string()
    };
    let flush = |values: Value| json!({"errors": {}, "values": values, "inputMessages": []});
    let lines = [
        "# version: 1".to_string(),
        "# target_url: http://127.0.0.1:3838/".into(),
        "# target_type: R/Shiny".into(),
        ev(0, "WS_OPEN", "url", json!("/websocket/")),
        ev(
            100,
            "WS_SEND",
            "message",
            json!({"method": "init", "data": {"pick": "a"}}),
        ),
        ev(
            150,
            "WS_RECV_INIT",
            "message",
            json!({"config": {"workerId": "", "sessionId": "${SESSION}", "user": null}}),
        ),
        ev(
            450,
            "WS_RECV",
            "message",
            json!({"frozen": {"ids": ["pick"]}}),
        ),
        ev(
            451,
            "WS_RECV",
            "message",
            flush(json!({"plot": {"src": "data:,"}, "total": "42"})),
        ),
        ev(
            2000,
            "WS_SEND",
            "message",
            json!({"method": "update", "data": {"pick": "b"}}),
        ),
        ev(
            2060,
            "WS_RECV",
            "message",
            flush(json!({"detail": {"src": "data:,"}})),
        ),
        ev(
            2061,
            "WS_RECV",
            "message",
            json!({"custom": {"note": "drawn"}}),
        ),
        ev(3000, "WS_CLOSE", "message", Value::Null),
    ];
    let path = dir.join("recording.log");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    path
}

/// The first step's work is announced by `frozen` (and a `progress` replay does not wait for):
/// explain names that line by the outputs the step produced, `plot, total (after frozen)`, and its
/// time alone is the whole wait from the client's `init` to their message (at least the 300 ms of
/// compute), ranked first; no row is named `frozen`. A message naming no output after the step's
/// last output (the custom one) keeps its own name.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wait_announced_by_frozen_is_named_by_the_outputs_that_follow() {
    let _timed = crate::server_timing::TIMED.lock().await;
    let url = start_shiny_protocol();
    let dir = fresh_dir("explain-shiny");
    let rec = recording(&dir);
    let out = dir.join("out");
    let a = crate::common::explain_args(&[
        rec.to_str().unwrap(),
        &url,
        "--users",
        "3",
        "--think-time",
        "none",
        "--output-dir",
        out.to_str().unwrap(),
    ]);
    let plan = surge::capacity::explain::ExplainPlan::from_args(a).unwrap();
    let e = surge::capacity::explain::run(plan, std::future::pending())
        .await
        .unwrap();
    let table = surge::capacity::explain::rank::table(&e.rows, e.users);
    eprintln!("{table}");
    assert_eq!(e.sessions[0], 1, "the one alone completed: {e:#?}");
    assert!(e.sessions[1] >= 3, "the loaded sessions completed: {e:#?}");
    let top = &e.rows[0];
    assert_eq!(
        top.label, "values: plot, total (after frozen)",
        "{:#?}",
        e.rows
    );
    // Lines 7 (frozen) and 8 (the outputs): one wait from the client's send on line 5.
    assert_eq!(top.lines, vec![8], "{top:?}");
    assert_eq!(top.after, vec![7], "{top:?}");
    assert_eq!(top.per_session, 1);
    assert!(
        top.solo_ms >= FIRST_MS as f64 && top.solo_ms < 2.5 * FIRST_MS as f64,
        "alone {:.1} ms",
        top.solo_ms
    );
    assert!(
        top.loaded_p95_ms.unwrap() >= top.solo_ms,
        "3 users on one process: {top:?}"
    );
    assert!(
        !e.rows
            .iter()
            .any(|r| r.label.contains("frozen") && r.lines == [7]),
        "{:#?}",
        e.rows
    );
    let second = e.rows.iter().find(|r| r.label == "values: detail").unwrap();
    assert!(second.solo_ms >= SECOND_MS as f64 && second.after.is_empty());
    assert!(
        e.rows
            .iter()
            .any(|r| r.label == "custom" && r.lines == [11]),
        "{:#?}",
        e.rows
    );
    // The table keeps the "(after …)" that says where the wait ended; the headline names it.
    let first = table.lines().nth(1).unwrap();
    assert!(first.contains("(after frozen)"), "{table}");
    assert!(
        e.headline()
            .starts_with("WS_RECV values: plot, total (after frozen) costs "),
        "{}",
        e.headline()
    );
}
