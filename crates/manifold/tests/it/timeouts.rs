//! Timeouts that heal: a worker that does not answer, or falls silent in the middle of its
//! response body, gets the client a 504 (or a cut response) and is replaced; a body that keeps
//! flowing is never cut; a client that leaves does not free the slot of a worker still busy; a
//! silent WebSocket is closed; a worker that stops answering its health probe is replaced;
//! SIGTERM is bounded whatever the clients do. Real Python workers (tests/fixtures/worker.py);
//! the default timeout is measured on tokio's paused clock while the worker is stuck (no real
//! process must progress).

use crate::common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// manifold with one Python worker (SIGKILLed 1 s after SIGTERM) on this test's runtime, and
/// that worker's pid.
async fn one_worker() -> (RunHere, u32) {
    let m = run_here(&with_command(
        &["--min", "1", "--max", "1", "--stop-timeout", "1s"],
        py_worker(&[]),
    ))
    .await;
    let pid = m.get("/pid").await.body.trim().parse().unwrap();
    (m, pid)
}

/// Flags for one Python worker (`--min 1 --max 1`) and `extra`.
fn one_worker_args(extra: &[&str]) -> Vec<String> {
    base(&[&["--min", "1", "--max", "1"], extra].concat())
}

/// After a timeout on the paused clock (resumed): it came after `waited`, at least the given
/// least and at most 60 s (timers have millisecond resolution); the next request is served by a
/// new worker, the stuck process is gone, and status counts one timeout with `message` in
/// `last_error`.
async fn replaced_after_timeout(
    m: RunHere,
    stuck_pid: u32,
    (waited, least): (Duration, Duration),
    message: &str,
) {
    assert!(
        waited >= least && waited <= Duration::from_millis(60_002),
        "{waited:?}"
    );
    let next = m.get("/pid").await;
    assert_eq!(next.status, 200);
    assert_ne!(next.body.trim().parse::<u32>().unwrap(), stuck_pid);
    let s = m.status().await;
    assert_eq!(s["totals"]["request_timeouts"], 1);
    assert!(
        s["last_error"]["message"]
            .as_str()
            .unwrap()
            .contains(message),
        "{s}"
    );
    assert!(s["last_error"]["time"].as_str().unwrap().ends_with('Z'));
    tokio::task::spawn_blocking(move || assert_gone(stuck_pid))
        .await
        .unwrap();
    m.stop().await;
}

/// A request the worker never answers gets `504` after exactly the default `--request-timeout`
/// (60 s of paused time); the stuck worker is killed and replaced, the next request is served by
/// the new one, and status counts the timeout with its message in `last_error`.
#[tokio::test]
async fn hung_request_gets_504_after_the_default_timeout_and_the_worker_is_replaced() {
    let (m, stuck_pid) = one_worker().await;
    tokio::time::pause();
    let start = tokio::time::Instant::now();
    let r = m.get("/sleep?ms=600000").await;
    let waited = start.elapsed();
    tokio::time::resume();
    assert_eq!(r.status, 504, "{}", r.body);
    assert_eq!(
        r.body.trim(),
        "manifold: worker 1 did not answer within 1m (--request-timeout); it is being replaced"
    );
    let message = "worker 1 did not answer within 1m (--request-timeout); replaced";
    replaced_after_timeout(m, stuck_pid, (waited, Duration::from_secs(60)), message).await;
}

/// A worker that sends its head and half its body, then nothing: once it has been silent for the
/// default `--request-timeout` (60 s of paused time, measured from the moment the client had
/// the first half) the response is cut (the client gets 5 of the 10 bytes announced, never a
/// short body passed off as whole) and the worker is replaced as for a stalled head.
#[tokio::test]
async fn body_that_stalls_is_cut_after_the_default_timeout_and_the_worker_is_replaced() {
    let (m, stuck_pid) = one_worker().await;
    let mut s = tokio::net::TcpStream::connect(&m.addr).await.unwrap();
    s.write_all(b"GET /stall HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    // Real time until the head and the first half arrived; then the clock stops.
    let mut raw = Vec::new();
    let mut buf = [0u8; 4096];
    while !raw.ends_with(b"first") {
        let n = s.read(&mut buf).await.unwrap();
        assert!(n > 0, "closed early: {:?}", String::from_utf8_lossy(&raw));
        raw.extend_from_slice(&buf[..n]);
    }
    tokio::time::pause();
    let start = tokio::time::Instant::now();
    // Cut: the connection ends (closed or reset) with the body incomplete.
    let _ = s.read_to_end(&mut raw).await;
    let waited = start.elapsed();
    tokio::time::resume();
    let text = String::from_utf8_lossy(&raw);
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert!(
        text.to_ascii_lowercase().contains("content-length: 10\r\n"),
        "{text}"
    );
    assert!(
        text.ends_with("\r\n\r\nfirst"),
        "cut after the first half: {text}"
    );
    // The silence timer started as the first half went out, a moment before the clock stopped.
    let message = "worker 1 fell silent mid-body for 1m (--request-timeout); replaced";
    replaced_after_timeout(m, stuck_pid, (waited, Duration::from_secs(59)), message).await;
}

/// Worker silence, not response time: a body that keeps coming (5 parts 400 ms apart, 1.6 s in
/// all) passes a 1 s `--request-timeout` whole, and the worker is kept.
#[test]
fn body_that_keeps_flowing_is_not_cut() {
    let m = InProc::start(&one_worker_args(&["--request-timeout", "1s"]));
    let pid = m.get("/pid").body;
    let start = Instant::now();
    let r = m.get("/drip?n=5&ms=400");
    assert!(start.elapsed() >= Duration::from_millis(1600));
    assert_eq!(
        (r.status, r.body.as_str()),
        (200, "part\n".repeat(5).as_str())
    );
    assert_eq!(m.get("/pid").body, pid, "the same worker");
    assert_eq!(m.status()["totals"]["request_timeouts"], 0);
}

/// With one worker and a 2 s `--request-timeout`: a client sends GET `path`, reads until `until`
/// has come (nothing: until the worker is busy) and leaves. Well after, the stuck worker's slot
/// is still busy; the next request waits for its replacement instead of going to it.
fn client_leaves_and_the_next_request_waits_for_the_replacement(path: &str, until: &[u8]) {
    let m = InProc::start(&one_worker_args(&[
        "--request-timeout",
        "2s",
        "--stop-timeout",
        "1s",
    ]));
    let stuck_pid: u32 = m.get("/pid").body.trim().parse().unwrap();
    let mut hung = TcpStream::connect(&m.addr).unwrap();
    write!(
        hung,
        "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    m.wait_status("busy worker", |s| workers(s)[0]["busy"] == 1);
    let mut got = Vec::new();
    let mut b = [0u8; 1024];
    while !got.ends_with(until) {
        let n = hung.read(&mut b).unwrap();
        assert!(n > 0, "closed early: {:?}", String::from_utf8_lossy(&got));
        got.extend_from_slice(&b[..n]);
    }
    drop(hung);
    // Well after the client left, the worker still counts as busy.
    // why: proving that something does not change needs time to pass.
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

/// The reported bug: two hung requests whose clients gave up left status at `busy 0` and the next
/// request went to a stuck worker. Now the slot stays busy after the client left, the next
/// request waits in the queue instead, and once `--request-timeout` replaced the stuck worker it
/// is served by the new one.
#[test]
fn a_client_that_leaves_does_not_free_a_stuck_workers_slot() {
    client_leaves_and_the_next_request_waits_for_the_replacement("/sleep?ms=600000", b"");
}

/// The same when the worker fell silent mid-body and the client left after the first half: the
/// rest is awaited (and the silent worker replaced) without the client.
#[test]
fn a_client_that_leaves_mid_body_does_not_free_a_stalled_workers_slot() {
    client_leaves_and_the_next_request_waits_for_the_replacement("/stall", b"first");
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
    let mut s = upgrade(&m.addr);
    // Traffic every 400 ms for 2.4 s (longer than both timeouts): the tunnel stays open.
    for i in 0..6 {
        let msg = format!("ping {i}");
        s.write_all(msg.as_bytes()).unwrap();
        let mut got = vec![0u8; msg.len()];
        s.read_exact(&mut got).unwrap();
        assert_eq!(got, msg.as_bytes());
        // why: the traffic's pace: bytes 400 ms apart keep the tunnel under its 1 s idle limit.
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
