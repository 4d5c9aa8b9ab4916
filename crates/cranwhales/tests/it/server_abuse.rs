//! Bad input and abuse: every case gets a clear answer in the `{"error": …}` envelope, the server
//! keeps serving everyone else, and the store never loses or half-writes a day.
//!
//! The server runs in-process. Tests of time-outs run on tokio's paused clock: time jumps to the
//! next timer whenever the runtime is idle, so a 30 s timeout takes no real time. Auto-advance is
//! held off while a blocking task runs (ingests, store reads), so a test that waits on a download
//! held by the source moves the clock itself with `tokio::time::advance`.

use crate::server_support;

use std::time::Duration;

use server_support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::Instant;

async fn still_serving(app: &App) {
    let r = get(app.addr, "/api/days/2012-10-17?count=3", &[]).await;
    assert_eq!(r.status, 200, "server stopped serving: {}", r.text());
}

/// Reads until the server closes the connection (or resets it).
async fn read_to_close(s: &mut TcpStream) -> Vec<u8> {
    let mut buf = Vec::new();
    let _ = s.read_to_end(&mut buf).await;
    buf
}

/// Malformed dates, counts and ids are 400 with a one-line JSON error naming the bad value.
#[tokio::test]
async fn malformed_input_is_400_json() {
    let app = App::start(&["2012-10-17"], &[]).await;
    let long = "9".repeat(5000);
    let cases = [
        ("/api/days/2015-13-01".to_owned(), "date"),
        ("/api/days/2015-02-29".to_owned(), "date"),
        ("/api/days/yesterday".to_owned(), "date"),
        (format!("/api/days/{long}"), "date"),
        ("/api/days/2012-10-17?count=0".to_owned(), "count"),
        ("/api/days/2012-10-17?count=26".to_owned(), "count"),
        ("/api/days/2012-10-17?count=abc".to_owned(), "count"),
        ("/api/days/2012-10-17?count=".to_owned(), "count"),
        (format!("/api/days/2012-10-17?count={long}"), "count"),
        ("/api/days/2012-10-17?count=%00%ff".to_owned(), "count"),
        ("/api/days/2012-10-17/whales/abc".to_owned(), "ip_id"),
        (
            "/api/days/2012-10-17/whales/99999999999999999999999".to_owned(),
            "ip_id",
        ),
        ("/api/days/%ff%fe".to_owned(), "path"),
    ];
    for (path, what) in cases {
        let r = get(app.addr, &path, &[]).await;
        assert_eq!(r.status, 400, "{path}: {}", r.text());
        let e = r.error();
        assert!(e.contains(what), "{path}: {e}");
        assert!(
            e.len() < 200,
            "error echoes at most a clip of the input: {e}"
        );
    }
    still_serving(&app).await;
}

/// Every parameter an error quotes is quoted escaped and cut, as the CLI and the logs print input:
/// a terminal escape sequence sent in `by=`, `whales=`, a package name… comes back as the text
/// `\x1b[2J`, never as the control character, and 300 characters come back as 40 and the input's
/// size. (Before, only the dates were: the other handlers cut the raw text at 40 characters.)
#[tokio::test]
async fn echoed_input_is_escaped_and_cut() {
    let app = App::start(&["2012-10-17"], &[]).await;
    // ESC ] 0 ; x BEL ESC [ 2 J, then padding past the 40 characters an error quotes.
    let evil = format!("%1b%5d0%3bx%07%1b%5b2J{}", "A".repeat(300));
    let size = 10 + 300;
    let cases = [
        (format!("/api/days/{evil}"), 400),
        (format!("/api/days/2012-10-17?count={evil}"), 400),
        (format!("/api/days/2012-10-17/whales/{evil}"), 400),
        (format!("/api/packages/{evil}"), 404),
        (format!("/api/packages/{evil}/kinds"), 404),
        (format!("/api/packages/{evil}/breakdown?by=os"), 404),
        (format!("/api/packages/{evil}/releases"), 404),
        (format!("/api/packages/{evil},{evil}"), 400),
        (format!("/api/packages/ggplot2?whales={evil}"), 400),
        (format!("/api/packages/ggplot2?bin={evil}"), 400),
        (format!("/api/packages/ggplot2?cumulative={evil}"), 400),
        (format!("/api/packages/ggplot2/breakdown?by={evil}"), 400),
        (
            format!("/api/packages/ggplot2/breakdown?by=os&without={evil}"),
            400,
        ),
        (
            format!("/api/packages/ggplot2/breakdown?by=os&step={evil}"),
            400,
        ),
        (format!("/api/packages/ggplot2/kinds?whales={evil}"), 400),
        (format!("/api/packages?q=gg&limit={evil}"), 400),
        (format!("/api/top?limit={evil}"), 400),
        (format!("/api/top?without={evil}"), 400),
        (format!("/api/trends?from={evil}"), 400),
        (format!("/badge/ggplot2?period={evil}"), 400),
        (format!("/badge/ggplot2?without={evil}"), 400),
        (format!("/badge/{evil}"), 404),
    ];
    for (path, status) in cases {
        let r = get(app.addr, &path, &[]).await;
        assert_eq!(r.status, status, "{path}: {}", r.text());
        let e = r.error();
        assert!(
            !e.chars().any(char::is_control),
            "{path}: a control character in {e:?}"
        );
        assert!(e.contains(r"\x1b]0;x\x07\x1b[2J"), "{path}: {e:?}");
        assert!(e.contains(&format!("…({size} bytes)")), "{path}: {e:?}");
        assert!(!e.contains(&"A".repeat(31)), "{path}: not cut: {e:?}");
    }
    still_serving(&app).await;
}

/// Unknown paths are 404 and other methods 405, all in the envelope; asset lookups never reach
/// the filesystem.
#[tokio::test]
async fn unknown_paths_methods_and_traversal() {
    let app = App::start(&["2012-10-17"], &[]).await;
    for path in [
        "/api",
        "/api/nope",
        "/api/days/2012-10-17/extra",
        "/api/days/2012-10-17/whales/1/x",
    ] {
        let r = get(app.addr, path, &[]).await;
        assert_eq!(r.status, 404, "{path}");
        r.error();
    }
    for path in [
        "/../Cargo.toml",
        "/assets/../../Cargo.toml",
        "/%2e%2e/%2e%2e/Cargo.toml",
        "/assets/..%2f..%2f..%2fCargo.toml",
        "/..%5c..%5cCargo.toml",
        "//etc/passwd",
        "/index.html/../../../../etc/passwd",
        "/nope.js",
    ] {
        let r = get(app.addr, path, &[]).await;
        assert!(r.status == 404 || r.status == 400, "{path}: {}", r.status);
        let e = r.error();
        assert!(
            !e.contains("[package]") && !e.contains("root:"),
            "{path} leaked a file"
        );
    }
    for (method, path) in [
        ("POST", "/api/days"),
        ("DELETE", "/api/days/2012-10-17"),
        ("PUT", "/api/days/2012-10-17/progress"),
        ("POST", "/"),
    ] {
        let r = raw(
            app.addr,
            format!("{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                .as_bytes(),
        )
        .await;
        assert_eq!(r.status, 405, "{method} {path}");
        assert!(r.error().contains(method), "{}", r.text());
        assert!(r.header("allow").unwrap().contains("GET"));
    }
    still_serving(&app).await;
}

/// A request head of `len` bytes exactly (`GET /api/days` plus one padding header).
fn head_of(len: usize) -> Vec<u8> {
    let start = "GET /api/days HTTP/1.1\r\nHost: x\r\nConnection: close\r\nX-Pad: ";
    let end = "\r\n\r\n";
    let pad = len - start.len() - end.len();
    format!("{start}{}{end}", "a".repeat(pad)).into_bytes()
}

/// `--max-header-bytes` holds to the byte: a head of exactly the limit is served, one byte more
/// (or 100 KB, sent at once or in pieces) gets 431 in the envelope; the server carries on.
#[tokio::test]
async fn header_limit_is_exact() {
    let app = App::start(&["2012-10-17"], &["--max-header-bytes", "65536"]).await;
    let ok = raw(app.addr, &head_of(65_536)).await;
    assert_eq!(ok.status, 200, "{}", ok.text());
    for len in [65_537, 100_000, 300_000] {
        let r = raw(app.addr, &head_of(len)).await;
        assert_eq!(r.status, 431, "{len} bytes");
        assert!(r.error().contains("65536"), "{}", r.text());
    }
    // In small pieces, as a slow client would send it.
    let mut s = TcpStream::connect(app.addr).await.unwrap();
    for part in head_of(70_000).chunks(1000) {
        if s.write_all(part).await.is_err() {
            break;
        }
    }
    let r = parse_response(&read_to_close(&mut s).await);
    assert_eq!(r.status, 431);
    // A query string counts too; within the limit a long one gets a clear 400.
    let big = "7".repeat(70_000);
    let r = get(app.addr, &format!("/api/days/2012-10-17?count={big}"), &[]).await;
    assert_eq!(r.status, 431);
    let r = get(
        app.addr,
        &format!("/api/days/2012-10-17?count={}", &big[..4000]),
        &[],
    )
    .await;
    assert_eq!(r.status, 400);
    still_serving(&app).await;
}

/// What the HTTP layer refuses is refused in the envelope too: a malformed request line or
/// header (400), too many header lines (431), a too-long target (414), an announced body past
/// the limit (413). A small body is answered (405 here) and the connection closed.
#[tokio::test]
async fn http_layer_errors_are_json() {
    let app = App::start(&["2012-10-17"], &["--max-header-bytes", "100000"]).await;
    let cases: Vec<(Vec<u8>, u16, &str)> = vec![
        (b"GARBAGE\r\n\r\n".to_vec(), 400, "malformed"),
        (b"GET / HTTP/1.1 extra\r\n\r\n".to_vec(), 400, "malformed"),
        (b"GET / HTTP/3.0\r\n\r\n".to_vec(), 400, "malformed"),
        (
            b"GET / HTTP/1.1\r\nno colon here\r\n\r\n".to_vec(),
            400,
            "malformed",
        ),
        (b"GET http://[bad HTTP/1.1\r\n\r\n".to_vec(), 400, "target"),
        (
            b"GET / HTTP/1.1\r\nContent-Length: x\r\n\r\n".to_vec(),
            400,
            "Content-Length",
        ),
        (
            format!("GET / HTTP/1.1\r\n{}\r\n", "A: b\r\n".repeat(101)).into_bytes(),
            431,
            "100 header lines",
        ),
        (
            format!("GET /{} HTTP/1.1\r\n\r\n", "a".repeat(70_000)).into_bytes(),
            414,
            "target",
        ),
        (
            b"POST /api/days HTTP/1.1\r\nContent-Length: 10000000\r\n\r\n".to_vec(),
            413,
            "body",
        ),
    ];
    for (req, status, what) in cases {
        let r = raw(app.addr, &req).await;
        let shown = String::from_utf8_lossy(&req[..req.len().min(60)]).into_owned();
        assert_eq!(r.status, status, "{shown:?}: {}", r.text());
        assert!(r.error().contains(what), "{shown:?}: {}", r.text());
        assert_eq!(r.header("connection"), Some("close"), "{shown:?}");
    }
    // A small body: answered, then the connection ends (a pipelined request is not read).
    let rs = raw_all(
        app.addr,
        b"POST /api/days HTTP/1.1\r\nContent-Length: 5\r\n\r\nhelloGET /api/days HTTP/1.1\r\n\r\n",
    )
    .await;
    assert_eq!(rs.len(), 1);
    assert_eq!(rs[0].status, 405);
    // Pipelined requests are answered in order, a bad one last and in the envelope.
    let rs = raw_all(
        app.addr,
        b"GET /api/days HTTP/1.1\r\n\r\nGET /api/nope HTTP/1.1\r\n\r\nBAD\r\n\r\n",
    )
    .await;
    let statuses: Vec<u16> = rs.iter().map(|r| r.status).collect();
    assert_eq!(statuses, [200, 404, 400]);
    rs[2].error();
    still_serving(&app).await;
}

/// On the paused clock: a client that sends half a request head gets 408 after exactly the
/// header timeout (10 s); connections that never send anything, or go idle after a response,
/// are closed without a word; meanwhile everyone else is served.
#[tokio::test(start_paused = true)]
async fn slow_and_idle_clients_are_timed_out() {
    let app = App::start(&["2012-10-17"], &[]).await;
    let start = Instant::now();
    let mut slow = TcpStream::connect(app.addr).await.unwrap();
    slow.write_all(b"GET /api/days HTTP/1.1\r\nHost: sl")
        .await
        .unwrap();
    let mut idle = TcpStream::connect(app.addr).await.unwrap();
    let mut kept = TcpStream::connect(app.addr).await.unwrap();
    kept.write_all(b"GET /api/days HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    still_serving(&app).await;
    let r = parse_response(&read_to_close(&mut slow).await);
    let waited = start.elapsed();
    assert_eq!(r.status, 408);
    assert!(r.error().contains("10s"), "{}", r.text());
    assert!(
        waited >= Duration::from_secs(10) && waited < Duration::from_secs(11),
        "closed by the header timeout: {waited:?}"
    );
    assert!(read_to_close(&mut idle).await.is_empty());
    // The kept-alive connection got its answer, then was closed when it stayed idle.
    let rs = read_to_close(&mut kept).await;
    assert_eq!(parse_response(&rs).status, 200);
    assert!(start.elapsed() < Duration::from_secs(11));
    still_serving(&app).await;
}

/// On the paused clock: a client that sends requests but stops reading the responses is cut off
/// after the write timeout (30 s) with far less than it asked for; everyone else is served.
#[tokio::test(start_paused = true)]
async fn client_that_stops_reading_is_disconnected() {
    let app = App::start(&["2013-12-04"], &[]).await;
    let s = get(app.addr, "/api/days/2013-12-04?count=1", &[])
        .await
        .json();
    let ip = s["whales"][0]["ip_id"].as_u64().unwrap();
    let path = format!("/api/days/2013-12-04/whales/{ip}");
    let one = get(app.addr, &path, &[]).await.body.len();
    assert!(one > 1_000_000, "a big response: {one} bytes");
    let mut conn = TcpStream::connect(app.addr).await.unwrap();
    let req = format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").repeat(20);
    conn.write_all(req.as_bytes()).await.unwrap();
    // Read nothing: the socket buffers fill, the server's writes stall, the clock runs on.
    let start = Instant::now();
    // sleep on the paused clock: moves virtual time to just before the write timeout (no real
    // wait), so the timeout is tested without waiting 30 s.
    tokio::time::sleep(Duration::from_secs(29)).await;
    assert_eq!(get(app.addr, "/api/days", &[]).await.status, 200);
    // sleep on the paused clock: and past it.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let total = read_to_close(&mut conn).await.len();
    assert!(
        total < 20 * one / 2,
        "server gave up on the stalled client after {total} bytes"
    );
    assert!(start.elapsed() < Duration::from_secs(32));
}

/// The progress stream of `date` ended with an error event: 502, naming the day.
fn ends_in_502(events: &[serde_json::Value], date: &str) {
    let last = events.last().unwrap();
    assert_eq!(last["phase"], "error", "{events:?}");
    assert_eq!(last["status"], 502);
    assert!(last["error"].as_str().unwrap().contains(date), "{last}");
}

/// A source that stops sending half way: after the stall timeout (30 s, moved on the paused
/// clock) waiting clients get an error event (502), the store is unchanged, and a later request
/// fetches the day again.
#[tokio::test(start_paused = true)]
async fn source_that_hangs_is_given_up_on() {
    let source = Source::start();
    source.set("2012-10-09", Behaviour::Hold);
    let app = App::start(&["2012-10-17"], &["--source-url", &source.url]).await;
    assert_eq!(get(app.addr, "/api/days/2012-10-09", &[]).await.status, 202);
    let progress = tokio::spawn(follow(app.addr, "2012-10-09"));
    source.held("2012-10-09").await;
    still_serving(&app).await;
    // The ingest blocks on the socket (a blocking task: no auto-advance), so move time by hand.
    tokio::time::advance(Duration::from_secs(29)).await;
    assert_eq!(get(app.addr, "/api/days/2012-10-09", &[]).await.status, 202);
    tokio::time::advance(Duration::from_secs(2)).await;
    let events = progress.await.unwrap();
    ends_in_502(&events, "2012-10-09");
    // The error names the URL as requested ({source}/{YYYY}/{date}.csv.gz).
    let error = events.last().unwrap()["error"].as_str().unwrap();
    assert!(
        error.contains(&format!("{}/2012/2012-10-09.csv.gz", source.url)),
        "{error}"
    );
    let days = get(app.addr, "/api/days", &[]).await.json()["days"].clone();
    assert_eq!(days.as_array().unwrap().len(), 1, "store unchanged: {days}");
    // The abandoned ingest still blocks on the held socket, so auto-advance stays off: back to
    // the real clock for the retry (its progress stream paces itself with timers).
    tokio::time::resume();
    source.set("2012-10-09", Behaviour::Serve);
    let s = fetch_day(app.addr, "2012-10-09", 6).await;
    assert_eq!(
        s["totals"]["downloads"],
        Reference::of("2012-10-09").downloads
    );
    assert_eq!(source.hits("2012-10-09"), 2);
}

/// A source that closes the connection mid-download: an error event naming the day, nothing
/// stored, the next request downloads again and succeeds.
#[tokio::test]
async fn source_that_dies_mid_download() {
    let source = Source::start();
    source.set("2012-10-11", Behaviour::Die);
    let app = App::start(&["2012-10-17"], &["--source-url", &source.url]).await;
    assert_eq!(get(app.addr, "/api/days/2012-10-11", &[]).await.status, 202);
    let events = follow(app.addr, "2012-10-11").await;
    ends_in_502(&events, "2012-10-11");
    let stored = || async {
        get(app.addr, "/api/days", &[]).await.json()["days"]
            .as_array()
            .unwrap()
            .len()
    };
    assert_eq!(stored().await, 1);
    still_serving(&app).await;
    source.set("2012-10-11", Behaviour::Serve);
    let s = fetch_day(app.addr, "2012-10-11", 6).await;
    assert_eq!(
        s["totals"]["downloads"],
        Reference::of("2012-10-11").downloads
    );
    assert_eq!(stored().await, 2);
}

/// New-day fetches are rate limited per client address with a clear 429 and Retry-After (on the
/// paused clock, the bucket refills after exactly that long); joining a running fetch is free.
#[tokio::test(start_paused = true)]
async fn new_day_fetches_are_rate_limited() {
    let source = Source::start();
    source.set("2012-10-12", Behaviour::Hold);
    let app = App::start(
        &["2012-10-17"],
        &[
            "--source-url",
            &source.url,
            "--fetch-burst",
            "1",
            "--fetch-per-minute",
            "1",
        ],
    )
    .await;
    assert_eq!(get(app.addr, "/api/days/2012-10-12", &[]).await.status, 202);
    let limited = get(app.addr, "/api/days/2012-10-13", &[]).await;
    assert_eq!(limited.status, 429, "{}", limited.text());
    assert_eq!(limited.header("retry-after"), Some("60"));
    assert!(limited.error().contains("too many"));
    assert_eq!(source.hits("2012-10-13"), 0);
    assert_eq!(
        get(app.addr, "/api/days/2012-10-12", &[]).await.status,
        202,
        "joining is free"
    );
    tokio::time::advance(Duration::from_secs(59)).await;
    assert_eq!(get(app.addr, "/api/days/2012-10-13", &[]).await.status, 429);
    tokio::time::advance(Duration::from_secs(1)).await;
    assert_eq!(get(app.addr, "/api/days/2012-10-13", &[]).await.status, 202);
    source.release("2012-10-12");
    still_serving(&app).await;
}

/// With one ingest slot, a second new day waits in the queue (its first event is `queued`)
/// and is fetched once the first is done.
#[tokio::test]
async fn ingests_are_bounded_and_queued() {
    let source = Source::start();
    source.set("2012-10-14", Behaviour::Hold);
    let app = App::start(
        &[],
        &[
            "--source-url",
            &source.url,
            "--no-sample",
            "--max-ingests",
            "1",
        ],
    )
    .await;
    let first = get(app.addr, "/api/days/2012-10-14", &[]).await;
    assert_eq!(first.status, 202);
    assert_eq!(first.json()["current"]["phase"], "starting");
    let second = get(app.addr, "/api/days/2012-10-15", &[]).await;
    assert_eq!(second.status, 202);
    assert_eq!(second.json()["current"]["phase"], "queued");
    source.held("2012-10-14").await;
    assert_eq!(source.hits("2012-10-15"), 0, "waits for the slot");
    let follower = tokio::spawn(follow(app.addr, "2012-10-15"));
    source.release("2012-10-14");
    let events = follower.await.unwrap();
    assert_eq!(events.first().unwrap()["phase"], "queued");
    assert_eq!(events.last().unwrap()["phase"], "done");
    assert!(source.hits("2012-10-14") == 1 && source.hits("2012-10-15") == 1);
    assert_eq!(get(app.addr, "/api/days/2012-10-14", &[]).await.status, 200);
}
