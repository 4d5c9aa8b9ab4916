//! Hostile and unlucky input to the `cranwhales` binary (issue 23), each with its exact outcome:
//! exit status, the first words of the error, and what reached the network or the terminal.

use crate::engine_support;
#[path = "../../../../tests/mounts.rs"]
mod mounts;

use std::net::TcpListener;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use engine_support::*;
use mounts::{ReadOnlyMount, Tmpfs};

fn cranwhales(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cranwhales"))
        .args(args)
        .output()
        .unwrap()
}

/// A loopback listener that counts the connections it is offered (and answers none).
fn counting_listener() -> (String, Arc<AtomicUsize>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    let n = Arc::new(AtomicUsize::new(0));
    let seen = n.clone();
    std::thread::spawn(move || {
        for c in l.incoming().flatten() {
            seen.fetch_add(1, Ordering::SeqCst);
            drop(c);
        }
    });
    (url, n)
}

/// A header holding terminal escape sequences (retitle, clear screen) is echoed escaped, and a
/// long one cut with its size: no raw ESC or BEL byte reaches stderr.
#[test]
fn a_hostile_header_is_echoed_escaped_and_cut() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    let file = dir.path().join("2012-10-16.csv.gz");
    let mut header = b"\x1b]0;pwned\x07\x1b[2J\x1b[Hdate,time".to_vec();
    header.extend(std::iter::repeat_n(b'x', 500));
    let mut text = header.clone();
    text.extend(b"\n\"2012-10-16\",\"00:00:01\",1,NA,NA,NA,\"a\",\"1\",\"US\",1\n");
    gzip_to(&file, &text);
    let out = cranwhales(&[
        "ingest",
        "--db",
        db.to_str().unwrap(),
        file.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        !err.bytes().any(|b| b == 0x1b || b == 0x07),
        "raw control bytes: {err:?}"
    );
    assert!(
        err.contains(r"wrong header: expected date,time,size,r_version,r_arch,r_os,package,version,country,ip_id, found \x1b]0;pwned\x07\x1b[2J\x1b[Hdate,time"),
        "{err}"
    );
    assert!(err.contains(&format!("…({} bytes)", header.len())), "{err}");
}

/// A single date outside the logs is refused before any download, with the same rule (and
/// words) as a range's ends; the source is never contacted.
#[test]
fn a_date_outside_the_logs_never_reaches_the_network() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    let cache = dir.path().join("cache");
    let (url, contacted) = counting_listener();
    let base = ["ingest", "--db", db.to_str().unwrap(), "--source-url", &url];
    let base = [&base[..], &["--cache-dir", cache.to_str().unwrap()]].concat();
    let out = cranwhales(&[&base[..], &["2099-01-01"]].concat());
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains(
            "2099-01-01 is outside the CRAN logs (2012-10-01 to yesterday); not downloaded"
        ),
        "{err}"
    );
    let out = cranwhales(&[&base[..], &["2012-09-30..2012-10-02"]].concat());
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("from 2012-09-30 is outside the CRAN logs (2012-10-01 to yesterday)"),
        "{err}"
    );
    assert_eq!(
        contacted.load(Ordering::SeqCst),
        0,
        "the source was contacted"
    );
}

/// Two ingests creating the same new store at once both succeed (one failed "database is
/// locked" in 2 of 5 tries), twenty times over, and the store holds both days.
#[test]
fn two_creators_of_a_new_store_both_succeed() {
    let sample = |d: &str| {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join(format!("../../data/sample/{d}.csv.gz"))
    };
    let files = [sample("2012-10-17"), sample("2013-12-04")];
    for round in 0..20 {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("t.db");
        let db = db.to_str().unwrap();
        // Both processes started at once, before either is waited for (without the fix about
        // one round in three failed, so 20 rounds all pass by luck with odds under 1 in 1,000).
        let children: Vec<_> = (files.iter())
            .map(|f| {
                Command::new(env!("CARGO_BIN_EXE_cranwhales"))
                    .args(["ingest", "--db", db, f.to_str().unwrap()])
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for c in children {
            let out = c.wait_with_output().unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(0), "round {round}: {err}");
        }
        let days = cranwhales(&["days", "--db", db, "--json"]);
        let days = String::from_utf8(days.stdout).unwrap();
        assert!(
            days.contains("2012-10-17") && days.contains("2013-12-04"),
            "{days}"
        );
    }
}

/// A loopback source that answers every request with a 200 head announcing 1,000,000 bytes,
/// sends `sent` of them, then holds the connection open without a byte more (a stalled mirror).
fn stalling_source(sent: usize) -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for mut c in l.incoming().flatten() {
            use std::io::{Read, Write};
            let mut buf = [0u8; 4096];
            let _ = c.read(&mut buf);
            let head = "HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n";
            let _ = c.write_all(head.as_bytes());
            let _ = c.write_all(&vec![0x1f; sent]);
            held.push(c);
        }
    });
    url
}

/// A loopback source answering 404 to everything (a day the mirror lacks).
fn not_found_source() -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    std::thread::spawn(move || {
        for mut c in l.incoming().flatten() {
            use std::io::{Read, Write};
            let mut buf = [0u8; 4096];
            let _ = c.read(&mut buf);
            let _ = c.write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n");
        }
    });
    url
}

/// The partial download files (`.DATE.csv.gz.PID.N.part`) in a cache dir.
fn partial_files(cache: &std::path::Path) -> Vec<String> {
    std::fs::read_dir(cache)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.ends_with(".part"))
                .collect()
        })
        .unwrap_or_default()
}

/// `ingest DATE` against `source` with its own store and cache, as a child process.
fn ingest_child(dir: &std::path::Path, source: &str, extra: &[&str]) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_cranwhales"))
        .args(["ingest", "2015-01-15", "--source-url", source])
        .arg("--db")
        .arg(dir.join("s.db"))
        .arg("--cache-dir")
        .arg(dir.join("cache"))
        .args(extra)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits (bounded) until `f` holds.
fn wait_for(what: &str, mut f: impl FnMut() -> bool) {
    let end = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !f() {
        assert!(
            std::time::Instant::now() < end,
            "timed out waiting for {what}"
        );
        // Stays a timed poll: the condition is a file another process writes (no event to wait
        // on short of inotify); bounded at 20 s.
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// The child's exit, bounded: a hang fails the test (and the child is killed) instead of
/// hanging the suite.
fn exit_of(child: std::process::Child, secs: u64) -> (std::process::ExitStatus, String) {
    // The event is the exit itself, waited for on a thread; the test gives up on it after `secs`.
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(std::time::Duration::from_secs(secs)) {
        Ok(out) => {
            let out = out.unwrap();
            (
                out.status,
                String::from_utf8_lossy(&out.stderr).into_owned(),
            )
        }
        Err(_) => {
            // SAFETY: killing our own child, not yet reaped (its waiter thread is still waiting).
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
            panic!("the child did not exit within {secs} s");
        }
    }
}

/// A source that sends a head and a few bytes, then nothing: the CLI gives up after
/// `--stall-timeout` (as serve does) with one line naming the URL, and leaves no partial file.
#[test]
fn a_stalled_download_is_given_up_after_the_stall_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let source = stalling_source(10);
    let started = std::time::Instant::now();
    let child = ingest_child(dir.path(), &source, &["--stall-timeout", "1s"]);
    let (status, err) = exit_of(child, 30);
    assert_eq!(status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!(
            "{source}/2015/2015-01-15.csv.gz: download failed: stalled: no data for 1s after 10 bytes"
        )),
        "{err}"
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
    assert_eq!(
        partial_files(&dir.path().join("cache")),
        Vec::<String>::new()
    );
}

/// A source that accepts and never answers: given up after `--stall-timeout` too.
#[test]
fn a_source_that_never_answers_is_given_up() {
    let dir = tempfile::tempdir().unwrap();
    let (source, offered) = {
        // Accepts, reads the request, answers nothing, keeps the connection.
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", l.local_addr().unwrap());
        let n = Arc::new(AtomicUsize::new(0));
        let seen = n.clone();
        std::thread::spawn(move || {
            let mut held = Vec::new();
            for c in l.incoming().flatten() {
                seen.fetch_add(1, Ordering::SeqCst);
                held.push(c);
            }
        });
        (url, n)
    };
    let child = ingest_child(dir.path(), &source, &["--stall-timeout", "1s"]);
    let (status, err) = exit_of(child, 30);
    assert_eq!(status.code(), Some(1), "{err}");
    assert!(err.contains("2015-01-15.csv.gz: download failed:"), "{err}");
    assert!(offered.load(Ordering::SeqCst) >= 1);
}

/// SIGTERM (and Ctrl-C's SIGINT) during a download: the process dies by the signal as before,
/// and its partial file is gone from the cache.
#[test]
fn a_signal_during_a_download_leaves_no_partial_file() {
    for sig in [libc::SIGTERM, libc::SIGINT] {
        let dir = tempfile::tempdir().unwrap();
        let cache = dir.path().join("cache");
        let source = stalling_source(300_000);
        let child = ingest_child(dir.path(), &source, &["--stall-timeout", "60s"]);
        wait_for("a partial file", || !partial_files(&cache).is_empty());
        // SAFETY: signalling our own child.
        unsafe { libc::kill(child.id() as i32, sig) };
        let (status, _) = exit_of(child, 20);
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(sig), "{status:?}");
        assert_eq!(partial_files(&cache), Vec::<String>::new(), "signal {sig}");
    }
}

/// kill -9 cannot be caught: its partial file stays, and the next download of that day (here
/// answered 404) removes it; a live process's partial file is left alone.
#[test]
fn a_partial_file_left_by_kill_9_is_removed_at_the_next_download() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let mut child = ingest_child(dir.path(), &stalling_source(300_000), &[]);
    wait_for("a partial file", || !partial_files(&cache).is_empty());
    child.kill().unwrap();
    child.wait().unwrap();
    let left = partial_files(&cache);
    assert_eq!(left.len(), 1, "{left:?}");
    // A partial file of a live process (this test's) must survive the cleanup.
    let live = format!(".2015-01-15.csv.gz.{}.0.part", std::process::id());
    std::fs::write(cache.join(&live), b"x").unwrap();
    let (status, err) = exit_of(ingest_child(dir.path(), &not_found_source(), &[]), 30);
    assert_eq!(status.code(), Some(1), "{err}");
    assert!(
        err.contains("no log for this date upstream (HTTP 404)"),
        "{err}"
    );
    assert_eq!(partial_files(&cache), vec![live]);
}

/// A store on a read-only mount: `days` and `show` read it (the same answers as from the
/// writable original), `serve` serves it and says once that it is read-only, and `ingest` fails
/// with one line saying why, before touching anything.
#[test]
fn a_read_only_store_is_read_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let rw = dir.path().join("rw");
    std::fs::create_dir_all(&rw).unwrap();
    let db = rw.join("s.db");
    let day = day_file("2012-10-16");
    let out = Command::new(env!("CARGO_BIN_EXE_cranwhales"))
        .args(["ingest"])
        .arg(&day)
        .arg("--db")
        .arg(&db)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let Some(_mount) = ReadOnlyMount::of(&rw, &dir.path().join("ro")) else {
        eprintln!("skipped: cannot make a read-only bind mount here (needs root)");
        return;
    };
    let ro_db = dir.path().join("ro/s.db");
    let (rw_s, ro_s) = (db.to_str().unwrap(), ro_db.to_str().unwrap());
    let days_rw = cranwhales(&["days", "--json", "--db", rw_s]);
    let days_ro = cranwhales(&["days", "--json", "--db", ro_s]);
    assert!(days_ro.status.success(), "{days_ro:?}");
    assert_eq!(days_ro.stdout, days_rw.stdout);
    let date: serde_json::Value = serde_json::from_slice(&days_rw.stdout).unwrap();
    let date = date[0]["date"].as_str().unwrap().to_owned();
    let show_rw = cranwhales(&["show", &date, "--json", "--db", rw_s]);
    let show_ro = cranwhales(&["show", &date, "--json", "--db", ro_s]);
    assert!(show_ro.status.success(), "{show_ro:?}");
    assert_eq!(show_ro.stdout, show_rw.stdout);

    let ing = Command::new(env!("CARGO_BIN_EXE_cranwhales"))
        .args(["ingest", "--force", "--db", ro_s])
        .arg(&day)
        .output()
        .unwrap();
    assert_eq!(ing.status.code(), Some(1));
    let err = String::from_utf8_lossy(&ing.stderr);
    assert_eq!(
        err.trim_end(),
        format!(
            "cranwhales: error: store {ro_s}: read-only (read-only file system); cannot store days"
        )
    );

    let mut serve = Command::new(env!("CARGO_BIN_EXE_cranwhales"))
        .args(["serve", "--addr", "127.0.0.1:0", "--db", ro_s])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    use std::io::{BufRead, Read, Write};
    std::io::BufReader::new(serve.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .trim()
        .rsplit("http://")
        .next()
        .unwrap()
        .trim_end_matches('/')
        .to_owned();
    let mut c = std::net::TcpStream::connect(&addr).unwrap();
    c.write_all(b"GET /api/days HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut resp = String::new();
    c.read_to_string(&mut resp).unwrap();
    let body: serde_json::Value =
        serde_json::from_str(resp.split("\r\n\r\n").nth(1).unwrap()).unwrap();
    let body = body["days"].clone();
    let want: serde_json::Value = serde_json::from_slice(&days_rw.stdout).unwrap();
    assert_eq!(body, want, "{resp}");
    // SAFETY: signalling our own child.
    unsafe { libc::kill(serve.id() as i32, libc::SIGTERM) };
    let status = serve.wait().unwrap();
    assert!(status.success(), "{status:?}");
    let mut err = String::new();
    serve
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(
        err.contains(&format!(
            "{ro_s}: read-only (read-only file system): serving its stored days"
        )),
        "{err}"
    );
}

/// A full disk: ingesting more days than fit stores what fits, whole, and nothing half. Each day
/// either is reported stored and reads back exactly as from a store with room, or is reported
/// not stored and is absent; the file passes SQLite's integrity check; exit status 1.
#[test]
fn a_full_disk_stores_whole_days_and_nothing_half() {
    let dir = tempfile::tempdir().unwrap();
    let Some(disk) = Tmpfs::mount(&dir.path().join("full"), "3m") else {
        eprintln!("skipped: cannot mount a tmpfs here (needs root)");
        return;
    };
    let days = [
        "2012-10-17",
        "2013-12-02",
        "2013-12-03",
        "2013-12-04",
        "2013-12-05",
        "2013-12-06",
    ];
    let files: Vec<std::path::PathBuf> = days.iter().map(|d| day_file(d)).collect();
    let full_db = disk.0.join("s.db");
    let out = Command::new(env!("CARGO_BIN_EXE_cranwhales"))
        .arg("ingest")
        .args(&files)
        .arg("--db")
        .arg(&full_db)
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    // One line per failed day, then a summary line ("cranwhales: error: N of M sources failed; …").
    let failed: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("cranwhales: error: ") && !l.contains("sources failed"))
        .collect();
    assert!(!failed.is_empty() && failed.len() < days.len(), "{stderr}");
    for l in &failed {
        assert!(
            l.contains("full"),
            "a failed day says the disk is full: {l}"
        );
    }

    let store = cranwhales::store::Store::open(&full_db).unwrap();
    assert!(store.integrity_ok().unwrap());
    let stored: Vec<String> = store.days().unwrap().into_iter().map(|d| d.date).collect();
    drop(store);
    let clean_db = dir.path().join("clean.db");
    let full_s = full_db.to_str().unwrap();
    let clean_s = clean_db.to_str().unwrap();
    for (d, f) in days.iter().zip(&files) {
        let reported_failed = failed
            .iter()
            .any(|l| l.contains(&*f.to_string_lossy()) || l.contains(d));
        assert_eq!(
            stored.iter().any(|s| s == d),
            !reported_failed,
            "{d}: stored iff not reported failed\n{stderr}"
        );
        if reported_failed {
            continue;
        }
        let ok = Command::new(env!("CARGO_BIN_EXE_cranwhales"))
            .arg("ingest")
            .arg(f)
            .args(["--db", clean_s])
            .output()
            .unwrap();
        assert!(ok.status.success());
        let a = cranwhales(&["show", d, "--json", "--count", "100", "--db", full_s]);
        let b = cranwhales(&["show", d, "--json", "--count", "100", "--db", clean_s]);
        assert!(a.status.success() && !a.stdout.is_empty());
        assert_eq!(
            a.stdout, b.stdout,
            "{d} reads back as from a store with room"
        );
    }
}

/// kill -9 at seeded pseudo-random moments of a batch ingest (five real days, `--jobs 2`; delays
/// from a fixed-seed generator, so a failure replays): after every kill the store passes SQLite's
/// integrity check and each day in it reads back exactly as from a clean store; rerunning the
/// ingest after the last kill completes the set, equal to the clean store day by day.
#[test]
fn kill_9_at_random_moments_of_a_backfill_leaves_only_whole_days() {
    let days = [
        "2013-12-01",
        "2013-12-02",
        "2013-12-03",
        "2013-12-04",
        "2013-12-05",
    ];
    let files: Vec<std::path::PathBuf> = days.iter().map(|d| day_file(d)).collect();
    let dir = tempfile::tempdir().unwrap();
    let clean = dir.path().join("clean.db");
    let ingest = |db: &std::path::Path| {
        Command::new(env!("CARGO_BIN_EXE_cranwhales"))
            .arg("ingest")
            .args(&files)
            .args(["--jobs", "2", "--db"])
            .arg(db)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap()
    };
    let started = std::time::Instant::now();
    assert!(ingest(&clean).wait().unwrap().success());
    let full_ms = started.elapsed().as_millis() as u64;
    let show = |db: &std::path::Path, d: &str| {
        let o = cranwhales(&[
            "show",
            d,
            "--json",
            "--count",
            "100",
            "--db",
            db.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{o:?}");
        o.stdout
    };
    let want: Vec<Vec<u8>> = days.iter().map(|d| show(&clean, d)).collect();
    let db = dir.path().join("killed.db");
    let mut seed: u64 = 0x5eed_cafe;
    for round in 0..6 {
        // xorshift64: a delay spread over the whole ingest's duration.
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let delay = seed % full_ms.max(50);
        let mut child = ingest(&db);
        // Stays a sleep: the point is a kill at a random moment of the ingest, not at an event.
        std::thread::sleep(std::time::Duration::from_millis(delay));
        let _ = child.kill();
        child.wait().unwrap();
        let store = cranwhales::store::Store::open(&db).unwrap();
        assert!(store.integrity_ok().unwrap(), "round {round}, {delay} ms");
        let stored: Vec<String> = store.days().unwrap().into_iter().map(|d| d.date).collect();
        drop(store);
        for (i, d) in days.iter().enumerate() {
            if stored.iter().any(|s| s == d) {
                assert_eq!(
                    show(&db, d),
                    want[i],
                    "round {round} ({delay} ms): {d} is whole"
                );
            }
        }
    }
    assert!(ingest(&db).wait().unwrap().success());
    for (i, d) in days.iter().enumerate() {
        assert_eq!(show(&db, d), want[i], "{d} after the rerun");
    }
}

/// `cranwhales serve ARGS --addr 127.0.0.1:0` as a child process, once it printed its URL (ready):
/// the child (stderr piped) and its address.
fn serve_child(args: &[&str]) -> (std::process::Child, String) {
    use std::io::BufRead;
    let mut serve = Command::new(env!("CARGO_BIN_EXE_cranwhales"))
        .arg("serve")
        .args(args)
        .args(["--addr", "127.0.0.1:0"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(serve.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line.trim().rsplit("http://").next().unwrap();
    let addr = addr.trim_end_matches('/').to_owned();
    (serve, addr)
}

/// One `GET path` to `addr`: the status and the body.
fn http_get(addr: &str, path: &str) -> (u16, String) {
    use std::io::{Read, Write};
    let mut c = std::net::TcpStream::connect(addr).unwrap();
    let req = format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    c.write_all(req.as_bytes()).unwrap();
    let mut resp = String::new();
    c.read_to_string(&mut resp).unwrap();
    let status = resp
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = resp
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_owned();
    (status, body)
}

/// SIGTERM to a served child, then its exit status and stderr (bounded).
fn stop_serve(serve: std::process::Child) -> (std::process::ExitStatus, String) {
    // SAFETY: signalling our own child.
    unsafe { libc::kill(serve.id() as i32, libc::SIGTERM) };
    exit_of(serve, 30)
}

/// A read-only store: `serve` answers a day it does not hold at once with 404 and why (it used to
/// answer 202, download and parse the day on every request, then fail with 502), and the source
/// is never contacted.
#[test]
fn a_read_only_store_answers_an_unstored_day_at_once_without_fetching() {
    let dir = tempfile::tempdir().unwrap();
    let rw = dir.path().join("rw");
    std::fs::create_dir_all(&rw).unwrap();
    let db = rw.join("s.db");
    let out = cranwhales(&[
        "ingest",
        day_file("2012-10-16").to_str().unwrap(),
        "--db",
        db.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{out:?}");
    let Some(_mount) = ReadOnlyMount::of(&rw, &dir.path().join("ro")) else {
        eprintln!("skipped: cannot make a read-only bind mount here (needs root)");
        return;
    };
    let ro_db = dir.path().join("ro/s.db");
    let cache = dir.path().join("cache");
    let (url, contacted) = counting_listener();
    let (serve, addr) = serve_child(&[
        "--db",
        ro_db.to_str().unwrap(),
        "--source-url",
        &url,
        "--cache-dir",
        cache.to_str().unwrap(),
    ]);
    for _ in 0..2 {
        let (status, body) = http_get(&addr, "/api/days/2015-01-15");
        assert_eq!(status, 404, "{body}");
        assert!(
            body.contains("2015-01-15 is not stored, and this server's store is read-only (read-only file system): days cannot be fetched"),
            "{body}"
        );
    }
    // A stored day is still served.
    assert_eq!(http_get(&addr, "/api/days/2012-10-16").0, 200);
    let (status, err) = stop_serve(serve);
    assert!(status.success(), "{status:?} {err}");
    assert_eq!(
        contacted.load(Ordering::SeqCst),
        0,
        "the source was contacted"
    );
    assert_eq!(partial_files(&cache), Vec::<String>::new());
}

/// Text from a downloaded log holding terminal escape sequences (package `\e]0;PWNED\a\e[2Jevil`,
/// a version and a country with escapes) is printed escaped by `show` (the whale table and
/// sentence) and `package`: no raw ESC or BEL byte reaches the terminal.
#[test]
fn hostile_text_in_a_log_is_printed_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    let file = dir.path().join("2012-10-16.csv.gz");
    let evil = "\x1b]0;PWNED\x07\x1b[2Jevil";
    let mut text = String::from(
        "\"date\",\"time\",\"size\",\"r_version\",\"r_arch\",\"r_os\",\"package\",\"version\",\"country\",\"ip_id\"\n",
    );
    for (i, ip) in [1, 1, 1, 2].iter().enumerate() {
        text += &format!(
            "\"2012-10-16\",\"00:00:0{i}\",123456,\"2.15.1\",\"x86_64\",\"linux-gnu\",\"{evil}\",\"1.0\x1b[31m\",\"\x1b[2JX\",{ip}\n"
        );
    }
    gzip_to(&file, text.as_bytes());
    let db_s = db.to_str().unwrap();
    let out = cranwhales(&["ingest", file.to_str().unwrap(), "--db", db_s]);
    assert!(out.status.success(), "{out:?}");
    let shown = r"\x1b]0;PWNED\x07\x1b[2Jevil";
    for args in [
        vec!["show", "2012-10-16", "--db", db_s],
        vec!["package", evil, "--db", db_s],
        // Not found, with a "did you mean" naming the stored package (case-insensitive match).
        vec!["package", "\x1b]0;pwned\x07\x1b[2JEVIL", "--db", db_s],
    ] {
        let out = cranwhales(&args);
        let all = [&out.stdout[..], &out.stderr[..]].concat();
        assert!(
            !all.iter().any(|&b| b == 0x1b || b == 0x07),
            "raw control bytes from {}: {:?}",
            args[0],
            String::from_utf8_lossy(&all)
        );
        let all = String::from_utf8_lossy(&all);
        assert!(all.contains(shown), "{}: {all}", args[0]);
    }
    let show = cranwhales(&["show", "2012-10-16", "--db", db_s]);
    let show = String::from_utf8_lossy(&show.stdout);
    assert!(show.contains(&format!("fetched {shown} 3 times")), "{show}");
    assert!(show.contains(r"\x1b[2JX"), "the country, escaped: {show}");
}

/// A partial download left by a process that is gone (kill -9 of `ingest`), of a day nobody asks
/// for again, is removed when `ingest` (of another day) or `serve` starts, with a line saying so;
/// a live process's partial file is kept.
#[test]
fn partial_files_of_gone_processes_are_removed_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let mut child = ingest_child(dir.path(), &stalling_source(300_000), &[]);
    wait_for("a partial file", || !partial_files(&cache).is_empty());
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(partial_files(&cache).len(), 1);
    // A partial file of a live process (this test's) must survive.
    let live = format!(".2015-01-16.csv.gz.{}.0.part", std::process::id());
    std::fs::write(cache.join(&live), b"x").unwrap();
    let (db, cache_s) = (dir.path().join("s.db"), cache.to_str().unwrap());
    let day = day_file("2012-10-16");
    let out = cranwhales(&[
        "ingest",
        day.to_str().unwrap(),
        "--db",
        db.to_str().unwrap(),
        "--cache-dir",
        cache_s,
    ]);
    assert!(out.status.success(), "{out:?}");
    let said =
        format!("cranwhales: {cache_s}: removed 1 partial download left by a process that is gone");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&said), "{err}");
    assert_eq!(partial_files(&cache), vec![live.clone()]);

    // One left by a server whose fetch was cut (here: any process that is gone).
    let mut gone = Command::new("true").spawn().unwrap();
    let gone_pid = gone.id();
    gone.wait().unwrap();
    std::fs::write(
        cache.join(format!(".2015-01-17.csv.gz.{gone_pid}.3.part")),
        b"x",
    )
    .unwrap();
    let (serve, _) = serve_child(&[
        "--db",
        db.to_str().unwrap(),
        "--cache-dir",
        cache_s,
        "--no-sample",
    ]);
    assert_eq!(
        partial_files(&cache),
        vec![live.clone()],
        "removed before serving"
    );
    let (status, err) = stop_serve(serve);
    assert!(status.success(), "{status:?} {err}");
    assert!(err.contains(&said), "{err}");
    let _ = std::fs::remove_file(cache.join(&live));
}
