//! `kill -9` of a real `cranwhales ingest` process, while it reads and while its day's
//! transaction is written but not committed: the store stays consistent, keeps the old day,
//! serves readers meanwhile, and a re-run succeeds. A day whose write fails in a batch's one
//! writer fails alone and leaves nothing of itself.

use crate::engine_support;
use crate::ingest_support;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use cranwhales::progress::Silent;
use cranwhales::store::Store;
use cranwhales::summary::{DayInfo, DaySummary};
use engine_support::*;
use ingest_support::ingest_path;

fn spawn(db: &Path, file: &Path, hold: bool) -> Child {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_cranwhales"));
    cmd.arg("ingest").arg("--db").arg(db).arg(file);
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    if hold {
        cmd.env("CRANWHALES_TEST_HOLD_TXN", "1");
    }
    cmd.spawn().unwrap()
}

/// Reads the child's stderr (plain progress lines, since it is a pipe) until a line has `needle`.
fn wait_for(child: &mut Child, needle: &str) {
    let stderr = child.stderr.as_mut().unwrap();
    let mut lines = BufReader::new(stderr).lines();
    loop {
        match lines.next() {
            Some(Ok(l)) if l.contains(needle) => return,
            Some(Ok(_)) => {}
            _ => panic!("child ended before printing {needle:?}"),
        }
    }
}

fn kill9(mut child: Child) {
    child.kill().unwrap(); // SIGKILL on Unix
    let status = child.wait().unwrap();
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(9)
    );
}

fn state(db: &Path) -> (Vec<DayInfo>, Option<DaySummary>) {
    let s = Store::open(db).unwrap();
    assert!(s.integrity_ok().unwrap());
    (s.days().unwrap(), s.day_summary("2013-12-04", 100).unwrap())
}

#[test]
fn kill_9_during_ingest_leaves_the_store_consistent() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    ingest_path(&db, &day_file("2013-12-04"), &Silent).unwrap();
    let before = state(&db);

    // 1. A replacement of 2013-12-04 (its first 5000 rows), killed with the transaction open.
    let part_dir = dir.path().join("part");
    std::fs::create_dir(&part_dir).unwrap();
    let part = part_dir.join("2013-12-04.csv.gz");
    cut_day(&day_file("2013-12-04"), 5000, &part);
    let mut child = spawn(&db, &part, true);
    wait_for(&mut child, "holding transaction open");
    // Readers are not blocked by the open write and see the old day.
    assert_eq!(state(&db), before);
    kill9(child);
    assert_eq!(state(&db), before);

    // 2. A new, large day killed with its transaction open: not visible at all.
    let mut child = spawn(&db, &day_file("2015-01-15"), true);
    wait_for(&mut child, "holding transaction open");
    kill9(child);
    assert_eq!(state(&db), before);
    assert!(!Store::open(&db).unwrap().has_day("2015-01-15").unwrap());

    // 3. Killed while still reading.
    let mut child = spawn(&db, &day_file("2015-01-15"), false);
    wait_for(&mut child, "reading");
    kill9(child);
    assert_eq!(state(&db), before);

    // Re-runs succeed and give what a clean ingest gives.
    cli_ok(
        &db,
        [
            "ingest".as_ref(),
            part.as_os_str(),
            day_file("2015-01-15").as_os_str(),
        ],
    );
    let clean = dir.path().join("clean.db");
    ingest_path(&clean, &part, &Silent).unwrap();
    ingest_path(&clean, &day_file("2015-01-15"), &Silent).unwrap();
    let (a, b) = (Store::open(&db).unwrap(), Store::open(&clean).unwrap());
    assert_eq!(a.days().unwrap(), b.days().unwrap());
    for d in ["2013-12-04", "2015-01-15"] {
        assert_eq!(
            a.day_summary(d, 100).unwrap(),
            b.day_summary(d, 100).unwrap()
        );
    }
    let r = Reference::of_file(&part);
    assert_eq!(
        a.day_summary("2013-12-04", 10)
            .unwrap()
            .unwrap()
            .totals
            .downloads,
        r.downloads
    );
    assert!(a.integrity_ok().unwrap());
}

/// `ingest --jobs 2` with two days' transactions failing after all their rows were inserted
/// (fault injected): a new day leaves no row in any table, a replaced one keeps its old tables,
/// and the days read beside them are stored as a clean ingest stores them.
#[test]
fn a_day_failing_in_the_batch_writer_fails_alone() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    ingest_path(&db, &day_file("2012-10-16"), &Silent).unwrap();
    let old = Store::open(&db)
        .unwrap()
        .day_summary("2012-10-16", 100)
        .unwrap();
    let days = ["2012-10-14", "2012-10-15", "2012-10-16", "2012-10-17"];
    let out = Command::new(env!("CARGO_BIN_EXE_cranwhales"))
        .args(["ingest", "--force", "--jobs", "2", "--db"])
        .arg(&db)
        .args(days.map(day_file))
        .env("CRANWHALES_TEST_FAIL_WRITE", "2012-10-15,2012-10-16")
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    );
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let mut stored: Vec<&str> = stdout.lines().map(|l| &l[..10]).collect();
    stored.sort();
    assert_eq!(stored, ["2012-10-14", "2012-10-17"], "{stdout}");
    let errors: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("cranwhales: error:"))
        .collect();
    assert_eq!(errors.len(), 3, "{stderr}");
    for d in ["2012-10-15", "2012-10-16"] {
        assert!(
            errors
                .iter()
                .any(|e| e.contains(d) && e.contains("failed on purpose")),
            "{d}: {stderr}"
        );
    }
    assert!(errors[2].contains("2 of 4 sources failed"), "{stderr}");

    let store = Store::open(&db).unwrap();
    assert!(store.integrity_ok().unwrap());
    let dates: Vec<String> = store.days().unwrap().into_iter().map(|d| d.date).collect();
    assert_eq!(dates, ["2012-10-14", "2012-10-16", "2012-10-17"]);
    assert_eq!(store.day_summary("2012-10-16", 100).unwrap(), old);
    drop(store);
    let conn = rusqlite::Connection::open(&db).unwrap();
    // `packages` is keyed by day number (days since 1970) * 2^20 + package id.
    let day = "unixepoch('2012-10-15') / 86400 * 1048576";
    for (t, at) in [
        ("days", "date = '2012-10-15'".to_string()),
        ("hourly", "date = '2012-10-15'".into()),
        ("whales", "date = '2012-10-15'".into()),
        ("whale_hourly", "date = '2012-10-15'".into()),
        ("whale_log", "date = '2012-10-15'".into()),
        (
            "packages",
            format!("day_package BETWEEN {day} AND {day} + 1048575"),
        ),
    ] {
        let n: i64 = conn
            .query_row(&format!("SELECT count(*) FROM {t} WHERE {at}"), [], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(n, 0, "{t} has rows of the failed day");
    }
    let clean = dir.path().join("clean.db");
    for d in ["2012-10-14", "2012-10-17"] {
        ingest_path(&clean, &day_file(d), &Silent).unwrap();
    }
    let (a, b) = (Store::open(&db).unwrap(), Store::open(&clean).unwrap());
    for d in ["2012-10-14", "2012-10-17"] {
        assert_eq!(
            a.day_summary(d, 100).unwrap(),
            b.day_summary(d, 100).unwrap()
        );
    }
}
