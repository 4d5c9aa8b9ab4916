//! Pool time-outs on tokio's paused clock, in-process: time jumps to the next timer whenever the
//! runtime is idle, so waits of seconds take none and are measured exactly. This fits only where
//! no real process has to make progress while a timer runs: a worker busy with a request (the
//! queue timeout) or a program that cannot start at all (back-off). Starting, stopping and idle
//! workers are tested on the real clock in `pool.rs`.

use crate::common;

use std::time::Duration;

use common::*;
use tokio::time::Instant;

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
    let m = run_here(&args).await;
    // Real time until the worker is up; then the clock stops.
    assert_eq!(m.get("/hello").await.status, 200);
    tokio::time::pause();
    let a = m.addr.clone();
    let busy = tokio::spawn(async move { get_async(&a, "/sleep?ms=1000").await });
    while workers(&m.status().await)[0]["busy"] != 1 {
        tokio::task::yield_now().await;
    }
    let start = Instant::now();
    let r = m.get("/pid").await;
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
    assert_eq!(m.status().await["totals"]["queue_timeouts"], 1);
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
    let m = run_here(&args).await;
    let start = Instant::now();
    let r = m.get("/").await;
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
    assert_eq!(m.status().await["totals"]["start_failures"], 3);
    let again = Instant::now();
    assert_eq!(m.get("/").await.status, 503);
    assert_eq!(
        again.elapsed(),
        Duration::ZERO,
        "answered at once while backing off"
    );
    assert_eq!(m.status().await["totals"]["start_failures"], 3);
    // why: advances the paused clock past the back-off (no real time passes).
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(m.get("/").await.status, 503);
    assert_eq!(m.status().await["totals"]["start_failures"], 4);
}
