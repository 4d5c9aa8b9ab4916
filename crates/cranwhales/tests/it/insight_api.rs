//! The insight API on real days against the independent Python recount: whale profiles in the
//! day summary and the whale detail, `/api/packages/{name}` (downloads, unique downloaders,
//! without the top N whales, a package only whales downloaded), `/api/packages?q=` suggestions,
//! `/api/trends`; bad input gets a 4xx `{error}`; a day fetched on demand shows up in both, and so
//! do days ingested (or re-ingested) by another `cranwhales ingest` process while the server runs.

use crate::engine_support;
use crate::insight_support;
use crate::server_support;

use engine_support::cli_ok;
use insight_support::{n, recount, recount_file, without};
use server_support::*;
use std::ffi::OsStr;

const DAYS: [&str; 3] = ["2012-10-17", "2014-12-21", "2015-02-14"];

async fn ok(addr: std::net::SocketAddr, path: &str) -> serde_json::Value {
    let r = get(addr, path, &[]).await;
    assert_eq!(r.status, 200, "{path}: {}", r.text());
    r.json()
}

async fn error(addr: std::net::SocketAddr, path: &str, status: u16) -> String {
    let r = get(addr, path, &[]).await;
    assert_eq!(r.status, status, "{path}: {}", r.text());
    assert_eq!(r.header("content-type"), Some("application/json"), "{path}");
    let e = r.json()["error"].as_str().unwrap().to_owned();
    assert!(!e.contains('\n'), "{e}");
    e
}

#[tokio::test]
async fn insight_api_matches_the_recount() {
    let source = Source::start();
    let server = App::start(&DAYS, &["--source-url", &source.url]).await;
    let a = server.addr;
    let reference = recount(&DAYS, None);

    for (date, r) in DAYS.iter().zip(&reference) {
        // Profiles in the summary and in each whale's detail.
        let s = ok(a, &format!("/api/days/{date}?count=25")).await;
        for (w, rw) in s["whales"]
            .as_array()
            .unwrap()
            .iter()
            .zip(r["whales"].as_array().unwrap())
        {
            assert_eq!(w["ip_id"], rw["ip_id"]);
            let p = &w["profile"];
            assert_eq!(p["behaviour"], rw["behaviour"], "{date} {}", w["ip_id"]);
            for k in [
                "packages",
                "versions",
                "no_r_version",
                "burst",
                "active_hours",
                "gap_median",
            ] {
                assert_eq!(p["facts"][k], rw[k], "{date} {} {k}", w["ip_id"]);
            }
            assert!(p["sentence"].as_str().unwrap().starts_with("fetched "));
        }
        let first = &s["whales"][0];
        let d = ok(a, &format!("/api/days/{date}/whales/{}", first["ip_id"])).await;
        assert_eq!(d["whale"]["profile"], first["profile"]);

        // Trends of this one day.
        let t = ok(a, &format!("/api/trends?from={date}&to={date}")).await;
        let days = t["days"].as_array().unwrap();
        assert_eq!(days.len(), 1);
        let top = &r["top_downloads"];
        for (k, rk) in [("top1", "1"), ("top6", "6"), ("top25", "25")] {
            assert_eq!(days[0][k], top[rk], "{date} {k}");
        }
        assert_eq!(days[0]["downloaders"], r["downloaders"]);
        for (b, count) in days[0]["behaviours"].as_object().unwrap() {
            assert_eq!(
                n(count),
                r["behaviours"][b].as_u64().unwrap_or(0),
                "{date} {b}"
            );
        }
    }

    // A package over all stored days, at several N.
    for name in ["memoise", "DBI", "ggplot2"] {
        for whales in [1u64, 6, 25, 100] {
            let p = ok(a, &format!("/api/packages/{name}?whales={whales}")).await;
            assert_eq!(p["package"], name);
            assert_eq!(p["whales"], whales);
            let days = p["days"].as_array().unwrap();
            assert_eq!(days.len(), DAYS.len(), "every stored day listed");
            let mut total = 0;
            for (d, r) in days.iter().zip(&reference) {
                assert_eq!(d["date"], r["date"]);
                let rp = &r["package_counts"][name];
                let downloads = rp["downloads"].as_u64().unwrap_or(0);
                total += downloads;
                assert_eq!(n(&d["downloads"]), downloads, "{name} {}", d["date"]);
                assert_eq!(
                    n(&d["downloaders"]),
                    rp["downloaders"].as_u64().unwrap_or(0)
                );
                let left = if rp.is_null() { 0 } else { without(rp, whales) };
                assert_eq!(
                    n(&d["without_whales"]),
                    left,
                    "{name} {} top {whales}",
                    d["date"]
                );
                assert_eq!(n(&d["whale_downloads"]), downloads - left);
                assert_eq!(
                    n(&d["adjusted"]),
                    downloads.saturating_sub(n(&r["baseline"])),
                    "{name} {} aggregate",
                    d["date"]
                );
            }
            assert_eq!(n(&p["totals"]["downloads"]), total);
            assert!(p["note"].as_str().unwrap().contains("adjustedcranlogs"));
        }
    }
    // From/to select stored days.
    let p = ok(a, "/api/packages/memoise?from=2014-01-01&to=2014-12-31").await;
    assert_eq!(p["days"].as_array().unwrap().len(), 1);
    assert_eq!(p["days"][0]["date"], "2014-12-21");

    // A package that only whales downloaded that day: nothing left without the top 100.
    let day = &reference[2];
    let (name, rp) = (day["package_counts"].as_object().unwrap().iter())
        .find(|(_, rp)| without(rp, 100) == 0 && n(&rp["downloads"]) >= 2)
        .expect("a whale-only package on 2015-02-14");
    let p = ok(
        a,
        &format!("/api/packages/{name}?from=2015-02-14&to=2015-02-14&whales=100"),
    )
    .await;
    assert_eq!(p["days"][0]["without_whales"], 0, "{name}");
    assert_eq!(p["days"][0]["whale_downloads"], rp["downloads"], "{name}");

    // Suggestions: prefix, case-insensitive, most downloaded first.
    let sug = ok(a, "/api/packages?q=MEM&limit=5").await;
    let names: Vec<&str> = sug
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["package"].as_str().unwrap())
        .collect();
    assert_eq!(names[0], "memoise", "{names:?}");
    assert!(names.iter().all(|s| s.to_lowercase().starts_with("mem")));
    assert!(names.len() <= 5);

    // Bad input.
    let e = error(a, "/api/packages/no.such.pkg", 404).await;
    assert!(e.contains("no.such.pkg"), "{e}");
    let e = error(a, "/api/packages/MEMOISE", 404).await;
    assert!(e.contains("did you mean 'memoise'"), "{e}");
    for (q, words) in [
        ("from=2015-01-10&to=2015-01-01", "after"),
        ("from=2011-01-01", "outside the CRAN logs"),
        ("to=2999-01-01", "outside the CRAN logs"),
        ("from=yesterday", "YYYY-MM-DD"),
        ("whales=0", "whales must be"),
        ("whales=101", "whales must be"),
        ("whales=six", "whales must be"),
    ] {
        let e = error(a, &format!("/api/packages/memoise?{q}"), 400).await;
        assert!(e.contains(words), "{q}: {e}");
    }
    let e = error(a, "/api/trends?from=2015-02-14&to=2015-02-13", 400).await;
    assert!(e.contains("after"), "{e}");
    error(a, "/api/packages?q=a&limit=0", 400).await;

    // A day fetched on demand joins the trends and the package view.
    assert_eq!(
        ok(a, "/api/trends").await["days"].as_array().unwrap().len(),
        3
    );
    fetch_day(a, "2015-01-10", 6).await;
    let t = ok(a, "/api/trends").await;
    let dates: Vec<&str> = t["days"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["date"].as_str().unwrap())
        .collect();
    assert_eq!(
        dates,
        ["2012-10-17", "2014-12-21", "2015-01-10", "2015-02-14"]
    );
    assert_eq!(
        ok(a, "/api/packages/memoise").await["days"]
            .as_array()
            .unwrap()
            .len(),
        4
    );
}

/// Polls `path` (every 50 ms, for at most 20 s) until `done` holds of its JSON; returns it.
async fn until(
    addr: std::net::SocketAddr,
    path: &str,
    done: impl Fn(&serde_json::Value) -> bool,
) -> serde_json::Value {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let v = ok(addr, path).await;
        if done(&v) {
            return v;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{path} did not change within 20 s: {v}"
        );
        // Stays a timed poll: the change is another process's write, which the server notices
        // within `--store-poll`; a client can only ask again (bounded: 20 s).
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// A running server's answers, cached before, follow what another process stores: a new day joins
/// /api/days, /api/trends and /api/packages/{name} with the recount's numbers; a day re-ingested
/// from another file (--force) serves its new summary.
#[tokio::test]
async fn days_ingested_by_another_process_show_up() {
    let server = App::start(&["2012-10-17"], &["--store-poll", "50ms"]).await;
    let a = server.addr;
    let pkg = "ggplot2";
    // Every answer cached with one day.
    assert_eq!(
        ok(a, "/api/days").await["days"].as_array().unwrap().len(),
        1
    );
    assert_eq!(
        ok(a, "/api/trends").await["days"].as_array().unwrap().len(),
        1
    );
    let path = format!("/api/packages/{pkg}?whales=6");
    assert_eq!(ok(a, &path).await["days"].as_array().unwrap().len(), 1);
    let before = ok(a, "/api/days/2012-10-17?count=6").await;

    // The real `cranwhales ingest`, another process, on the server's store.
    cli_ok(
        &server.db(),
        [
            OsStr::new("ingest"),
            insight_support::day_file("2014-12-21").as_os_str(),
        ],
    );
    let r = &recount(&["2014-12-21"], Some(&[pkg]))[0];
    let days =
        until(a, "/api/days", |v| v["days"].as_array().unwrap().len() == 2).await["days"].clone();
    assert_eq!(days[1]["date"], "2014-12-21");
    assert_eq!(days[1]["totals"]["downloads"], r["downloads"]);
    assert_eq!(days[1]["totals"]["downloaders"], r["downloaders"]);
    let t = until(a, "/api/trends", |v| {
        v["days"].as_array().unwrap().len() == 2
    })
    .await;
    let d = &t["days"][1];
    assert_eq!(d["date"], "2014-12-21");
    assert_eq!(d["downloaders"], r["downloaders"]);
    for (k, rk) in [("top1", "1"), ("top6", "6"), ("top25", "25")] {
        assert_eq!(d[k], r["top_downloads"][rk], "{k}");
    }
    for (b, count) in d["behaviours"].as_object().unwrap() {
        assert_eq!(n(count), r["behaviours"][b].as_u64().unwrap_or(0), "{b}");
    }
    let p = until(a, &path, |v| v["days"].as_array().unwrap().len() == 2).await;
    let (d, rp) = (&p["days"][1], &r["package_counts"][pkg]);
    assert_eq!(d["date"], "2014-12-21");
    assert_eq!(d["downloads"], rp["downloads"]);
    assert_eq!(d["downloaders"], rp["downloaders"]);
    assert_eq!(n(&d["without_whales"]), without(rp, 6));
    // The day page of a day that did not change is the same body.
    assert_eq!(ok(a, "/api/days/2012-10-17?count=6").await, before);

    // 2012-10-17 again, from its first 2,000 rows only.
    let text = {
        let mut s = String::new();
        let f = std::fs::File::open(insight_support::day_file("2012-10-17")).unwrap();
        std::io::Read::read_to_string(&mut flate2::read::MultiGzDecoder::new(f), &mut s).unwrap();
        s.lines()
            .take(2001)
            .map(|l| format!("{l}\n"))
            .collect::<String>()
    };
    let part = server.dir.path().join("part");
    std::fs::create_dir(&part).unwrap();
    let file = part.join("2012-10-17.csv.gz");
    let mut gz = flate2::write::GzEncoder::new(
        std::fs::File::create(&file).unwrap(),
        flate2::Compression::fast(),
    );
    std::io::Write::write_all(&mut gz, text.as_bytes()).unwrap();
    gz.finish().unwrap();
    cli_ok(
        &server.db(),
        [
            OsStr::new("ingest"),
            OsStr::new("--force"),
            file.as_os_str(),
        ],
    );
    let r = &recount_file(&file)[0];
    let s = until(a, "/api/days/2012-10-17?count=6", |v| {
        v["totals"] != before["totals"]
    })
    .await;
    assert_eq!(s["totals"]["downloads"], r["downloads"]);
    assert_eq!(s["totals"]["downloaders"], r["downloaders"]);
    let days = ok(a, "/api/days").await["days"].clone();
    assert_eq!(days[0]["totals"]["downloads"], r["downloads"]);
    let t = ok(a, "/api/trends").await;
    assert_eq!(t["days"][0]["top1"], r["top_downloads"]["1"]);
    server.stop().await;
}
