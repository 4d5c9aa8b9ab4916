//! Timeouts that heal: a worker that does not answer gets the client a 504 and is replaced; a
//! client that leaves does not free the slot of a worker still busy; a silent WebSocket is closed;
//! a worker that stops answering its health probe is replaced; SIGTERM is bounded whatever the
//! clients do. Real Python workers (tests/fixtures/worker.py); the exact default timeout is
//! measured on tokio's paused clock while the worker is stuck (no real process must progress).

use crate::common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// One GET on a fresh connection, read to the end (async, for the paused-clock test).
async fn get_async(addr: &str, path: &str) -> Resp {
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let req = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).await.unwrap();
    parse(&raw).unwrap()
}

/// A request the worker never answers gets `504` after exactly the default `--request-timeout`
/// (60 s of paused time); the stuck worker is killed and replaced, the next request is served by
/// the new one, and status counts the timeout with its message in `last_error`.
#[tokio::test]
async fn hung_request_gets_504_after_the_default_timeout_and_the_worker_is_replaced() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let cfg = config(&with_command(
        &["--min", "1", "--max", "1", "--stop-timeout", "1s"],
        py_worker(&[]),
    ));
    let (stop, rx) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(async move {
        let shutdown = async {
            let _ = rx.await;
        };
        manifold::run(listener, cfg, shutdown, std::future::pending()).await
    });
    let first = get_async(&addr, "/pid").await;
    assert_eq!(first.status, 200);
    let stuck_pid: u32 = first.body.trim().parse().unwrap();
    tokio::time::pause();
    let start = tokio::time::Instant::now();
    let r = get_async(&addr, "/sleep?ms=600000").await;
    let waited = start.elapsed();
    tokio::time::resume();
    assert_eq!(r.status, 504, "{}", r.body);
    assert_eq!(
        r.body.trim(),
        "manifold: worker 1 did not answer within 1m (--request-timeout); it is being replaced"
    );
    assert!(
        waited >= Duration::from_secs(60) && waited <= Duration::from_millis(60_002),
        "{waited:?}"
    );
    // The replacement serves; the stuck process is gone.
    let a = addr.clone();
    let next = tokio::task::spawn_blocking(move || request(&a, "GET", "/pid", &[], ""))
        .await
        .unwrap();
    assert_eq!(next.status, 200);
    assert_ne!(next.body.trim().parse::<u32>().unwrap(), stuck_pid);
    let a = addr.clone();
    let s = tokio::task::spawn_blocking(move || status_at(&a))
        .await
        .unwrap();
    assert_eq!(s["totals"]["request_timeouts"], 1);
    assert!(
        s["last_error"]["message"]
            .as_str()
            .unwrap()
            .contains("worker 1 did not answer within 1m (--request-timeout); replaced"),
        "{s}"
    );
    assert!(s["last_error"]["time"].as_str().unwrap().ends_with('Z'));
    tokio::task::spawn_blocking(move || assert_gone(stuck_pid))
        .await
        .unwrap();
    let _ = stop.send(());
    server.await.unwrap().unwrap();
}

/// The reported bug: two hung requests whose clients gave up left status at `busy 0` and the next
/// request went to a stuck worker. Now the slot stays busy after the client left, the next
/// request waits in the queue instead, and once `--request-timeout` replaced the stuck worker it
/// is served by the new one.
#[test]
fn a_client_that_leaves_does_not_free_a_stuck_workers_slot() {
    let m = InProc::start(&base(&[
        "--min",
        "1",
        "--max",
        "1",
        "--request-timeout",
        "2s",
        "--stop-timeout",
        "1s",
    ]));
    let stuck_pid: u32 = m.get("/pid").body.trim().parse().unwrap();
    let mut hung = TcpStream::connect(&m.addr).unwrap();
    write!(
        hung,
        "GET /sleep?ms=600000 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    m.wait_status("busy worker", |s| workers(s)[0]["busy"] == 1);
    drop(hung);
    // Well after the client left, the worker still counts as busy.
    std::thread::sleep(Duration::from_millis(500));
    let s = m.status();
    assert_eq!(workers(&s)[0]["busy"], 1, "{s}");
    assert_eq!(workers(&s)[0]["pid"], stuck_pid);
    let start = Instant::now();
    let next = m.get("/pid");
    assert_eq!(next.status, 200, "{}", next.body);
    let served_by: u32 = next.body.trim().parse().unwrap();
    assert_ne!(served_by, stuck_pid, "the stuck worker got the request");
    assert!(
        start.elapsed() >= Duration::from_millis(1000),
        "it waited for the replacement"
    );
    assert_gone(stuck_pid);
    assert_eq!(m.status()["totals"]["request_timeouts"], 1);
}

/// An upgraded connection (the fixture's `/upgrade` echoes bytes) stays open while bytes move,
/// and is closed once silent both ways for `--ws-idle-timeout`, freeing its slot.
#[test]
fn silent_websocket_is_closed_after_ws_idle_timeout() {
    let m = InProc::start(&base(&[
        "--ws-idle-timeout",
        "1s",
        "--request-timeout",
        "1s",
    ]));
    let mut s = TcpStream::connect(&m.addr).unwrap();
    s.set_read_timeout(Some(DEADLINE)).unwrap();
    write!(
        s,
        "GET /upgrade HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n"
    )
    .unwrap();
    let mut head = Vec::new();
    let mut b = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        s.read_exact(&mut b).unwrap();
        head.push(b[0]);
    }
    assert!(head.starts_with(b"HTTP/1.1 101"), "{head:?}");
    // Traffic every 400 ms for 2.4 s (longer than both timeouts): the tunnel stays open.
    for i in 0..6 {
        let msg = format!("ping {i}");
        s.write_all(msg.as_bytes()).unwrap();
        let mut got = vec![0u8; msg.len()];
        s.read_exact(&mut got).unwrap();
        assert_eq!(got, msg.as_bytes());
        std::thread::sleep(Duration::from_millis(400));
    }
    assert_eq!(workers(&m.status())[0]["busy"], 1);
    let silent = Instant::now();
    let mut rest = Vec::new();
    assert_eq!(s.read_to_end(&mut rest).unwrap(), 0, "closed, nothing sent");
    assert!(silent.elapsed() >= Duration::from_millis(500));
    m.wait_status("slot freed", |s| workers(s)[0]["busy"] == 0);
}

/// A ready worker that stops answering (SIGSTOP, so its port still accepts) fails two health
/// probes and is replaced; the frozen process is killed.
#[test]
fn worker_that_stops_answering_its_health_probe_is_replaced() {
    let m = InProc::start(&base(&[
        "--health-path",
        "/hello",
        "--health-interval",
        "300ms",
        "--stop-timeout",
        "500ms",
    ]));
    let frozen: u32 = m.get("/pid").body.trim().parse().unwrap();
    assert_eq!(m.get("/freeze").status, 200);
    let s = m.wait_status("replacement ready", |s| {
        s["totals"]["health_replacements"] == 1 && ready(s) == 1 && pids(s)[0] != frozen
    });
    assert!(
        s["last_error"]["message"]
            .as_str()
            .unwrap()
            .contains("failed its health probe twice (/hello)"),
        "{s}"
    );
    assert_gone(frozen);
    assert_eq!(m.get("/hello").body, "hello");
}

/// SIGTERM with a request open on a stuck worker (request timeout off) and its client still
/// waiting: manifold exits after about `--drain-timeout` + `--stop-timeout` (1 s + 1 s), not when
/// the client leaves, and the worker is gone.
#[test]
fn sigterm_is_bounded_whatever_the_clients_do() {
    let mut m = start(&base(&[
        "--request-timeout",
        "0",
        "--drain-timeout",
        "1s",
        "--stop-timeout",
        "1s",
    ]));
    let pid: u32 = m.get("/pid").body.trim().parse().unwrap();
    let mut hung = TcpStream::connect(&m.addr).unwrap();
    write!(
        hung,
        "GET /sleep?ms=600000 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    m.wait_status("busy worker", |s| workers(s)[0]["busy"] == 1);
    let start = Instant::now();
    m.sigterm();
    let status = m.wait();
    let took = start.elapsed();
    assert!(status.success(), "{}", m.log());
    assert!(
        took >= Duration::from_millis(1500) && took < Duration::from_secs(10),
        "{took:?}\n{}",
        m.log()
    );
    assert_gone(pid);
    drop(hung);
}
