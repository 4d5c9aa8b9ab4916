//! What a load balancer (or an autoscaler) in front of manifold sees: the host's saturation in
//! status and metrics, and the drain on SIGTERM (status 404, new sessions 503, sticky ones served).

use crate::common;

use std::thread;
use std::time::{Duration, Instant};

use common::*;

/// The 1-minute load average as the kernel reports it now.
fn loadavg1() -> f64 {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

fn nproc() -> u64 {
    let out = std::process::Command::new("nproc").output().unwrap();
    String::from_utf8(out.stdout)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

fn metric(text: &str, name: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("{name} missing:\n{text}"))
        .parse()
        .unwrap()
}

/// Idle: saturation is the host's load per CPU (the kernel's figures); with both slots busy and a
/// request queued it is 1, and metrics say the same as the JSON.
#[test]
fn status_reports_the_hosts_saturation() {
    let m = start(&base(&["--min", "2", "--max", "2", "--queue-size", "4"]));
    let before = loadavg1();
    let s = m.status();
    let after = loadavg1();
    let c = &s["capacity"];
    assert_eq!(
        (c["busy"].as_u64(), c["slots"].as_u64()),
        (Some(0), Some(2))
    );
    assert_eq!(
        (c["workers"].as_u64(), c["workers_ratio"].as_f64()),
        (Some(2), Some(1.0))
    );
    assert_eq!(c["cpus"].as_u64(), Some(nproc()));
    let load1 = c["load1"].as_f64().unwrap();
    assert!(
        (before.min(after) - 0.01..=before.max(after) + 0.01).contains(&load1),
        "load1 {load1} vs /proc/loadavg {before}..{after}"
    );
    let want = (load1 / nproc() as f64).min(1.0);
    assert!(
        (s["saturation"].as_f64().unwrap() - want).abs() < 1e-9,
        "{s}"
    );
    assert_eq!(s["draining"], false);

    let addr = m.addr.clone();
    let reqs: Vec<_> = (0..3)
        .map(|_| {
            let addr = addr.clone();
            thread::spawn(move || request(&addr, "GET", "/sleep?ms=1500", &[], ""))
        })
        .collect();
    let s = m.wait_status("two busy, one queued", |s| s["queue"] == 1);
    let c = &s["capacity"];
    assert_eq!(
        (c["busy"].as_u64(), c["busy_ratio"].as_f64()),
        (Some(2), Some(1.0))
    );
    assert_eq!(c["queue_ratio"].as_f64(), Some(0.25));
    assert_eq!(s["saturation"].as_f64(), Some(1.0));
    let text = m.get("/__manifold__/metrics").body;
    assert_eq!(metric(&text, "manifold_saturation"), 1.0);
    assert_eq!(metric(&text, "manifold_capacity_slots"), 2.0);
    assert_eq!(metric(&text, "manifold_host_cpus"), nproc() as f64);
    assert!(metric(&text, "manifold_host_load1") >= 0.0);
    for r in reqs {
        assert_eq!(r.join().unwrap().status, 200);
    }
}

/// The cookie a first request got (`manifold_worker=N`).
fn session_cookie(m: &Manifold) -> String {
    let r = m.get("/pid");
    assert_eq!(r.status, 200);
    r.cookie()
}

/// SIGTERM with --drain-timeout: status answers 404 with `draining: true`, a new session gets 503
/// (Connection: close), the existing session's requests are still served, and manifold stops as
/// soon as nothing is in flight, long before the drain timeout.
#[test]
fn sigterm_drains_existing_sessions_then_stops() {
    let mut m = start(&base(&[
        "--min",
        "2",
        "--max",
        "2",
        "--sticky",
        "cookie",
        "--drain-timeout",
        "30s",
    ]));
    // Session A holds its worker with a slow request; session B lives on the other worker (the
    // single-threaded fixture serves one connection at a time).
    let cookie_a = session_cookie(&m);
    let (addr, c) = (m.addr.clone(), cookie_a.clone());
    let long = thread::spawn(move || {
        let r = request(&addr, "GET", "/sleep?ms=2500", &[("Cookie", &c)], "");
        (r, Instant::now())
    });
    m.wait_status("session busy", |s| s["capacity"]["busy"] == 1);
    let cookie = session_cookie(&m);
    assert_ne!(cookie, cookie_a);
    m.sigterm();
    let signalled = Instant::now();
    let mut st = m.get("/__manifold__/status");
    wait_until("status to answer 404", || {
        st = m.get("/__manifold__/status");
        st.status != 200
    });
    assert_eq!(st.status, 404, "{}", st.body);
    let v: serde_json::Value = serde_json::from_str(&st.body).unwrap();
    assert_eq!(v["draining"], true);
    let fresh = m.get("/pid");
    assert_eq!(fresh.status, 503, "{}", fresh.body);
    assert_eq!(
        fresh.body.trim(),
        "manifold: draining, not taking new sessions"
    );
    assert_eq!(fresh.header("connection"), Some("close"));
    let sticky = request(&m.addr, "GET", "/pid", &[("Cookie", &cookie)], "");
    assert_eq!(sticky.status, 200, "the existing session is still served");
    let metrics = m.get("/__manifold__/metrics");
    assert_eq!(
        (metrics.status, metric(&metrics.body, "manifold_draining")),
        (200, 1.0)
    );
    let (r, finished) = long.join().unwrap();
    assert_eq!(r.status, 200);
    assert_eq!(m.wait().code(), Some(0));
    let stopped = Instant::now();
    assert!(
        stopped >= finished,
        "stopped only after the session's request"
    );
    assert!(
        stopped - signalled < Duration::from_secs(20),
        "ended when idle, not at the 30s timeout"
    );
    assert!(
        m.log().contains("drained: nothing in flight"),
        "{}",
        m.log()
    );
}

/// --drain-timeout bounds the drain: with a request still running when it passes, manifold stops
/// accepting (a new connection is refused) but still answers that request, then exits 0.
#[test]
fn drain_timeout_bounds_the_drain() {
    let mut m = start(&base(&["--sticky", "cookie", "--drain-timeout", "1s"]));
    let cookie = session_cookie(&m);
    let addr = m.addr.clone();
    let long =
        thread::spawn(move || request(&addr, "GET", "/sleep?ms=4000", &[("Cookie", &cookie)], ""));
    m.wait_status("session busy", |s| s["capacity"]["busy"] == 1);
    m.sigterm();
    let signalled = Instant::now();
    // Draining for about 1 s, then the listener closes while the request still runs.
    let mut refused = None;
    let closed = poll_until(Duration::from_secs(10), || {
        refused = std::net::TcpStream::connect(&m.addr).err();
        refused.is_some()
    });
    assert!(closed, "still accepting");
    assert_eq!(
        refused.map(|e| e.kind()),
        Some(std::io::ErrorKind::ConnectionRefused)
    );
    assert!(
        signalled.elapsed() >= Duration::from_millis(900),
        "drained about 1 s"
    );
    assert_eq!(long.join().unwrap().status, 200);
    assert_eq!(m.wait().code(), Some(0));
    assert!(m.log().contains("drain timeout"), "{}", m.log());
}
