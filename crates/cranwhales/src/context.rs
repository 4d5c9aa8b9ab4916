//! Packages in context: every package's downloads over a range (`RangeTotals`, read once per
//! range by `store` and kept by the server), and what is computed from it: a package's rank and
//! percentile, the distribution of all packages, the top and trending lists; a report's days
//! binned by week, month or year, or summed up. Also the shapes only these answers send
//! (`PackageComparison`, `TopList`, `Calendar`); TypeScript types are generated from them.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::date::Day;
use crate::numfmt::thousands;
use crate::summary::{Bin, Distribution, PackageDay, PackageReport, Rank};

/// A package needs this many downloads in the range to be listed as trending: below it a few
/// downloads more make a large ratio.
pub const TRENDING_MIN_DOWNLOADS: u64 = 100;

/// Every package's downloads over the stored days of one range, most downloaded first.
#[derive(Debug, Default)]
pub struct RangeTotals {
    /// (package, downloads), most downloaded first, ties by name.
    packages: Vec<(String, u64)>,
    /// Position in `packages` by name.
    index: HashMap<String, usize>,
    /// Stored days in the range counted.
    pub days: u32,
    /// What each count leaves out (`without=`), in the order whales, small, repeats.
    pub without: Vec<&'static str>,
    /// Stored days in the range left out: stored before small and repeated downloads were
    /// counted, when a filtered count asks to leave those out (`store::filtered`).
    pub days_without_filters: Vec<String>,
}

impl RangeTotals {
    /// From unordered (package, downloads) pairs (one per package) and the stored days counted.
    pub fn new(mut packages: Vec<(String, u64)>, days: u32) -> RangeTotals {
        packages.sort_unstable_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        let index = (packages.iter().enumerate())
            .map(|(i, (p, _))| (p.clone(), i))
            .collect();
        RangeTotals {
            packages,
            index,
            days,
            without: Vec::new(),
            days_without_filters: Vec::new(),
        }
    }

    /// Packages with a download in the range.
    pub fn len(&self) -> usize {
        self.packages.len()
    }

    /// True when no package was downloaded in the range.
    pub fn is_empty(&self) -> bool {
        self.packages.is_empty()
    }

    /// `package`'s downloads over the range (0 when it had none).
    pub fn downloads(&self, package: &str) -> u64 {
        self.index.get(package).map_or(0, |&i| self.packages[i].1)
    }

    /// Every download in the range.
    pub fn total(&self) -> u64 {
        self.packages.iter().map(|p| p.1).sum()
    }

    /// `package`'s rank (1 + packages with more downloads) and percentile (share of packages
    /// with fewer, as packageRank computes it); `None` without a download in the range.
    pub fn rank(&self, package: &str) -> Option<Rank> {
        let downloads = self.downloads(package);
        if downloads == 0 {
            return None;
        }
        let of = self.packages.len() as u64;
        let more = self.packages.partition_point(|p| p.1 > downloads) as u64;
        let fewer = of - self.packages.partition_point(|p| p.1 >= downloads) as u64;
        // Rounded half up in integers, so an independent recount gets the same digit.
        let percentile = ((2000 * fewer + of) / (2 * of)) as f64 / 10.0;
        let filtered = if self.without.is_empty() {
            String::new()
        } else {
            format!(", without {}", self.without.join(", "))
        };
        Some(Rank {
            rank: more + 1,
            of,
            percentile,
            downloads,
            text: format!(
                "{} of {}, {percentile:.1} percentile{filtered}",
                thousands(more + 1),
                thousands(of)
            ),
            without: self.without.iter().map(|w| (*w).to_owned()).collect(),
            days_without_filters: self.days_without_filters.clone(),
        })
    }

    /// All packages' downloads on 1-2-5 log buckets.
    pub fn distribution(&self) -> Distribution {
        let max = self.packages.first().map_or(1, |p| p.1);
        let mut edges = vec![1u64];
        let steps = [2, 5, 10];
        let mut decade = 1u64;
        'grow: loop {
            for s in steps {
                let e = decade * s;
                edges.push(e);
                if e > max {
                    break 'grow;
                }
            }
            decade *= 10;
        }
        let mut counts = vec![0u64; edges.len() - 1];
        for (_, n) in &self.packages {
            let i = edges.partition_point(|&e| e <= *n) - 1;
            counts[i] += 1;
        }
        Distribution { edges, counts }
    }

    /// The `limit` most downloaded packages.
    pub fn top(&self, limit: usize) -> Vec<TopPackage> {
        let total = self.total().max(1) as f64;
        let mut out: Vec<TopPackage> = Vec::with_capacity(limit);
        for (i, (package, downloads)) in self.packages.iter().take(limit).enumerate() {
            // Ties share the rank of the first of them.
            let rank = match out.last() {
                Some(last) if last.downloads == *downloads => last.rank,
                _ => i as u64 + 1,
            };
            out.push(TopPackage {
                rank,
                package: package.clone(),
                downloads: *downloads,
                share: (100_000.0 * *downloads as f64 / total).round() / 1000.0,
            });
        }
        out
    }

    /// The `limit` packages whose downloads per stored day grew most from `before` to `self`
    /// (see [`TopList::rule`]); empty when `before` has no stored day.
    pub fn trending(&self, before: &RangeTotals, limit: usize) -> Vec<TrendingPackage> {
        if before.days == 0 || self.days == 0 {
            return Vec::new();
        }
        let scale = f64::from(before.days) / f64::from(self.days);
        let mut out: Vec<TrendingPackage> = (self.packages.iter())
            .filter(|(_, n)| *n >= TRENDING_MIN_DOWNLOADS)
            .map(|(package, n)| {
                let was = before.downloads(package);
                let growth = *n as f64 * scale / was.max(1) as f64;
                TrendingPackage {
                    package: package.clone(),
                    downloads: *n,
                    before: was,
                    growth: (growth * 100.0 + 0.5).floor() / 100.0,
                }
            })
            .collect();
        out.sort_by(|a, b| {
            (b.growth.total_cmp(&a.growth))
                .then(b.downloads.cmp(&a.downloads))
                .then_with(|| a.package.cmp(&b.package))
        });
        out.truncate(limit);
        out
    }
}

/// `report` with its rank among `totals` (the same range) and the distribution of all packages.
pub fn in_context(mut report: PackageReport, totals: &RangeTotals) -> PackageReport {
    report.rank = totals.rank(&report.package);
    report.distribution = totals.distribution();
    report
}

/// `report`'s days grouped by `bin` (sums; `days` counts the stored days of each bin) and, when
/// `cumulative`, summed up from the first; totals and note are unchanged.
pub fn binned(mut report: PackageReport, bin: Bin, cumulative: bool) -> PackageReport {
    report.bin = bin;
    report.cumulative = cumulative;
    if bin != Bin::Day {
        let mut out: Vec<PackageDay> = Vec::new();
        for d in report.days.drain(..) {
            let start = bin_start(&d.date, bin);
            match out.last_mut() {
                Some(last) if last.date == start => add(last, &d),
                _ => out.push(PackageDay { date: start, ..d }),
            }
        }
        report.days = out;
    }
    if cumulative {
        for i in 1..report.days.len() {
            let (done, rest) = report.days.split_at_mut(i);
            let prev = &done[i - 1];
            let cur = &mut rest[0];
            let days = cur.days;
            add(cur, prev);
            cur.days = days;
        }
    }
    report
}

/// Adds `d`'s counts to `into` (a missing count makes the sum missing).
fn add(into: &mut PackageDay, d: &PackageDay) {
    let opt = |a: Option<u64>, b: Option<u64>| a.zip(b).map(|(a, b)| a + b);
    into.days += d.days;
    into.downloaders = opt(into.downloaders, d.downloaders);
    into.baseline = opt(into.baseline, d.baseline);
    into.counts.add(&d.counts);
}

/// The first day of `date`'s bin.
fn bin_start(date: &str, bin: Bin) -> String {
    match bin {
        Bin::Day => date.to_owned(),
        Bin::Week => {
            Day::parse(date).map_or_else(|| date.to_owned(), |d| d.week_start().to_string())
        }
        Bin::Month => format!("{}-01", &date[..7]),
        Bin::Year => format!("{}-01-01", &date[..4]),
    }
}

/// `GET /api/packages/a,b,c`: several packages over the same range, in the order asked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct PackageComparison {
    /// First day of the range, `YYYY-MM-DD`.
    pub from: String,
    /// Last day of the range, `YYYY-MM-DD`.
    pub to: String,
    /// N of "without each day's top N whales".
    pub whales: u32,
    /// How each report's days are binned.
    pub bin: Bin,
    /// True when each report's counts are running sums.
    pub cumulative: bool,
    /// One report per package (each with its rank; the distribution is the same in all).
    pub packages: Vec<PackageReport>,
}

/// One package of a top list.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct TopPackage {
    /// 1 for the most downloaded (ties share a rank).
    #[cfg_attr(test, ts(type = "number"))]
    pub rank: u64,
    /// The package name.
    pub package: String,
    /// Downloads over the range.
    #[cfg_attr(test, ts(type = "number"))]
    pub downloads: u64,
    /// Percent of all downloads in the range (three decimals).
    pub share: f64,
}

/// One package of a trending list.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct TrendingPackage {
    /// The package name.
    pub package: String,
    /// Downloads over the range.
    #[cfg_attr(test, ts(type = "number"))]
    pub downloads: u64,
    /// Downloads over the period just before it.
    #[cfg_attr(test, ts(type = "number"))]
    pub before: u64,
    /// Downloads per stored day in the range ÷ per stored day before (two decimals; a package
    /// without downloads before counts as 1).
    pub growth: f64,
}

/// `GET /api/top?from=&to=&limit=N`: the most downloaded and the trending packages of a range.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct TopList {
    /// First day of the range, `YYYY-MM-DD`.
    pub from: String,
    /// Last day of the range, `YYYY-MM-DD`.
    pub to: String,
    /// Stored days in the range.
    pub days: u32,
    /// Packages downloaded on them.
    #[cfg_attr(test, ts(type = "number"))]
    pub packages: u64,
    /// Downloads on them.
    #[cfg_attr(test, ts(type = "number"))]
    pub downloads: u64,
    /// The most downloaded, at most `limit`.
    pub top: Vec<TopPackage>,
    /// The period trending compares with: as many days just before `from` (`null` when the
    /// range starts with the logs).
    pub before_from: Option<String>,
    /// Its last day (the day before `from`).
    pub before_to: Option<String>,
    /// Stored days in it.
    pub before_days: u32,
    /// The fastest growing, at most `limit` (empty without stored days before).
    pub trending: Vec<TrendingPackage>,
    /// What trending means, in a sentence (shown on the page).
    pub rule: String,
    /// What every count of both lists leaves out (`without=`: whales, small, repeats, in this
    /// order; whales are each day's top 100 downloaders); empty: every download.
    #[serde(default)]
    pub without: Vec<String>,
    /// Stored days of the range or of the period before it not counted: stored before small and
    /// repeated downloads were counted, when those are left out (`days` and `before_days` count
    /// the others).
    #[serde(default)]
    pub days_without_filters: Vec<String>,
}

impl TopList {
    /// The sentence defining trending.
    pub fn rule() -> String {
        format!(
            "Trending: the packages with at least {TRENDING_MIN_DOWNLOADS} downloads in the range whose \
             downloads per stored day grew most against the same number of days just before it \
             (growth = per day now ÷ per day before; a package new in the range counts 1 download before)."
        )
    }
}

/// One stored day in `GET /api/calendar`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct CalendarDay {
    /// `YYYY-MM-DD`.
    pub date: String,
    /// Downloads that day.
    #[cfg_attr(test, ts(type = "number"))]
    pub downloads: u64,
}

/// `GET /api/calendar`: what the calendar of the whole history needs, and no more: the days the
/// logs cover and each stored day's downloads (about 40 bytes a day).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Calendar {
    /// The first day of the CRAN logs, `2012-10-01`.
    pub first: String,
    /// Yesterday (UTC): the newest day that can have a log.
    pub last: String,
    /// Every stored day, oldest first.
    pub days: Vec<CalendarDay>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn totals() -> RangeTotals {
        let p = |s: &str, n| (s.to_owned(), n);
        RangeTotals::new(
            vec![p("a", 5), p("b", 50), p("c", 5), p("d", 1), p("e", 1200)],
            2,
        )
    }

    #[test]
    fn rank_and_percentile_count_ties_once() {
        let t = totals();
        let r = t.rank("a").unwrap();
        assert_eq!((r.rank, r.of, r.percentile), (3, 5, 20.0));
        assert_eq!(r.text, "3 of 5, 20.0 percentile");
        assert_eq!(t.rank("e").unwrap().percentile, 80.0);
        assert_eq!(t.rank("d").unwrap().rank, 5);
        assert!(t.rank("zz").is_none());
        let top = t.top(4);
        assert_eq!(top.iter().map(|p| p.rank).collect::<Vec<_>>(), [1, 2, 3, 3]);
    }

    #[test]
    fn distribution_buckets_every_package() {
        let d = totals().distribution();
        assert_eq!(d.edges, [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000]);
        assert_eq!(d.counts, [1, 0, 2, 0, 0, 1, 0, 0, 0, 1]);
    }
}
