//! Recycling with real Python workers: after `--max-requests`, past `--max-rss` (a worker that
//! leaks a known amount per request) or `--max-lifetime`, a worker is replaced with no failed
//! request, its replacement ready before it stops (a ready worker is always there), and the old
//! process gone, but not before it ran what its closed sessions left to do.

use crate::common;

use std::collections::BTreeMap;
use std::thread;
use std::time::Duration;

use common::*;

/// Ready workers not draining, from a status document.
fn serving(s: &serde_json::Value) -> usize {
    workers(s).iter().filter(|w| w["state"] == "ready").count()
}

/// `n` sequential GETs of `path` `gap` apart; every one must be 200; checks between requests that
/// a ready worker is there. Returns the JSON bodies (or pid texts) in order.
fn drive(m: &InProc, path: &str, n: usize, gap: Duration) -> Vec<String> {
    (0..n)
        .map(|_| {
            let r = m.get(path);
            assert_eq!(r.status, 200, "{}", r.body);
            assert!(serving(&m.status()) >= 1, "capacity dipped below --min");
            // why: the load's pace (requests `gap` apart), not a wait for a condition.
            thread::sleep(gap);
            r.body
        })
        .collect()
}

#[test]
fn max_requests_recycles_with_no_failed_request() {
    // --max 2: room for a replacement beside the one worker (--max counts every process).
    let m = InProc::start(&base(&[
        "--min",
        "1",
        "--max",
        "2",
        "--max-requests",
        "5",
        "--stop-timeout",
        "1s",
    ]));
    // Until three workers have served (two recycled), however slowly replacements start on a
    // loaded machine (an old worker serves on until its replacement is ready); at most 400.
    let mut pids: Vec<u32> = Vec::new();
    while pids.len() < 400 {
        let batch = drive(&m, "/pid", 8, Duration::from_millis(40));
        pids.extend(batch.iter().map(|b| b.trim().parse::<u32>().unwrap()));
        let distinct: std::collections::BTreeSet<&u32> = pids.iter().collect();
        if distinct.len() >= 3 {
            break;
        }
    }
    let mut served: BTreeMap<u32, usize> = BTreeMap::new();
    for p in &pids {
        *served.entry(*p).or_default() += 1;
    }
    assert!(served.len() >= 3, "{served:?}");
    let last = *pids.last().unwrap();
    for (pid, n) in &served {
        if *pid != last {
            // Recycled at its limit, not before (it serves until its replacement is ready).
            assert!(*n >= 5, "worker {pid} served only {n}: {served:?}");
            assert_gone(*pid);
        }
    }
    let s = m.status();
    assert!(s["totals"]["recycles"].as_u64().unwrap() >= 2, "{s}");
    assert_eq!(s["totals"]["bad_gateway"], 0);
}

#[test]
fn max_rss_recycles_a_leaking_worker_at_the_limit() {
    const MIB: u64 = 1 << 20;
    // --max 3: room for a replacement while the previous recycled worker still drains (--max
    // counts every process; without room a due worker serves on, and leaks on, until one exits).
    let mut a = on_free_port(&["--max-rss", "60MiB", "--stop-timeout", "1s", "--max", "3"]);
    a.push("--".into());
    a.extend(py_worker(&["--leak", &(8 * MIB).to_string()]));
    let m = InProc::start(&a);
    let bodies = drive(&m, "/leak", 30, Duration::from_millis(100));
    let seen: Vec<(u64, u64)> = bodies
        .iter()
        .map(|b| {
            let v: serde_json::Value = serde_json::from_str(b).unwrap();
            (v["pid"].as_u64().unwrap(), v["rss"].as_u64().unwrap())
        })
        .collect();
    let first = seen[0].0;
    let first_peak = seen
        .iter()
        .filter(|(p, _)| *p == first)
        .map(|(_, r)| *r)
        .max()
        .unwrap();
    assert!(
        seen.iter().any(|(p, _)| *p != first),
        "never recycled: {seen:?}"
    );
    // Recycled at the limit: not before reaching it, and not long after (the limit is checked
    // every 250 ms; the replacement takes a moment to start).
    assert!(first_peak >= 60 * MIB, "recycled early at {first_peak}");
    let max = seen.iter().map(|(_, r)| *r).max().unwrap();
    assert!(max < 60 * MIB + 80 * MIB, "overshoot: {max}");
    assert_gone(first as u32);
    let s = m.status();
    assert!(s["totals"]["recycles"].as_u64().unwrap() >= 1, "{s}");
    assert_eq!(s["totals"]["bad_gateway"], 0);
}

#[test]
fn max_lifetime_recycles_with_no_failed_request() {
    let m = InProc::start(&base(&["--max-lifetime", "1s", "--stop-timeout", "1s"]));
    let pids: Vec<u32> = drive(&m, "/pid", 25, Duration::from_millis(100))
        .iter()
        .map(|b| b.trim().parse().unwrap())
        .collect();
    let first = pids[0];
    assert!(pids.iter().any(|p| *p != first), "{pids:?}");
    assert_gone(first);
    assert!(m.status()["totals"]["recycles"].as_u64().unwrap() >= 1);
}

/// A sticky session on a recycled worker goes on there while it drains (new sessions go to the
/// replacement); once the session is quiet the old worker stops.
#[test]
fn draining_worker_finishes_its_sticky_session() {
    let m = InProc::start(&base(&[
        "--sticky",
        "cookie",
        "--max-requests",
        "3",
        "--drain-timeout",
        "20s",
        "--stop-timeout",
        "1s",
    ]));
    let first = m.get("/pid");
    let cookie = first.cookie();
    let old: u32 = first.body.trim().parse().unwrap();
    let with_cookie = || request(&m.addr, "GET", "/pid", &[("Cookie", &cookie)], "");
    // Two more on the session: the worker reaches its limit and a replacement starts.
    for _ in 0..2 {
        assert_eq!(with_cookie().body.trim(), old.to_string());
    }
    let s = m.wait_status("old worker draining", |s| {
        workers(s).iter().any(|w| w["state"] == "draining") && serving(s) == 1
    });
    assert!(s["totals"]["recycles"] == 1, "{s}");
    // The session stays on its draining worker; a new client goes to the replacement.
    for _ in 0..4 {
        let r = with_cookie();
        assert_eq!(r.status, 200);
        assert_eq!(r.body.trim(), old.to_string());
        // why: the session's pace: it stays active across the drain's 1 s quiet time.
        thread::sleep(Duration::from_millis(150));
    }
    let fresh = m.get("/pid");
    assert_ne!(fresh.body.trim(), old.to_string());
    assert_gone(old);
}

/// The drain barrier: a drained worker is stopped only once it answered one more request, so what
/// its closed sessions left queued has run. The fixture takes 3 s after its WebSocket closed to
/// log the session's end (as R runs `onSessionEnded` after the socket closed), far longer than
/// the 1 s quiet time: the end is logged, and only then is the worker gone.
#[test]
fn a_drained_worker_runs_its_session_end_before_it_is_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let ended = dir.path().join("ended.log");
    let m = InProc::start(&with_command(
        &[
            "--listen",
            "127.0.0.1:0",
            "--max-requests",
            "1",
            "--stop-timeout",
            "1s",
        ],
        py_worker(&["--end-ms", "3000", "--end-file", ended.to_str().unwrap()]),
    ));
    let old = pids(&m.status())[0];
    // One WebSocket session; when it closes the worker is at its limit and is recycled.
    let s = upgrade(&m.addr);
    drop(s);
    let closed = std::time::Instant::now();
    assert_gone(old);
    assert!(
        closed.elapsed() >= Duration::from_secs(3),
        "{:?}",
        closed.elapsed()
    );
    let log = std::fs::read_to_string(&ended).unwrap_or_default();
    assert_eq!(log, format!("ended {old}\n"), "the session end ran first");
    assert_eq!(m.status()["totals"]["recycles"], 1);
    assert_eq!(m.get("/hello").body, "hello");
}
