//! The shapes a day is served in: what `cranwhales show --json` prints and `GET /api/days/...`
//! returns. Built once from the store and immutable afterwards, so the server can cache them.
//! The UI's TypeScript types are generated from these (`web/src/app/api.gen.ts`, see
//! `server::wire`); 64-bit counts are sent as JSON numbers (all far below 2^53).

use serde::{Deserialize, Serialize};

/// Totals for one day (all rows with a package).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Totals {
    /// Rows with a package (a row is one file fetched); the other counts are over these rows.
    #[cfg_attr(test, ts(type = "number"))]
    pub downloads: u64,
    /// Distinct `ip_id`s with a download (ids are renumbered daily: these do not add up over days).
    #[cfg_attr(test, ts(type = "number"))]
    pub downloaders: u64,
    /// Sum of `size` over the downloads: the day's bandwidth.
    #[cfg_attr(test, ts(type = "number"))]
    pub bytes: u64,
    /// Distinct packages downloaded.
    #[cfg_attr(test, ts(type = "number"))]
    pub packages: u64,
    /// Rows without a package (`NA` or empty): tolerated, counted here, left out of every other
    /// number.
    #[cfg_attr(test, ts(type = "number"))]
    pub skipped_rows: u64,
}

/// Downloads in one UTC hour: everyone, and the top-N whales of the request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Hour {
    /// UTC hour, 0–23; all 24 are listed, quiet ones with zeros, so the chart needs no gaps filled.
    pub hour: u8,
    /// Downloads by everyone in this hour.
    #[cfg_attr(test, ts(type = "number"))]
    pub downloads: u64,
    /// The part of `downloads` by the top `count` whales of the request (the highlighted bar).
    #[cfg_attr(test, ts(type = "number"))]
    pub whale_downloads: u64,
}

/// One of the top downloaders of a day.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Whale {
    /// 1 is the day's biggest downloader (most downloads; ties: lower `ip_id` first).
    pub rank: u32,
    /// cranlogs' anonymised downloader id; renumbered every day, so only (date, `ip_id`) names a
    /// whale.
    #[cfg_attr(test, ts(type = "number"))]
    pub ip_id: u64,
    /// A memorable `adjective_animal` name that depends only on (date, `ip_id`), stable across
    /// re-ingests.
    pub name: String,
    /// Modal country code; `None` when every row's country was missing.
    pub country: Option<String>,
    /// Its downloads (rows with a package).
    #[cfg_attr(test, ts(type = "number"))]
    pub downloads: u64,
    /// Sum of their sizes.
    #[cfg_attr(test, ts(type = "number"))]
    pub bytes: u64,
    /// Distinct packages among them.
    #[cfg_attr(test, ts(type = "number"))]
    pub packages: u64,
    /// Downloads per UTC hour, 24 entries.
    #[cfg_attr(test, ts(type = "number[]"))]
    pub hourly: Vec<u64>,
    /// What it is doing; `None` for a day stored before profiles existed.
    pub profile: Option<Profile>,
}

/// `GET /api/days/{date}?count=N`: a day's totals, hourly traffic and top N whales.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct DaySummary {
    /// `YYYY-MM-DD`.
    pub date: String,
    /// Whales asked for after clamping to 1–100; `whales` has at most this many.
    pub count: u32,
    /// The whole day's totals, whales or not.
    pub totals: Totals,
    /// All 24 UTC hours, each with the top `count` whales' part.
    pub hourly: Vec<Hour>,
    /// The top `count` whales, by rank.
    pub whales: Vec<Whale>,
}

/// One ingested day in `GET /api/days` and `cranwhales days`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct DayInfo {
    /// `YYYY-MM-DD`.
    pub date: String,
    /// The day's totals, so the day list can show its size without loading the day.
    pub totals: Totals,
}

/// One download row of a whale.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Download {
    /// `HH:MM:SS`, UTC.
    pub time: String,
    /// Package name as logged.
    pub package: String,
    /// Package version; `None` when the log has `NA`.
    pub version: Option<String>,
    /// Bytes sent.
    #[cfg_attr(test, ts(type = "number"))]
    pub size: u64,
    /// R version the client sent; `None` when it sent none.
    pub r_version: Option<String>,
    /// R's architecture, e.g. `x86_64`; `None` when not logged.
    pub r_arch: Option<String>,
    /// R's OS, e.g. `mingw32`, `linux-gnu`; `None` when not logged.
    pub r_os: Option<String>,
    /// Two-letter country code of the client's address; `None` when not logged.
    pub country: Option<String>,
}

/// `GET /api/days/{date}/whales/{ip_id}`: one whale's summary and every one of its downloads.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct WhaleDetail {
    /// `YYYY-MM-DD`.
    pub date: String,
    /// The whale as listed in the day's summary, profile included.
    pub whale: Whale,
    /// `HH:MM:SS` (UTC) of its first download.
    pub first: String,
    /// `HH:MM:SS` (UTC) of its last download.
    pub last: String,
    /// Every one of its downloads that day, chronological.
    pub downloads: Vec<Download>,
}

/// What a whale's day looks like, one label per whale (rules: `profile::classify`, tried in this
/// order; the first that holds wins).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(rename_all = "lowercase")]
pub enum Behaviour {
    /// Several versions of the same packages (≥ 1.3 versions per package over ≥ 20 packages).
    Archive,
    /// A large slice of CRAN: ≥ 500 distinct packages, or ≥ 100 and ≥ 10% of the day's packages.
    Mirror,
    /// The same few packages over and over: ≥ 10 downloads per distinct package.
    Loop,
    /// One set of packages installed several times: ≥ 3 downloads per package, ≥ 5 packages.
    Classroom,
    /// Spread over the whole day: downloads in ≥ 20 of the 24 UTC hours.
    Steady,
    /// Concentrated: ≥ half the downloads within one minute, or all within 15 minutes.
    Burst,
    /// Anything else: a set of packages, each about once or twice, over a few hours.
    Session,
}

impl Behaviour {
    /// Every behaviour, in rule order (the order trends and the UI list them in).
    pub const ALL: [Behaviour; 7] = [
        Behaviour::Archive,
        Behaviour::Mirror,
        Behaviour::Loop,
        Behaviour::Classroom,
        Behaviour::Steady,
        Behaviour::Burst,
        Behaviour::Session,
    ];

    /// The stored and served name (`serde` lowercase).
    pub fn key(self) -> &'static str {
        match self {
            Behaviour::Archive => "archive",
            Behaviour::Mirror => "mirror",
            Behaviour::Loop => "loop",
            Behaviour::Classroom => "classroom",
            Behaviour::Steady => "steady",
            Behaviour::Burst => "burst",
            Behaviour::Session => "session",
        }
    }

    /// Parses a stored name.
    pub fn from_key(s: &str) -> Option<Behaviour> {
        Behaviour::ALL.into_iter().find(|b| b.key() == s)
    }

    /// The label people read.
    pub fn label(self) -> &'static str {
        match self {
            Behaviour::Archive => "archive crawler",
            Behaviour::Mirror => "mirror-like",
            Behaviour::Loop => "repeat loop",
            Behaviour::Classroom => "classroom / lab",
            Behaviour::Steady => "steady all-day",
            Behaviour::Burst => "burst",
            Behaviour::Session => "install session",
        }
    }
}

/// Downloads by one kind of client (an OS family or an architecture).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Mix {
    /// The OS family (`windows`, `macos`, `linux`, `other`, `none`) or architecture (`x86_64`,
    /// `i386`, `other`, `none`).
    pub name: String,
    /// Downloads by clients of this kind.
    #[cfg_attr(test, ts(type = "number"))]
    pub downloads: u64,
}

/// Everything measured about one whale's day (counts are downloads = rows with a package).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Facts {
    /// Its downloads: what the shares below are out of.
    #[cfg_attr(test, ts(type = "number"))]
    pub downloads: u64,
    /// Distinct packages it downloaded.
    #[cfg_attr(test, ts(type = "number"))]
    pub packages: u64,
    /// Distinct packages downloaded by anyone that day: a mirror takes a large slice of them.
    #[cfg_attr(test, ts(type = "number"))]
    pub day_packages: u64,
    /// Its most downloaded package (ties: the alphabetically first).
    pub top_package: String,
    /// Its downloads of `top_package`: a loop fetches one package over and over.
    #[cfg_attr(test, ts(type = "number"))]
    pub top_package_downloads: u64,
    /// Distinct (package, version) pairs.
    #[cfg_attr(test, ts(type = "number"))]
    pub versions: u64,
    /// Its downloads whose request named no R version: a hint that the client is not R.
    #[cfg_attr(test, ts(type = "number"))]
    pub no_r_version: u64,
    /// The same share for the whole day: 1.0 means the day's log records no R versions at all, so a
    /// whale's share says nothing about it.
    pub day_no_r_share: f64,
    /// Its downloads by OS family (windows, macos, linux, other, none), most first.
    pub os: Vec<Mix>,
    /// Its downloads by architecture (x86_64, i386, other, none), most first.
    pub arch: Vec<Mix>,
    /// UTC hours with at least one download.
    pub active_hours: u32,
    /// Seconds since midnight (UTC) of its first download.
    pub first: u32,
    /// Seconds since midnight (UTC) of its last download.
    pub last: u32,
    /// The most downloads within 60 seconds (a window `[t, t+59]` starting at a download).
    #[cfg_attr(test, ts(type = "number"))]
    pub burst: u64,
    /// The earliest `t` (seconds since midnight) whose window holds `burst` downloads.
    pub burst_start: u32,
    /// Lower quartile of the gaps between consecutive downloads in seconds (p = 0.25: element
    /// `floor(p * (m - 1))` of the m sorted gaps); `None` with a single download.
    pub gap_q1: Option<u32>,
    /// Median of the same gaps (p = 0.5); `None` with a single download.
    pub gap_median: Option<u32>,
    /// Upper quartile of the same gaps (p = 0.75); `None` with a single download.
    pub gap_q3: Option<u32>,
    /// Downloads of the day's top-100 whales together (this whale's share is `downloads / it`).
    #[cfg_attr(test, ts(type = "number"))]
    pub whale_downloads: u64,
}

impl Facts {
    /// Share of the day's distinct packages it downloaded (0 when the day has none).
    pub fn package_share(&self) -> f64 {
        ratio(self.packages, self.day_packages)
    }
    /// Share of its downloads that were `top_package`.
    pub fn top_package_share(&self) -> f64 {
        ratio(self.top_package_downloads, self.downloads)
    }
    /// Distinct versions per distinct package: well above 1 means old versions too (archive).
    pub fn versions_per_package(&self) -> f64 {
        ratio(self.versions, self.packages)
    }
    /// Share of its downloads without an R version.
    pub fn no_r_share(&self) -> f64 {
        ratio(self.no_r_version, self.downloads)
    }
    /// Its share of the day's top-100 whales' downloads together.
    pub fn whale_share(&self) -> f64 {
        ratio(self.downloads, self.whale_downloads)
    }
    /// The gaps are regular (a timer): median ≥ 30 s and quartiles within half the median.
    pub fn regular(&self) -> bool {
        match (self.gap_q1, self.gap_median, self.gap_q3) {
            (Some(q1), Some(m), Some(q3)) => m >= 30 && 2 * (q3 - q1) <= m,
            _ => false,
        }
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

/// A whale's profile as stored and served: the label, the sentence and the facts behind them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Profile {
    /// The rule that matched (the first of `Behaviour::ALL` that holds).
    pub behaviour: Behaviour,
    /// `behaviour` as people read it (`Behaviour::label`).
    pub label: String,
    /// One sentence of what it did, in words, from the facts.
    pub sentence: String,
    /// The numbers the rule and the sentence were computed from, shown in the detail view.
    pub facts: Facts,
}

/// One stored day of a package in `GET /api/packages/{name}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct PackageDay {
    /// `YYYY-MM-DD`; with `bin` other than `day`, the first day of the bin (a Monday, the 1st of
    /// a month, January 1st).
    pub date: String,
    /// Stored days in this point: 1 for `bin=day`, up to 7/31/366 for a bin (so a partly stored
    /// bin can be told from a quiet one).
    pub days: u32,
    /// Distinct ip_ids among its downloads; `None` for a day stored before this was counted.
    #[cfg_attr(test, ts(type = "number | null"))]
    pub downloaders: Option<u64>,
    /// The day's (in a bin: the sum of its days') aggregate-only baseline (5% quantile of
    /// per-package downloads, as `adjustedcranlogs` estimates CRAN-wide automated downloads);
    /// `None` for a day stored before it was computed.
    #[cfg_attr(test, ts(type = "number | null"))]
    pub baseline: Option<u64>,
    /// Its downloads, with and without whales and filters (in a bin: its days' sums), flattened
    /// into the same object.
    #[serde(flatten)]
    pub counts: PackageTotals,
}

/// A package's download counts, with and without whales and filters: of one day (in
/// `PackageDay`), of a bin of days, or summed over a `PackageReport`'s range (its `totals`). One
/// type, so a count added to a day reaches the sums.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct PackageTotals {
    /// Every download of the package.
    #[cfg_attr(test, ts(type = "number"))]
    pub downloads: u64,
    /// Of which by each day's top-N whales (N of the request).
    #[cfg_attr(test, ts(type = "number"))]
    pub whale_downloads: u64,
    /// `downloads - whale_downloads`.
    #[cfg_attr(test, ts(type = "number"))]
    pub without_whales: u64,
    /// `downloads` minus the days' baselines (not below 0 on any day); `None` when a day has no
    /// baseline.
    #[cfg_attr(test, ts(type = "number | null"))]
    pub adjusted: Option<u64>,
    /// Downloads under 1,000 bytes (partial transfers and probes); `None` when a day was stored
    /// before these were counted (schema 3).
    #[cfg_attr(test, ts(type = "number | null"))]
    pub small: Option<u64>,
    /// Downloads repeated by one downloader within 5 minutes of its previous download of the
    /// package (small ones aside, so the two never overlap); `None` as for `small`.
    #[cfg_attr(test, ts(type = "number | null"))]
    pub repeats: Option<u64>,
    /// `downloads - small - repeats`: the filters alone; `None` as for `small`.
    #[cfg_attr(test, ts(type = "number | null"))]
    pub without_inflated: Option<u64>,
    /// `without_whales` minus the small and repeated downloads of everyone but the top-N whales:
    /// whales and filters together, nothing taken out twice; `None` as for `small`.
    #[cfg_attr(test, ts(type = "number | null"))]
    pub without_whales_inflated: Option<u64>,
}

impl PackageTotals {
    /// Adds `other`'s counts (a missing count makes the sum missing): a bin from its days, a
    /// range's totals from its days.
    pub fn add(&mut self, other: &PackageTotals) {
        let opt = |a: Option<u64>, b: Option<u64>| a.zip(b).map(|(a, b)| a + b);
        self.downloads += other.downloads;
        self.whale_downloads += other.whale_downloads;
        self.without_whales += other.without_whales;
        self.adjusted = opt(self.adjusted, other.adjusted);
        self.small = opt(self.small, other.small);
        self.repeats = opt(self.repeats, other.repeats);
        self.without_inflated = opt(self.without_inflated, other.without_inflated);
        self.without_whales_inflated =
            opt(self.without_whales_inflated, other.without_whales_inflated);
    }

    /// The sums of `days`' counts (all 0 for none).
    pub fn sum<'a>(days: impl IntoIterator<Item = &'a PackageDay>) -> PackageTotals {
        let mut t = PackageTotals {
            downloads: 0,
            whale_downloads: 0,
            without_whales: 0,
            adjusted: Some(0),
            small: Some(0),
            repeats: Some(0),
            without_inflated: Some(0),
            without_whales_inflated: Some(0),
        };
        days.into_iter().for_each(|d| t.add(&d.counts));
        t
    }
}

/// `GET /api/packages/{name}?from=&to=&whales=N` and `cranwhales package NAME --json`: a
/// package over the stored days in `from..=to`, every one listed (0 on days without downloads).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct PackageReport {
    /// The package name as stored (exact case).
    pub package: String,
    /// First day of the range, `YYYY-MM-DD`.
    pub from: String,
    /// Last day of the range, `YYYY-MM-DD`.
    pub to: String,
    /// N: each day's top-N whales are what "without whales" leaves out.
    pub whales: u32,
    /// Every stored day in range, oldest first.
    pub days: Vec<PackageDay>,
    /// Sums over `days`.
    pub totals: PackageTotals,
    /// How this compares with the aggregate-only correction, in words.
    pub note: String,
    /// The two inflated-download filters, a sentence each with its threshold and how many
    /// downloads of this package it leaves out over the range.
    pub filters_note: String,
    /// How `days` are binned (`day`: one point per stored day).
    pub bin: Bin,
    /// True when every count in `days` is a running sum from the range's first day.
    pub cumulative: bool,
    /// Its rank among every package downloaded on the stored days of the range (by downloads);
    /// `None` when it had no download in the range.
    pub rank: Option<Rank>,
    /// How all packages' downloads over the range are spread, for the histogram that marks this
    /// one.
    pub distribution: Distribution,
}

/// How a package's stored days are grouped into points (`bin=` of the API).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub enum Bin {
    /// One point per stored day.
    #[default]
    Day,
    /// ISO weeks, Monday first.
    Week,
    /// Calendar months.
    Month,
    /// Calendar years.
    Year,
}

impl Bin {
    /// The API's spelling (`day|week|month|year`); `None` for anything else.
    pub fn parse(s: &str) -> Option<Bin> {
        match s {
            "day" => Some(Bin::Day),
            "week" => Some(Bin::Week),
            "month" => Some(Bin::Month),
            "year" => Some(Bin::Year),
            _ => None,
        }
    }
}

/// A package's place among all packages over a range, as packageRank reports it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Rank {
    /// 1 + the packages with more downloads (ties share a rank).
    #[cfg_attr(test, ts(type = "number"))]
    pub rank: u64,
    /// Packages with at least one download on the stored days of the range.
    #[cfg_attr(test, ts(type = "number"))]
    pub of: u64,
    /// Share of those packages with fewer downloads, in percent, one decimal.
    pub percentile: f64,
    /// Its downloads over the range (the number ranked).
    #[cfg_attr(test, ts(type = "number"))]
    pub downloads: u64,
    /// `"1,204 of 6,891, 82.5 percentile"` (then `", without whales, repeats"` when filtered):
    /// shown as is by the UI and the CLI.
    pub text: String,
    /// What every package's count leaves out (`without=`: whales, small, repeats), as
    /// packageRank ranks on filtered counts; empty: every download.
    #[serde(default)]
    pub without: Vec<String>,
    /// Stored days of the range not counted: stored before small and repeated downloads were
    /// counted, when those are left out.
    #[serde(default)]
    pub days_without_filters: Vec<String>,
}

/// A histogram of all packages' downloads over a range on log-spaced buckets: bucket `i` holds
/// the packages with `edges[i] <= downloads < edges[i + 1]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Distribution {
    /// 1, 2, 5, 10, 20, 50, …: one more than `counts`; the last is above every package's count.
    #[cfg_attr(test, ts(type = "number[]"))]
    pub edges: Vec<u64>,
    /// Packages per bucket.
    #[cfg_attr(test, ts(type = "number[]"))]
    pub counts: Vec<u64>,
}

/// A stored package name for search suggestions (`GET /api/packages?q=`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct PackageName {
    /// The package name as stored (exact case).
    pub package: String,
    /// Downloads over all stored days.
    #[cfg_attr(test, ts(type = "number"))]
    pub downloads: u64,
    /// Stored days with at least one download of it.
    #[cfg_attr(test, ts(type = "number"))]
    pub days: u64,
}

/// One stored day in `GET /api/trends`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct TrendDay {
    /// `YYYY-MM-DD`.
    pub date: String,
    /// Downloads that day (all packages).
    #[cfg_attr(test, ts(type = "number"))]
    pub downloads: u64,
    /// Distinct `ip_id`s with a download that day.
    #[cfg_attr(test, ts(type = "number"))]
    pub downloaders: u64,
    /// Downloads of the day's top whale.
    #[cfg_attr(test, ts(type = "number"))]
    pub top1: u64,
    /// Downloads of the day's top 6 whales together (the default count).
    #[cfg_attr(test, ts(type = "number"))]
    pub top6: u64,
    /// Downloads of the day's top 25 whales together (the most the UI shows).
    #[cfg_attr(test, ts(type = "number"))]
    pub top25: u64,
    /// Top-100 whales per behaviour (every behaviour listed); `None` for a day stored before
    /// profiles existed.
    #[cfg_attr(test, ts(type = "{ [key in Behaviour]?: number } | null"))]
    pub behaviours: Option<std::collections::BTreeMap<Behaviour, u32>>,
}

/// `GET /api/trends?from=&to=`: every stored day in `from..=to`, oldest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Trends {
    /// First day asked for, `YYYY-MM-DD`.
    pub from: String,
    /// Last day asked for, `YYYY-MM-DD`.
    pub to: String,
    /// Every stored day in `from..=to`, oldest first.
    pub days: Vec<TrendDay>,
}
