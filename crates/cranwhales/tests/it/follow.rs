//! Follow mode (`serve --follow`, `ingest --follow`) against a real source on loopback serving
//! the real day files: a day published while the server runs is stored once and listed; a
//! half-written file is not stored until it is whole; a failing source is retried on the
//! documented back-off schedule (read from `/api/days`' counters, not from the clock);
//! `ingest --follow` stops on SIGTERM with exit 0 and no partial download; bad flags exit 2.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::server_support::{cranlogs, get, App, Behaviour, Reference, Source};

/// `/api/days` (200, JSON).
async fn days(app: &App) -> Value {
    let r = get(app.addr, "/api/days", &[]).await;
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()
}

/// Polls `/api/days` until `done` holds (bounded: 30 s, then panics with the last answer).
/// Each answer seen goes to `seen` first. A poll, not a sleep: the follower runs on its own
/// clock and `/api/days` is where it reports.
async fn until(app: &App, mut seen: impl FnMut(&Value), done: impl Fn(&Value) -> bool) -> Value {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let v = days(app).await;
        seen(&v);
        if done(&v) {
            return v;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "/api/days never got there: {v}"
        );
        // Paces the poll (the follower looks every few ms); not a wait for an outcome.
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

fn dates(v: &Value) -> Vec<String> {
    (v["days"].as_array().unwrap().iter())
        .map(|d| d["date"].as_str().unwrap().to_owned())
        .collect()
}

fn has(v: &Value, date: &str) -> bool {
    dates(v).iter().any(|d| d == date)
}

/// A source where the days after 2012-10-09 are not published yet, and a server following it
/// from a store holding 2012-10-09.
async fn following(every: &str, cap: &str) -> (Source, App) {
    let source = Source::start();
    for d in ["2012-10-10", "2012-10-11", "2012-10-12"] {
        source.set(d, Behaviour::Missing);
    }
    let app = App::start(
        &["2012-10-09"],
        &[
            "--source-url",
            &source.url,
            "--follow",
            "--follow-every",
            every,
            "--follow-max-backoff",
            cap,
        ],
    )
    .await;
    (source, app)
}

/// A day the source publishes while the server runs is stored exactly once, with the source's
/// counts, and `/api/days` says when and what the source has; a 404 before was no error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_day_published_while_serving_is_stored_once_and_listed() {
    let (source, app) = following("20ms", "100ms").await;
    let before = until(&app, |_| {}, |v| v["follow"]["checks"].as_u64() >= Some(2)).await;
    assert_eq!(dates(&before), ["2012-10-09"]);
    let f = &before["follow"];
    assert_eq!(f["on"], true);
    assert_eq!(f["source_newest"], "2012-10-09", "{f}");
    assert_eq!(f["errors"], 0, "a 404 is not an error: {f}");
    assert!(f["last_error"].is_null() && f["retry_ms"].is_null(), "{f}");
    assert!(before["ingested_at"].is_string(), "{before}");

    // A package's breakdown over all days, asked twice (the second from memory), counts the
    // one stored day; once the follower stores the next, the kept answer is dropped.
    let breakdown = || async {
        let r = get(app.addr, "/api/packages/ggplot2/breakdown?by=version", &[]).await;
        assert_eq!(r.status, 200, "{}", r.text());
        let v = r.json();
        let n: u64 = (v["rows"].as_array().unwrap().iter())
            .map(|k| k["downloads"].as_u64().unwrap())
            .sum();
        (v["days"].as_u64().unwrap(), n)
    };
    let (days_before, n_before) = breakdown().await;
    assert_eq!(breakdown().await, (days_before, n_before));
    assert_eq!(days_before, 1);

    let asked = source.hits("2012-10-10");
    source.set("2012-10-10", Behaviour::Serve);
    let after = until(&app, |_| {}, |v| has(v, "2012-10-10")).await;
    assert_eq!(dates(&after), ["2012-10-09", "2012-10-10"]);
    let (days_after, n_after) = breakdown().await;
    assert_eq!(
        days_after, 2,
        "the kept breakdown was dropped when the day came"
    );
    assert!(n_after > n_before, "{n_after} after vs {n_before} before");
    let at = after["ingested_at"].as_str().unwrap();
    assert!(at.len() == 20 && at.ends_with('Z'), "{at}");
    // The follower goes on to the next day (404 again); the stored one is never fetched again.
    let looked = source.hits("2012-10-11");
    let later = until(
        &app,
        |_| {},
        |v| v["follow"]["source_newest"] == "2012-10-10" && source.hits("2012-10-11") >= looked + 2,
    )
    .await;
    assert_eq!(source.hits("2012-10-10"), asked + 1, "downloaded once");
    assert_eq!(dates(&later), ["2012-10-09", "2012-10-10"], "stored once");
    let r = Reference::of("2012-10-10");
    let day = get(app.addr, "/api/days/2012-10-10", &[]).await.json();
    assert_eq!(day["totals"]["downloads"], r.downloads);
    app.stop().await;
}

/// A half-written file at the source (a whole response of a truncated gzip, then a body cut
/// before its Content-Length) is not stored, however often it is tried; it is stored once the
/// source has it whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_half_written_day_is_stored_only_once_complete() {
    let (source, app) = following("20ms", "40ms").await;
    for (behaviour, why) in [
        (Behaviour::Truncated, "gzip stream is truncated"),
        (Behaviour::Die, "stopped after"),
    ] {
        source.set("2012-10-10", behaviour);
        let hits = source.hits("2012-10-10");
        let v = until(
            &app,
            |_| {},
            |v| {
                source.hits("2012-10-10") >= hits + 2
                    && v["follow"]["last_error"]
                        .as_str()
                        .is_some_and(|e| e.contains(why))
            },
        )
        .await;
        let e = v["follow"]["last_error"].as_str().unwrap();
        assert!(e.starts_with("not complete yet"), "{e}");
        assert_eq!(dates(&v), ["2012-10-09"], "{behaviour:?}: nothing stored");
        assert!(v["follow"]["errors"].as_u64().unwrap() >= 1, "{v}");
    }
    source.set("2012-10-10", Behaviour::Serve);
    let v = until(&app, |_| {}, |v| has(v, "2012-10-10")).await;
    assert_eq!(dates(&v), ["2012-10-09", "2012-10-10"]);
    let v = until(&app, |_| {}, |v| v["follow"]["errors"] == 0).await;
    assert!(v["follow"]["last_error"].is_null(), "{v}");
    app.stop().await;
}

/// `.part` files in the cache directory.
fn partials(cache: &Path) -> usize {
    std::fs::read_dir(cache).map_or(0, |d| {
        d.flatten()
            .filter(|e| e.file_name().to_string_lossy().ends_with(".part"))
            .count()
    })
}

/// A source answering 500 is retried on the schedule: after the n-th error in a row the
/// back-off is between half and all of min(every × 2^(n−1), cap); each is read from
/// `/api/days` (`errors`, `retry_ms`). Once the source works the day is stored and the count
/// starts again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_source_is_retried_with_backoff() {
    let (source, app) = following("20ms", "80ms").await;
    until(&app, |_| {}, |v| v["follow"]["checks"].as_u64() >= Some(1)).await;
    source.set("2012-10-10", Behaviour::Fail);
    let mut seen: Vec<(u64, u64)> = Vec::new();
    until(
        &app,
        |v| {
            let f = &v["follow"];
            if let (Some(n), Some(ms)) = (f["errors"].as_u64(), f["retry_ms"].as_u64()) {
                if seen.last() != Some(&(n, ms)) {
                    seen.push((n, ms));
                }
            }
        },
        |v| v["follow"]["errors"].as_u64() >= Some(5),
    )
    .await;
    let ns: Vec<u64> = seen.iter().map(|s| s.0).collect();
    assert!(
        ns.windows(2).all(|w| w[0] < w[1]),
        "errors in a row: {ns:?}"
    );
    for &(n, ms) in &seen {
        let ceiling = (20u64 << (n - 1).min(20)).min(80);
        assert!(
            ceiling / 2 <= ms && ms <= ceiling,
            "error {n}: back-off {ms} ms outside [{}, {ceiling}]: {seen:?}",
            ceiling / 2
        );
    }
    assert!(
        seen.iter().any(|&(n, _)| n >= 4),
        "the cap reached: {seen:?}"
    );
    let v = days(&app).await;
    assert!(
        v["follow"]["last_error"]
            .as_str()
            .unwrap()
            .contains("HTTP status 500"),
        "{v}"
    );
    assert!(source.hits("2012-10-10") >= 5);
    source.set("2012-10-10", Behaviour::Serve);
    let v = until(&app, |_| {}, |v| has(v, "2012-10-10")).await;
    assert_eq!(dates(&v), ["2012-10-09", "2012-10-10"]);
    let v = until(&app, |_| {}, |v| v["follow"]["errors"] == 0).await;
    assert!(v["follow"]["retry_ms"].is_null(), "{v}");
    app.stop().await;
}

/// `ingest --follow` prints a line per day stored, and SIGTERM in the middle of a download
/// stops it with exit 0, the day not stored and no partial file left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ingest_follow_stops_on_sigterm_with_exit_0_and_no_part() {
    let source = Source::start();
    source.set("2012-10-11", Behaviour::Hold);
    let dir = tempfile::tempdir().unwrap();
    let (db, cache) = (dir.path().join("cw.db"), dir.path().join("cache"));
    let bin = env!("CARGO_BIN_EXE_cranwhales");
    let first = Command::new(bin)
        .args(["ingest", "--db"])
        .arg(&db)
        .arg(cranlogs().join("2012-10-09.csv.gz"))
        .output()
        .unwrap();
    assert!(first.status.success());
    let mut child = Command::new(bin)
        .args([
            "ingest",
            "--follow",
            "--follow-every",
            "20ms",
            "--source-url",
        ])
        .arg(&source.url)
        .arg("--db")
        .arg(&db)
        .arg("--cache-dir")
        .arg(&cache)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert!(line.starts_with("follow: 2012-10-10: stored, "), "{line:?}");
    source.held("2012-10-11").await;
    // The source has sent the first half; the client creates its partial file as it reads it.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while partials(&cache) == 0 && std::time::Instant::now() < deadline {
        // Paces the look at the directory (no event to wait on in another process).
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(partials(&cache), 1, "the held download is being written");
    let pid = child.id().to_string();
    assert!(Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap()
        .success());
    let done = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap());
    let status = tokio::time::timeout(Duration::from_secs(30), done)
        .await
        .expect("stopped within 30 s")
        .unwrap();
    let stderr = String::from_utf8_lossy(&status.stderr).into_owned();
    assert_eq!(status.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("follow stopped"), "{stderr}");
    assert_eq!(partials(&cache), 0, "{stderr}");
    let listed = Command::new(bin)
        .args(["days", "--json", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    let listed: Value = serde_json::from_slice(&listed.stdout).unwrap();
    let stored: Vec<&str> = (listed.as_array().unwrap().iter())
        .map(|d| d["date"].as_str().unwrap())
        .collect();
    assert_eq!(stored, ["2012-10-09", "2012-10-10"]);
}

/// Bad follow flags are refused before anything runs: exit 2, one line naming the flag.
#[test]
fn bad_follow_flags_exit_2_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("cw.db");
    let db = db.to_str().unwrap();
    for (args, names) in [
        (
            &["serve", "--follow", "--follow-every", "5"][..],
            "--follow-every",
        ),
        (
            &["ingest", "--follow", "--follow-every", "0s", "--db", db],
            "--follow-every",
        ),
        (
            &[
                "ingest",
                "--follow",
                "--follow-max-backoff",
                "8d",
                "--db",
                db,
            ],
            "--follow-max-backoff",
        ),
        (
            &["ingest", "--follow", "2012-10-10", "--db", db],
            "--follow",
        ),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_cranwhales"))
            .args(args)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.contains(names), "{args:?}: {stderr}");
    }
    assert!(!Path::new(db).exists(), "nothing created");
}
