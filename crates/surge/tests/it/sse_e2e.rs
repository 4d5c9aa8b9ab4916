//! Non-Shiny streaming through record and replay: a real Python SSE app (tests/fixtures/sse-app),
//! recorded through `surge record` driven by headless Chromium, replayed with 20 users; a stream the
//! server ends early and a 500 are failures with reasons; a 50 MB download streams through the
//! recorder without its memory growing by the download's size. surge runs in-process, except for
//! the download (the recorder's peak RSS is its own process').

use crate::common;

use common::*;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};
use surge::recording::{Kind, Recording, StreamEnd};

fn app_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sse-app")
}

fn stats(base: &str) -> serde_json::Value {
    let (st, body) = http_get(base, "/stats");
    assert_eq!(st, 200);
    serde_json::from_slice(&body).unwrap()
}

fn stat(base: &str, key: &str) -> u64 {
    stats(base)[key].as_u64().unwrap()
}

/// Records one browser session of the app (in normal mode) and returns the recording's path.
/// The browser also writes a HAR of the session to dir/session.har.
fn record_session(dir: &Path, app: &str) -> PathBuf {
    let rec_path = dir.join("recording.log");
    let (mut rec, proxy) = record_in_process(app, &rec_path, &[]);
    let mut driver = Command::new("node");
    driver
        .arg(app_dir().join("drive.mjs"))
        .arg(&proxy)
        .arg("5")
        .arg(dir.join("session.har"));
    let printed = run_driver(driver);
    // The browser really received the events through the proxy (read from the page's DOM).
    let dom: serde_json::Value = serde_json::from_str(printed.trim()).unwrap();
    assert!(dom["events"].as_u64().unwrap() >= 5, "{dom}");
    assert_eq!(dom["api"], "page 2: 10 items");
    // Closing the tab closed the EventSource: the proxy notices on its next write and records it.
    wait_until(Duration::from_secs(10), || {
        std::fs::read_to_string(&rec_path)
            .unwrap()
            .contains("/events")
    });
    assert!(rec.stop(Duration::from_secs(10)).is_some());
    rec_path
}

#[test]
fn sse_session_recorded_in_chromium_replays_with_20_users() {
    let (_app, app) = start_sse_app("normal");
    let tmp = TempDir::new("sse");
    let rec_path = record_session(tmp.path(), &app);
    let recording = Recording::load(&rec_path).unwrap();
    assert_eq!(recording.target_type.as_deref(), Some("surge/http"));
    let urls: Vec<&str> = recording.events.iter().map(|e| &*e.url).collect();
    assert_eq!(
        urls,
        [
            "/",
            "/app.js",
            "/events",
            "/api/items?page=1",
            "/api/items?page=2"
        ],
        "stream played where it began"
    );
    assert_eq!(recording.events[0].kind, Kind::ReqHome);
    let sse = &recording.events[2];
    assert_eq!(sse.stream, Some(StreamEnd::Client));
    assert_eq!(sse.status, 200);
    let open_ms = sse.end_ms.unwrap() - sse.begin_ms;
    assert!(
        open_ms >= 250,
        "stream was open {open_ms} ms (5 events at 50 ms)"
    );
    // It ended when the browser went away: after the last API call began.
    assert!(sse.end_ms.unwrap() > recording.events[4].begin_ms);
    let text = std::fs::read_to_string(&rec_path).unwrap();
    let last = text.lines().last().unwrap();
    assert!(
        last.contains("\"url\":\"/events\"") && last.contains("\"stream\":\"client\""),
        "the stream's line is written when it ends: {last}"
    );

    let before = stats(&app);
    let run = tmp.path().join("run");
    let s = replay_clean(
        &rec_path,
        &app,
        20,
        &run,
        &["--start-interval", "50ms", "--message-timeout", "10s"],
    );
    let started = s["sessions"]["started"].as_u64().unwrap();
    // 20 users; a user whose session ends before the last user has started loops once more.
    assert!(started >= 20, "started {started}");
    // The server saw one SSE connection per session, each held open and then closed by surge.
    let opened = stat(&app, "sse_opened") - before["sse_opened"].as_u64().unwrap();
    assert_eq!(opened, started);
    let api = stat(&app, "api") - before["api"].as_u64().unwrap();
    assert_eq!(api, 2 * started);
    let events = stat(&app, "sse_events") - before["sse_events"].as_u64().unwrap();
    assert!(
        events >= started * 4,
        "{events} events sent for {started} streams"
    );
    let closed =
        |app: &str| stat(app, "sse_client_closed") - before["sse_client_closed"].as_u64().unwrap();
    wait_until(Duration::from_secs(5), || closed(&app) >= started);
    assert_eq!(
        closed(&app),
        started,
        "every stream was closed by the client"
    );
    // Each session waited for its stream's recorded time: it lasts at least that long (CSV rows).
    for f in session_csvs(&run) {
        let rows = read_csv(&f).rows;
        let ts = |r: &Vec<String>| r[4].parse::<i64>().unwrap();
        let start = ts(rows
            .iter()
            .find(|r| r[3] == "REQ_GET_END" && r[5] == sse.line.to_string())
            .unwrap());
        let took = ts(rows.last().unwrap()) - start;
        assert!(
            took >= open_ms - 20,
            "{}: session ended {took} ms after the stream opened, recorded open {open_ms} ms",
            f.display()
        );
    }
    assert_eq!(
        s["events"]["REQ_GET"]["count"].as_u64(),
        Some(4 * started),
        "{s}"
    );
    // The report reads a run whose recording carries "stream".
    let html = tmp.path().join("report.html");
    let report = report_in_process(&[run.to_str().unwrap(), "-o", html.to_str().unwrap()]);
    assert!(report.is_ok(), "{report:?}");

    // The browser's HAR of the same session imports with the stream marked, and replays.
    let har_rec = tmp.path().join("har.log");
    let hr = import_har(&tmp.path().join("session.har"), &har_rec);
    let hs: Vec<_> = hr.events.iter().filter(|e| e.stream.is_some()).collect();
    assert_eq!(hs.len(), 1);
    assert_eq!(&*hs[0].url, "/events");
    assert_eq!(
        hs[0].end_ms,
        hr.events.iter().filter_map(|e| e.end_ms).max()
    );
    let before = stat(&app, "sse_opened");
    let har_run = tmp.path().join("har-run");
    let outcome = replay_in_process(&har_rec, &app, 2, &har_run, &[]);
    assert_eq!(outcome.exit_code(), 0, "{:?}", outcome.summary.checks);
    assert_eq!(stat(&app, "sse_opened") - before, 2);

    // A server that ends the stream early, one that answers 500, one whose API never answers:
    // failed sessions with reasons, within the message timeout.
    // summary.json counts them by kind and groups them by kind + line, with the URL as detail.
    let api_line = recording.events[3].line;
    for (mode, line, kind, url, want) in [
        (
            "early",
            sse.line,
            "stream_ended_early",
            "/events",
            "event stream ended by the server before the recorded",
        ),
        (
            "error",
            sse.line,
            "wrong_status",
            "/events",
            "status 500, expected 200: GET /events",
        ),
        (
            "hang",
            api_line,
            "timeout",
            "/api/items?page=1",
            "no response within 2s (--message-timeout): GET /api/items?page=1",
        ),
    ] {
        let want = format!("REQ_GET line {line}: {want}");
        let (_bad, bad) = start_sse_app(mode);
        let run = tmp.path().join(format!("run-{mode}"));
        let t = Instant::now();
        let flags = ["--start-interval", "50ms", "--message-timeout", "2s"];
        let outcome = replay_in_process(&rec_path, &bad, 3, &run, &flags);
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "{mode}: replay took {:?}",
            t.elapsed()
        );
        assert_eq!(outcome.exit_code(), 1, "{mode}");
        let s = summary(&run);
        assert_eq!(s["sessions"]["failed"].as_u64(), Some(3), "{mode}: {s}");
        let reason = s["failures"][0]["reason"].as_str().unwrap();
        assert!(reason.starts_with(&want), "{mode}: {reason}");
        assert_eq!(
            s["failures_by_kind"],
            serde_json::json!({ kind: 3 }),
            "{mode}"
        );
        let f = &s["failures"];
        assert_eq!(f.as_array().unwrap().len(), 1, "{mode}: one group: {f}");
        assert_eq!(
            (&f[0]["kind"], &f[0]["line"], &f[0]["event"], &f[0]["url"]),
            (&kind.into(), &line.into(), &"REQ_GET".into(), &url.into()),
            "{mode}"
        );
        for f in session_csvs(&run) {
            let last = read_csv(&f).rows.pop().unwrap();
            assert_eq!(last[3], "PLAYBACK_FAIL");
            assert_eq!(last[5], line.to_string());
            // shinycannon's readable reason stays in the comment (commas made safe), after the
            // failure's kind.
            assert!(
                last[6].starts_with(&format!("kind={kind} {}", want.replace(',', ";"))),
                "{mode}: {}",
                last[6]
            );
        }
    }
}

fn vm_hwm_kb(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

#[test]
fn big_download_streams_through_record_in_bounded_memory() {
    let (_app, app) = start_sse_app("normal");
    let tmp = TempDir::new("big");
    let rec_path = tmp.path().join("recording.log");
    let (mut rec, proxy) = start_record(&app, &rec_path);
    let (st, _) = http_get(&proxy, "/big?mb=1");
    assert_eq!(st, 200);
    let before = vm_hwm_kb(rec.0.id());
    let (st, body) = http_get(&proxy, "/big?mb=50");
    assert_eq!(st, 200);
    assert_eq!(body.len(), 50 << 20);
    let grown = vm_hwm_kb(rec.0.id()) - before;
    assert!(
        grown < 16 * 1024,
        "surge record's peak RSS grew by {grown} kB for a 50 MB download"
    );
    assert_eq!(interrupt(&mut rec, Duration::from_secs(10)), Some(0));
    let recording = Recording::load(&rec_path).unwrap();
    let big: Vec<_> = recording
        .events
        .iter()
        .filter(|e| e.url.starts_with("/big"))
        .map(|e| (&*e.url, e.status, e.stream))
        .collect();
    assert_eq!(big, [("/big?mb=1", 200, None), ("/big?mb=50", 200, None)]);
}

#[test]
fn stream_ended_by_the_server_is_read_to_its_end() {
    // Recorded against a server that ends the stream after 2 events: "stream":"server".
    let (_early, early) = start_sse_app("early");
    let tmp = TempDir::new("sse-server-end");
    let rec_path = tmp.path().join("recording.log");
    let (mut rec, proxy) = record_in_process(&early, &rec_path, &[]);
    let (st, body) = http_get(&proxy, "/events");
    assert_eq!(st, 200);
    assert_eq!(
        String::from_utf8_lossy(&body).matches("data: tick").count(),
        2
    );
    assert!(rec.stop(Duration::from_secs(10)).is_some());
    let recording = Recording::load(&rec_path).unwrap();
    assert_eq!(recording.events.len(), 1);
    assert_eq!(recording.events[0].stream, Some(StreamEnd::Server));

    // Replayed against the same kind of server: the stream ends by itself, no failure.
    let run = tmp.path().join("run-ok");
    let outcome = replay_in_process(&rec_path, &early, 2, &run, &[]);
    assert_eq!(outcome.exit_code(), 0, "{:?}", outcome.summary.checks);
    assert_eq!(summary(&run)["sessions"]["completed"].as_u64(), Some(2));

    // Against a server whose stream never ends: failed after the recorded time + --message-timeout.
    let (_normal, normal) = start_sse_app("normal");
    let run = tmp.path().join("run-endless");
    let t = Instant::now();
    let outcome = replay_in_process(&rec_path, &normal, 2, &run, &["--message-timeout", "1s"]);
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    assert_eq!(outcome.exit_code(), 1);
    let s = summary(&run);
    assert_eq!(s["sessions"]["failed"].as_u64(), Some(2));
    let reason = s["failures"][0]["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("REQ_GET line 4: event stream not ended by the server within"),
        "{reason}"
    );
    assert_eq!(s["failures_by_kind"], serde_json::json!({ "timeout": 2 }));
}

#[test]
fn worker_id_is_learnt_while_the_home_page_streams() {
    // The page's rest is sent only after an asset under _w_abc123/ was fetched through the proxy
    // (then /release): the asset's event must already carry ${WORKER}.
    let (_app, app) = start_sse_app("worker");
    let tmp = TempDir::new("sse-worker");
    let rec_path = tmp.path().join("recording.log");
    let (mut rec, proxy) = record_in_process(&app, &rec_path, &[]);
    let hostport = proxy
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_string();
    let mut home = TcpStream::connect(&hostport).unwrap();
    write!(
        home,
        "GET / HTTP/1.1\r\nHost: {hostport}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&seen).contains("_w_abc123/") {
        let n = home.read(&mut buf).unwrap();
        assert!(n > 0, "home page ended before its <base href>");
        seen.extend_from_slice(&buf[..n]);
    }
    let (st, body) = http_get(&proxy, "/_w_abc123/app.js");
    assert_eq!(st, 200);
    assert!(String::from_utf8_lossy(&body).contains("EventSource"));
    assert_eq!(http_get(&app, "/release").0, 200);
    home.read_to_end(&mut seen).unwrap();
    assert!(String::from_utf8_lossy(&seen).contains("</html>"));
    assert!(rec.stop(Duration::from_secs(10)).is_some());
    let text = std::fs::read_to_string(&rec_path).unwrap();
    assert!(text.contains(r#""url":"/_w_${WORKER}/app.js""#), "{text}");
    assert!(!text.contains("abc123"), "{text}");
    // The page's event comes first although the asset ended before it: replay learns ${WORKER} there.
    let recording = Recording::load(&rec_path).unwrap();
    let urls: Vec<&str> = recording.events.iter().map(|e| &*e.url).collect();
    assert_eq!(urls, ["/", "/_w_${WORKER}/app.js"]);
    assert_eq!(recording.events[0].kind, Kind::ReqHome);
    assert!(recording.events[0].end_ms >= recording.events[1].end_ms);
}
