//! The shapes a day is served in: what `cranwhales show --json` prints and `GET /api/days/...`
//! returns. Built once from the store and immutable afterwards, so the server can cache them.
//! The UI's TypeScript types are generated from these (`web/src/app/api.gen.ts`, see
//! `server::wire`); 64-bit counts are sent as JSON numbers (all far below 2^53).

use serde::{Deserialize, Serialize};

/// Totals for one day (all rows with a package).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Totals {
    #[cfg_attr(test, ts(type = "number"))]
    pub downloads: u64,
    #[cfg_attr(test, ts(type = "number"))]
    pub downloaders: u64,
    #[cfg_attr(test, ts(type = "number"))]
    pub bytes: u64,
    #[cfg_attr(test, ts(type = "number"))]
    pub packages: u64,
    #[cfg_attr(test, ts(type = "number"))]
    pub skipped_rows: u64,
}

/// Downloads in one UTC hour: everyone, and the top-N whales of the request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Hour {
    pub hour: u8,
    #[cfg_attr(test, ts(type = "number"))]
    pub downloads: u64,
    #[cfg_attr(test, ts(type = "number"))]
    pub whale_downloads: u64,
}

/// One of the top downloaders of a day.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Whale {
    pub rank: u32,
    #[cfg_attr(test, ts(type = "number"))]
    pub ip_id: u64,
    pub name: String,
    /// Modal country code; `None` when every row's country was missing.
    pub country: Option<String>,
    #[cfg_attr(test, ts(type = "number"))]
    pub downloads: u64,
    #[cfg_attr(test, ts(type = "number"))]
    pub bytes: u64,
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
    pub date: String,
    pub count: u32,
    pub totals: Totals,
    pub hourly: Vec<Hour>,
    pub whales: Vec<Whale>,
}

/// One ingested day in `GET /api/days` and `cranwhales days`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct DayInfo {
    pub date: String,
    pub totals: Totals,
}

/// One download row of a whale.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Download {
    /// `HH:MM:SS`, UTC.
    pub time: String,
    pub package: String,
    pub version: Option<String>,
    #[cfg_attr(test, ts(type = "number"))]
    pub size: u64,
    pub r_version: Option<String>,
    pub r_arch: Option<String>,
    pub r_os: Option<String>,
    pub country: Option<String>,
}

/// `GET /api/days/{date}/whales/{ip_id}`: one whale's summary and every one of its downloads.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct WhaleDetail {
    pub date: String,
    pub whale: Whale,
    /// `HH:MM:SS` of the first and last download.
    pub first: String,
    pub last: String,
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
    pub name: String,
    #[cfg_attr(test, ts(type = "number"))]
    pub downloads: u64,
}

/// Everything measured about one whale's day (counts are downloads = rows with a package).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Facts {
    #[cfg_attr(test, ts(type = "number"))]
    pub downloads: u64,
    /// Distinct packages, and distinct packages downloaded by anyone that day.
    #[cfg_attr(test, ts(type = "number"))]
    pub packages: u64,
    #[cfg_attr(test, ts(type = "number"))]
    pub day_packages: u64,
    /// The most downloaded package (ties: the alphabetically first) and its downloads.
    pub top_package: String,
    #[cfg_attr(test, ts(type = "number"))]
    pub top_package_downloads: u64,
    /// Distinct (package, version) pairs.
    #[cfg_attr(test, ts(type = "number"))]
    pub versions: u64,
    /// Downloads whose request named no R version, and the same share for the whole day.
    #[cfg_attr(test, ts(type = "number"))]
    pub no_r_version: u64,
    pub day_no_r_share: f64,
    /// By OS family (windows, macos, linux, other, none) and by architecture (x86_64, i386,
    /// other, none), most first.
    pub os: Vec<Mix>,
    pub arch: Vec<Mix>,
    /// UTC hours with at least one download.
    pub active_hours: u32,
    /// Seconds since midnight of the first and last download.
    pub first: u32,
    pub last: u32,
    /// The most downloads within 60 seconds (a window `[t, t+59]` starting at a download) and
    /// the earliest `t` reaching it.
    #[cfg_attr(test, ts(type = "number"))]
    pub burst: u64,
    pub burst_start: u32,
    /// Gaps between consecutive downloads in seconds: lower quartile, median, upper quartile
    /// (element `floor(p * (m - 1))` of the m sorted gaps); `None` with a single download.
    pub gap_q1: Option<u32>,
    pub gap_median: Option<u32>,
    pub gap_q3: Option<u32>,
    /// Downloads of the day's top-100 whales together (this whale's share is `downloads / it`).
    #[cfg_attr(test, ts(type = "number"))]
    pub whale_downloads: u64,
}

impl Facts {
    pub fn package_share(&self) -> f64 {
        ratio(self.packages, self.day_packages)
    }
    pub fn top_package_share(&self) -> f64 {
        ratio(self.top_package_downloads, self.downloads)
    }
    pub fn versions_per_package(&self) -> f64 {
        ratio(self.versions, self.packages)
    }
    pub fn no_r_share(&self) -> f64 {
        ratio(self.no_r_version, self.downloads)
    }
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
    pub behaviour: Behaviour,
    pub label: String,
    pub sentence: String,
    pub facts: Facts,
}

/// One stored day of a package in `GET /api/packages/{name}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct PackageDay {
    pub date: String,
    /// Every download of the package that day.
    #[cfg_attr(test, ts(type = "number"))]
    pub downloads: u64,
    /// Distinct ip_ids among them; `None` for a day stored before this was counted.
    #[cfg_attr(test, ts(type = "number | null"))]
    pub downloaders: Option<u64>,
    /// Downloads by the day's top-N whales (N of the request).
    #[cfg_attr(test, ts(type = "number"))]
    pub whale_downloads: u64,
    /// `downloads - whale_downloads`.
    #[cfg_attr(test, ts(type = "number"))]
    pub without_whales: u64,
    /// The day's aggregate-only baseline (5% quantile of per-package downloads, as
    /// `adjustedcranlogs` estimates CRAN-wide automated downloads) and `downloads` minus it.
    #[cfg_attr(test, ts(type = "number | null"))]
    pub baseline: Option<u64>,
    #[cfg_attr(test, ts(type = "number | null"))]
    pub adjusted: Option<u64>,
}

/// Sums over the days of a `PackageReport`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct PackageTotals {
    #[cfg_attr(test, ts(type = "number"))]
    pub downloads: u64,
    #[cfg_attr(test, ts(type = "number"))]
    pub whale_downloads: u64,
    #[cfg_attr(test, ts(type = "number"))]
    pub without_whales: u64,
    /// `None` when a day in range has no baseline.
    #[cfg_attr(test, ts(type = "number | null"))]
    pub adjusted: Option<u64>,
}

/// `GET /api/packages/{name}?from=&to=&whales=N` and `cranwhales package NAME --json`: a
/// package over the stored days in `from..=to`, every one listed (0 on days without downloads).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct PackageReport {
    pub package: String,
    pub from: String,
    pub to: String,
    /// N: each day's top-N whales are what "without whales" leaves out.
    pub whales: u32,
    pub days: Vec<PackageDay>,
    pub totals: PackageTotals,
    /// How this compares with the aggregate-only correction, in words.
    pub note: String,
}

/// A stored package name for search suggestions (`GET /api/packages?q=`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct PackageName {
    pub package: String,
    /// Downloads over all stored days, and on how many of them.
    #[cfg_attr(test, ts(type = "number"))]
    pub downloads: u64,
    #[cfg_attr(test, ts(type = "number"))]
    pub days: u64,
}

/// One stored day in `GET /api/trends`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct TrendDay {
    pub date: String,
    #[cfg_attr(test, ts(type = "number"))]
    pub downloads: u64,
    #[cfg_attr(test, ts(type = "number"))]
    pub downloaders: u64,
    /// Downloads of the day's top 1, 6 and 25 whales together.
    #[cfg_attr(test, ts(type = "number"))]
    pub top1: u64,
    #[cfg_attr(test, ts(type = "number"))]
    pub top6: u64,
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
    pub from: String,
    pub to: String,
    pub days: Vec<TrendDay>,
}
