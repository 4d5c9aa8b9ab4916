//! Migrations on real days: every bundled and shared day written as version 2 wrote it
//! (`legacy_support`), migrated to the current version (through version 3's whale log and
//! version 4's packages keyed by day and package id), and every fact compared — with the old
//! encoding's whale rows, profiles and per-whale package counts, and with the same days ingested
//! fresh; a version 3 store (`legacy_support::to_v3`) likewise, and a version 4 store (its
//! month rows). And `kill -9` mid-migration (from version 2, from version 4): the store opens as
//! wholly the old version, then migrates whole.

use crate::engine_support;
use crate::ingest_support;
use crate::legacy_support;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use cranwhales::blob;
use cranwhales::progress::Silent;
use cranwhales::store::{PackedDay, Store};
use cranwhales::summary::{Download, Profile};
use engine_support::cranlogs;
use rusqlite::Connection;

/// Every bundled day and every shared day.
fn all_days() -> Vec<PathBuf> {
    let bundled = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/sample");
    let mut files = Vec::new();
    for dir in [bundled, cranlogs()] {
        let mut here: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.to_string_lossy().ends_with(".csv.gz"))
            .collect();
        here.sort();
        files.extend(here);
    }
    assert!(files.len() >= 81, "{} day files", files.len());
    files
}

/// What version 2 stored for a day, read with its own SQL: (rank, ip_id, rows, profile) per
/// whale and (package, [(rank, downloads)]) per package.
struct Old {
    whales: Vec<(u32, u64, Vec<Download>, Profile)>,
    ranks: Vec<(String, Vec<(u32, u64)>)>,
}

fn old_day(c: &Connection, date: &str) -> Old {
    let mut st = c
        .prepare(
            "SELECT w.rank, w.ip_id, r.rows, w.profile FROM whales w JOIN whale_rows r
             ON r.date = w.date AND r.ip_id = w.ip_id WHERE w.date = ?1 ORDER BY w.rank",
        )
        .unwrap();
    let whales = st
        .query_map([date], |r| {
            let b: Vec<u8> = r.get(2)?;
            let p: String = r.get(3)?;
            Ok((
                r.get(0)?,
                r.get(1)?,
                blob::unpack(&b).unwrap(),
                serde_json::from_str(&p).unwrap(),
            ))
        })
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    let mut st = c
        .prepare("SELECT package, whale_ranks FROM packages WHERE date = ?1 ORDER BY package")
        .unwrap();
    let ranks = st
        .query_map([date], |r| {
            let b: Option<Vec<u8>> = r.get(1)?;
            let mut v = Vec::new();
            let mut it = b.unwrap_or_default().into_iter();
            let mut next = || {
                let (mut x, mut s) = (0u64, 0);
                for byte in it.by_ref() {
                    x |= u64::from(byte & 0x7f) << s;
                    s += 7;
                    if byte < 0x80 {
                        return Some(x);
                    }
                }
                None
            };
            while let (Some(rank), Some(n)) = (next(), next()) {
                v.push((rank as u32, n));
            }
            Ok((r.get(0)?, v))
        })
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    Old { whales, ranks }
}

#[test]
fn every_real_day_migrates_to_the_same_facts() {
    let dir = tempfile::tempdir().unwrap();
    let (old_db, fresh_db) = (dir.path().join("old.db"), dir.path().join("fresh.db"));
    let mut fresh = Store::open(&fresh_db).unwrap();
    let mut dates = Vec::new();
    for file in all_days() {
        let day = ingest_support::read_day(&file, None, &Silent).unwrap();
        if dates.contains(&day.date) {
            continue; // data/sample repeats three shared days
        }
        dates.push(day.date.clone());
        legacy_support::write_v2(&old_db, std::slice::from_ref(&day));
        let packed = PackedDay::new(day, cranwhales::day::Threads::One);
        fresh.replace_day(&packed, "fresh").unwrap();
    }
    let c = Connection::open(&old_db).unwrap();
    let olds: Vec<Old> = dates.iter().map(|d| old_day(&c, d)).collect();
    drop(c);
    let mut steps = Vec::new();
    let store = Store::open_with_progress(&old_db, &mut |s| steps.push(s.clone())).unwrap();
    assert_eq!(steps.len(), dates.len());
    assert_eq!(steps.last().unwrap().done, dates.len());
    assert!(store.integrity_ok().unwrap());
    let mut rows = 0;
    for (date, old) in dates.iter().zip(&olds) {
        let (a, b) = (
            store.day_summary(date, 100).unwrap().unwrap(),
            fresh.day_summary(date, 100).unwrap().unwrap(),
        );
        assert_eq!(a, b, "{date} summary");
        assert_eq!(a.whales.len(), old.whales.len());
        let (new_rows, fresh_rows) = (
            store.whale_rows(date).unwrap().unwrap(),
            fresh.whale_rows(date).unwrap().unwrap(),
        );
        assert!(
            new_rows == fresh_rows,
            "{date}: migrated and fresh whale rows differ"
        );
        assert_eq!(new_rows.len(), old.whales.len());
        let all = a.whales.iter().zip(&old.whales).zip(&new_rows);
        for (k, ((w, (rank, ip, old_rows, profile)), (new_ip, got))) in all.enumerate() {
            assert_eq!((w.rank, w.ip_id, *new_ip), (*rank, *ip, *ip));
            assert_eq!(w.profile.as_ref(), Some(profile), "{date} {ip} profile");
            assert!(got == old_rows, "{date} whale {ip}: rows differ");
            if k % 25 == 0 {
                // The API's path: one whale read alone.
                let one = store.whale_detail(date, *ip).unwrap().unwrap();
                assert!(&one.downloads == old_rows, "{date} whale {ip} detail");
            }
            rows += old_rows.len();
        }
        // Every package a whale downloaded (the others have no per-whale counts to re-encode);
        // the top-N cuts on every tenth.
        let with_whales = old.ranks.iter().filter(|(_, r)| !r.is_empty());
        for (k, (package, ranks)) in with_whales.enumerate() {
            let d = &store.package_days(package, date, date, 100).unwrap()[0].counts;
            let f = &fresh.package_days(package, date, date, 100).unwrap()[0].counts;
            let whales: u64 = ranks.iter().map(|r| r.1).sum();
            assert_eq!(d.whale_downloads, whales, "{date} {package}");
            assert_eq!(
                (d.downloads, d.whale_downloads),
                (f.downloads, f.whale_downloads)
            );
            for top in [1, 6, 25].into_iter().filter(|_| k % 10 == 0) {
                let want: u64 = ranks.iter().filter(|r| r.0 <= top).map(|r| r.1).sum();
                let got = &store.package_days(package, date, date, top).unwrap()[0].counts;
                assert_eq!(got.whale_downloads, want, "{date} {package} top {top}");
            }
        }
    }
    assert!(rows > 1_000_000, "{rows} whale rows compared");
    let names = |s: &Store| {
        let mut v = s.package_names().unwrap();
        v.sort_by(|a, b| a.package.cmp(&b.package));
        v
    };
    assert!(names(&store) == names(&fresh), "package totals differ");
    assert!(
        month_rows(&old_db) == month_rows(&fresh_db),
        "month rows differ"
    );
    // The old tables are gone and the file is smaller once compacted.
    let before = store.file_bytes().unwrap();
    store.compact().unwrap();
    assert!(store.file_bytes().unwrap() * 2 < before);
}

/// `dates` stored in two new stores at `old` and `fresh`: the old store gets them in another
/// order (other package ids, the same facts).
pub(crate) fn old_and_fresh(old: &Path, fresh: &Path, dates: &[&str]) {
    let (mut old, mut fresh) = (Store::open(old).unwrap(), Store::open(fresh).unwrap());
    for (k, d) in dates.iter().rev().chain(dates.iter()).enumerate() {
        let f = cranlogs().join(format!("{d}.csv.gz"));
        let day = cranwhales::ingest::read_day(&f, Some(d), cranwhales::day::Threads::One, &Silent)
            .unwrap();
        let packed = PackedDay::new(day, cranwhales::day::Threads::One);
        let store = if k < dates.len() {
            &mut old
        } else {
            &mut fresh
        };
        store.replace_day(&packed, "fresh").unwrap();
    }
}

/// Version 3 → 4 (`packages` keyed by day number and package id): a version-3 store of real
/// days migrates to the facts the same days have when ingested fresh: every package of every
/// day (downloads, downloaders, whale counts at several top-N cuts, filters), the day's package
/// list, names and totals, every whale row.
#[test]
fn a_version_3_store_migrates_to_the_same_facts() {
    let dir = tempfile::tempdir().unwrap();
    let (old_db, fresh_db) = (dir.path().join("v3.db"), dir.path().join("fresh.db"));
    let dates = [
        "2012-10-01",
        "2012-10-17",
        "2013-12-04",
        "2014-05-06",
        "2014-12-25",
        "2015-01-08",
        "2015-03-14",
    ];
    old_and_fresh(&old_db, &fresh_db, &dates);
    legacy_support::to_v3(&old_db);
    let mut steps = 0;
    let store = Store::open_with_progress(&old_db, &mut |_| steps += 1).unwrap();
    let fresh = Store::open(&fresh_db).unwrap();
    assert_eq!(steps, dates.len());
    assert!(store.integrity_ok().unwrap());
    let mut packages = 0;
    for d in dates {
        assert_eq!(
            store.day_summary(d, 100).unwrap(),
            fresh.day_summary(d, 100).unwrap()
        );
        assert!(store.whale_rows(d).unwrap() == fresh.whale_rows(d).unwrap());
        let list = store.packages(d, 1_000_000).unwrap();
        assert_eq!(list, fresh.packages(d, 1_000_000).unwrap(), "{d} packages");
        for (k, p) in list.iter().enumerate() {
            for top in [100, 6, 1].into_iter().filter(|&t| t == 100 || k % 7 == 0) {
                assert_eq!(
                    store.package_days(&p.package, d, d, top).unwrap(),
                    fresh.package_days(&p.package, d, d, top).unwrap(),
                    "{d} {} top {top}",
                    p.package
                );
            }
        }
        packages += list.len();
    }
    assert!(packages > 20_000, "{packages} package-days compared");
    let names = |s: &Store| {
        let mut v = s.package_names().unwrap();
        v.sort_by(|a, b| a.package.cmp(&b.package));
        v
    };
    assert!(names(&store) == names(&fresh), "package totals differ");
    assert!(
        month_rows(&old_db) == month_rows(&fresh_db),
        "month rows differ"
    );
    let all = cranwhales::date::Range::parse(Some("2012-10-01"), Some("2015-03-14")).unwrap();
    let (a, b) = (
        store.range_totals(all).unwrap(),
        fresh.range_totals(all).unwrap(),
    );
    assert_eq!((a.days, a.len(), a.total()), (b.days, b.len(), b.total()));
    assert_eq!(a.top(50), b.top(50));
    // Part of the days against each package's days added up: most days (the kept totals minus
    // the days outside) and few (their rows summed).
    for (from, to, n) in [
        ("2013-12-01", "2015-01-08", 4),
        ("2012-10-01", "2013-12-31", 3),
    ] {
        let part = cranwhales::date::Range::parse(Some(from), Some(to)).unwrap();
        let (a, b) = (
            store.range_totals(part).unwrap(),
            fresh.range_totals(part).unwrap(),
        );
        assert_eq!((a.days, a.len(), a.total()), (b.days, b.len(), b.total()));
        assert_eq!(a.days, n);
        for t in a.top(20) {
            let days = store.package_days(&t.package, from, to, 6).unwrap();
            let sum: u64 = days.iter().map(|d| d.counts.downloads).sum();
            assert_eq!(
                (t.downloads, b.downloads(&t.package)),
                (sum, sum),
                "{}",
                t.package
            );
        }
        let listed: u64 = a.top(a.len()).iter().map(|t| t.downloads).sum();
        assert_eq!(listed, a.total());
    }
    // A package over all the days: one rowid seek per day.
    for p in ["ggplot2", "Rcpp", "no-such-package"] {
        assert_eq!(
            store
                .package_days(p, "2012-10-01", "2015-03-14", 6)
                .unwrap(),
            fresh
                .package_days(p, "2012-10-01", "2015-03-14", 6)
                .unwrap()
        );
    }
}

/// Every `package_months` row by month and package name: (downloads, days).
fn month_rows(db: &Path) -> BTreeMap<(i64, String), (i64, i64)> {
    let c = Connection::open(db).unwrap();
    let mut st = c
        .prepare(
            "SELECT m.month_package / 1048576, t.package, m.downloads, m.days
             FROM package_months m JOIN package_totals t ON t.id = m.month_package % 1048576",
        )
        .unwrap();
    let rows = st
        .query_map([], |r| Ok(((r.get(0)?, r.get(1)?), (r.get(2)?, r.get(3)?))))
        .unwrap();
    rows.collect::<Result<_, _>>().unwrap()
}

pub(crate) fn user_version(db: &Path) -> (i64, bool) {
    let c = Connection::open(db).unwrap();
    let v = c.query_row("PRAGMA user_version", [], |r| r.get(0));
    let months = c.query_row(
        "SELECT count(*) FROM sqlite_schema WHERE name = 'package_months'",
        [],
        |r| r.get::<_, i64>(0),
    );
    (v.unwrap(), months.unwrap() == 1)
}

/// Version 4 → 5 (`package_months`): a version-4 store of real days migrates, a step per day,
/// to the month rows the same days have when ingested fresh (by month and name: the stores'
/// package ids differ), its every other fact unchanged, and the same range answers.
#[test]
fn a_version_4_store_migrates_to_the_same_facts() {
    let dir = tempfile::tempdir().unwrap();
    let (old_db, fresh_db) = (dir.path().join("v4.db"), dir.path().join("fresh.db"));
    let dates = [
        "2012-10-01",
        "2012-10-17",
        "2013-12-04",
        "2014-05-06",
        "2014-12-25",
        "2014-12-31",
        "2015-01-08",
        "2015-03-14",
    ];
    old_and_fresh(&old_db, &fresh_db, &dates);
    legacy_support::to_v4(&old_db);
    assert_eq!(user_version(&old_db), (4, false));
    let mut steps = Vec::new();
    let store = Store::open_with_progress(&old_db, &mut |s| steps.push(s.clone())).unwrap();
    let fresh = Store::open(&fresh_db).unwrap();
    assert_eq!(
        steps.iter().map(|s| s.date.as_str()).collect::<Vec<_>>(),
        dates
    );
    assert_eq!(steps.last().unwrap().done, dates.len());
    assert_eq!(user_version(&old_db), (12, true));
    assert!(store.integrity_ok().unwrap());
    let (a, b) = (month_rows(&old_db), month_rows(&fresh_db));
    assert!(a.len() > 20_000, "{} month rows", a.len());
    assert!(a == b, "migrated and fresh month rows differ");
    for d in dates {
        assert_eq!(
            store.day_summary(d, 100).unwrap(),
            fresh.day_summary(d, 100).unwrap()
        );
        let list = store.packages(d, 1_000_000).unwrap();
        assert_eq!(list, fresh.packages(d, 1_000_000).unwrap(), "{d} packages");
    }
    for (from, to) in [
        ("2012-10-01", "2015-03-14"),
        ("2014-12-01", "2014-12-31"),
        ("2013-01-01", "2014-12-31"),
        ("2014-12-26", "2015-01-31"),
        ("2015-01-08", "2015-01-08"),
    ] {
        let r = cranwhales::date::Range::parse(Some(from), Some(to)).unwrap();
        let (a, b) = (
            store.range_totals(r).unwrap(),
            fresh.range_totals(r).unwrap(),
        );
        assert_eq!((a.days, a.len(), a.total()), (b.days, b.len(), b.total()));
        assert_eq!(a.top(a.len()), b.top(b.len()), "{from}..{to}");
    }
}

/// `kill -9` while a version-4 store gains its month rows: wholly version 4 (no
/// `package_months`), then migrated whole by the next run.
#[test]
fn kill_9_mid_migration_from_version_4_leaves_it_whole() {
    let dir = tempfile::tempdir().unwrap();
    let (db, fresh_db) = (dir.path().join("v4.db"), dir.path().join("fresh.db"));
    let dates = ["2012-10-05", "2012-10-10", "2013-12-01", "2013-12-15"];
    old_and_fresh(&db, &fresh_db, &dates);
    legacy_support::to_v4(&db);
    let mut child = cli_migrate(&db, 2_000);
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    err.read_line(&mut line).unwrap();
    assert!(line.starts_with("migrate: 1/4 days"), "{line}");
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    assert_eq!(user_version(&db), (4, false));
    let out = cli_migrate(&db, 0).wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(user_version(&db), (12, true));
    assert!(month_rows(&db) == month_rows(&fresh_db));
    // It says what it did, and a second run that nothing is left to do.
    let said = |out: std::process::Output| String::from_utf8(out.stdout).unwrap();
    let first = said(out);
    assert!(
        first.contains(": schema migrated from version 4 to 12, "),
        "{first}"
    );
    let again = said(cli_migrate(&db, 0).wait_with_output().unwrap());
    assert!(
        again.contains(": schema up to date (version 12), "),
        "{again}"
    );
}

/// Version 7 → 9 (breakdowns by R build): a store whose breakdown rows are version 7's
/// (`legacy_support::v7`: OS, R version and arch counted apart) opens at version 9 with those
/// rows as they were, and every package's breakdown by each field with each `without` reads the
/// same as from the same days in version 9's form.
#[test]
fn version_7_breakdowns_read_the_same_under_version_11() {
    let dir = tempfile::tempdir().unwrap();
    let (old_db, fresh_db) = (dir.path().join("v7.db"), dir.path().join("fresh.db"));
    let dates = ["2014-12-31", "2015-01-08"];
    old_and_fresh(&old_db, &fresh_db, &dates);
    legacy_support::v7::breakdowns_to_v7(&old_db);
    legacy_support::to_v7(&old_db);
    let old_rows = breakdown_rows(&old_db);
    assert_eq!(user_version(&old_db).0, 7);
    assert!(
        old_rows.len() > 2 * breakdown_rows(&fresh_db).len(),
        "128 packages a chunk"
    );
    reads_the_same(&old_db, &fresh_db, &old_rows, dates);
}

#[test]
fn version_9_breakdowns_read_the_same_under_version_11() {
    let dir = tempfile::tempdir().unwrap();
    let (old_db, fresh_db) = (dir.path().join("v9.db"), dir.path().join("fresh.db"));
    let dates = ["2014-12-31", "2015-01-08"];
    old_and_fresh(&old_db, &fresh_db, &dates);
    let chunks = legacy_support::v7::breakdowns_to_v9(&old_db);
    let old_rows = breakdown_rows(&old_db);
    assert_eq!(user_version(&old_db).0, 10);
    let fresh_rows = breakdown_rows(&fresh_db);
    // Version 11's chunks each fill one 16 KB page: none is over it, and all but each day's
    // last are filled to ~15.6 KB (by the last chunk's compression ratio).
    let mut full = Vec::new();
    for (i, (key, data)) in fresh_rows.iter().enumerate() {
        assert!(data.len() <= 16_300, "chunk {key}: {} bytes", data.len());
        if fresh_rows
            .get(i + 1)
            .is_some_and(|next| next.0 >> 20 == key >> 20)
        {
            full.push(data.len());
        }
    }
    let mean = full.iter().sum::<usize>() / full.len().max(1);
    assert!(
        full.len() >= 10 && mean > 14_500,
        "{} chunks, {mean} bytes on average",
        full.len()
    );
    assert!(
        chunks == old_rows.len() && old_rows.len() > fresh_rows.len() + 20,
        "runs of 128 ids take more chunks than whole pages: {} vs {}",
        old_rows.len(),
        fresh_rows.len()
    );
    reads_the_same(&old_db, &fresh_db, &old_rows, dates);
}

/// Every `breakdowns` row of the store at `db`, by key.
fn breakdown_rows(db: &Path) -> Vec<(i64, Vec<u8>)> {
    let c = Connection::open(db).unwrap();
    let mut st = c.prepare("SELECT * FROM breakdowns ORDER BY 1").unwrap();
    let r = st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)));
    r.unwrap().map(Result::unwrap).collect()
}

/// Opens the old store at `old_db` (migrating it without changing a breakdown row: `old_rows`)
/// and checks that it answers every breakdown over `dates` as the store at `fresh_db` does.
fn reads_the_same(old_db: &Path, fresh_db: &Path, old_rows: &[(i64, Vec<u8>)], dates: [&str; 2]) {
    use cranwhales::day::breakdown::Without;
    use cranwhales::store::breakdown::By;
    let (store, fresh) = (Store::open(old_db).unwrap(), Store::open(fresh_db).unwrap());
    assert_eq!(user_version(old_db).0, 12);
    assert!(
        breakdown_rows(old_db) == old_rows,
        "the migration changes no breakdown row"
    );
    let range = cranwhales::date::Range::parse(Some(dates[0]), Some(dates[1])).unwrap();
    let list = fresh.packages(dates[1], 1_000_000).unwrap();
    assert!(list.len() > 6_000);
    let (mut keys, mut seen) = (0, std::collections::HashSet::new());
    for p in list.iter().take(150).chain(list.iter().step_by(40)) {
        for by in ["version", "country", "os", "r_version", "arch"] {
            for w in ["", "whales", "small,repeats", "whales,small,repeats"] {
                let (by, w) = (By::parse(by).unwrap(), Without::parse(w).unwrap());
                let a = store.breakdown(&p.package, range, by, w).unwrap().unwrap();
                let b = fresh.breakdown(&p.package, range, by, w).unwrap().unwrap();
                assert_eq!(a, b, "{} by {}", p.package, by.name());
                assert_eq!(a.days, 2);
                keys += a.rows.len();
                seen.extend(a.rows.iter().map(|r| r.key.clone()));
            }
        }
    }
    assert!(
        keys > 10_000 && seen.len() > 200,
        "{keys} rows, {} keys",
        seen.len()
    );
}

fn cli_migrate(db: &Path, pause_ms: u64) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_cranwhales"))
        .args(["migrate", "--db"])
        .arg(db)
        .env("CRANWHALES_TEST_MIGRATE_PAUSE_MS", pause_ms.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn kill_9_mid_migration_leaves_the_old_store_whole() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("old.db");
    let dates = [
        "2012-10-05",
        "2012-10-10",
        "2012-10-17",
        "2013-12-01",
        "2013-12-15",
    ];
    let days: Vec<_> = (dates.iter())
        .map(|d| {
            let f = cranlogs().join(format!("{d}.csv.gz"));
            ingest_support::read_day(&f, Some(d), &Silent).unwrap()
        })
        .collect();
    legacy_support::write_v2(&db, &days);
    let c = Connection::open(&db).unwrap();
    let olds: Vec<Old> = dates.iter().map(|d| old_day(&c, d)).collect();
    drop(c);

    let mut child = cli_migrate(&db, 2_000);
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    err.read_line(&mut line).unwrap();
    assert!(line.starts_with("migrate: 1/5 days"), "{line}");
    err.read_line(&mut line).unwrap();
    assert!(line.contains("migrate: 2/5 days"), "{line}");
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();

    // Wholly version 2: its tables and rows as they were, none of version 3's.
    let c = Connection::open(&db).unwrap();
    let v: i64 = c
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(v, 2);
    let has = |t: &str| -> bool {
        c.query_row(
            "SELECT count(*) FROM sqlite_schema WHERE name = ?1",
            [t],
            |r| r.get::<_, i64>(0),
        )
        .unwrap()
            == 1
    };
    assert!(has("whale_rows") && !has("whale_log"));
    let ok: String = c
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(ok, "ok");
    for (d, old) in dates.iter().zip(&olds) {
        let again = old_day(&c, d);
        assert!(
            again.whales == old.whales && again.ranks == old.ranks,
            "{d} changed"
        );
    }
    drop(c);

    // Run again to the end: wholly version 3, every whale's rows as version 2 had them.
    let out = cli_migrate(&db, 0).wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("schema migrated from version 2 to 12"),
        "{stdout}"
    );
    let store = Store::open(&db).unwrap();
    for (d, old) in dates.iter().zip(&olds) {
        for (_, ip, rows, _) in &old.whales {
            assert!(&store.whale_detail(d, *ip).unwrap().unwrap().downloads == rows);
        }
    }
}

#[test]
fn a_corrupt_old_blob_stops_the_migration_naming_it_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("old.db");
    let days: Vec<_> = (["2012-10-05", "2012-10-10"].iter())
        .map(|d| {
            let f = cranlogs().join(format!("{d}.csv.gz"));
            ingest_support::read_day(&f, Some(d), &Silent).unwrap()
        })
        .collect();
    let ip = days[1].whales[0].ip_id;
    legacy_support::write_v2(&db, &days);
    let c = Connection::open(&db).unwrap();
    c.execute(
        "UPDATE whale_rows SET rows = x'00010203' WHERE date = '2012-10-10' AND ip_id = ?1",
        [ip],
    )
    .unwrap();
    drop(c);
    let out = cli_migrate(&db, 0).wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let last = stderr.lines().last().unwrap();
    assert_eq!(
        last,
        format!(
            "cranwhales: error: store {}: corrupt whale_rows blob (2012-10-10, ip_id {ip}); nothing was migrated",
            db.display()
        )
    );
    let c = Connection::open(&db).unwrap();
    let v: i64 = c
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(v, 2);
}
