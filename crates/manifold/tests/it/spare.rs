//! `--spare N`: idle ready workers kept above the busy ones (within `--max`), so the next request
//! finds a started worker instead of waiting for one to start. Real Python workers.

use crate::common;

use std::thread;
use std::time::Duration;

use common::*;

fn idle_ready(s: &serde_json::Value) -> usize {
    workers(s)
        .iter()
        .filter(|w| w["state"] == "ready" && w["busy"] == 0)
        .count()
}

#[test]
fn spare_workers_wait_ahead_of_demand_within_max() {
    let m = InProc::start(&base(&[
        "--min",
        "1",
        "--max",
        "3",
        "--spare",
        "1",
        "--idle-timeout",
        "1s",
    ]));
    // Idle: the one --min worker is the spare.
    // why: proving that no second worker starts needs time to pass.
    thread::sleep(Duration::from_millis(300));
    assert_eq!(m.status()["totals"]["worker_starts"], 1);
    let long =
        |addr: String| thread::spawn(move || request(&addr, "GET", "/sleep?ms=2500", &[], ""));
    let a = long(m.addr.clone());
    // Worker 1 busy: a spare starts before any other request asks for it.
    let s = m.wait_status("a spare ready", |s| {
        idle_ready(s) == 1 && workers(s).len() == 2
    });
    let spare_pid = workers(&s)
        .iter()
        .find(|w| w["busy"] == 0)
        .map(|w| w["pid"].as_u64().unwrap())
        .unwrap();
    let b = m.get("/pid");
    assert_eq!(
        b.body.trim(),
        spare_pid.to_string(),
        "served by the waiting spare"
    );
    let c = long(m.addr.clone());
    // Both busy: a third (the last --max allows) becomes the spare.
    m.wait_status("third worker ready", |s| {
        idle_ready(s) == 1 && workers(s).len() == 3
    });
    let d = long(m.addr.clone());
    // why: proving that no fourth worker starts needs time to pass.
    thread::sleep(Duration::from_millis(500));
    let s = m.status();
    assert_eq!(s["totals"]["worker_starts"], 3, "never beyond --max: {s}");
    for t in [a, c, d] {
        assert_eq!(t.join().unwrap().status, 200);
    }
    // Idle again: stopped down to --min, keeping one spare.
    let s = m.wait_status("back to one", |s| workers(s).len() == 1);
    assert_eq!(idle_ready(&s), 1);
}
