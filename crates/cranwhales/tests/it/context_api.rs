//! Packages in context on real days: ranks, percentiles, the distribution, top and trending lists
//! against an independent recount over the raw files of the stored days (`reference/rank.py`,
//! Python standard library only); several packages in one answer, bins and running sums against
//! the per-day answer; the calendar against `/api/days`; the badge (SVG, ETag, 304, its number);
//! every bad parameter a 400 naming it.

use crate::insight_support;
use crate::server_support;

use std::process::Command;

use insight_support::{day_file, n, thousands};
use server_support::*;

/// Two days of a range and the two days just before it (for trending).
const BEFORE: [&str; 2] = ["2015-01-01", "2015-01-02"];
const RANGE: [&str; 2] = ["2015-01-03", "2015-01-04"];
const PACKAGES: [&str; 3] = ["memoise", "ggplot2", "DBI"];

fn rank_py(days: &[&str], before: &[&str]) -> serde_json::Value {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/reference/rank.py");
    let mut cmd = Command::new("python3");
    cmd.arg(script).args(days.iter().map(|d| day_file(d)));
    cmd.args(["--packages", &PACKAGES.join(","), "--limit", "20"]);
    if !before.is_empty() {
        cmd.arg("--before").args(before.iter().map(|d| day_file(d)));
    }
    let out = cmd.output().expect("python3 runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

async fn ok(addr: std::net::SocketAddr, path: &str) -> Resp {
    let r = get(addr, path, &[]).await;
    assert_eq!(r.status, 200, "{path}: {}", r.text());
    r
}

#[tokio::test]
async fn ranks_top_and_trending_equal_the_recount() {
    let all: Vec<&str> = BEFORE.iter().chain(&RANGE).copied().collect();
    let server = App::start(&all, &["--source-url", "http://127.0.0.1:9"]).await;
    let a = server.addr;
    let q = format!("from={}&to={}", RANGE[0], RANGE[1]);
    let reference = rank_py(&RANGE, &BEFORE);

    // Three packages in one answer, in the order asked, each ranked among all packages.
    let c = ok(a, &format!("/api/packages/{}?{q}", PACKAGES.join(",")))
        .await
        .json();
    let reports = c["packages"].as_array().unwrap();
    assert_eq!(reports.len(), 3);
    for (p, name) in reports.iter().zip(PACKAGES) {
        assert_eq!(p["package"], name);
        let want = &reference["ranks"][name];
        let r = &p["rank"];
        assert_eq!(r["rank"], want["rank"], "{name}");
        assert_eq!(r["of"], reference["of"], "{name}");
        assert_eq!(
            r["percentile"].as_f64(),
            want["percentile"].as_f64(),
            "{name}"
        );
        assert_eq!(r["downloads"], want["downloads"], "{name}");
        assert_eq!(n(&p["totals"]["downloads"]), n(&want["downloads"]));
        let text = format!(
            "{} of {}, {:.1} percentile",
            thousands(n(&want["rank"])),
            thousands(n(&reference["of"])),
            want["percentile"].as_f64().unwrap()
        );
        assert_eq!(r["text"], text.as_str());
        assert_eq!(p["distribution"]["edges"], reference["edges"]);
        assert_eq!(p["distribution"]["counts"], reference["counts"]);
    }

    // One package alone: the same report as in the comparison.
    let one = ok(a, &format!("/api/packages/memoise?{q}")).await.json();
    assert_eq!(one, reports[0]);

    // Top and trending.
    let t = ok(a, &format!("/api/top?{q}&limit=20")).await.json();
    assert_eq!(n(&t["packages"]), n(&reference["of"]));
    assert_eq!(n(&t["downloads"]), n(&reference["total"]));
    assert_eq!((n(&t["days"]), n(&t["before_days"])), (2, 2));
    assert_eq!(t["before_from"], BEFORE[0]);
    let top: Vec<(String, u64)> = (t["top"].as_array().unwrap().iter())
        .map(|p| {
            (
                p["package"].as_str().unwrap().to_owned(),
                n(&p["downloads"]),
            )
        })
        .collect();
    let want: Vec<(String, u64)> = (reference["top"].as_array().unwrap().iter())
        .map(|p| (p[0].as_str().unwrap().to_owned(), n(&p[1])))
        .collect();
    assert_eq!(top, want);
    let trending: Vec<serde_json::Value> = (t["trending"].as_array().unwrap().iter())
        .map(|p| serde_json::json!([p["package"], p["growth"], p["downloads"], p["before"]]))
        .collect();
    assert_eq!(&trending, reference["trending"].as_array().unwrap());
    assert!(t["rule"]
        .as_str()
        .unwrap()
        .contains("at least 100 downloads"));
    server.stop().await;
}

#[tokio::test]
async fn bins_sums_calendar_badge_and_bad_parameters() {
    let days = [
        "2014-12-30",
        "2014-12-31",
        "2015-01-01",
        "2015-01-05",
        "2015-01-06",
    ];
    let server = App::start(&days, &["--source-url", "http://127.0.0.1:9"]).await;
    let a = server.addr;
    let daily = ok(a, "/api/packages/ggplot2").await.json();
    let per_day: Vec<(String, u64)> = (daily["days"].as_array().unwrap().iter())
        .map(|d| (d["date"].as_str().unwrap().to_owned(), n(&d["downloads"])))
        .collect();
    assert_eq!(per_day.len(), days.len());
    // Weeks start on Monday: 12-29 (30, 31, 1) and 01-05 (5, 6); months and years by their 1st.
    for (bin, want) in [
        ("week", vec![("2014-12-29", 0..3), ("2015-01-05", 3..5)]),
        ("month", vec![("2014-12-01", 0..2), ("2015-01-01", 2..5)]),
        ("year", vec![("2014-01-01", 0..2), ("2015-01-01", 2..5)]),
    ] {
        let r = ok(a, &format!("/api/packages/ggplot2?bin={bin}"))
            .await
            .json();
        assert_eq!(r["bin"], bin);
        let got: Vec<(String, u64, u64)> = (r["days"].as_array().unwrap().iter())
            .map(|d| {
                (
                    d["date"].as_str().unwrap().to_owned(),
                    n(&d["downloads"]),
                    n(&d["days"]),
                )
            })
            .collect();
        let want: Vec<(String, u64, u64)> = (want.into_iter())
            .map(|(d, range)| {
                let sum = per_day[range.clone()].iter().map(|p| p.1).sum();
                (d.to_owned(), sum, range.len() as u64)
            })
            .collect();
        assert_eq!(got, want, "bin={bin}");
        assert_eq!(r["totals"], daily["totals"]);
    }
    let cum = ok(a, "/api/packages/ggplot2?cumulative=true").await.json();
    let mut run = 0;
    for (d, (_, n_day)) in cum["days"].as_array().unwrap().iter().zip(&per_day) {
        run += n_day;
        assert_eq!(n(&d["downloads"]), run);
    }

    // The calendar: every stored day with its downloads, as /api/days has them.
    let cal = ok(a, "/api/calendar").await.json();
    let listed = ok(a, "/api/days").await.json()["days"].clone();
    assert_eq!(cal["first"], "2012-10-01");
    let cal_days: Vec<(String, u64)> = (cal["days"].as_array().unwrap().iter())
        .map(|d| (d["date"].as_str().unwrap().to_owned(), n(&d["downloads"])))
        .collect();
    let day_list: Vec<(String, u64)> = (listed.as_array().unwrap().iter())
        .map(|d| {
            (
                d["date"].as_str().unwrap().to_owned(),
                n(&d["totals"]["downloads"]),
            )
        })
        .collect();
    assert_eq!(cal_days, day_list);

    // The badge: last week = the 7 days ending with the newest stored day (12-31 .. 01-06).
    let b = ok(a, "/badge/ggplot2?period=last-week").await;
    assert_eq!(b.header("content-type"), Some("image/svg+xml"));
    let week: u64 = per_day[1..].iter().map(|p| p.1).sum();
    let svg = b.text();
    // 4 of those 7 days are stored (12-31, 01-01, 01-05, 01-06): the badge says so.
    let says = format!("downloads: {}/week, incomplete: 4 of 7 days", compact(week));
    assert!(
        svg.starts_with("<svg") && svg.contains(&says),
        "{says} in {svg}"
    );
    let etag = b.header("etag").unwrap().to_owned();
    let again = get(
        a,
        "/badge/ggplot2?period=last-week",
        &[("if-none-match", &etag)],
    )
    .await;
    assert_eq!(again.status, 304);
    let without = ok(a, "/badge/ggplot2?period=total&without=whales")
        .await
        .text();
    let left = n(&daily["totals"]["without_whales"]);
    // Total: 2012-10-01 to 2015-01-06 is 92 + 365 + 365 + 6 = 828 days, 5 of them stored.
    let says = format!(
        "downloads without whales: {}, incomplete: 5 of 828 days",
        compact(left)
    );
    assert!(without.contains(&says), "{says} in {without}");

    // Bad input: 400 naming the parameter; unknown package 404; all as {error}.
    for (path, status, says) in [
        ("/api/packages/ggplot2?bin=fortnight", 400, "bin must be"),
        (
            "/api/packages/ggplot2?cumulative=yes",
            400,
            "cumulative must be",
        ),
        ("/api/packages/a,b,c,d,e,f,g,h,i", 400, "at most 8"),
        ("/api/packages/ggplot2,,DBI", 400, "empty name"),
        ("/api/packages/ggplot2,ggplot2", 400, "named twice"),
        (
            "/api/packages/ggplot2,no.such.pkg",
            404,
            "'no.such.pkg' was not downloaded",
        ),
        ("/api/top?limit=0", 400, "limit must be"),
        ("/api/top?from=2015-13-01", 400, "from must be"),
        ("/badge/ggplot2?period=yesterday", 400, "period must be"),
        ("/badge/ggplot2?without=bots", 400, "without must be"),
        ("/badge/no.such.pkg", 404, "not downloaded"),
    ] {
        let r = get(a, path, &[]).await;
        assert_eq!(r.status, status, "{path}: {}", r.text());
        assert!(r.error().contains(says), "{path}: {}", r.error());
    }
    server.stop().await;
}

/// shields.io's abbreviation, written here again: rounded to the nearest, `1.2k`, `2.6k` (2,556),
/// `57k` (56,789), `1.2M` (numbers here stay far from a unit's edge).
fn compact(v: u64) -> String {
    let (x, unit) = match v {
        0..=999 => return v.to_string(),
        1_000..=999_999 => (v as f64 / 1e3, "k"),
        _ => (v as f64 / 1e6, "M"),
    };
    if x < 9.95 {
        format!("{x:.1}{unit}")
    } else {
        format!("{x:.0}{unit}")
    }
}
