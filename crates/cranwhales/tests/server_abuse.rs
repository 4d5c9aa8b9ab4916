//! Bad input and abuse: every case gets a clear answer, the server keeps serving everyone else,
//! and the store never loses or half-writes a day.

mod server_support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use server_support::*;

fn error_of(r: &Resp) -> String {
    r.json()["error"]
        .as_str()
        .unwrap_or_else(|| panic!("no error field: {}", r.text()))
        .to_owned()
}

fn still_serving(server: &Server) {
    let r = get(server.addr, "/api/days/2012-10-17?count=3", &[]);
    assert_eq!(r.status, 200, "server stopped serving: {}", r.text());
}

/// Malformed dates, counts and ids are 400 with a one-line JSON error naming the bad value.
#[test]
fn malformed_input_is_400_json() {
    let server = Server::start(&["2012-10-17"], &[]);
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
        let r = get(server.addr, &path, &[]);
        assert_eq!(r.status, 400, "{path}: {}", r.text());
        assert_eq!(r.header("content-type"), Some("application/json"));
        let e = error_of(&r);
        assert!(e.contains(what), "{path}: {e}");
        assert!(
            e.len() < 200,
            "error echoes at most a clip of the input: {e}"
        );
    }
    still_serving(&server);
}

/// Unknown paths are 404 (JSON under /api); asset lookups never reach the filesystem.
#[test]
fn unknown_paths_and_traversal_are_404() {
    let server = Server::start(&["2012-10-17"], &[]);
    for path in [
        "/api",
        "/api/nope",
        "/api/days/2012-10-17/extra",
        "/api/days/2012-10-17/whales/1/x",
    ] {
        let r = get(server.addr, path, &[]);
        assert_eq!(r.status, 404, "{path}");
        error_of(&r);
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
        let r = get(server.addr, path, &[]);
        assert!(r.status == 404 || r.status == 400, "{path}: {}", r.status);
        let t = r.text();
        assert!(
            !t.contains("[package]") && !t.contains("root:"),
            "{path} leaked a file"
        );
    }
    let post = raw(
        server.addr,
        b"POST /api/days HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(post.status, 405);
    still_serving(&server);
}

/// Request heads beyond the limit get 431; a huge query string too; the server carries on.
#[test]
fn oversized_headers_and_queries_are_refused() {
    let server = Server::start(&["2012-10-17"], &["--max-header-bytes", "16384"]);
    let big = "a".repeat(100_000);
    let r = raw(
        server.addr,
        format!("GET / HTTP/1.1\r\nHost: x\r\nX-Big: {big}\r\nConnection: close\r\n\r\n")
            .as_bytes(),
    );
    assert_eq!(r.status, 431);
    let r = raw(
        server.addr,
        format!(
            "GET /api/days/2012-10-17?count={big} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        )
        .as_bytes(),
    );
    assert!(
        r.status == 431 || r.status == 414 || r.status == 400,
        "{}",
        r.status
    );
    // Within the limit, a long query is read and answered with a clear 400.
    let mid = "7".repeat(4000);
    let r = get(
        server.addr,
        &format!("/api/days/2012-10-17?count={mid}"),
        &[],
    );
    assert_eq!(r.status, 400);
    still_serving(&server);
}

/// A client that sends half a request head is dropped after the header timeout; meanwhile (and
/// with many idle connections open) everyone else is served.
#[test]
fn slow_and_idle_clients_are_timed_out() {
    let server = Server::start(&["2012-10-17"], &["--header-timeout", "1"]);
    let mut slow = TcpStream::connect(server.addr).unwrap();
    slow.write_all(b"GET /api/days HTTP/1.1\r\nHost: sl")
        .unwrap();
    let idle: Vec<TcpStream> = (0..50)
        .map(|_| TcpStream::connect(server.addr).unwrap())
        .collect();
    still_serving(&server);
    let start = Instant::now();
    slow.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut buf = Vec::new();
    let n = slow.read_to_end(&mut buf);
    assert!(n.is_ok(), "server closed the slow connection: {n:?}");
    assert!(
        start.elapsed() < Duration::from_secs(8),
        "closed by the timeout, not the test"
    );
    if !buf.is_empty() {
        assert!(
            String::from_utf8_lossy(&buf).starts_with("HTTP/1.1 408"),
            "{}",
            String::from_utf8_lossy(&buf)
        );
    }
    // Connections that never sent anything are closed too.
    for mut c in idle.into_iter().take(5) {
        c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut b = [0u8; 16];
        assert!(
            matches!(c.read(&mut b), Ok(0)),
            "idle connection closed by the server"
        );
    }
    still_serving(&server);
}

/// A source that stops sending half way through: waiting clients get an error event (502) after
/// the stall timeout, the store is unchanged, and a later request fetches the day again.
#[test]
fn source_that_hangs_is_given_up_on() {
    let source = Source::start();
    source.set("2012-10-09", Behaviour::Hang);
    let server = Server::start(
        &["2012-10-17"],
        &["--source-url", &source.url, "--stall-timeout", "2"],
    );
    assert_eq!(get(server.addr, "/api/days/2012-10-09", &[]).status, 202);
    still_serving(&server);
    let events = follow(server.addr, "2012-10-09");
    let last = events.last().unwrap();
    assert_eq!(last["phase"], "error", "{events:?}");
    assert_eq!(last["status"], 502);
    assert!(
        last["error"].as_str().unwrap().contains("2012-10-09"),
        "{last}"
    );
    let days = get(server.addr, "/api/days", &[]).json();
    assert_eq!(days.as_array().unwrap().len(), 1, "store unchanged: {days}");
    source.set("2012-10-09", Behaviour::Serve);
    let s = fetch_day(server.addr, "2012-10-09", 6);
    assert_eq!(
        s["totals"]["downloads"],
        Reference::of("2012-10-09").downloads
    );
    assert_eq!(source.hits("2012-10-09"), 2);
}

/// A source that closes the connection mid-download: an error event naming the bytes received,
/// nothing stored, the next request downloads again and succeeds.
#[test]
fn source_that_dies_mid_download() {
    let source = Source::start();
    source.set("2012-10-11", Behaviour::Die);
    let server = Server::start(&["2012-10-17"], &["--source-url", &source.url]);
    assert_eq!(get(server.addr, "/api/days/2012-10-11", &[]).status, 202);
    let events = follow(server.addr, "2012-10-11");
    let last = events.last().unwrap();
    assert_eq!(last["phase"], "error", "{events:?}");
    assert_eq!(last["status"], 502);
    assert!(
        last["error"].as_str().unwrap().contains("2012-10-11"),
        "{last}"
    );
    assert_eq!(
        get(server.addr, "/api/days", &[])
            .json()
            .as_array()
            .unwrap()
            .len(),
        1
    );
    still_serving(&server);
    source.set("2012-10-11", Behaviour::Serve);
    let s = fetch_day(server.addr, "2012-10-11", 6);
    assert_eq!(
        s["totals"]["downloads"],
        Reference::of("2012-10-11").downloads
    );
    assert_eq!(
        get(server.addr, "/api/days", &[])
            .json()
            .as_array()
            .unwrap()
            .len(),
        2
    );
}

/// New-day fetches are rate limited per client address with a clear 429 and Retry-After;
/// following a fetch already running is not limited.
#[test]
fn new_day_fetches_are_rate_limited() {
    let source = Source::start();
    source.set("2012-10-12", Behaviour::Throttle(2_000));
    let server = Server::start(
        &["2012-10-17"],
        &[
            "--source-url",
            &source.url,
            "--fetch-burst",
            "1",
            "--fetch-per-minute",
            "1",
        ],
    );
    assert_eq!(get(server.addr, "/api/days/2012-10-12", &[]).status, 202);
    let limited = get(server.addr, "/api/days/2012-10-13", &[]);
    assert_eq!(limited.status, 429, "{}", limited.text());
    assert!(
        limited
            .header("retry-after")
            .unwrap()
            .parse::<u64>()
            .unwrap()
            >= 1
    );
    assert!(error_of(&limited).contains("too many"));
    assert_eq!(source.hits("2012-10-13"), 0);
    assert_eq!(
        get(server.addr, "/api/days/2012-10-12", &[]).status,
        202,
        "joining is free"
    );
    still_serving(&server);
}

/// With one ingest slot, a second new day waits in the queue (its first event is `queued`)
/// and is fetched after the first.
#[test]
fn ingests_are_bounded_and_queued() {
    let source = Source::start();
    source.set("2012-10-14", Behaviour::Throttle(1_000));
    let server = Server::start(
        &[],
        &[
            "--source-url",
            &source.url,
            "--no-sample",
            "--max-ingests",
            "1",
        ],
    );
    let first = get(server.addr, "/api/days/2012-10-14", &[]);
    assert_eq!(first.status, 202);
    assert_eq!(first.json()["current"]["phase"], "starting");
    let second = get(server.addr, "/api/days/2012-10-15", &[]);
    assert_eq!(second.status, 202);
    assert_eq!(second.json()["current"]["phase"], "queued");
    let events = follow(server.addr, "2012-10-15");
    assert_eq!(events.last().unwrap()["phase"], "done");
    assert!(source.hits("2012-10-14") == 1 && source.hits("2012-10-15") == 1);
    assert_eq!(
        get(server.addr, "/api/days/2012-10-14", &[]).status,
        200,
        "first finished before the second"
    );
}

/// A client that sends requests but stops reading the responses is disconnected after the write
/// timeout (it gets far less than it asked for), and everyone else is served meanwhile.
#[test]
fn client_that_stops_reading_is_disconnected() {
    let server = Server::start(&["2013-12-04"], &["--write-timeout", "1"]);
    let s = get(server.addr, "/api/days/2013-12-04?count=1", &[]).json();
    let ip = s["whales"][0]["ip_id"].as_u64().unwrap();
    let path = format!("/api/days/2013-12-04/whales/{ip}");
    let one = get(server.addr, &path, &[]).body.len();
    assert!(one > 1_000_000, "a big response: {one} bytes");
    let mut conn = TcpStream::connect(server.addr).unwrap();
    let req = format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").repeat(20);
    conn.write_all(req.as_bytes()).unwrap();
    // Read nothing for a while: the socket buffers fill and the server's writes stall.
    std::thread::sleep(Duration::from_secs(4));
    let r = get(server.addr, "/api/days", &[]);
    assert_eq!(r.status, 200);
    conn.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut total = 0usize;
    let mut buf = vec![0u8; 1 << 16];
    loop {
        match conn.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => total += n,
        }
    }
    assert!(
        total < 20 * one / 2,
        "server gave up on the stalled client after {total} bytes"
    );
}
