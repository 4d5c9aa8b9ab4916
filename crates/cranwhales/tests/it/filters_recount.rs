//! Small and repeated downloads per package, as ingested and served by the package view, against
//! an independent recount in Python over the raw rows (`tests/reference/filters.py`): every
//! package of several real days, alone and beside the top-N whales.

use crate::ingest_support;
use crate::insight_support;

use std::process::Command;

use cranwhales::progress::Silent;
use cranwhales::store::Store;
use ingest_support::ingest_path;
use insight_support::{day_file, n};

/// A crawler day, a day of identical loops, the largest shared day, a weekend, a holiday.
const DAYS: [&str; 5] = [
    "2013-12-04",
    "2014-12-21",
    "2015-01-08",
    "2015-02-14",
    "2015-01-01",
];

fn recount() -> Vec<serde_json::Value> {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/reference/filters.py");
    let out = Command::new("python3")
        .arg(script)
        .args(DAYS.iter().map(|d| day_file(d)))
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn small_and_repeat_counts_match_the_python_recount() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("f.db");
    for d in DAYS {
        ingest_path(&db, &day_file(d), &Silent).unwrap();
    }
    let store = Store::open(&db).unwrap();
    let (mut small, mut repeats) = (0, 0);
    for day in recount() {
        let date = day["date"].as_str().unwrap();
        for (name, p) in day["packages"].as_object().unwrap() {
            let at = format!("{date} {name}");
            let (s, r) = (n(&p["small"]), n(&p["repeats"]));
            for top in [1u32, 6, 100] {
                let d = &store.package_days(name, date, date, top).unwrap()[0].counts;
                assert_eq!(d.downloads, n(&p["downloads"]), "{at}");
                assert_eq!((d.small, d.repeats), (Some(s), Some(r)), "{at}");
                assert_eq!(d.without_inflated, Some(d.downloads - s - r), "{at}");
                let by_whales: u64 = (p["by_rank"].as_array().unwrap().iter())
                    .filter(|e| n(&e[0]) <= u64::from(top))
                    .map(|e| n(&e[1]))
                    .sum();
                assert_eq!(
                    d.without_whales_inflated,
                    Some(d.without_whales - (s + r - by_whales)),
                    "{at} top {top}"
                );
            }
            small += s;
            repeats += r;
        }
        assert_eq!(
            (n(&day["small"]), n(&day["repeats"])),
            (
                (day["packages"].as_object().unwrap().values())
                    .map(|p| n(&p["small"]))
                    .sum(),
                (day["packages"].as_object().unwrap().values())
                    .map(|p| n(&p["repeats"]))
                    .sum()
            )
        );
    }
    // Both filters had something to find on these days.
    assert!(
        small > 100 && repeats > 10_000,
        "{small} small, {repeats} repeats"
    );
    let r = store
        .package_report(
            "ggplot2",
            cranwhales::date::Range::parse(None, None).unwrap(),
            6,
        )
        .unwrap()
        .unwrap();
    assert!(
        r.filters_note.contains("under 1,000 bytes"),
        "{}",
        r.filters_note
    );
    assert!(
        r.filters_note.contains("within 300 seconds"),
        "{}",
        r.filters_note
    );
}
