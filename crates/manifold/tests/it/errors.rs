//! Out of rotation on errors, once more elsewhere (issue 32): a worker answering `--max-5xx`
//! 5xx in a row is drained and replaced; a GET whose worker dies before any byte of an answer
//! is answered by another worker (a POST is not sent twice).

use std::thread;

use crate::common::*;

/// The pid of the worker serving a request now (busy 1), from status.
fn busy_pid(m: &Manifold) -> u32 {
    let s = m.wait_status("a busy worker", |s| {
        workers(s).iter().any(|w| w["busy"] == 1)
    });
    let w = workers(&s).into_iter().find(|w| w["busy"] == 1).unwrap();
    w["pid"].as_u64().unwrap() as u32
}

fn kill(pid: u32) {
    unsafe {
        libc::kill(pid as i32, libc::SIGKILL);
    }
}

/// A worker that answers 500 five times in a row (`--max-5xx` default) is recycled: replaced,
/// then stopped; four in a row and a 200 reset the count.
#[test]
fn five_5xx_in_a_row_take_a_worker_out_of_rotation() {
    let m = start(&base(&["--min", "1", "--max", "2"]));
    let first: u32 = m.get("/pid").body.parse().unwrap();
    for _ in 0..4 {
        assert_eq!(m.get("/fail").status, 500);
    }
    // One good answer resets the count.
    assert_eq!(m.get("/hello").status, 200);
    for _ in 0..4 {
        assert_eq!(m.get("/fail").status, 500);
    }
    let s = m.status();
    assert!(workers(&s)[0]["recycle"].is_null(), "{s}");
    assert_eq!(m.get("/fail").status, 500);
    assert_gone(first);
    let s = m.wait_status("a replacement ready", |s| {
        ready(s) == 1 && pids(s)[0] != first
    });
    assert_eq!(s["totals"]["recycles"], 1, "{s}");
    assert_eq!(m.get("/hello").status, 200);
}

/// A worker killed while serving a GET costs the client nothing: the answer comes from the
/// other worker and the access log says `retried`; a POST whose worker is killed gets 502.
#[test]
fn a_get_whose_worker_dies_is_answered_by_another() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("access.jsonl");
    let m = start(&base(&[
        "--min",
        "2",
        "--max",
        "2",
        "--access-log",
        log.to_str().unwrap(),
    ]));
    let addr = m.addr.clone();
    let get = thread::spawn(move || request(&addr, "GET", "/sleep?ms=1500&tag=g", &[], ""));
    let victim = busy_pid(&m);
    kill(victim);
    let r = get.join().unwrap();
    assert_eq!(r.status, 200, "{}", r.body);
    let v: serde_json::Value = serde_json::from_str(&r.body).unwrap();
    assert_ne!(v["pid"].as_u64().unwrap() as u32, victim);
    // A request with a body is never sent twice.
    m.wait_status("two ready workers", |s| ready(s) == 2);
    let addr = m.addr.clone();
    let post = thread::spawn(move || request(&addr, "POST", "/sleep?ms=1500", &[], "a body"));
    kill(busy_pid(&m));
    assert_eq!(post.join().unwrap().status, 502);
    wait_until("two access log lines", || {
        std::fs::read_to_string(&log).is_ok_and(|t| t.lines().count() >= 2)
    });
    let text = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0]["retried"], true, "{text}");
    assert_eq!(lines[1]["retried"], false, "{text}");
    assert_eq!(m.status()["totals"]["bad_gateway"], 1);
}
