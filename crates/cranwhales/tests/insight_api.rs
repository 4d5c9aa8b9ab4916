//! The insight API on real days against the independent Python recount: whale profiles in the
//! day summary and the whale detail, `/api/packages/{name}` (downloads, unique downloaders,
//! without the top N whales, a package only whales downloaded), `/api/packages?q=` suggestions,
//! `/api/trends`; bad input gets a 4xx `{error}`; a day fetched on demand shows up in both.

mod insight_support;
mod server_support;

use insight_support::{n, recount, without};
use server_support::*;

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
