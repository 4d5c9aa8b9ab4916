//! `package_months` on real days: every package's downloads over ranges aligned to months, not
//! aligned, across years and of a single day, as `range_totals` reads them (whole months from
//! `package_months`, the other days from `packages`; or the kept totals minus the days outside),
//! against an independent recount over the raw files of the stored days
//! (`engine_support::Reference`) and over the `packages` rows (SQL); and the month rows
//! themselves against a SQL recount by month, after every day stored, a day replaced (a cut
//! copy) and days removed (one the only stored day of its month). And version 8's sums for
//! filtered lists, migrated from a version-7 store.

use crate::engine_support;
use crate::store_migration::{old_and_fresh, user_version};

use std::collections::BTreeMap;
use std::path::Path;

use cranwhales::date::Range;
use cranwhales::day::Threads;
use cranwhales::progress::Silent;
use cranwhales::store::{PackedDay, Store};
use engine_support::{cut_day, day_file, Reference};
use rusqlite::Connection;

/// Stored days: parts of seven months over three years.
const DAYS: [&str; 13] = [
    "2012-10-01",
    "2012-10-17",
    "2013-12-01",
    "2013-12-17",
    "2014-05-01",
    "2014-05-15",
    "2014-12-16",
    "2014-12-31",
    "2015-01-01",
    "2015-01-08",
    "2015-01-15",
    "2015-02-14",
    "2015-03-14",
];

/// Ranges read: aligned to months (one, two across a year, a calendar year, from the first log
/// day to a month's end), not aligned (within a year, across one and across two, holding most
/// stored days, so read as the kept totals minus the days outside), a single stored day, a
/// single day not stored, and every stored day.
const RANGES: [(&str, &str); 12] = [
    ("2013-12-01", "2013-12-31"),
    ("2014-12-01", "2015-01-31"),
    ("2014-01-01", "2014-12-31"),
    ("2012-10-01", "2014-12-31"),
    ("2014-05-02", "2014-12-30"),
    ("2014-12-20", "2015-01-10"),
    ("2013-12-04", "2015-01-10"),
    ("2012-10-02", "2015-03-13"),
    ("2015-01-08", "2015-01-08"),
    ("2015-01-09", "2015-01-09"),
    ("2014-11-30", "2015-02-01"),
    ("2012-10-01", "2015-03-14"),
];

fn store_day(store: &mut Store, file: &Path, date: &str) {
    let day = cranwhales::ingest::read_day(file, Some(date), Threads::One, &Silent).unwrap();
    let packed = PackedDay::new(day, Threads::One);
    store.replace_day(&packed, "test").unwrap();
}

/// Every package's downloads on the days of `refs` from `from` to `to`, counted from the raw files.
fn recount(refs: &BTreeMap<&str, Reference>, from: &str, to: &str) -> BTreeMap<String, u64> {
    let mut sums = BTreeMap::new();
    for (_, r) in refs.range(from..=to) {
        for (p, n) in &r.packages {
            *sums.entry(p.clone()).or_default() += n;
        }
    }
    sums
}

/// Every package's downloads from `from` to `to`, summed from the `packages` rows in SQL.
fn sql_recount(c: &Connection, from: &str, to: &str) -> BTreeMap<String, u64> {
    c.prepare(
        "SELECT t.package, sum(p.downloads) FROM packages p
         JOIN package_totals t ON t.id = p.day_package % 1048576
         WHERE p.day_package BETWEEN strftime('%s', ?1) / 86400 * 1048576
             AND (strftime('%s', ?2) / 86400 + 1) * 1048576 - 1
         GROUP BY t.package",
    )
    .unwrap()
    .query_map([from, to], |r| Ok((r.get(0)?, r.get(1)?)))
    .unwrap()
    .collect::<Result<_, _>>()
    .unwrap()
}

/// Every range's totals equal both recounts, package by package.
fn check_ranges(store: &Store, db: &Path, refs: &BTreeMap<&str, Reference>) {
    let c = Connection::open(db).unwrap();
    for (from, to) in RANGES {
        let t = store
            .range_totals(Range::parse(Some(from), Some(to)).unwrap())
            .unwrap();
        let want = recount(refs, from, to);
        let days = refs.range(from..=to).count() as u32;
        assert_eq!(t.days, days, "{from}..{to} days");
        assert_eq!(t.len(), want.len(), "{from}..{to} packages");
        assert_eq!(t.total(), want.values().sum::<u64>(), "{from}..{to} total");
        let got: BTreeMap<String, u64> = (t.top(t.len()).into_iter())
            .map(|p| (p.package, p.downloads))
            .collect();
        assert!(
            got == want,
            "{from}..{to}: totals differ from the raw recount"
        );
        assert!(
            sql_recount(&c, from, to) == want,
            "{from}..{to}: the packages rows differ from the raw recount"
        );
    }
}

/// `package_months` equals the `packages` rows grouped by month (months since 1970-01 from
/// SQLite's own calendar) and package; no row is left without days.
fn check_month_rows(db: &Path) -> usize {
    let c = Connection::open(db).unwrap();
    let rows = |q: &str| -> Vec<(i64, i64, i64)> {
        c.prepare(q)
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    };
    let kept = rows("SELECT month_package, downloads, days FROM package_months ORDER BY 1");
    let recount = rows(
        "SELECT ((strftime('%Y', d, 'unixepoch') - 1970) * 12 + strftime('%m', d, 'unixepoch') - 1)
                 * 1048576 + id AS k, sum(downloads), count(*)
         FROM (SELECT day_package / 1048576 * 86400 AS d, day_package % 1048576 AS id, downloads
               FROM packages)
         GROUP BY k ORDER BY k",
    );
    assert!(
        kept == recount,
        "package_months differs from the packages rows by month"
    );
    assert!(kept.iter().all(|r| r.2 > 0 && r.1 > 0));
    kept.len()
}

#[test]
fn range_totals_from_months_equal_the_recount_as_days_are_stored_replaced_and_removed() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("months.db");
    let mut store = Store::open(&db).unwrap();
    let mut refs = BTreeMap::new();
    for d in DAYS {
        store_day(&mut store, &day_file(d), d);
        refs.insert(d, Reference::of_file(&day_file(d)));
    }
    let months = check_month_rows(&db);
    assert!(months > 20_000, "{months} month rows");
    check_ranges(&store, &db, &refs);

    // Replaced by a copy cut to its first 5,000 rows: fewer downloads and fewer packages.
    let cut = dir.path().join("2015-01-08.csv.gz");
    cut_day(&day_file("2015-01-08"), 5_000, &cut);
    store_day(&mut store, &cut, "2015-01-08");
    let whole = refs["2015-01-08"].packages.len();
    refs.insert("2015-01-08", Reference::of_file(&cut));
    let now = refs["2015-01-08"].packages.len();
    assert!(now * 2 < whole, "{now} of {whole} packages");
    check_month_rows(&db);
    check_ranges(&store, &db, &refs);

    // Removed: a day among others of its month, then the only stored day of its month.
    for d in ["2015-01-08", "2015-02-14"] {
        assert!(store.remove_day(d).unwrap());
        refs.remove(d);
        assert!(!store.has_day(d).unwrap());
        check_month_rows(&db);
        check_ranges(&store, &db, &refs);
    }
    assert!(!store.remove_day("2015-02-14").unwrap(), "already removed");
    let c = Connection::open(&db).unwrap();
    let february: i64 = c
        .query_row(
            "SELECT count(*) FROM package_months WHERE month_package / 1048576 = 45 * 12 + 1",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(february, 0, "2015-02 rows left without a day");
    // The names and their totals follow too: equal to the rows' recount.
    let mut names = store.package_names().unwrap();
    names.sort_by(|a, b| a.package.cmp(&b.package));
    let all = recount(&refs, "2012-10-01", "2015-03-14");
    assert_eq!(names.len(), all.len());
    for (n, (p, d)) in names.iter().zip(&all) {
        let days = refs.values().filter(|r| r.packages.contains_key(p)).count() as u64;
        assert_eq!((&n.package, n.downloads, n.days), (p, *d, days));
    }
}

/// Every `package_months` row by month and package name, every column (version 8).
fn month_sums(db: &Path) -> BTreeMap<(i64, String), [i64; 7]> {
    let c = Connection::open(db).unwrap();
    let mut st = c
        .prepare(
            "SELECT m.month_package / 1048576, t.package, m.downloads, m.days, m.whale_downloads,
                 m.small, m.repeats, m.whale_filtered, m.whale_small
             FROM package_months m JOIN package_totals t ON t.id = m.month_package % 1048576",
        )
        .unwrap();
    let rows = st
        .query_map([], |r| {
            let mut v = [0i64; 7];
            for (i, x) in v.iter_mut().enumerate() {
                *x = r.get(i + 2)?;
            }
            Ok(((r.get(0)?, r.get(1)?), v))
        })
        .unwrap();
    rows.collect::<Result<_, _>>().unwrap()
}

/// Version 7 → 8 (`package_months` with what filtered lists leave out): a version-7 store of
/// real days migrates, a step per day, to the month rows the same days have when ingested fresh,
/// and every filtered list (each `without`) over ranges of whole and partial months reads the
/// same in both, and the same as the sum of its single days (read from `packages` alone).
#[test]
fn a_version_7_store_migrates_to_the_same_facts() {
    let dir = tempfile::tempdir().unwrap();
    let (old_db, fresh_db) = (dir.path().join("v7.db"), dir.path().join("fresh.db"));
    let dates = [
        "2012-10-17",
        "2014-12-20",
        "2014-12-21",
        "2014-12-31",
        "2015-01-01",
        "2015-01-08",
    ];
    old_and_fresh(&old_db, &fresh_db, &dates);
    crate::legacy_support::to_v7(&old_db);
    assert_eq!(user_version(&old_db), (7, true));
    let mut steps = Vec::new();
    let store = Store::open_with_progress(&old_db, &mut |s| steps.push(s.clone())).unwrap();
    let fresh = Store::open(&fresh_db).unwrap();
    assert_eq!(
        steps.iter().map(|s| s.date.as_str()).collect::<Vec<_>>(),
        dates
    );
    assert_eq!(user_version(&old_db), (12, true));
    assert!(store.integrity_ok().unwrap());
    let (a, b) = (month_sums(&old_db), month_sums(&fresh_db));
    assert!(a.len() > 10_000, "{} month rows", a.len());
    assert!(a == b, "migrated and fresh month rows differ");
    // The sums have something in them: whales, small, repeats, whales' own of both.
    let col = |i: usize| a.values().map(|v| v[i]).sum::<i64>();
    assert!(
        (2..7).all(|i| col(i) > 0),
        "{:?}",
        (2..7).map(col).collect::<Vec<_>>()
    );
    let whole = |w: cranwhales::day::breakdown::Without| {
        let r = cranwhales::date::Range::parse(Some("2014-12-01"), Some("2015-01-31")).unwrap();
        let t = store.filtered_totals(r, w).unwrap();
        t.top(t.len())
    };
    for without in [
        "",
        "whales",
        "small",
        "repeats",
        "whales,small",
        "whales,repeats",
        "small,repeats",
        "whales,small,repeats",
    ] {
        let w = cranwhales::day::breakdown::Without::parse(without).unwrap();
        for (from, to) in [
            ("2012-10-01", "2015-03-14"),
            ("2014-12-01", "2015-01-31"),
            ("2014-12-21", "2015-01-08"),
        ] {
            let r = cranwhales::date::Range::parse(Some(from), Some(to)).unwrap();
            let (a, b) = (
                store.filtered_totals(r, w).unwrap(),
                fresh.filtered_totals(r, w).unwrap(),
            );
            assert_eq!((a.days, a.len(), a.total()), (b.days, b.len(), b.total()));
            assert_eq!(
                a.top(a.len()),
                b.top(b.len()),
                "{from}..{to} without {without}"
            );
        }
        // Two whole months from the month rows = the sum of their stored days, each read alone.
        let mut by_day: BTreeMap<String, u64> = BTreeMap::new();
        for d in [
            "2014-12-20",
            "2014-12-21",
            "2014-12-31",
            "2015-01-01",
            "2015-01-08",
        ] {
            let r = cranwhales::date::Range::parse(Some(d), Some(d)).unwrap();
            let t = store.filtered_totals(r, w).unwrap();
            for p in t.top(t.len()) {
                *by_day.entry(p.package).or_default() += p.downloads;
            }
        }
        let months: BTreeMap<String, u64> = (whole(w).into_iter())
            .map(|p| (p.package, p.downloads))
            .collect();
        assert!(months == by_day, "months and days differ without {without}");
    }
}
