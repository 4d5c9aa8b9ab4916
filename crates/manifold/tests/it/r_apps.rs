//! The presets with real R (Debian r-cran-plumber, r-cran-shiny): a plumber API that scales and a
//! Shiny session that stays on its worker across page, assets and WebSocket.

use crate::common;

use std::collections::BTreeSet;
use std::thread;
use std::time::Duration;

use common::*;
use futures_util::{SinkExt, StreamExt};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::Message;

/// `manifold plumber api.R`: concurrent slow requests spread over two R workers, the extra one
/// stops when idle, and SIGTERM stops every R process.
#[test]
fn plumber_preset_scales_and_stops_cleanly() {
    let api = fixture("plumber/api.R");
    let mut m = start(&on_free_port(&[
        "--min",
        "1",
        "--max",
        "2",
        "--idle-timeout",
        "1s",
        "plumber",
        api.to_str().unwrap(),
    ]));
    assert_eq!(m.get("/hello").body, "hello");
    let reqs: Vec<_> = (0..4)
        .map(|_| {
            let addr = m.addr.clone();
            thread::spawn(move || request(&addr, "GET", "/sleep?ms=300", &[], ""))
        })
        .collect();
    let mut served_by = BTreeSet::new();
    for r in reqs {
        let r = r.join().unwrap();
        assert_eq!(r.status, 200, "{}", r.body);
        let v: serde_json::Value = serde_json::from_str(&r.body).unwrap();
        served_by.insert(v["pid"][0].as_u64().unwrap() as u32);
    }
    let s = m.status();
    assert_eq!(s["totals"]["worker_starts"], 2);
    let started: BTreeSet<u32> = pids(&s).into_iter().collect();
    assert!(
        served_by.is_subset(&started),
        "{served_by:?} vs {started:?}"
    );
    let s = m.wait_status("idle worker stopped", |s| workers(s).len() == 1);
    let kept = pids(&s)[0];
    started
        .iter()
        .filter(|p| **p != kept)
        .for_each(|p| assert_gone(*p));
    m.sigterm();
    assert_eq!(m.wait().code(), Some(0));
    assert_gone(kept);
}

/// Reads Shiny WebSocket messages until one carries the rendered `clicks` output.
async fn shiny_output(addr: &str, cookie: &str) -> String {
    let mut req = format!("ws://{addr}/websocket/")
        .into_client_request()
        .unwrap();
    req.headers_mut().insert("Cookie", cookie.parse().unwrap());
    let (mut ws, resp) = tokio_tungstenite::connect_async(req)
        .await
        .expect("websocket handshake");
    assert_eq!(resp.status(), 101);
    let init = r#"{"method":"init","data":{"go:shiny.action":0,".clientdata_output_clicks_hidden":false}}"#;
    ws.send(Message::text(init)).await.unwrap();
    loop {
        let msg = ws
            .next()
            .await
            .expect("websocket open")
            .expect("websocket message");
        if let Message::Text(t) = msg {
            if t.contains("clicks:") {
                let _ = ws.close(None).await;
                return t.to_string();
            }
        }
    }
}

/// `manifold shiny APP_DIR`: the page, its assets and its WebSocket all reach the worker named in
/// the sticky cookie (same pid); nothing of the session reaches the other worker.
#[test]
fn shiny_session_stays_on_its_worker() {
    let app = fixture("shiny");
    let mut m = start(&on_free_port(&[
        "--min",
        "2",
        "--max",
        "2",
        "shiny",
        app.to_str().unwrap(),
    ]));
    let page = m.get("/");
    assert_eq!(page.status, 200);
    let cookie = page.cookie();
    let worker: u64 = cookie
        .strip_prefix("manifold_worker=")
        .unwrap()
        .parse()
        .unwrap();
    let pid: u32 = page
        .body
        .split("<span id=\"pid\">")
        .nth(1)
        .and_then(|r| r.split('<').next())
        .unwrap()
        .parse()
        .unwrap();
    let s = m.status();
    let w = workers(&s).into_iter().find(|w| w["id"] == worker).unwrap();
    assert_eq!(w["pid"].as_u64(), Some(pid as u64));
    // The page's script, fetched with the cookie, comes from the same worker.
    let script = page
        .body
        .split("src=\"")
        .filter_map(|r| r.split('"').next())
        .find(|p| p.ends_with("shiny.min.js"))
        .unwrap()
        .to_string();
    let js = request(
        &m.addr,
        "GET",
        &format!("/{script}"),
        &[("Cookie", &cookie)],
        "",
    );
    assert_eq!(js.status, 200);
    assert!(js.header("set-cookie").is_none());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let addr = m.addr.clone();
    let out = rt.block_on(async {
        tokio::time::timeout(Duration::from_secs(60), shiny_output(&addr, &cookie))
            .await
            .expect("shiny answered over the websocket")
    });
    assert!(out.contains(&format!("pid: {pid}")), "{out}");
    // The tunnel frees its worker once both sides closed: page, script and WebSocket = 3.
    let s = m.wait_status("websocket finished", |s| {
        workers(s)
            .iter()
            .any(|w| w["id"] == worker && w["busy"] == 0 && w["served"] == 3)
    });
    let other = workers(&s).into_iter().find(|w| w["id"] != worker).unwrap();
    assert_eq!(other["served"], 0, "nothing of the session leaked: {other}");
    // A second session without cookie is a new assignment and gets its own cookie.
    let second = m.get("/");
    assert!(second
        .header("set-cookie")
        .unwrap()
        .starts_with("manifold_worker="));
    let all = pids(&m.status());
    m.sigterm();
    assert_eq!(m.wait().code(), Some(0));
    all.into_iter().for_each(assert_gone);
}
