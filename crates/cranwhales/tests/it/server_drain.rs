//! Stopping `cranwhales serve`: on SIGTERM it stops accepting, lets requests in flight and progress
//! streams finish (within `--drain-timeout`), then exits 0; a second signal stops it at once. The
//! signal tests run the real binary; the drain timeout is tested in-process on the paused clock.

use crate::server_support;

use std::time::{Duration, Instant};

use server_support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Waits (bounded) until the server logs that it stopped accepting: an event (its stderr line).
/// (Polling the port instead races with other tests, which may be given the freed port.)
fn until_stopping(server: &Binary) {
    assert!(
        server.wait_log("stopping: no new connections", 20),
        "signal not handled"
    );
}

/// Opens the progress stream of `date` and waits for its head and first event, so it is surely
/// in flight.
async fn open_progress(addr: std::net::SocketAddr, date: &str) -> tokio::net::TcpStream {
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let req = format!("GET /api/days/{date}/progress HTTP/1.1\r\nHost: x\r\n\r\n");
    s.write_all(req.as_bytes()).await.unwrap();
    let mut seen = Vec::new();
    while !String::from_utf8_lossy(&seen).contains("data:") {
        let mut buf = [0u8; 4096];
        let n = s.read(&mut buf).await.unwrap();
        assert!(n > 0, "stream closed early");
        seen.extend_from_slice(&buf[..n]);
    }
    s
}

/// The real binary fetching 2012-10-09 from a source that holds the download, with a browser's
/// progress stream of that fetch open.
async fn fetching_with_progress() -> (Source, Binary, tokio::net::TcpStream) {
    let source = Source::start();
    source.set("2012-10-09", Behaviour::Hold);
    let server = Binary::start(&[], &["--source-url", &source.url, "--no-sample"]);
    assert_eq!(
        get(server.addr, "/api/days/2012-10-09", &[]).await.status,
        202
    );
    source.held("2012-10-09").await;
    let stream = open_progress(server.addr, "2012-10-09").await;
    (source, server, stream)
}

/// The rest of a stream until the server closes it.
async fn rest_of(mut s: tokio::net::TcpStream) -> String {
    let mut rest = Vec::new();
    let _ = s.read_to_end(&mut rest).await;
    String::from_utf8_lossy(&rest).into_owned()
}

/// SIGTERM while a day is being fetched and a browser follows its progress: no new connections,
/// idle ones are closed, the stream runs to its `done` event, the day is stored, exit code 0.
#[tokio::test]
async fn sigterm_lets_a_progress_stream_finish() {
    let (source, mut server, stream) = fetching_with_progress().await;
    // A keep-alive connection that has been served and is idle now.
    let mut idle = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    idle.write_all(b"GET /api/days HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let mut seen = Vec::new();
    // The day list's last field is the follower's `last_error` (null without --follow).
    while !seen.ends_with(b"\"last_error\":null}}") {
        let mut b = [0u8; 1024];
        let n = idle.read(&mut b).await.unwrap();
        assert!(n > 0, "closed before answering");
        seen.extend_from_slice(&b[..n]);
    }
    server.sigterm();
    until_stopping(&server);
    let mut buf = Vec::new();
    let n = tokio::time::timeout(Duration::from_secs(10), idle.read_to_end(&mut buf)).await;
    assert!(
        matches!(n, Ok(Ok(0))),
        "idle connection closed at once: {n:?}"
    );
    assert!(
        server.child.try_wait().unwrap().is_none(),
        "waits for the stream"
    );
    source.release("2012-10-09");
    let rest = rest_of(stream).await;
    assert!(rest.contains("\"phase\":\"done\""), "{rest}");
    assert_eq!(server.wait(), Some(0));
    let days = engine_days(&server);
    assert_eq!(days, ["2012-10-09"], "the fetch in flight was stored");
}

/// The stored dates, read with `cranwhales days --json` from the server's store.
fn engine_days(server: &Binary) -> Vec<String> {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_cranwhales"))
        .args(["days", "--json", "--db"])
        .arg(server.dir.path().join("cw.db"))
        .output()
        .unwrap();
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    v.as_array()
        .unwrap()
        .iter()
        .map(|d| d["date"].as_str().unwrap().to_owned())
        .collect()
}

/// A second SIGTERM during the drain stops at once: the stream ends without a final event, the
/// process exits 0, and the store holds no half day.
#[tokio::test]
async fn second_sigterm_stops_at_once() {
    let (_source, mut server, stream) = fetching_with_progress().await;
    server.sigterm();
    until_stopping(&server);
    let start = Instant::now();
    server.sigterm();
    assert_eq!(server.wait(), Some(0));
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "{:?}",
        start.elapsed()
    );
    let rest = rest_of(stream).await;
    assert!(
        !rest.contains("\"done\"") && !rest.contains("\"error\""),
        "cut: {rest}"
    );
    assert!(engine_days(&server).is_empty());
}

/// A port already in use is a one-line error and exit code 1.
#[test]
fn port_in_use_is_a_one_line_error() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_cranwhales"))
        .args(["serve", "--no-sample", "--addr", &addr, "--db"])
        .arg(dir.path().join("cw.db"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    let last = err.lines().last().unwrap();
    assert!(
        last.starts_with(&format!("cranwhales: error: listening on {addr}: "))
            && last.contains("in use"),
        "{err}"
    );
}

/// On the paused clock: a stream still open when `--drain-timeout` (5 s) runs out is cut, and
/// `run` returns then, not before.
#[tokio::test(start_paused = true)]
async fn drain_timeout_cuts_what_is_left() {
    let source = Source::start();
    source.set("2012-10-09", Behaviour::Hold);
    let mut app = App::start(
        &[],
        &[
            "--source-url",
            &source.url,
            "--no-sample",
            "--drain-timeout",
            "5s",
        ],
    )
    .await;
    assert_eq!(get(app.addr, "/api/days/2012-10-09", &[]).await.status, 202);
    source.held("2012-10-09").await;
    let stream = open_progress(app.addr, "2012-10-09").await;
    app.signal();
    // Until the server has seen the signal (the held ingest is a blocking task, so no timer can
    // fire meanwhile: only yield).
    for _ in 0..10_000 {
        if tokio::net::TcpStream::connect(app.addr).await.is_err() {
            break;
        }
        tokio::task::yield_now().await;
    }
    // The held ingest is a blocking task, so the clock does not move by itself: move it.
    tokio::time::advance(Duration::from_millis(4900)).await;
    assert!(!app.finished(), "drains for the whole grace period");
    tokio::time::advance(Duration::from_millis(200)).await;
    let rest = rest_of(stream).await;
    assert!(
        !rest.contains("\"done\"") && !rest.contains("\"error\""),
        "cut: {rest}"
    );
    app.stop().await;
}
