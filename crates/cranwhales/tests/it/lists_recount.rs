//! Top and trending lists and a package's rank counted without whales, small or repeated
//! downloads (every combination), through the API, against the independent Python recount of
//! `breakdown_recount` (`tests/reference/breakdown.py` over the raw CSV): each package's
//! downloads of a day are the sum of its version keys, each without the kinds asked, summed over
//! the days of the range, sorted and ranked here as packageRank ranks.

use crate::breakdown_recount::{expected, recount, Recount, DAYS, WITHOUT};
use crate::server_support::*;

use std::collections::HashMap;

use crate::insight_support::n;

/// Each package's downloads over `days` without the kinds `without` names, from the recount.
fn counts(reference: &Recount, days: &[&str], without: &str) -> HashMap<String, u64> {
    let mut out: HashMap<String, u64> = HashMap::new();
    for d in days {
        for (p, dims) in &reference[*d] {
            let left: u64 = expected(&dims["version"], without).values().sum();
            *out.entry(p.clone()).or_default() += left;
        }
    }
    out.retain(|_, v| *v > 0);
    out
}

/// The list most downloaded first (ties by name), with each one's rank (ties share it).
fn ranked(c: &HashMap<String, u64>) -> Vec<(u64, String, u64)> {
    let mut v: Vec<(&String, &u64)> = c.iter().collect();
    v.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    let more = |x: u64| c.values().filter(|&&y| y > x).count() as u64;
    v.into_iter()
        .map(|(p, &x)| (more(x) + 1, p.clone(), x))
        .collect()
}

/// `/api/top` over the last four days (the first four before them) with every `without`: the
/// top list (rank, name, downloads), totals and the trending list (growth per stored day, at
/// least 100 downloads) equal the recount's; a package's rank and percentile likewise; and the
/// filters change the lists (repeats reorder them).
#[tokio::test]
async fn filtered_top_trending_and_ranks_equal_the_python_recount() {
    let server = App::start(&DAYS, &["--source-url", "http://127.0.0.1:9"]).await;
    let reference = recount();
    let (now, then) = (&DAYS[4..], &DAYS[..4]);
    let a = server.addr;
    let mut tops = Vec::new();
    for without in WITHOUT {
        let q = format!("from={}&to={}&without={without}", now[0], now[3]);
        let r = get(a, &format!("/api/top?{q}&limit=100"), &[]).await;
        assert_eq!(r.status, 200, "{}", r.text());
        let j = r.json();
        let c = counts(reference, now, without);
        let want = ranked(&c);
        assert_eq!(n(&j["packages"]), c.len() as u64, "without {without}");
        assert_eq!(
            n(&j["downloads"]),
            c.values().sum::<u64>(),
            "without {without}"
        );
        assert_eq!(
            (j["days"].clone(), j["before_days"].clone()),
            (4.into(), 4.into())
        );
        let got: Vec<(u64, String, u64)> = (j["top"].as_array().unwrap().iter())
            .map(|t| {
                (
                    n(&t["rank"]),
                    t["package"].as_str().unwrap().to_owned(),
                    n(&t["downloads"]),
                )
            })
            .collect();
        assert_eq!(got, want[..100], "top without {without}");
        let names: Vec<&str> = (j["without"].as_array().unwrap().iter())
            .map(|w| w.as_str().unwrap())
            .collect();
        assert_eq!(names.join(","), without);

        // Trending: per stored day now ÷ per stored day before (4 and 4 days).
        let b = counts(reference, then, without);
        let mut trend: Vec<(String, f64, u64, u64)> = (c.iter())
            .filter(|(_, &v)| v >= 100)
            .map(|(p, &v)| {
                let was = b.get(p).copied().unwrap_or(0);
                let g = (v as f64 / was.max(1) as f64 * 100.0 + 0.5).floor() / 100.0;
                (p.clone(), g, v, was)
            })
            .collect();
        trend.sort_by(|x, y| y.1.total_cmp(&x.1).then(y.2.cmp(&x.2)).then(x.0.cmp(&y.0)));
        trend.truncate(100);
        let got: Vec<(String, f64, u64, u64)> = (j["trending"].as_array().unwrap().iter())
            .map(|t| {
                let p = t["package"].as_str().unwrap().to_owned();
                (
                    p,
                    t["growth"].as_f64().unwrap(),
                    n(&t["downloads"]),
                    n(&t["before"]),
                )
            })
            .collect();
        assert_eq!(got, trend, "trending without {without}");

        // A rank, as the package view shows it.
        let of = c.len() as u64;
        for p in ["ggplot2", "Rcpp", "MASS"] {
            let r = get(a, &format!("/api/packages/{p}?{q}"), &[]).await;
            assert_eq!(r.status, 200, "{}", r.text());
            let rank = &r.json()["rank"];
            let x = c[p];
            let fewer = c.values().filter(|&&y| y < x).count() as u64;
            let more = c.values().filter(|&&y| y > x).count() as u64;
            let pct = ((2000 * fewer + of) / (2 * of)) as f64 / 10.0;
            assert_eq!(
                (n(&rank["rank"]), n(&rank["of"]), n(&rank["downloads"])),
                (more + 1, of, x),
                "{p} without {without}"
            );
            assert_eq!(
                rank["percentile"].as_f64().unwrap(),
                pct,
                "{p} without {without}"
            );
        }
        tops.push(got.into_iter().map(|t| t.0).collect::<Vec<_>>());
    }
    // Leaving out repeats reorders the trending list (the test can see a filter ignored).
    assert_ne!(tops[0], tops[3], "trending with and without repeats");
}
