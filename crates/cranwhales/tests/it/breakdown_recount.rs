//! Breakdowns, releases and kinds (issue 34) on eight consecutive real days, against an
//! independent recount in Python over the raw CSV (`tests/reference/breakdown.py`, a plain CSV
//! field parser, no code shared with the engine): every package of two days by every field, with
//! and without whales, small and repeated downloads (every combination), exactly; a few packages
//! over the whole range through the API; each
//! version's first day and shares by the documented rule; the kinds adding up to the raw count.

use crate::engine_support::{cli, cli_ok};
use crate::insight_support;
use crate::server_support;

use std::collections::{BTreeMap, HashMap};
use std::process::Command;

use cranwhales::date::Range;
use cranwhales::day::breakdown::Without;
use cranwhales::store::breakdown::By;
use cranwhales::store::Store;
use insight_support::{day_file, n, thousands};
use server_support::*;

/// Eight consecutive days (none of the filter tests' days but 2014-12-21), so that releases
/// have 1- and 7-day windows to show.
pub(crate) const DAYS: [&str; 8] = [
    "2014-12-16",
    "2014-12-17",
    "2014-12-18",
    "2014-12-19",
    "2014-12-20",
    "2014-12-21",
    "2014-12-22",
    "2014-12-23",
];
/// The days checked package by package (a weekday and a Sunday).
const EXHAUSTIVE: [&str; 2] = ["2014-12-18", "2014-12-21"];
const BY: [&str; 5] = ["version", "country", "os", "r_version", "arch"];
/// The recount's key of a missing field.
const MISSING: &str = "\u{0}";

/// A key's counts in the recount: downloads, by whales, small, repeats, small by whales,
/// repeats by whales.
pub(crate) type Six = [u64; 6];

/// day → package → by → key → counts.
pub(crate) type Recount =
    BTreeMap<String, HashMap<String, HashMap<String, HashMap<Option<String>, Six>>>>;

/// Every `without` (whales, small, repeats), as the API spells it.
pub(crate) const WITHOUT: [&str; 8] = [
    "",
    "whales",
    "small",
    "repeats",
    "whales,small",
    "whales,repeats",
    "small,repeats",
    "whales,small,repeats",
];

/// The recount of `DAYS`, made once per test run (it takes over a minute on a loaded machine)
/// and shared by the tests that check against it.
pub(crate) fn recount() -> &'static Recount {
    static RECOUNT: std::sync::OnceLock<Recount> = std::sync::OnceLock::new();
    RECOUNT.get_or_init(make_recount)
}

fn make_recount() -> Recount {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/reference/breakdown.py");
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
    let days: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    let mut all = Recount::new();
    for d in days {
        let date = d["date"].as_str().unwrap().to_owned();
        let mut pkgs = HashMap::new();
        for (p, by) in d["packages"].as_object().unwrap() {
            let mut dims = HashMap::new();
            for (b, keys) in by.as_object().unwrap() {
                let m = (keys.as_object().unwrap().iter())
                    .map(|(k, v)| {
                        let key = (k != MISSING).then(|| k.clone());
                        (key, std::array::from_fn(|i| n(&v[i])))
                    })
                    .collect();
                dims.insert(b.clone(), m);
            }
            pkgs.insert(p.clone(), dims);
        }
        all.insert(date, pkgs);
    }
    all
}

/// The recount's rows of `keys`: key → downloads without the kinds `without` names (the rows
/// in none of them: all, less whales', small and repeated ones, plus those taken out twice),
/// zeros left out as the API leaves them out.
pub(crate) fn expected(
    keys: &HashMap<Option<String>, Six>,
    without: &str,
) -> HashMap<Option<String>, u64> {
    let has = |w: &str| without.split(',').any(|p| p == w);
    let (w, s, r) = (has("whales"), has("small"), has("repeats"));
    (keys.iter())
        .map(|(k, &[n, wh, sm, rp, wsm, wrp])| {
            let mut left = n as i64;
            left -= [wh, sm, rp]
                .iter()
                .zip([w, s, r])
                .map(|(&c, on)| if on { c as i64 } else { 0 })
                .sum::<i64>();
            left += i64::from(w && s) * wsm as i64 + i64::from(w && r) * wrp as i64;
            (k.clone(), left as u64)
        })
        .filter(|&(_, n)| n > 0)
        .collect()
}

fn range(from: &str, to: &str) -> Range {
    Range::parse(Some(from), Some(to)).unwrap()
}

#[tokio::test]
async fn breakdowns_releases_and_kinds_equal_the_python_recount() {
    let server = App::start(&DAYS, &["--source-url", "http://127.0.0.1:9"]).await;
    let reference = recount();
    let store = Store::open(&server.dir.path().join("cw.db")).unwrap();

    // Every package of two days, by every field, with and without whales, small and repeats.
    let mut checked = 0;
    for date in EXHAUSTIVE {
        for (p, dims) in &reference[date] {
            for by in BY {
                for without in WITHOUT {
                    let w = Without::parse(without).unwrap();
                    let r = (store.breakdown(p, range(date, date), By::parse(by).unwrap(), w))
                        .unwrap()
                        .unwrap();
                    assert_eq!(r.days, 1);
                    assert!(r.days_without_breakdowns.is_empty());
                    assert!(r.days_without_filters.is_empty());
                    let got: HashMap<Option<String>, u64> = r
                        .rows
                        .iter()
                        .map(|k| (k.key.clone(), k.downloads))
                        .collect();
                    assert_eq!(
                        got,
                        expected(&dims[by], without),
                        "{date} {p} by {by} {without}"
                    );
                    assert!(r.rows.windows(2).all(|w| w[0].downloads >= w[1].downloads));
                    checked += 1;
                }
            }
        }
    }
    assert!(checked > 80_000, "only {checked} breakdowns checked");
    // The filters are there to be taken out: some keys have them.
    let filtered: u64 = (reference[EXHAUSTIVE[0]].values())
        .map(|d| d["country"].values().map(|c| c[2] + c[3]).sum::<u64>())
        .sum();
    assert!(filtered > 1_000, "{filtered} small or repeated downloads");

    // A few packages over the eight days through the API, summed from the recount.
    let (a, q) = (server.addr, format!("from={}&to={}", DAYS[0], DAYS[7]));
    for p in ["ggplot2", "Rcpp", "plyr", "digest", "MASS"] {
        for by in BY {
            for without in WITHOUT {
                let w = format!("&without={without}");
                let r = get(
                    a,
                    &format!("/api/packages/{p}/breakdown?by={by}&{q}{w}"),
                    &[],
                )
                .await;
                assert_eq!(r.status, 200, "{}", r.text());
                let j = r.json();
                assert_eq!(j["by"], by);
                assert_eq!(j["days"], 8);
                let mut want: HashMap<Option<String>, u64> = HashMap::new();
                for day in reference.values() {
                    for (k, n) in expected(&day[p][by], without) {
                        *want.entry(k).or_default() += n;
                    }
                }
                let rows = j["rows"].as_array().unwrap();
                let got: HashMap<Option<String>, u64> = (rows.iter())
                    .map(|r| (r["key"].as_str().map(str::to_owned), n(&r["downloads"])))
                    .collect();
                assert_eq!(got, want, "{p} by {by} without {without}");
                let total: u64 = want.values().sum();
                assert_eq!(n(&j["total"]), total);
            }
        }
    }
    cli_equals_the_api_and_the_recount(a, &server.db(), reference).await;
    releases_equal_the_recount(a, reference).await;
    kinds_add_up(a, reference).await;
    steps_equal_the_recount(a, reference).await;
}

/// `cranwhales package P --by F [--without W]`: with `--json` it prints what the API answers,
/// and its table holds the recount's keys and downloads (a missing field as `(missing)`), most
/// first, with the recount's total in its heading.
async fn cli_equals_the_api_and_the_recount(
    a: std::net::SocketAddr,
    db: &std::path::Path,
    reference: &Recount,
) {
    let p = "ggplot2";
    for by in BY {
        for without in ["", "whales", "whales,small,repeats"] {
            let mut args = vec!["package", p, "--by", by, "--from", DAYS[0], "--to", DAYS[7]];
            if !without.is_empty() {
                args.extend(["--without", without]);
            }
            let path = format!(
                "/api/packages/{p}/breakdown?by={by}&from={}&to={}&without={without}",
                DAYS[0], DAYS[7]
            );
            let api = get(a, &path, &[]).await.json();
            let json = cli_ok(db, [&args[..], &["--json"]].concat());
            let json: serde_json::Value = serde_json::from_str(&json).unwrap();
            assert_eq!(json, api, "{args:?}");

            let text = cli_ok(db, &args);
            let mut want: HashMap<Option<String>, u64> = HashMap::new();
            for day in reference.values() {
                for (k, n) in expected(&day[p][by], without) {
                    *want.entry(k).or_default() += n;
                }
            }
            let total: u64 = want.values().sum();
            let lines: Vec<&str> = text.lines().collect();
            assert!(
                lines[0].contains(&format!("{} downloads on 8 stored days", thousands(total))),
                "{}",
                lines[0]
            );
            assert_eq!(
                lines[2].split_whitespace().collect::<Vec<_>>(),
                [by, "downloads", "share"]
            );
            let rows: Vec<(Option<String>, u64)> = (lines[3..].iter())
                .take_while(|l| !l.is_empty())
                .map(|l| {
                    let f: Vec<&str> = l.split_whitespace().collect();
                    assert_eq!(f.len(), 3, "{l}");
                    let key = (f[0] != "(missing)").then(|| f[0].to_owned());
                    (key, f[1].replace(',', "").parse().unwrap())
                })
                .collect();
            assert!(rows.windows(2).all(|w| w[0].1 >= w[1].1), "{text}");
            assert_eq!(
                rows.into_iter().collect::<HashMap<_, _>>(),
                want,
                "{args:?}"
            );
        }
    }
    // Bad input: one line, exit 2 (clap's usage errors), naming what is allowed.
    for (args, word) in [
        (
            &["package", p, "--by", "planet"][..],
            "expected version, country",
        ),
        (
            &["package", p, "--by", "os", "--without", "bots"],
            "expected any of whales",
        ),
        (&["package", p, "--without", "whales"], "--by"),
        (
            &["package", p, "--by", "os", "--whales", "3"],
            "cannot be used with",
        ),
    ] {
        let out = cli(db, args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            out.stdout.is_empty() && err.lines().count() == 1,
            "{args:?}: {err}"
        );
        assert!(err.contains(word), "{args:?}: {err}");
    }
    let out = cli(db, ["package", "ggplot3", "--by", "os"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("'ggplot3' was not downloaded"), "{err}");
}

/// A bin as expected: first and last day, span, stored days.
type WantBin = (&'static str, &'static str, u64, u64);

/// `step=`: each bin (days, ISO weeks from Monday, the month) cut to the range holds the
/// recount's sum over its days, its span and its stored days; the whole range's rows as without
/// a step; a bin without a stored day is left out.
async fn steps_equal_the_recount(a: std::net::SocketAddr, reference: &Recount) {
    // 2014-12-16 is a Tuesday: weeks 16–21 (cut to the range) and 22–23. The last case starts
    // in a week with no stored day (left out) and cuts the next one at the 18th (3 of 4 stored).
    let cases: [(&str, &str, &str, &[WantBin]); 4] = [
        (
            "week",
            DAYS[0],
            DAYS[7],
            &[
                ("2014-12-16", "2014-12-21", 6, 6),
                ("2014-12-22", "2014-12-23", 2, 2),
            ],
        ),
        (
            "month",
            DAYS[0],
            DAYS[7],
            &[("2014-12-16", "2014-12-23", 8, 8)],
        ),
        (
            "day",
            DAYS[5],
            DAYS[7],
            &[
                ("2014-12-21", "2014-12-21", 1, 1),
                ("2014-12-22", "2014-12-22", 1, 1),
                ("2014-12-23", "2014-12-23", 1, 1),
            ],
        ),
        (
            "week",
            "2014-12-08",
            DAYS[2],
            &[("2014-12-15", "2014-12-18", 4, 3)],
        ),
    ];
    for (step, from, to, want_bins) in cases {
        for p in ["ggplot2", "Rcpp"] {
            for (by, without) in [
                ("version", ""),
                ("version", "whales"),
                ("country", ""),
                ("version", "whales,small,repeats"),
            ] {
                let w = if without.is_empty() {
                    String::new()
                } else {
                    format!("&without={without}")
                };
                let url = format!(
                    "/api/packages/{p}/breakdown?by={by}&from={from}&to={to}&step={step}{w}"
                );
                let r = get(a, &url, &[]).await;
                assert_eq!(r.status, 200, "{url}: {}", r.text());
                let j = r.json();
                assert_eq!(j["step"], step);
                let bins = j["bins"].as_array().unwrap();
                assert_eq!(bins.len(), want_bins.len(), "{url}: {j}");
                let mut whole: HashMap<Option<String>, u64> = HashMap::new();
                for (b, &(bf, bt, span, days)) in bins.iter().zip(want_bins) {
                    assert_eq!(
                        (b["from"].as_str(), b["to"].as_str()),
                        (Some(bf), Some(bt)),
                        "{url}"
                    );
                    assert_eq!((n(&b["span"]), n(&b["days"])), (span, days), "{url} {bf}");
                    let mut want: HashMap<Option<String>, u64> = HashMap::new();
                    for (_, day) in reference.range(bf.to_owned()..=bt.to_owned()) {
                        for (k, c) in expected(&day[p][by], without) {
                            *want.entry(k.clone()).or_default() += c;
                            *whole.entry(k).or_default() += c;
                        }
                    }
                    let got: HashMap<Option<String>, u64> = (b["rows"].as_array().unwrap().iter())
                        .map(|r| (r["key"].as_str().map(str::to_owned), n(&r["downloads"])))
                        .collect();
                    assert_eq!(got, want, "{url} bin {bf}");
                }
                let got: HashMap<Option<String>, u64> = (j["rows"].as_array().unwrap().iter())
                    .map(|r| (r["key"].as_str().map(str::to_owned), n(&r["downloads"])))
                    .collect();
                assert_eq!(got, whole, "{url}: the range's rows");
            }
        }
    }
}

/// Every version's first day among the stored days and its shares over `(first, first + w]`.
async fn releases_equal_the_recount(a: std::net::SocketAddr, reference: &Recount) {
    let dates: Vec<&String> = reference.keys().collect();
    let mut with_new_version = 0;
    for p in [
        "ggplot2", "Rcpp", "plyr", "digest", "dplyr", "httr", "curl", "jsonlite",
    ] {
        let r = get(a, &format!("/api/packages/{p}/releases"), &[]).await;
        assert_eq!(r.status, 200, "{}", r.text());
        let j = r.json();
        assert_eq!(j["days"], 8);
        let per_day: Vec<HashMap<Option<String>, u64>> = (dates.iter())
            .map(|d| {
                (reference[*d].get(p)).map_or_else(HashMap::new, |b| expected(&b["version"], ""))
            })
            .collect();
        let versions = j["versions"].as_array().unwrap();
        let mut seen = 0;
        for (i, day) in per_day.iter().enumerate() {
            for (v, _) in day
                .iter()
                .filter(|(v, _)| per_day[..i].iter().all(|e| !e.contains_key(*v)))
            {
                seen += 1;
                with_new_version += usize::from(i > 0);
                let got = (versions.iter())
                    .find(|r| r["version"].as_str() == v.as_deref())
                    .unwrap_or_else(|| panic!("{p} {v:?} missing"));
                assert_eq!(got["first_day"], dates[i].as_str(), "{p} {v:?}");
                let after = (0..i).rev().find(|&j| !per_day[j].is_empty());
                assert_eq!(
                    got["after"],
                    after.map_or(serde_json::Value::Null, |j| dates[j].as_str().into())
                );
                assert_eq!(got["before_first_stored"], after.is_none());
                for (s, w) in got["shares"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .zip([1usize, 7, 30])
                {
                    let window = &per_day[i + 1..(i + 1 + w).min(per_day.len())];
                    let vd: u64 = window.iter().map(|d| d.get(v).copied().unwrap_or(0)).sum();
                    let all: u64 = window.iter().map(|d| d.values().sum::<u64>()).sum();
                    assert_eq!(n(&s["stored_days"]), window.len() as u64, "{p} {v:?} {w}");
                    assert_eq!(
                        (n(&s["version_downloads"]), n(&s["package_downloads"])),
                        (vd, all)
                    );
                }
            }
        }
        assert_eq!(versions.len(), seen, "{p}");
    }
    assert!(with_new_version > 0, "no version came out during the days");
}

/// Small, repeats, whales and the rest add up to the raw count, which is the recount's.
async fn kinds_add_up(a: std::net::SocketAddr, reference: &Recount) {
    for p in ["ggplot2", "Rcpp", "plyr", "digest", "MASS"] {
        for whales in [1, 6, 100] {
            let q = format!("from={}&to={}&whales={whales}", DAYS[0], DAYS[7]);
            let r = get(a, &format!("/api/packages/{p}/kinds?{q}"), &[]).await;
            assert_eq!(r.status, 200, "{}", r.text());
            let k = r.json();
            let raw: u64 = (reference.values())
                .map(|d| d[p]["version"].values().map(|c| c[0]).sum::<u64>())
                .sum();
            assert_eq!(n(&k["raw"]), raw, "{p}");
            let parts = ["small", "repeats", "whale_downloads", "rest"].map(|f| n(&k[f]));
            assert_eq!(parts.iter().sum::<u64>(), raw, "{p} {whales}: {k}");
            if whales == 100 {
                let by_whales: u64 = (reference.values())
                    .map(|d| d[p]["version"].values().map(|c| c[1]).sum::<u64>())
                    .sum();
                assert!(parts[2] <= by_whales, "{p}: {k}");
            }
        }
    }
}

#[tokio::test]
async fn bad_breakdown_parameters_are_400_naming_them() {
    let server = App::start(&["2014-12-21"], &["--source-url", "http://127.0.0.1:9"]).await;
    let a = server.addr;
    for (path, word) in [
        ("/api/packages/ggplot2/breakdown", "by is required"),
        ("/api/packages/ggplot2/breakdown?by=planet", "by must be"),
        (
            "/api/packages/ggplot2/breakdown?by=os&without=small,bots",
            "without must be",
        ),
        (
            "/api/packages/ggplot2/breakdown?by=os&from=2014-13-01",
            "from",
        ),
        ("/api/packages/ggplot2/kinds?whales=0", "whales"),
        (
            "/api/packages/ggplot2/breakdown?by=os&step=hour",
            "step must be",
        ),
        (
            "/api/packages/ggplot2/breakdown?by=os&step=day",
            "at most 1000",
        ),
    ] {
        let r = get(a, path, &[]).await;
        assert_eq!(r.status, 400, "{path}");
        assert!(r.error().contains(word), "{path}: {}", r.error());
    }
    let r = get(a, "/api/packages/nosuchpackage/breakdown?by=os", &[]).await;
    assert_eq!(r.status, 404);
    let r = get(a, "/api/packages/nosuchpackage/releases", &[]).await;
    assert_eq!(r.status, 404);
}

/// Version 5 → 6: the stored days stay and get no breakdowns (their raw rows are gone), which the
/// API names; a day ingested again gets its breakdowns; removing a day removes them.
#[test]
fn older_days_are_named_as_without_breakdowns_until_ingested_again() {
    use crate::ingest_support::ingest_path;
    use crate::legacy_support::to_v5;
    use cranwhales::progress::Silent;

    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("v5.db");
    let days = ["2013-12-01", "2013-12-02"];
    for d in days {
        ingest_path(&db, &day_file(d), &Silent).unwrap();
    }
    to_v5(&db);
    let rows = |db: &std::path::Path| -> i64 {
        let c = rusqlite::Connection::open(db).unwrap();
        c.query_row("SELECT count(*) FROM breakdowns", [], |r| r.get(0))
            .unwrap()
    };
    let mut store = Store::open(&db).unwrap();
    assert_eq!(rows(&db), 0);
    let all = range(days[0], days[1]);
    let by = By::parse("country").unwrap();
    let r = store
        .breakdown("ggplot2", all, by, Without::default())
        .unwrap()
        .unwrap();
    assert_eq!((r.days, r.total), (0, 0));
    assert_eq!(r.days_without_breakdowns, days);
    drop(store);

    ingest_path(&db, &day_file(days[1]), &Silent).unwrap();
    store = Store::open(&db).unwrap();
    let r = store
        .breakdown("ggplot2", all, by, Without::default())
        .unwrap()
        .unwrap();
    assert_eq!(r.days, 1);
    assert_eq!(r.days_without_breakdowns, [days[0]]);
    assert!(r.total > 0);
    // Version 9 fills a page per chunk: a few chunks a day (version 7 wrote one per 128 ids).
    assert!(rows(&db) >= 2, "{} chunks", rows(&db));

    assert!(store.remove_day(days[1]).unwrap());
    assert_eq!(rows(&db), 0);
    let keys: i64 = rusqlite::Connection::open(&db)
        .unwrap()
        .query_row("SELECT count(*) FROM breakdown_keys", [], |r| r.get(0))
        .unwrap();
    assert_eq!(keys, 0);
}
