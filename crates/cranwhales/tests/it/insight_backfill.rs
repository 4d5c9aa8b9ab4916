//! `cranwhales ingest FROM..TO --jobs N`: a range of days downloaded from a real source server on
//! loopback, two at a time; a day whose download breaks fails alone; a re-run skips the stored
//! days and fetches only what is missing; `--force` ingests stored days again; each stored day is
//! what a one-at-a-time ingest of the same file stores.

use crate::server_support;

use std::process::Command;

use cranwhales::store::Store;
use server_support::*;

fn ingest(
    db: &std::path::Path,
    cache: &std::path::Path,
    url: &str,
    args: &[&str],
) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_cranwhales"))
        .args(["ingest", "--source-url", url, "--db"])
        .arg(db)
        .arg("--cache-dir")
        .arg(cache)
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn backfill_a_range_two_at_a_time() {
    let source = Source::start();
    source.set("2012-10-10", Behaviour::Die);
    let dir = tempfile::tempdir().unwrap();
    let (db, cache) = (dir.path().join("cw.db"), dir.path().join("cache"));
    let range: Vec<String> = (7..=17).map(|d| format!("2012-10-{d:02}")).collect();

    let backfill = || {
        let args = ["--jobs", "2", "2012-10-07..2012-10-17"];
        ingest(&db, &cache, &source.url, &args)
    };

    // 11 days, one of which breaks half way: 10 result lines, one error, exit 1.
    let (code, out, err) = backfill();
    assert_eq!(code, 1, "{err}");
    let mut done: Vec<&str> = out.lines().map(|l| &l[..10]).collect();
    done.sort();
    let mut want: Vec<&str> = range
        .iter()
        .map(String::as_str)
        .filter(|d| *d != "2012-10-10")
        .collect();
    want.sort();
    assert_eq!(done, want, "{out}");
    assert!(out.lines().all(|l| l.contains(" rows, ")), "{out}");
    let errors: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("cranwhales: error:"))
        .collect();
    assert_eq!(errors.len(), 2, "{err}");
    assert!(errors[0].contains("2012-10-10"), "{err}");
    assert!(errors[1].contains("1 of 11 sources failed"), "{err}");
    assert!(
        err.contains("batch: 11/11 days"),
        "one progress line per finished day: {err}"
    );
    let store = Store::open(&db).unwrap();
    let stored: Vec<String> = store.days().unwrap().into_iter().map(|d| d.date).collect();
    assert_eq!(stored, want);
    drop(store);

    // A re-run skips the 10 stored days and fetches only the missing one.
    source.set("2012-10-10", Behaviour::Serve);
    let (code, out, err) = backfill();
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("skipped 10 days already in"), "{err}");
    assert_eq!(out.lines().count(), 1, "{out}");
    assert!(out.starts_with("2012-10-10: 3,945 rows"), "{out}");
    for d in &range {
        let want = if d == "2012-10-10" { 2 } else { 1 };
        assert_eq!(source.hits(d), want, "{d} downloads");
    }

    // --force ingests stored days again (from the cache: no new downloads).
    let (code, out, _) = ingest(
        &db,
        &cache,
        &source.url,
        &["--force", "--jobs", "2", "2012-10-15..2012-10-17"],
    );
    assert_eq!(code, 0);
    assert_eq!(out.lines().count(), 3, "{out}");
    assert_eq!(source.hits("2012-10-16"), 1);

    // Every day equals what a one-at-a-time ingest of the same files stores.
    let single = dir.path().join("single.db");
    let files: Vec<String> = range
        .iter()
        .map(|d| cranlogs().join(format!("{d}.csv.gz")).display().to_string())
        .collect();
    let args: Vec<&str> = files.iter().map(String::as_str).collect();
    let (code, _, err) = ingest(&single, &dir.path().join("c2"), "http://127.0.0.1:9", &args);
    assert_eq!(code, 0, "{err}");
    let (a, b) = (Store::open(&db).unwrap(), Store::open(&single).unwrap());
    assert_eq!(a.days().unwrap(), b.days().unwrap());
    for d in &range {
        assert_eq!(
            a.day_summary(d, 100).unwrap(),
            b.day_summary(d, 100).unwrap(),
            "{d}"
        );
        assert_eq!(
            a.trend_days(d, d).unwrap(),
            b.trend_days(d, d).unwrap(),
            "{d}"
        );
    }

    // Bad ranges are one-line errors.
    let (code, _, err) = ingest(
        &db,
        &cache,
        &source.url,
        &["2012-10-17..2012-10-07", "2011-01-01..2011-01-02"],
    );
    assert_eq!(code, 1);
    assert!(
        err.contains(
            "2012-10-17..2012-10-07: bad range FROM..TO: from 2012-10-17 is after to 2012-10-07"
        ),
        "{err}"
    );
    assert!(err.contains("outside the CRAN logs"), "{err}");
}
