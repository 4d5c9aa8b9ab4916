//! The presets with real R (Debian r-cran-plumber, r-cran-shiny): a plumber API that scales and a
//! Shiny session that stays on its worker across page, assets and WebSocket.

use crate::common;

use std::collections::BTreeSet;
use std::thread;

use common::*;

/// `manifold plumber api.R`: concurrent slow requests spread over two R workers, the extra one
/// stops when idle, and SIGTERM stops every R process.
#[test]
fn plumber_preset_scales_and_stops_cleanly() {
    let flags = ["--min", "1", "--max", "2", "--idle-timeout", "1s"];
    let mut m = start_r("plumber", "plumber/api.R", &flags);
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

/// `manifold shiny APP_DIR`: the page, its assets and its WebSocket all reach the worker named in
/// the sticky cookie (same pid); nothing of the session reaches the other worker.
#[test]
fn shiny_session_stays_on_its_worker() {
    let mut m = start_r("shiny", "shiny", &["--min", "2", "--max", "2"]);
    let p = shiny::open(&m.addr, "/");
    assert!(p.cookie.starts_with("manifold_worker="), "{}", p.cookie);
    let (worker, pid) = (p.worker, p.pid);
    let s = m.status();
    let w = workers(&s).into_iter().find(|w| w["id"] == worker).unwrap();
    assert_eq!(w["pid"].as_u64(), Some(pid as u64));
    // The page's script, fetched with the cookie, came from the same worker (no new cookie).
    assert!(p.script.header("set-cookie").is_none());
    let out = shiny::output(&m.addr, "/", &p.cookie);
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
