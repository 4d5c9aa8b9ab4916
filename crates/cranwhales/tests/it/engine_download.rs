//! Downloading days from a real HTTP server on 127.0.0.1 (a tiny one run by the test): cached
//! once, 404 as NotFound, failures and half downloads reported and never cached.

use crate::engine_support;
use crate::ingest_support;

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use cranwhales::ingest::IngestError;
use cranwhales::progress::{Event, Progress, Silent};
use cranwhales::source::{SourceConfig, SourceError};
use cranwhales::store::Store;
use engine_support::*;
use ingest_support::{ingest_date, ingest_path};

#[derive(Clone)]
enum Reply {
    Full(Vec<u8>),
    /// Announces the whole length, sends half, closes.
    Half(Vec<u8>),
    Status(u16),
}

/// A one-thread HTTP/1.1 server answering GETs from a path → reply table; stops on drop.
struct Upstream {
    url: String,
    routes: Arc<Mutex<HashMap<String, Reply>>>,
    hits: Arc<Mutex<HashMap<String, u32>>>,
    stop: Arc<AtomicBool>,
    addr: std::net::SocketAddr,
    thread: Option<JoinHandle<()>>,
}

impl Upstream {
    fn start() -> Upstream {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let routes = Arc::new(Mutex::new(HashMap::<String, Reply>::new()));
        let hits = Arc::new(Mutex::new(HashMap::<String, u32>::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (r, h, s) = (routes.clone(), hits.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            for conn in listener.incoming() {
                if s.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(mut c) = conn else { continue };
                let mut req = Vec::new();
                let mut buf = [0u8; 1024];
                while !req.windows(4).any(|w| w == b"\r\n\r\n") {
                    match c.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => req.extend_from_slice(&buf[..n]),
                    }
                }
                let path = String::from_utf8_lossy(&req)
                    .split(' ')
                    .nth(1)
                    .unwrap_or("")
                    .to_string();
                *h.lock().unwrap().entry(path.clone()).or_default() += 1;
                let reply = r
                    .lock()
                    .unwrap()
                    .get(&path)
                    .cloned()
                    .unwrap_or(Reply::Status(404));
                let _ = match reply {
                    Reply::Full(body) => c
                        .write_all(format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", body.len()).as_bytes())
                        .and_then(|()| c.write_all(&body)),
                    Reply::Half(body) => c
                        .write_all(format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", body.len()).as_bytes())
                        .and_then(|()| c.write_all(&body[..body.len() / 2])),
                    Reply::Status(code) => c.write_all(
                        format!("HTTP/1.1 {code} Oops\r\nContent-Length: 0\r\nConnection: close\r\n\r\n").as_bytes(),
                    ),
                };
                let _ = c.shutdown(std::net::Shutdown::Both);
            }
        });
        Upstream {
            url: format!("http://{addr}"),
            routes,
            hits,
            stop,
            addr,
            thread: Some(thread),
        }
    }

    fn route(&self, date: &str, reply: Reply) {
        self.routes
            .lock()
            .unwrap()
            .insert(format!("/{}/{date}.csv.gz", &date[..4]), reply);
    }

    fn hits(&self, date: &str) -> u32 {
        self.hits
            .lock()
            .unwrap()
            .get(&format!("/{}/{date}.csv.gz", &date[..4]))
            .copied()
            .unwrap_or(0)
    }
}

impl Drop for Upstream {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = match std::fs::read_dir(dir) {
        Ok(rd) => rd
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect(),
        Err(_) => Vec::new(),
    };
    v.sort();
    v
}

/// Records download progress events.
#[derive(Default)]
struct Seen(Mutex<Vec<Event>>);

impl Progress for Seen {
    fn event(&self, e: Event) {
        self.0.lock().unwrap().push(e);
    }
}

#[test]
fn a_day_is_downloaded_once_into_the_cache() {
    let up = Upstream::start();
    let gz = std::fs::read(day_file("2012-10-16")).unwrap();
    up.route("2012-10-16", Reply::Full(gz.clone()));
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    let cfg = SourceConfig {
        base_url: up.url.clone(),
        cache_dir: dir.path().join("cache"),
        ..SourceConfig::default()
    };

    let seen = Seen::default();
    let report = ingest_date(&db, "2012-10-16", &cfg, &seen).unwrap();
    assert_eq!(up.hits("2012-10-16"), 1);
    assert_eq!(entries(&cfg.cache_dir), ["2012-10-16.csv.gz"]);
    assert_eq!(
        std::fs::read(cfg.cache_dir.join("2012-10-16.csv.gz")).unwrap(),
        gz
    );
    let events = seen.0.lock().unwrap();
    assert!(events.contains(&Event::Downloading {
        done: gz.len() as u64,
        total: Some(gz.len() as u64)
    }));
    assert!(matches!(events.last(), Some(Event::Done { .. })));

    // Same numbers as ingesting the file directly.
    let direct = dir.path().join("direct.db");
    ingest_path(&direct, &day_file("2012-10-16"), &Silent).unwrap();
    let a = Store::open(&db)
        .unwrap()
        .day_summary("2012-10-16", 100)
        .unwrap();
    assert_eq!(
        a,
        Store::open(&direct)
            .unwrap()
            .day_summary("2012-10-16", 100)
            .unwrap()
    );
    assert_eq!(report.downloads, a.unwrap().totals.downloads);

    // Again: served from the cache, no request.
    ingest_date(&db, "2012-10-16", &cfg, &Silent).unwrap();
    assert_eq!(up.hits("2012-10-16"), 1);
}

#[test]
fn a_date_with_no_log_upstream_is_not_found() {
    let up = Upstream::start();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    ingest_path(&db, &day_file("2012-10-17"), &Silent).unwrap();
    let cfg = SourceConfig {
        base_url: up.url.clone(),
        cache_dir: dir.path().join("cache"),
        ..SourceConfig::default()
    };
    match ingest_date(&db, "2012-10-15", &cfg, &Silent) {
        Err(e @ IngestError::Source(SourceError::NotFound { .. })) => {
            assert_eq!(
                e.to_string(),
                format!(
                    "{}/2012/2012-10-15.csv.gz: no log for this date upstream (HTTP 404)",
                    up.url
                )
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(entries(&cfg.cache_dir).is_empty());
    assert_eq!(Store::open(&db).unwrap().days().unwrap().len(), 1);

    // The CLI says it in one line and exits non-zero.
    let out = Command::new(env!("CARGO_BIN_EXE_cranwhales"))
        .args(["ingest", "--source-url", &up.url, "--db"])
        .arg(&db)
        .arg("--cache-dir")
        .arg(&cfg.cache_dir)
        .arg("2012-10-15")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.lines()
            .any(|l| l.starts_with("cranwhales: error: ") && l.ends_with("(HTTP 404)")),
        "{err}"
    );
}

#[test]
fn a_download_that_stops_half_way_is_never_used() {
    let up = Upstream::start();
    let gz = std::fs::read(day_file("2012-10-16")).unwrap();
    up.route("2012-10-16", Reply::Half(gz.clone()));
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    ingest_path(&db, &day_file("2012-10-17"), &Silent).unwrap();
    let before = Store::open(&db).unwrap().days().unwrap();
    let cfg = SourceConfig {
        base_url: up.url.clone(),
        cache_dir: dir.path().join("cache"),
        ..SourceConfig::default()
    };
    match ingest_date(&db, "2012-10-16", &cfg, &Silent) {
        Err(IngestError::Source(SourceError::Incomplete { url, reason })) => {
            assert!(url.ends_with("/2012/2012-10-16.csv.gz"));
            assert!(
                reason.contains("stopped after") || reason.contains("closed"),
                "{reason}"
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(
        entries(&cfg.cache_dir).is_empty(),
        "{:?}",
        entries(&cfg.cache_dir)
    );
    assert_eq!(Store::open(&db).unwrap().days().unwrap(), before);

    // Once upstream is whole again, a retry downloads again and succeeds.
    up.route("2012-10-16", Reply::Full(gz));
    ingest_date(&db, "2012-10-16", &cfg, &Silent).unwrap();
    assert_eq!(up.hits("2012-10-16"), 2);
    assert_eq!(Store::open(&db).unwrap().days().unwrap().len(), 2);
}

#[test]
fn failing_downloads_are_reported() {
    let up = Upstream::start();
    up.route("2012-10-16", Reply::Status(500));
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    let cfg = SourceConfig {
        base_url: up.url.clone(),
        cache_dir: dir.path().join("cache"),
        ..SourceConfig::default()
    };
    let e = ingest_date(&db, "2012-10-16", &cfg, &Silent).unwrap_err();
    assert!(
        matches!(&e, IngestError::Source(SourceError::Download { reason, .. }) if reason == "HTTP status 500"),
        "{e:?}"
    );

    // Nobody listening.
    let closed = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let cfg = SourceConfig {
        base_url: format!("http://{closed}"),
        cache_dir: dir.path().join("cache"),
        ..SourceConfig::default()
    };
    let e = ingest_date(&db, "2012-10-16", &cfg, &Silent).unwrap_err();
    assert!(
        matches!(e, IngestError::Source(SourceError::Download { .. })),
        "{e:?}"
    );
    assert!(e.to_string().starts_with(&format!(
        "http://{closed}/2012/2012-10-16.csv.gz: download failed"
    )));

    assert!(matches!(
        ingest_date(&db, "2012-02-30", &cfg, &Silent),
        Err(IngestError::BadDate(_))
    ));
    assert!(entries(&cfg.cache_dir).is_empty());
    assert!(Store::open(&db).unwrap().days().unwrap().is_empty());
}

#[test]
fn a_broken_file_from_upstream_is_dropped_from_the_cache() {
    // Complete download (length matches) of a truncated gzip: rejected at ingest and removed, so a
    // retry fetches it again instead of failing forever.
    let up = Upstream::start();
    let gz = std::fs::read(day_file("2012-10-16")).unwrap();
    up.route("2012-10-16", Reply::Full(gz[..gz.len() - 100].to_vec()));
    let dir = tempfile::tempdir().unwrap();
    let cfg = SourceConfig {
        base_url: up.url.clone(),
        cache_dir: dir.path().join("cache"),
        ..SourceConfig::default()
    };
    let e = ingest_date(&dir.path().join("t.db"), "2012-10-16", &cfg, &Silent).unwrap_err();
    assert!(matches!(e, IngestError::Gzip { .. }), "{e:?}");
    assert!(entries(&cfg.cache_dir).is_empty());
}

#[test]
fn a_url_source_is_downloaded_into_its_days_cache_entry() {
    // `cranwhales ingest URL`: the same read → store path as a date, the day named by the URL's
    // file name; the same numbers as ingesting the file directly.
    let up = Upstream::start();
    let gz = std::fs::read(day_file("2012-10-16")).unwrap();
    up.route("2012-10-16", Reply::Full(gz.clone()));
    let dir = tempfile::tempdir().unwrap();
    let (db, cache) = (dir.path().join("t.db"), dir.path().join("cache"));
    let url = format!("{}/2012/2012-10-16.csv.gz", up.url);
    let ingest = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_cranwhales"))
            .arg("ingest")
            .arg("--db")
            .arg(&db)
            .arg("--cache-dir")
            .arg(&cache)
            .args(args)
            .output()
            .unwrap()
    };
    let out = ingest(&[&url]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(up.hits("2012-10-16"), 1);
    assert_eq!(entries(&cache), ["2012-10-16.csv.gz"]);
    assert_eq!(std::fs::read(cache.join("2012-10-16.csv.gz")).unwrap(), gz);
    let direct = dir.path().join("direct.db");
    ingest_path(&direct, &day_file("2012-10-16"), &Silent).unwrap();
    let summary = |db: &Path| {
        Store::open(db)
            .unwrap()
            .day_summary("2012-10-16", 100)
            .unwrap()
    };
    assert_eq!(summary(&db), summary(&direct));

    // A URL whose file name names no day: one line naming it, exit 1, nothing fetched.
    let bad = format!("{}/latest.csv.gz", up.url);
    let out = ingest(&[&bad]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.lines().any(|l| l
            == format!("cranwhales: error: {bad}: the file name must start with the day it holds (YYYY-MM-DD…)")),
        "{err}"
    );
    assert_eq!(up.hits("2012-10-16"), 1);
}
