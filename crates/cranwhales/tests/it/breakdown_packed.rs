//! Breakdowns of a packed month (version 12, `store::breakdown::month`), on the eight real days
//! of December 2014 that `breakdown_recount` checks, closed by a January day: once packed, every
//! package's breakdowns, releases and kinds equal what the days' own chunks answered, and the
//! independent Python recount; the month takes fewer bytes than its days' chunks; a day stored
//! again in the packed month is read from its own chunks, a removed one is not counted, and
//! packing again takes both in.

use crate::breakdown_recount::{expected, recount, DAYS};
use crate::ingest_support::ingest_path;
use crate::insight_support::day_file;

use std::collections::{BTreeSet, HashMap};
use std::path::Path;

use cranwhales::date::Range;
use cranwhales::day::breakdown::Without;
use cranwhales::progress::Silent;
use cranwhales::store::breakdown::By;
use cranwhales::store::Store;

const BY: [&str; 5] = ["version", "country", "os", "r_version", "arch"];
/// The day after the month, so that December is closed and packed.
const LATER: &str = "2015-01-02";
/// The day checked against the recount, package by package, in the packed month.
const CHECKED: &str = "2014-12-21";

fn range(from: &str, to: &str) -> Range {
    Range::parse(Some(from), Some(to)).unwrap()
}

/// Every answer the store gives for `packages`: breakdowns over the whole range and over the
/// checked day by every field (all, and without every kind), releases, and kinds.
fn answers(store: &Store, packages: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for p in packages {
        for r in [range(DAYS[0], LATER), range(CHECKED, CHECKED)] {
            for by in BY {
                for w in ["", "whales,small,repeats"] {
                    let w = Without::parse(w).unwrap();
                    let b = store.breakdown(p, r, By::parse(by).unwrap(), w).unwrap();
                    out.push(format!("{b:?}"));
                }
            }
        }
        out.push(format!("{:?}", store.releases(p).unwrap()));
        out.push(format!(
            "{:?}",
            store.kinds(p, range(DAYS[0], LATER), 100).unwrap()
        ));
    }
    out
}

/// (bytes of December's daily chunks, of its month pack, its days with daily chunks).
fn december(db: &Path) -> (i64, i64, i64) {
    let c = rusqlite::Connection::open(db).unwrap();
    // Day numbers of 2014-12-01 and 2014-12-31, month number of 2014-12; keys × 2^20.
    let (lo, hi, month) = (16405_i64 << 20, (16435_i64 << 20) + (1 << 20) - 1, 539_i64);
    let q = |sql: &str, a: i64, b: i64| -> i64 { c.query_row(sql, [a, b], |r| r.get(0)).unwrap() };
    (
        q(
            "SELECT coalesce(sum(length(data)), 0) FROM breakdowns WHERE day_chunk BETWEEN ?1 AND ?2",
            lo,
            hi,
        ),
        q(
            "SELECT coalesce(sum(length(data)), 0) FROM breakdown_months
             WHERE month_chunk BETWEEN ?1 AND ?2",
            month << 20,
            (month << 20) + (1 << 20) - 1,
        ),
        q(
            "SELECT count(DISTINCT day_chunk >> 20) FROM breakdowns WHERE day_chunk BETWEEN ?1 AND ?2",
            lo,
            hi,
        ),
    )
}

#[test]
fn a_packed_month_answers_as_its_days_did() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("cw.db");
    for d in DAYS.iter().chain([&LATER]) {
        ingest_path(&db, &day_file(d), &Silent).unwrap();
    }
    let reference = recount();
    // Every 16th package of the month by name, and the largest ones (a debug build answers
    // ~1,000 breakdowns a second; all ~8,000 packages took 11 minutes).
    let named = ["ggplot2", "Rcpp", "plyr", "digest", "MASS"];
    let packages: Vec<String> = (reference.values())
        .flat_map(|d| d.keys().cloned())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .enumerate()
        .filter(|(i, p)| i % 16 == 0 || named.contains(&p.as_str()))
        .map(|(_, p)| p)
        .collect();
    let mut store = Store::open(&db).unwrap();
    let before = answers(&store, &packages);
    let (daily, packed, days) = december(&db);
    assert_eq!((packed, days), (0, 8), "December is not packed yet");

    // `cranwhales migrate` packs every month before the newest day's, a line per month.
    drop(store);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_cranwhales"))
        .args(["migrate", "--no-vacuum", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert_eq!(
        err.lines().next(),
        Some("migrate: packing 2014-12 (1/1: package history and breakdowns)"),
        "{err}"
    );
    store = Store::open(&db).unwrap();
    let (left, month, days) = december(&db);
    assert_eq!((left, days), (0, 0), "December's daily chunks are gone");
    assert!(
        month * 10 < daily * 9,
        "the month pack takes {month} bytes, its days' chunks took {daily}"
    );
    eprintln!("December's breakdowns: {daily} bytes of daily chunks, {month} packed");
    let after = answers(&store, &packages);
    assert_eq!(before.len(), after.len());
    for (b, a) in before.iter().zip(&after) {
        assert_eq!(b, a, "an answer changed with the packing");
    }

    // The packed day against the independent recount: every 4th package, every field.
    let mut checked = 0;
    for (i, (p, dims)) in reference[CHECKED].iter().enumerate() {
        if i % 4 != 0 && !named.contains(&p.as_str()) {
            continue;
        }
        for by in BY {
            for without in ["", "whales,small,repeats"] {
                let w = Without::parse(without).unwrap();
                let r = (store.breakdown(p, range(CHECKED, CHECKED), By::parse(by).unwrap(), w))
                    .unwrap()
                    .unwrap();
                let got: HashMap<Option<String>, u64> = r
                    .rows
                    .iter()
                    .map(|k| (k.key.clone(), k.downloads))
                    .collect();
                assert_eq!(got, expected(&dims[by], without), "{p} by {by} {without}");
                checked += 1;
            }
        }
    }
    assert!(checked > 5_000, "only {checked} breakdowns checked");

    // A day stored again (here half of its rows, so that its answers differ) is read from its
    // own chunks, not from the month's older copy of it: it answers as a store of that file
    // alone does. A removed day is not counted. Packing again takes both in.
    let day = |s: &Store| -> Vec<String> {
        let mut out = Vec::new();
        for p in &packages {
            for by in BY {
                let r = range(DAYS[2], DAYS[2]);
                let b = (s.breakdown(p, r, By::parse(by).unwrap(), Without::default())).unwrap();
                // A package not in the half file is unknown to a store of it alone.
                let b = b.map_or((0, Vec::new()), |b| (b.total, b.rows));
                out.push(format!("{p} {by} {b:?}"));
            }
        }
        out
    };
    let whole = day(&store);
    drop(store);
    let half = dir.path().join("half").join(format!("{}.csv.gz", DAYS[2]));
    half_of(&day_file(DAYS[2]), &half);
    ingest_path(&db, &half, &Silent).unwrap();
    let alone = dir.path().join("alone.db");
    ingest_path(&alone, &half, &Silent).unwrap();
    let alone = Store::open(&alone).unwrap();
    store = Store::open(&db).unwrap();
    assert_eq!(
        december(&db).2,
        1,
        "the day stored again has chunks of its own"
    );
    let want = day(&alone);
    assert_ne!(want, whole);
    let got = day(&store);
    if let Some((g, w)) = got.iter().zip(&want).find(|(g, w)| g != w) {
        panic!("the day stored again answers as its file alone:\n{g}\n{w}");
    }
    let all = range(DAYS[0], DAYS[7]);
    let by = By::parse("country").unwrap();
    let count = |s: &Store, r: Range| {
        let r = (s.breakdown("ggplot2", r, by, Without::default()))
            .unwrap()
            .unwrap();
        (r.days, r.total)
    };
    let (days, total) = count(&store, all);
    let (_, removed) = count(&store, range(DAYS[4], DAYS[4]));
    assert!(removed > 0);
    assert!(store.remove_day(DAYS[4]).unwrap());
    assert_eq!(count(&store, all), (days - 1, total - removed));
    assert!(store.pack_months(false).unwrap() >= 1);
    assert_eq!(december(&db).2, 0, "packed again");
    assert_eq!(count(&store, all), (days - 1, total - removed));
    assert_eq!(day(&store), want);
}

/// Writes every other row of the log `from` (and its header) to `to`, gzipped.
fn half_of(from: &Path, to: &Path) {
    use std::io::{BufRead, BufReader, Write};
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    let r = BufReader::new(flate2::read::GzDecoder::new(
        std::fs::File::open(from).unwrap(),
    ));
    let f = std::fs::File::create(to).unwrap();
    let mut w = flate2::write::GzEncoder::new(f, flate2::Compression::fast());
    for (i, l) in r.lines().enumerate() {
        if i % 2 == 0 {
            writeln!(w, "{}", l.unwrap()).unwrap();
        }
    }
    w.finish().unwrap();
}
