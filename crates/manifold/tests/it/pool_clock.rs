//! Pool time-outs on tokio's paused clock, in-process: time jumps to the next timer whenever the
//! runtime is idle, so waits of seconds take none and are measured exactly. This fits only where
//! no real process has to make progress while a timer runs: a worker busy with a request (the
//! queue timeout) or a program that cannot start at all (back-off). Starting, stopping and idle
//! workers are tested on the real clock in `pool.rs`.

use crate::common;

use std::time::Duration;

use common::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::time::Instant;

/// Starts `manifold::run` on this test's runtime; returns its address and the stop sender.
async fn start(args: &[String]) -> (String, tokio::sync::oneshot::Sender<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let cfg = config(args);
    tokio::spawn(async move {
        let shutdown = async {
            let _ = rx.await;
        };
        manifold::run(listener, cfg, shutdown, std::future::pending())
            .await
            .unwrap();
    });
    (addr, tx)
}

/// One GET on a fresh connection, read to the end.
async fn get(addr: &str, path: &str) -> Resp {
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let req = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).await.unwrap();
    parse(&raw).unwrap()
}

async fn status(addr: &str) -> serde_json::Value {
    serde_json::from_str(&get(addr, "/__manifold__/status").await.body).unwrap()
}

/// With the only worker busy, a queued request gets 503 "queue timeout" after exactly the
/// default --queue-timeout (30 s of paused time, far less real time), while the busy request
/// still succeeds.
#[tokio::test]
async fn queue_timeout_is_exact() {
    // No --request-timeout: on the paused clock it would fire while the worker really works.
    let args = with_command(
        &["--min", "1", "--max", "1", "--request-timeout", "0"],
        py_worker(&[]),
    );
    let (addr, stop) = start(&args).await;
    // Real time until the worker is up; then the clock stops.
    assert_eq!(get(&addr, "/hello").await.status, 200);
    tokio::time::pause();
    let a = addr.clone();
    let busy = tokio::spawn(async move { get(&a, "/sleep?ms=1000").await });
    while workers(&status(&addr).await)[0]["busy"] != 1 {
        tokio::task::yield_now().await;
    }
    let start = Instant::now();
    let r = get(&addr, "/pid").await;
    assert_eq!(r.status, 503);
    assert_eq!(r.body.trim(), "manifold: queue timeout");
    assert_eq!(r.header("retry-after"), Some("30"));
    // Timers have millisecond resolution.
    let waited = start.elapsed();
    assert!(
        waited >= Duration::from_secs(30) && waited <= Duration::from_millis(30_002),
        "{waited:?}"
    );
    assert!(
        !busy.is_finished(),
        "no real 30 s wait: the busy request still runs"
    );
    assert_eq!(busy.await.unwrap().status, 200);
    assert_eq!(status(&addr).await["totals"]["queue_timeouts"], 1);
    let _ = stop.send(());
}

/// A program that cannot start: the waiting request gets 503 once three starts in a row failed,
/// after the back-off between them (250 ms, then 500 ms); while backing off, requests are
/// answered at once; after the back-off (1 s) a request tries again.
#[tokio::test(start_paused = true)]
async fn back_off_between_failed_starts() {
    let args = args(&[
        "--min",
        "0",
        "--max",
        "1",
        "--",
        "/nonexistent/app",
        "{port}",
    ]);
    let (addr, stop) = start(&args).await;
    let start = Instant::now();
    let r = get(&addr, "/").await;
    assert_eq!(r.status, 503);
    assert!(
        r.body.starts_with(
            "manifold: workers cannot start: cannot start worker 3 (/nonexistent/app)"
        ),
        "{}",
        r.body
    );
    assert_eq!(
        start.elapsed(),
        Duration::from_millis(750),
        "0 + 250 ms + 500 ms"
    );
    assert_eq!(status(&addr).await["totals"]["start_failures"], 3);
    let again = Instant::now();
    assert_eq!(get(&addr, "/").await.status, 503);
    assert_eq!(
        again.elapsed(),
        Duration::ZERO,
        "answered at once while backing off"
    );
    assert_eq!(status(&addr).await["totals"]["start_failures"], 3);
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(get(&addr, "/").await.status, 503);
    assert_eq!(status(&addr).await["totals"]["start_failures"], 4);
    let _ = stop.send(());
}
