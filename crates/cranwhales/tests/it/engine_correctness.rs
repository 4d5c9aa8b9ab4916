//! Ingest of real days against the simple reference in `engine_support`: totals, hourly, the top
//! 10 whales and their rows, per-package counts; plus `show --json` / `days --json` output and
//! atomic replacement of a re-ingested day.

#![allow(clippy::needless_range_loop)]

use crate::engine_support;
use crate::ingest_support;

use std::collections::HashSet;
use std::process::Command;

use cranwhales::progress::Silent;
use cranwhales::store::Store;
use cranwhales::summary::{DayInfo, DaySummary};
use engine_support::*;
use ingest_support::{ingest_path, read_day};

/// The tiny first-month days, a 2013 and a 2014 day, and the largest day of the shared set.
const DAYS: [&str; 5] = [
    "2012-10-01",
    "2012-10-17",
    "2013-12-04",
    "2014-05-06",
    "2015-01-15",
];

#[test]
fn real_days_match_reference() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    for date in DAYS {
        let report = ingest_path(&db, &day_file(date), &Silent).unwrap();
        assert_eq!(report.date, date);
    }
    let store = Store::open(&db).unwrap();
    assert_eq!(
        store
            .days()
            .unwrap()
            .iter()
            .map(|d| d.date.as_str())
            .collect::<Vec<_>>(),
        DAYS
    );
    assert!(store.integrity_ok().unwrap());

    for date in DAYS {
        let r = Reference::of_file(&day_file(date));
        let s = store.day_summary(date, 10).unwrap().unwrap();
        let t = &s.totals;
        assert_eq!(
            (
                t.downloads,
                t.bytes,
                t.downloaders,
                t.packages,
                t.skipped_rows
            ),
            (
                r.downloads,
                r.bytes,
                r.ips.len() as u64,
                r.packages.len() as u64,
                r.skipped
            ),
            "{date} totals"
        );
        let top = r.top(10);
        assert_eq!(s.whales.len(), top.len(), "{date}");
        let mut whale_hourly = [0u64; 24];
        for (i, (w, ip)) in s.whales.iter().zip(&top).enumerate() {
            let e = &r.ips[ip];
            assert_eq!(w.rank as usize, i + 1);
            assert_eq!(w.ip_id, *ip, "{date} rank {}", i + 1);
            assert_eq!(
                (w.downloads, w.bytes, w.packages),
                (e.downloads, e.bytes, e.packages.len() as u64),
                "{date} ip {ip}"
            );
            assert_eq!(w.country, r.country(*ip), "{date} ip {ip} country");
            assert_eq!(w.hourly, e.hourly.to_vec(), "{date} ip {ip} hourly");
            for h in 0..24 {
                whale_hourly[h] += e.hourly[h];
            }
            // Every row of the whale, in time order, with its fields.
            let d = store.whale_detail(date, *ip).unwrap().unwrap();
            assert_eq!(d.downloads.len() as u64, e.downloads, "{date} ip {ip} rows");
            let mut want = e.rows.clone();
            want.sort_by(|a, b| a.0.cmp(&b.0));
            let got: Vec<_> = d
                .downloads
                .iter()
                .map(|x| (x.time.clone(), x.package.clone(), x.version.clone(), x.size))
                .collect();
            let times: Vec<&String> = got.iter().map(|g| &g.0).collect();
            assert!(
                times.windows(2).all(|w| w[0] <= w[1]),
                "{date} ip {ip} rows not chronological"
            );
            let mut got_sorted = got.clone();
            got_sorted.sort();
            want.sort();
            assert_eq!(got_sorted, want, "{date} ip {ip} row contents");
            assert_eq!(d.first, want.iter().map(|w| &w.0).min().unwrap().clone());
            assert_eq!(d.last, want.iter().map(|w| &w.0).max().unwrap().clone());
        }
        for h in 0..24 {
            assert_eq!(s.hourly[h].hour as usize, h);
            assert_eq!(s.hourly[h].downloads, r.hourly[h], "{date} hour {h}");
            assert_eq!(
                s.hourly[h].whale_downloads, whale_hourly[h],
                "{date} hour {h} top-10"
            );
        }
        // Per package: all downloads, and downloads by the day's top 100.
        let top100: HashSet<u64> = r.top(100).into_iter().collect();
        let pk = store.packages(date, 20).unwrap();
        let mut want: Vec<(&String, &u64)> = r.packages.iter().collect();
        want.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        for (p, (name, n)) in pk.iter().zip(want) {
            assert_eq!((&p.package, p.downloads), (name, *n), "{date} package");
            let by_whales: u64 = top100
                .iter()
                .map(|ip| r.ips[ip].rows.iter().filter(|x| &x.1 == name).count() as u64)
                .sum();
            assert_eq!(
                p.whale_downloads, by_whales,
                "{date} {name} whale downloads"
            );
        }
        // 100 whales (or every ip on a tiny day), uniquely named adjective_animal.
        let all = store.day_summary(date, 100).unwrap().unwrap();
        assert_eq!(all.whales.len(), r.ips.len().min(100));
        let names: HashSet<&str> = all.whales.iter().map(|w| w.name.as_str()).collect();
        assert_eq!(names.len(), all.whales.len(), "{date} names unique");
        assert!(all.whales.iter().all(|w| w.name.split('_').count() == 2));
    }
}

#[test]
fn show_and_days_print_the_api_json() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    let stdout = cli_ok(&db, ["ingest".as_ref(), day_file("2013-12-04").as_os_str()]);
    assert!(stdout.contains("2013-12-04: 169,661 rows"), "{stdout}");

    let out = cli_ok(&db, ["show", "2013-12-04", "--count", "7", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, ["count", "date", "hourly", "totals", "whales"]);
    assert_eq!(v["whales"][0].as_object().unwrap().len(), 9);
    assert!(v["whales"][0]["profile"]["sentence"].is_string());
    let printed: DaySummary = serde_json::from_value(v).unwrap();
    let store = Store::open(&db).unwrap();
    assert_eq!(
        printed,
        store.day_summary("2013-12-04", 7).unwrap().unwrap()
    );
    assert_eq!(printed.whales.len(), 7);
    let r = Reference::of_file(&day_file("2013-12-04"));
    assert_eq!(printed.whales[0].ip_id, r.top(1)[0]);

    let days: Vec<DayInfo> = serde_json::from_str(&cli_ok(&db, ["days", "--json"])).unwrap();
    assert_eq!(days, store.days().unwrap());
    assert_eq!(days[0].totals.downloads, r.downloads);

    // Text forms mention the numbers too.
    let text = cli_ok(&db, ["show", "2013-12-04"]);
    assert!(text.contains(&printed.whales[0].name), "{text}");
    assert!(cli_ok(&db, ["days"]).contains("2013-12-04"));

    // A day that is not there: one line, non-zero exit.
    let out = Command::new(env!("CARGO_BIN_EXE_cranwhales"))
        .args(["show", "2013-12-05", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("2013-12-05 is not in"), "{err}");
    assert_eq!(
        out.status.code(),
        Some(1),
        "not stored is not a usage error"
    );

    // A mistyped day or range is a usage error, as a bad --count is: exit 2, one line naming the
    // argument, nothing on stdout (was exit 1, and `--from` was called "from").
    for (args, said) in [
        (
            &["show", "2013-13-04"][..],
            "invalid value '2013-13-04' for '<DATE>': not a real day as YYYY-MM-DD",
        ),
        (
            &["show", "2013/12/04"],
            "invalid value '2013/12/04' for '<DATE>'",
        ),
        (
            &["package", "ggplot2", "--from", "2013-02-30"],
            "invalid value '2013-02-30' for '--from <FROM>': not a real day as YYYY-MM-DD",
        ),
        (
            &["package", "ggplot2", "--by", "os", "--to", "soon"],
            "invalid value 'soon' for '--to <TO>'",
        ),
        (
            &[
                "package",
                "ggplot2",
                "--from",
                "2013-12-05",
                "--to",
                "2013-12-04",
            ],
            "from 2013-12-05 is after to 2013-12-04",
        ),
        (
            &["package", "ggplot2", "--from", "2011-01-01"],
            "from 2011-01-01 is outside the CRAN logs",
        ),
    ] {
        let out = cli(&db, args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("cranwhales: error: "), "{args:?}: {err}");
        assert!(err.contains(said), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

#[test]
fn reingest_replaces_the_whole_day() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    let full = day_file("2013-12-04");
    ingest_path(&db, &full, &Silent).unwrap();
    let store = Store::open(&db).unwrap();
    let before = store.day_summary("2013-12-04", 100).unwrap().unwrap();

    // The same day, cut to its first 2000 rows: every table must reflect only those.
    let part = dir.path().join("2013-12-04.csv.gz");
    cut_day(&full, 2000, &part);
    ingest_path(&db, &part, &Silent).unwrap();
    let r = Reference::of_file(&part);
    let after = store.day_summary("2013-12-04", 100).unwrap().unwrap();
    assert_eq!(after.totals.downloads, r.downloads);
    assert_eq!(
        after.whales.iter().map(|w| w.ip_id).collect::<Vec<_>>(),
        r.top(100)
    );
    for w in &before.whales {
        if !r.ips.contains_key(&w.ip_id) {
            assert!(
                store.whale_detail("2013-12-04", w.ip_id).unwrap().is_none(),
                "stale whale {}",
                w.ip_id
            );
        }
    }
    let whale_rows: usize = after
        .whales
        .iter()
        .map(|w| {
            store
                .whale_detail("2013-12-04", w.ip_id)
                .unwrap()
                .unwrap()
                .downloads
                .len()
        })
        .sum();
    assert_eq!(
        whale_rows as u64,
        r.top(100).iter().map(|ip| r.ips[ip].downloads).sum::<u64>()
    );
    assert_eq!(store.days().unwrap().len(), 1);
}

/// Lines longer than the reader's compact index can describe (a comma past byte 255) take the
/// parser's careful path; the day must come out exactly as the reference counts it.
#[test]
fn long_lines_count_like_short_ones() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    // Every 3rd row: a version long enough to push the country and ip_id commas past 255.
    let file = rewritten_day(dir.path(), "2013-12-04", 3001, |i, f| {
        if i % 3 == 0 && f[7] != "NA" {
            f[7] = format!("\"{}{}\"", f[7].trim_matches('"'), "-x".repeat(150));
        }
    });
    ingest_path(&db, &file, &Silent).unwrap();
    let r = Reference::of_file(&file);
    let store = Store::open(&db).unwrap();
    let s = store.day_summary("2013-12-04", 100).unwrap().unwrap();
    assert_eq!(
        (s.totals.downloads, s.totals.bytes, s.totals.downloaders),
        (r.downloads, r.bytes, r.ips.len() as u64)
    );
    assert_eq!(
        s.whales.iter().map(|w| w.ip_id).collect::<Vec<_>>(),
        r.top(100)
    );
    let top = r.top(1)[0];
    let d = store.whale_detail("2013-12-04", top).unwrap().unwrap();
    let mut got: Vec<_> = d
        .downloads
        .iter()
        .map(|x| (x.time.clone(), x.package.clone(), x.version.clone(), x.size))
        .collect();
    let mut want = r.ips[&top].rows.clone();
    got.sort();
    want.sort();
    assert_eq!(got, want);
    assert!(got
        .iter()
        .any(|g| g.2.as_ref().is_some_and(|v| v.len() > 255)));
}

/// Sizes beyond 32 bits are kept aside while the day is read; every whale row, early or late in
/// the file, must get its own size back.
#[test]
fn sizes_beyond_32_bits_survive() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    let file = rewritten_day(dir.path(), "2013-12-04", usize::MAX, |i, f| {
        if i % 7 == 0 {
            f[2] = (5_000_000_000u64 + i as u64).to_string();
        }
    });
    ingest_path(&db, &file, &Silent).unwrap();
    let r = Reference::of_file(&file);
    let store = Store::open(&db).unwrap();
    let s = store.day_summary("2013-12-04", 100).unwrap().unwrap();
    assert_eq!(s.totals.bytes, r.bytes);
    let mut big = 0;
    for w in &s.whales {
        assert_eq!(w.bytes, r.ips[&w.ip_id].bytes, "ip {}", w.ip_id);
        let d = store.whale_detail("2013-12-04", w.ip_id).unwrap().unwrap();
        let mut got: Vec<u64> = d.downloads.iter().map(|x| x.size).collect();
        let mut want: Vec<u64> = r.ips[&w.ip_id].rows.iter().map(|x| x.3).collect();
        got.sort_unstable();
        want.sort_unstable();
        assert_eq!(got, want, "ip {} sizes", w.ip_id);
        big += got.iter().filter(|&&z| z > u64::from(u32::MAX)).count();
    }
    assert!(big > 100, "only {big} whale rows with big sizes");
}

/// ip_ids beyond the dense table (2^22) are kept in a side map; ranking must treat them like the
/// others, ties included.
#[test]
fn ip_ids_beyond_the_dense_table_rank_like_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    let file = rewritten_day(dir.path(), "2014-05-06", usize::MAX, |_, f| {
        let ip: u64 = f[9].parse().unwrap();
        if ip % 2 == 0 {
            f[9] = (ip + 9_000_000_000).to_string();
        }
    });
    ingest_path(&db, &file, &Silent).unwrap();
    let r = Reference::of_file(&file);
    let store = Store::open(&db).unwrap();
    let s = store.day_summary("2014-05-06", 100).unwrap().unwrap();
    assert_eq!(s.totals.downloaders, r.ips.len() as u64);
    let got: Vec<u64> = s.whales.iter().map(|w| w.ip_id).collect();
    assert_eq!(got, r.top(100));
    assert!(got.iter().any(|&ip| ip > 9_000_000_000) && got.iter().any(|&ip| ip < 1 << 22));
    for w in &s.whales {
        let e = &r.ips[&w.ip_id];
        assert_eq!(
            (w.downloads, w.bytes),
            (e.downloads, e.bytes),
            "ip {}",
            w.ip_id
        );
    }
}

/// The first `lines` lines of a real day (header included) with each data row's fields passed
/// through `edit` (row number from 1), gzipped into `dir` under the day's name.
fn rewritten_day(
    dir: &std::path::Path,
    date: &str,
    lines: usize,
    mut edit: impl FnMut(usize, &mut Vec<String>),
) -> std::path::PathBuf {
    let text = String::from_utf8(gunzip(&day_file(date))).unwrap();
    let mut out = String::new();
    for (i, line) in text.lines().take(lines).enumerate() {
        let mut f: Vec<String> = line.split(',').map(str::to_owned).collect();
        if i > 0 {
            edit(i, &mut f);
        }
        out.push_str(&f.join(","));
        out.push('\n');
    }
    let file = dir.join(format!("{date}.csv.gz"));
    gzip_to(&file, out.as_bytes());
    file
}

/// The stored day log (`pack_log`, by dictionary ids) decodes, for every whale of real days, to
/// exactly its rows as the day resolved them (`whale_downloads`), and to what the reference
/// encoder (`daylog::encode_downloads`, by interned strings) decodes to.
#[test]
fn whale_logs_by_id_decode_like_resolved_rows() {
    use cranwhales::blob::daylog;
    use cranwhales::summary::Download;
    for date in ["2012-10-17", "2015-01-15"] {
        let day = read_day(&day_file(date), Some(date), &Silent).unwrap();
        let (n, log) = day.pack_log();
        assert_eq!(n, day.whale_row_count());
        let resolved: Vec<(u64, Vec<Download>)> = (0..day.whales.len())
            .map(|i| {
                let rows = day.whale_downloads(i).map(|r| Download {
                    time: cranwhales::parse::hms(r.secs),
                    package: r.package.to_owned(),
                    version: r.version.map(str::to_owned),
                    size: r.size,
                    r_version: r.r_version.map(str::to_owned),
                    r_arch: r.r_arch.map(str::to_owned),
                    r_os: r.r_os.map(str::to_owned),
                    country: r.country.map(str::to_owned),
                });
                (day.whales[i].ip_id, rows.collect())
            })
            .collect();
        let reference = daylog::encode_downloads(&resolved);
        for (ip, want) in &resolved {
            let got = daylog::unpack_whale(&log, *ip).unwrap().unwrap();
            assert!(&got == want, "{date} whale {ip}");
            assert!(daylog::unpack_whale(&reference, *ip).unwrap().unwrap() == got);
        }
    }
}
