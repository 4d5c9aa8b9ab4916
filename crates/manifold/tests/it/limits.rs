//! Limits against clients and failing workers: `--max-connections` (a prompt 503 beyond it),
//! `--header-timeout` (slow clients are cut), a worker that refuses connections (the request is
//! retried once on another worker, no 502), and `last_error` with its time. Real Python workers.

use crate::common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use common::*;
use manifold::server::REFUSING;

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
    // A POST: a GET would be sent once more, to a second worker (see errors.rs).
    assert_eq!(request(&m.addr, "POST", "/crash", &[], "").status, 502);
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

/// Processes whose parent is `pid` (manifold's workers), from /proc.
fn children(pid: u32) -> usize {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return 0;
    };
    dir.filter_map(Result::ok)
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .bytes()
                .all(|b| b.is_ascii_digit())
        })
        .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
        .filter(|stat| {
            // pid (comm) state ppid …: the comm may hold spaces, so split after its ')'.
            let after = stat.rsplit_once(')').map_or("", |(_, r)| r);
            after.split_whitespace().nth(1) == Some(pid.to_string().as_str())
        })
        .count()
}

/// Client connections `pid` holds on its listening `port`: its socket descriptors that
/// /proc/net/tcp lists with that local port and not listening.
fn client_sockets(pid: u32, port: u16) -> usize {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return 0;
    };
    let inodes: std::collections::HashSet<String> = fds
        .filter_map(Result::ok)
        .filter_map(|e| std::fs::read_link(e.path()).ok())
        .filter_map(|l| {
            let l = l.to_string_lossy().into_owned();
            Some(l.strip_prefix("socket:[")?.strip_suffix(']')?.to_string())
        })
        .collect();
    let table = std::fs::read_to_string("/proc/net/tcp").unwrap_or_default();
    let local = format!(":{port:04X}");
    table
        .lines()
        .skip(1)
        .filter(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            f.len() > 9 && f[1].ends_with(&local) && f[3] != "0A" && inodes.contains(f[9])
        })
        .count()
}

/// 1,000 first requests at once (loopback, one thread each, released together) against
/// `--max 3 --max-connections 100`: sampled from /proc while the burst runs, the workers never
/// number more than 3 and manifold never holds more than 100 client connections being served
/// plus the at most 64 (`server::REFUSING`) being told 503; every request gets a 200 or a 503.
#[test]
fn a_burst_of_first_requests_keeps_the_limits() {
    const CLIENTS: usize = 1000;
    const MAX: usize = 3;
    const MAX_CONNECTIONS: usize = 100;
    let m = start(&base(&[
        "--min",
        "1",
        "--max",
        &MAX.to_string(),
        "--max-connections",
        &MAX_CONNECTIONS.to_string(),
    ]));
    let pid = m.child.id();
    let port: u16 = m.addr.rsplit(':').next().unwrap().parse().unwrap();
    m.wait_status("one ready worker", |s| ready(s) == 1);
    let done = Arc::new(AtomicBool::new(false));
    let sampler = {
        let done = done.clone();
        thread::spawn(move || {
            let (mut procs, mut conns, mut samples) = (0, 0, 0);
            while !done.load(Ordering::Relaxed) {
                procs = procs.max(children(pid));
                conns = conns.max(client_sockets(pid, port));
                samples += 1;
            }
            (procs, conns, samples)
        })
    };
    let gate = Arc::new(std::sync::Barrier::new(CLIENTS));
    let clients: Vec<_> = (0..CLIENTS)
        .map(|i| {
            let (addr, gate) = (m.addr.clone(), gate.clone());
            thread::Builder::new()
                .stack_size(64 * 1024)
                .spawn(move || {
                    gate.wait();
                    let Ok(mut s) = TcpStream::connect(&addr) else {
                        return 0;
                    };
                    let _ = s.set_read_timeout(Some(DEADLINE));
                    let req = format!(
                        "GET /sleep?ms=20&tag={i} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
                    );
                    let mut raw = Vec::new();
                    if s.write_all(req.as_bytes()).is_err() || s.read_to_end(&mut raw).is_err() {
                        // Closed at once beyond the refusals being written: no answer.
                        return 0;
                    }
                    parse(&raw).map_or(0, |r| r.status)
                })
                .unwrap()
        })
        .collect();
    let statuses: Vec<u16> = clients.into_iter().map(|c| c.join().unwrap()).collect();
    done.store(true, Ordering::Relaxed);
    let (procs, conns, samples) = sampler.join().unwrap();
    let ok = statuses.iter().filter(|s| **s == 200).count();
    let busy = statuses.iter().filter(|s| **s == 503).count();
    let closed = statuses.iter().filter(|s| **s == 0).count();
    println!(
        "burst of {CLIENTS}: {ok} × 200, {busy} × 503, {closed} closed unanswered; from /proc over \
         {samples} samples: at most {procs} worker processes (--max {MAX}), {conns} client \
         connections (--max-connections {MAX_CONNECTIONS} + {REFUSING} being refused)"
    );
    assert_eq!(ok + busy + closed, CLIENTS, "{statuses:?}");
    assert!(ok > 0, "some were served");
    assert!((1..=MAX).contains(&procs), "{procs} worker processes");
    assert!(
        conns <= MAX_CONNECTIONS + REFUSING,
        "{conns} client connections"
    );
    assert!(conns > 0, "the sampler saw the burst");
    let s = m.status();
    assert!(
        s["totals"]["worker_starts"].as_u64().unwrap() as usize <= MAX,
        "{s}"
    );
}
