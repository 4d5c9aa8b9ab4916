//! Limits against clients and failing workers: `--max-connections` (a prompt 503 beyond it),
//! `--header-timeout` (slow clients are cut), a worker that refuses connections (the request is
//! retried once on another worker, no 502), and `last_error` with its time. Real Python workers.

use crate::common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::thread;
use std::time::{Duration, Instant};

use common::*;

/// Three idle client connections fill `--max-connections 3`: the next connection gets 503 at
/// once with the reason; once one closes, requests are served again.
#[test]
fn connections_beyond_max_connections_get_a_prompt_503() {
    let m = InProc::start(&base(&["--max-connections", "3"]));
    assert_eq!(m.get("/hello").status, 200);
    let mut idle: Vec<TcpStream> = (0..3)
        .map(|_| TcpStream::connect(&m.addr).unwrap())
        .collect();
    // The server counts a connection once it accepted it: wait until the fourth is refused.
    let mut r = request(&m.addr, "GET", "/hello", &[], "");
    poll_until(DEADLINE, || {
        r = request(&m.addr, "GET", "/hello", &[], "");
        r.status == 503
    });
    assert_eq!(r.status, 503);
    assert_eq!(
        r.body.trim(),
        "manifold: too many connections (--max-connections 3)"
    );
    assert_eq!(r.header("retry-after"), Some("1"));
    drop(idle.pop());
    wait_until("served again", || {
        let r = request(&m.addr, "GET", "/hello", &[], "");
        r.status == 200 && r.body == "hello"
    });
}

/// Twenty clients trickling header bytes (one every 200 ms) are all disconnected after
/// `--header-timeout 1s`, while an ordinary request is served meanwhile.
#[test]
fn slow_header_clients_are_cut_after_header_timeout() {
    let m = InProc::start(&base(&["--header-timeout", "1s"]));
    let start = Instant::now();
    let (begun_tx, begun_rx) = std::sync::mpsc::channel();
    let slow: Vec<_> = (0..20)
        .map(|_| {
            let addr = m.addr.clone();
            let begun_tx = begun_tx.clone();
            thread::spawn(move || {
                let mut s = TcpStream::connect(&addr).unwrap();
                s.set_read_timeout(Some(Duration::from_millis(200)))
                    .unwrap();
                let begun = Instant::now();
                s.write_all(b"GET /hello HTTP/1.1\r\nHo").unwrap();
                let _ = begun_tx.send(());
                loop {
                    let mut b = [0u8; 256];
                    match s.read(&mut b) {
                        // Closed (possibly after a 408): cut.
                        Ok(_) => return begun.elapsed(),
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                        Err(_) => return begun.elapsed(),
                    }
                    assert!(begun.elapsed() < DEADLINE, "slow client never cut");
                    if s.write_all(b"x").is_err() {
                        return begun.elapsed();
                    }
                }
            })
        })
        .collect();
    // Every slow client has begun its head: the ordinary request is served meanwhile.
    for _ in 0..20 {
        begun_rx.recv_timeout(DEADLINE).unwrap();
    }
    assert_eq!(m.get("/hello").body, "hello");
    for t in slow {
        let took = t.join().unwrap();
        assert!(
            took >= Duration::from_millis(900),
            "cut too early: {took:?}"
        );
    }
    assert!(start.elapsed() < Duration::from_secs(30));
}

/// A worker that closed its port but is still alive looks ready; the request that meets the
/// refused connect goes to the other worker (200, not 502), the refusing worker is replaced,
/// and `last_error` says so with its time.
#[test]
fn refused_connect_is_retried_on_another_worker() {
    let m = InProc::start(&base(&[
        "--min",
        "2",
        "--max",
        "2",
        "--stop-timeout",
        "500ms",
    ]));
    m.wait_status("two ready", |s| ready(s) == 2);
    let r = m.get("/close-listener");
    assert_eq!(r.status, 200);
    let closed: u32 = r.body.trim().parse().unwrap();
    let mut served_by = Vec::new();
    for _ in 0..4 {
        let r = m.get("/pid");
        assert_eq!(r.status, 200, "{}", r.body);
        served_by.push(r.body.trim().parse::<u32>().unwrap());
    }
    assert!(!served_by.contains(&closed), "{served_by:?}");
    let s = m.status();
    assert_eq!(s["totals"]["connect_retries"], 1, "{s}");
    assert_eq!(s["totals"]["bad_gateway"], 0, "{s}");
    let e = &s["last_error"];
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .ends_with("refused a connection; replaced, request retried"),
        "{s}"
    );
    assert!(e["time"].as_str().unwrap().ends_with('Z'), "{s}");
    assert_gone(closed);
    m.wait_status("back to two ready", |s| ready(s) == 2);
}

/// A worker that crashes mid-request: 502, and `last_error` names the worker and the time.
#[test]
fn crash_sets_last_error_with_its_time() {
    let m = InProc::start(&base(&[]));
    assert_eq!(m.status()["last_error"], serde_json::Value::Null);
    assert_eq!(m.get("/crash").status, 502);
    let s = m.wait_status("crash recorded", |s| s["totals"]["worker_crashes"] == 1);
    let msg = s["last_error"]["message"].as_str().unwrap();
    assert!(
        msg == "worker 1 exited with code 7 while ready (1 request(s) in flight)"
            || msg.starts_with("worker 1 exited with code 7")
            || msg.starts_with("worker 1 failed: "),
        "{s}"
    );
    let t = s["last_error"]["time"].as_str().unwrap();
    assert!(t.len() == 20 && t.ends_with('Z'), "{t}");
}
