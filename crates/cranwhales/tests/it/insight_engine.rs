//! Behaviour profiles, per-package counts and day stats of real days, as ingested and stored,
//! against the independent Python recount (`tests/reference/recount.py`): every fact of every
//! top-100 whale, every package's downloads and unique downloaders, its downloads without the
//! top N whales, and each day's trend numbers.

use crate::ingest_support;
use crate::insight_support;
use crate::legacy_support;

use cranwhales::progress::Silent;
use cranwhales::store::Store;
use cranwhales::summary::Whale;
use ingest_support::{ingest_path, read_day};
use insight_support::*;

/// An archive crawler, a day without R versions, a farm of identical loops, a single-package
/// loop beside steady crawlers, and a classroom at the top.
const DAYS: [&str; 5] = [
    "2012-10-17",
    "2013-12-04",
    "2014-12-21",
    "2015-02-14",
    "2015-01-10",
];

fn check_whale(date: &str, w: &Whale, r: &serde_json::Value) {
    let at = format!("{date} rank {} ip_id {}", w.rank, w.ip_id);
    assert_eq!(w.ip_id, n(&r["ip_id"]), "{at}");
    let p = w.profile.as_ref().expect("profile stored");
    let f = &p.facts;
    let mine = [
        f.downloads,
        f.packages,
        f.day_packages,
        f.top_package_downloads,
        f.versions,
        f.no_r_version,
        u64::from(f.active_hours),
        u64::from(f.first),
        u64::from(f.last),
        f.burst,
        u64::from(f.burst_start),
        f.whale_downloads,
    ];
    let keys = [
        "downloads",
        "packages",
        "day_packages",
        "top_package_downloads",
        "versions",
        "no_r_version",
        "active_hours",
        "first",
        "last",
        "burst",
        "burst_start",
        "whale_downloads",
    ];
    for (k, v) in keys.iter().zip(mine) {
        assert_eq!(v, n(&r[*k]), "{at} {k}");
    }
    assert_eq!(f.top_package, r["top_package"].as_str().unwrap(), "{at}");
    let gaps = [f.gap_q1, f.gap_median, f.gap_q3].map(|g| g.map(u64::from));
    let want = ["gap_q1", "gap_median", "gap_q3"].map(|k| r[k].as_u64());
    assert_eq!(gaps, want, "{at} gaps");
    for (mix, key) in [(&f.os, "os"), (&f.arch, "arch")] {
        let mut got: Vec<(String, u64)> =
            mix.iter().map(|m| (m.name.clone(), m.downloads)).collect();
        let mut exp: Vec<(String, u64)> = (r[key].as_object().unwrap().iter())
            .map(|(k, v)| (k.clone(), n(v)))
            .collect();
        got.sort();
        exp.sort();
        assert_eq!(got, exp, "{at} {key}");
    }
    assert_eq!(
        p.behaviour.key(),
        r["behaviour"].as_str().unwrap(),
        "{at} behaviour"
    );
    assert_eq!(w.downloads, f.downloads, "{at}");
    assert!(!p.sentence.is_empty());
}

#[test]
fn profiles_packages_and_stats_match_the_python_recount() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    for date in DAYS {
        ingest_path(&db, &day_file(date), &Silent).unwrap();
    }
    let store = Store::open(&db).unwrap();
    let reference = recount(&DAYS, None);
    let mut whale_only = 0;
    for (date, r) in DAYS.iter().zip(&reference) {
        assert_eq!(r["date"], *date);
        let s = store.day_summary(date, 100).unwrap().unwrap();
        let rw = r["whales"].as_array().unwrap();
        assert_eq!(s.whales.len(), rw.len(), "{date}");
        for (w, rw) in s.whales.iter().zip(rw) {
            check_whale(date, w, rw);
        }

        // Trends: top 1/6/25 and behaviour counts.
        let t = store.trend_days(date, date).unwrap();
        assert_eq!(t.len(), 1);
        let top = &r["top_downloads"];
        assert_eq!(
            (t[0].top1, t[0].top6, t[0].top25),
            (n(&top["1"]), n(&top["6"]), n(&top["25"])),
            "{date} top"
        );
        let counts = t[0].behaviours.as_ref().unwrap();
        for (b, k) in counts {
            assert_eq!(
                u64::from(*k),
                r["behaviours"][b.key()].as_u64().unwrap_or(0),
                "{date} {b:?}"
            );
        }

        // Every package: downloads, unique downloaders, without the top 1/6/25/100.
        let pkgs = r["package_counts"].as_object().unwrap();
        assert_eq!(pkgs.len() as u64, s.totals.packages, "{date}");
        for (name, rp) in pkgs {
            let tops: &[u32] = if rp["by_rank"].as_array().unwrap().is_empty() {
                &[6]
            } else {
                &[1, 6, 25, 100]
            };
            for &top in tops {
                let d = store.package_days(name, date, date, top).unwrap();
                assert_eq!(d.len(), 1);
                let d = &d[0];
                assert_eq!(d.counts.downloads, n(&rp["downloads"]), "{date} {name}");
                assert_eq!(
                    d.downloaders,
                    Some(n(&rp["downloaders"])),
                    "{date} {name} downloaders"
                );
                assert_eq!(
                    d.counts.without_whales,
                    without(rp, u64::from(top)),
                    "{date} {name} top {top}"
                );
                assert_eq!(d.baseline, Some(n(&r["baseline"])), "{date} baseline");
            }
            if without(rp, 100) == 0 {
                whale_only += 1;
            }
        }
    }
    // Packages that only whales downloaded on their day exist on these days and were checked.
    assert!(whale_only > 10, "{whale_only} whale-only packages");
}

/// A store written by the previous schema (version 1) opens, gains the new columns, keeps its
/// days (without profiles or unique downloaders), and a re-ingested day gets them.
#[test]
fn a_version_1_store_is_migrated_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("old.db");
    let date = "2012-10-17";
    let day = read_day(&day_file(date), Some(date), &Silent).unwrap();
    legacy_support::write_v2(&db, &[day]);
    {
        // Turn it into what version 1 wrote: no v2 columns, user_version 1.
        let c = rusqlite::Connection::open(&db).unwrap();
        c.execute_batch(
            "ALTER TABLE days DROP COLUMN top1; ALTER TABLE days DROP COLUMN top6;
             ALTER TABLE days DROP COLUMN top25; ALTER TABLE days DROP COLUMN top100;
             ALTER TABLE days DROP COLUMN behaviours; ALTER TABLE days DROP COLUMN no_r_rows;
             ALTER TABLE days DROP COLUMN baseline;
             ALTER TABLE whales DROP COLUMN behaviour; ALTER TABLE whales DROP COLUMN profile;
             ALTER TABLE packages DROP COLUMN downloaders; ALTER TABLE packages DROP COLUMN whale_ranks;
             PRAGMA user_version = 1;",
        )
        .unwrap();
    }
    let store = Store::open(&db).unwrap();
    let s = store.day_summary("2012-10-17", 5).unwrap().unwrap();
    assert_eq!(s.whales.len(), 5);
    assert!(s.whales.iter().all(|w| w.profile.is_none()));
    let t = store.trend_days("2012-10-17", "2012-10-17").unwrap();
    assert_eq!(t[0].behaviours, None);
    let p = store
        .package_days("ggplot2", "2012-10-01", "2012-10-31", 6)
        .unwrap();
    assert_eq!(p.len(), 1);
    assert_eq!((p[0].downloaders, p[0].baseline), (None, None));
    assert!(store.integrity_ok().unwrap());
    drop(store);

    ingest_path(&db, &day_file("2012-10-17"), &Silent).unwrap();
    let store = Store::open(&db).unwrap();
    let s = store.day_summary("2012-10-17", 5).unwrap().unwrap();
    assert!(s.whales.iter().all(|w| w.profile.is_some()));
    let p = store
        .package_days("ggplot2", "2012-10-01", "2012-10-31", 6)
        .unwrap();
    assert!(p[0].downloaders.is_some() && p[0].baseline.is_some());
}
