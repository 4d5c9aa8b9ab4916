//! `package_history` (schema 10, `store::history`): a version-7 store of real days migrates to
//! packed months (every month before the newest stored day's), and a package over the stored
//! days reads the same from the packed months as from its `packages` rows, for every package
//! and whale count; a day stored into, replaced in or removed from a packed month makes the
//! month read from `packages` again (the same answers), until `pack_months` packs it anew; a
//! month whose last day the server or `ingest --follow` stores is packed at once.

use crate::engine_support;

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use cranwhales::day::Threads;
use cranwhales::progress::Silent;
use cranwhales::store::{PackedDay, Store};
use engine_support::{cut_day, day_file};
use rusqlite::Connection;

/// Stored days: parts of five months (2015-01 the newest, so left open by the migration).
const DAYS: [&str; 8] = [
    "2012-10-01",
    "2012-10-17",
    "2013-12-04",
    "2014-12-25",
    "2014-12-31",
    "2015-01-01",
    "2015-01-08",
    "2015-01-15",
];

fn store_day(store: &mut Store, file: &Path, date: &str) {
    let day = cranwhales::ingest::read_day(file, Some(date), Threads::One, &Silent).unwrap();
    store
        .replace_day(&PackedDay::new(day, Threads::One), "test")
        .unwrap();
}

/// Packed months (month number) and how many rows each has of its generation.
fn packed(db: &Path) -> Vec<(i64, i64)> {
    let c = Connection::open(db).unwrap();
    let mut st = c
        .prepare(
            "SELECT m.month, (SELECT count(*) FROM package_history h
                 WHERE h.month = m.month AND h.generation = m.generation)
             FROM history_months m WHERE m.valid = 1 ORDER BY 1",
        )
        .unwrap();
    let rows = st.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).unwrap();
    rows.collect::<Result<_, _>>().unwrap()
}

/// Every `step`th stored package over all stored days, with 0, 1 and 6 whales taken out, as
/// `store` reads it.
fn answers(store: &Store, step: usize) -> Vec<String> {
    let names = store.package_names().unwrap();
    let mut out = Vec::new();
    for p in names.iter().step_by(step) {
        for whales in [0, 1, 6] {
            let days = store
                .package_days(&p.package, "2012-10-01", "2015-03-14", whales)
                .unwrap();
            out.push(format!("{} {whales} {days:?}", p.package));
        }
    }
    out
}

/// The same answers read with every month unpacked (from `packages` alone, as before version
/// 10), the packed months left as they were.
fn unpacked_answers(db: &Path, store: &Store, step: usize) -> Vec<String> {
    let c = Connection::open(db).unwrap();
    c.execute_batch(
        "CREATE TEMP TABLE was AS SELECT month FROM history_months WHERE valid = 1;
                     UPDATE history_months SET valid = 0;",
    )
    .unwrap();
    let out = answers(store, step);
    c.execute_batch("UPDATE history_months SET valid = 1 WHERE month IN (SELECT month FROM was)")
        .unwrap();
    out
}

/// Month number of a `YYYY-MM` month.
fn month(s: &str) -> i64 {
    let (y, m) = s.split_once('-').unwrap();
    (y.parse::<i64>().unwrap() - 1970) * 12 + m.parse::<i64>().unwrap() - 1
}

#[test]
fn a_version_7_store_migrates_to_packed_months_that_read_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("v7.db");
    let mut store = Store::open(&db).unwrap();
    for d in DAYS {
        store_day(&mut store, &day_file(d), d);
    }
    drop(store);
    // What version 7 was: `package_months` without version 8's columns, no history tables.
    crate::legacy_support::to_v7(&db);
    let c = Connection::open(&db).unwrap();
    c.execute_batch(
        "DROP TABLE package_history; DROP TABLE history_months; PRAGMA user_version = 7;",
    )
    .unwrap();
    drop(c);

    let store = Store::open(&db).unwrap();
    let c = Connection::open(&db).unwrap();
    let v: i64 = c
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(v, 12);
    let months = packed(&db);
    let want = [month("2012-10"), month("2013-12"), month("2014-12")];
    assert_eq!(months.iter().map(|m| m.0).collect::<Vec<_>>(), want);
    // A row for every package with a download in the month.
    for (m, rows) in &months {
        let n: i64 = c
            .query_row(
                "SELECT count(DISTINCT day_package % 1048576) FROM packages
                 WHERE day_package / 1048576 IN (SELECT unixepoch(date) / 86400 FROM days
                     WHERE (CAST(strftime('%Y', date) AS INT) - 1970) * 12
                         + CAST(strftime('%m', date) AS INT) - 1 = ?1)",
                [m],
                |r| r.get(0),
            )
            .unwrap();
        assert!(
            n > 1_000 && *rows == n,
            "month {m}: {rows} rows, {n} packages"
        );
    }
    assert!(store.integrity_ok().unwrap());
    let (a, b) = (answers(&store, 3), unpacked_answers(&db, &store, 3));
    assert!(a.len() > 3_000, "{} answers", a.len());
    assert!(a == b, "packed and unpacked answers differ");
    // Some of them have downloads in the packed months (not all zeros).
    assert!(a
        .iter()
        .any(|s| s.contains("2012-10-17") && s.contains("downloads: 1")));
}

#[test]
fn a_day_changed_in_a_packed_month_reads_from_packages_until_packed_again() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    let mut store = Store::open(&db).unwrap();
    for d in DAYS {
        store_day(&mut store, &day_file(d), d);
    }
    assert_eq!(packed(&db), []);
    assert_eq!(store.pack_months(true).unwrap(), 0, "no whole month");
    assert_eq!(store.pack_months(false).unwrap(), 3);
    assert_eq!(packed(&db).len(), 3);
    assert_eq!(store.pack_months(false).unwrap(), 0, "packed once");

    // Replaced by a cut copy: fewer downloads of some packages, none of others.
    let cut = dir.path().join("2014-12-25.csv.gz");
    cut_day(&day_file("2014-12-25"), 2_000, &cut);
    store_day(&mut store, &cut, "2014-12-25");
    // Removed: the only stored day of its month... and a day of a packed month.
    assert!(store.remove_day("2012-10-17").unwrap());
    // Stored: a new day in a packed month.
    store_day(&mut store, &day_file("2013-12-17"), "2013-12-17");
    assert_eq!(packed(&db), [], "every packed month changed");
    let (a, b) = (answers(&store, 5), unpacked_answers(&db, &store, 5));
    assert!(a == b, "answers differ before packing again");

    assert_eq!(store.pack_months(false).unwrap(), 3);
    let c = Connection::open(&db).unwrap();
    let generations: Vec<i64> = c
        .prepare("SELECT generation FROM history_months ORDER BY month")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(generations, [2, 2, 2]);
    let (a2, b2) = (answers(&store, 5), unpacked_answers(&db, &store, 5));
    assert!(a2 == b2, "answers differ after packing again");
    assert!(a2 == a, "packing changed an answer");
}

/// A month the server completes by fetching its last day is packed at once (a package over all
/// days then reads it as one row), not left until `cranwhales migrate`; the days before leave it
/// unpacked. February 2015 here is 28 re-dated cuts of a real day put in the server's download
/// cache (a cached day is read, not downloaded).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_month_the_server_completes_is_packed() {
    use crate::server_support::{fetch_day, App};
    let app = App::start(&["2015-01-08"], &["--fetch-burst", "30"]).await;
    let cache = app.dir.path().join("cache");
    std::fs::create_dir_all(&cache).unwrap();
    let text = engine_support::gunzip(&day_file("2015-01-08"));
    let rows: Vec<String> = (text.split_inclusive(|&b| b == b'\n').take(301))
        .map(|r| String::from_utf8_lossy(r).into_owned())
        .collect();
    let dates: Vec<String> = (1..=28).map(|d| format!("2015-02-{d:02}")).collect();
    for date in &dates {
        let redated: String = (rows.iter())
            .map(|r| r.replacen("\"2015-01-08\"", &format!("\"{date}\""), 1))
            .collect();
        engine_support::gzip_to(&cache.join(format!("{date}.csv.gz")), redated.as_bytes());
    }
    let february = (2015 - 1970) * 12 + 1;
    for date in &dates[..27] {
        fetch_day(app.addr, date, 10).await;
    }
    assert!(
        !packed(&app.db()).iter().any(|(m, _)| *m == february),
        "packed before its last day: {:?}",
        packed(&app.db())
    );
    fetch_day(app.addr, &dates[27], 10).await;
    let rows = packed(&app.db());
    let feb = rows.iter().find(|(m, _)| *m == february);
    assert!(
        feb.is_some_and(|(_, n)| *n > 0),
        "February not packed: {rows:?}"
    );
    app.stop().await;
}

/// `ingest --follow` (a box without cron) packs the month that the day it stores completes, as
/// the server does: February 2015's first 27 days (slices of a real day, each a different one,
/// re-dated) stored by `cranwhales ingest` leave it unpacked; the follower downloads the 28th
/// from a source on loopback, and then February has one packed row per package of the month,
/// and each package's days read through them equal a recount of the 28 day files.
#[test]
fn a_month_ingest_follow_completes_is_packed() {
    use crate::server_support::Source;
    use engine_support::Reference;
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};

    let dir = tempfile::tempdir().unwrap();
    let (db, days) = (dir.path().join("cw.db"), dir.path().join("days"));
    std::fs::create_dir_all(&days).unwrap();
    let text = engine_support::gunzip(&day_file("2015-01-08"));
    let lines: Vec<&[u8]> = text.split_inclusive(|&b| b == b'\n').collect();
    let files: Vec<PathBuf> = (1..=28usize)
        .map(|d| {
            let date = format!("2015-02-{d:02}");
            let mut day = lines[0].to_vec();
            for row in &lines[1 + 37 * d..1 + 37 * d + 150 + 7 * d] {
                let row = String::from_utf8_lossy(row);
                day.extend_from_slice(
                    row.replacen("\"2015-01-08\"", &format!("\"{date}\""), 1)
                        .as_bytes(),
                );
            }
            let file = days.join(format!("{date}.csv.gz"));
            engine_support::gzip_to(&file, &day);
            file
        })
        .collect();
    let february = month("2015-02");
    let ingest = std::iter::once(OsStr::new("ingest"));
    engine_support::cli_ok(&db, ingest.chain(files[..27].iter().map(|f| f.as_os_str())));
    assert!(
        !packed(&db).iter().any(|(m, _)| *m == february),
        "packed before its last day: {:?}",
        packed(&db)
    );

    // The source publishes every day of the month (the follower asks only for the 28th) and
    // nothing of March (404: not published yet, the follower waits).
    let source = Source::start_in(days.clone());
    let log = dir.path().join("follow.log");
    let mut child = Command::new(env!("CARGO_BIN_EXE_cranwhales"))
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
        .arg(dir.path().join("cache"))
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let out = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    // The line is printed once the day is stored and its month packed.
    let line = rx.recv_timeout(Duration::from_secs(60));
    let term = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(term.success());
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        // Paces the look at another process's exit (no event to wait on here).
        std::thread::sleep(Duration::from_millis(10));
    };
    let stderr = std::fs::read_to_string(&log).unwrap();
    let line = line.unwrap_or_else(|e| panic!("no day stored ({e}): {stderr}"));
    assert!(line.starts_with("follow: 2015-02-28: stored, "), "{line:?}");
    assert_eq!(status.and_then(|s| s.code()), Some(0), "{stderr}");
    assert_eq!(source.hits("2015-02-28"), 1, "downloaded once");

    // The recount: each day file counted by the reference (split on commas, std maps).
    let mut want: BTreeMap<String, Vec<(String, u64, u64)>> = BTreeMap::new();
    for (i, file) in files.iter().enumerate() {
        let r = Reference::of_file(file);
        for (package, &downloads) in &r.packages {
            let downloaders = r.ips.values().filter(|ip| ip.packages.contains(package));
            let day = (
                format!("2015-02-{:02}", i + 1),
                downloads,
                downloaders.count() as u64,
            );
            want.entry(package.clone()).or_default().push(day);
        }
    }
    let rows = packed(&db);
    let feb = rows.iter().find(|(m, _)| *m == february);
    assert_eq!(
        feb.map(|r| r.1),
        Some(want.len() as i64),
        "February's packed rows, one per package of the month: {rows:?}"
    );
    // Read through the packed month (valid, so the reader takes its rows).
    let store = Store::open(&db).unwrap();
    for (package, days) in &want {
        let got: Vec<(String, u64, u64)> =
            (store.package_days(package, "2015-02-01", "2015-02-28", 0))
                .unwrap()
                .into_iter()
                .filter(|d| d.counts.downloads > 0)
                .map(|d| (d.date, d.counts.downloads, d.downloaders.unwrap_or(0)))
                .collect();
        assert_eq!(&got, days, "{package}");
    }
    assert!(want.len() > 100, "{} packages", want.len());
}
