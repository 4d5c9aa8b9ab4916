//! Behaviour profiles of a day's top whales: facts measured from each whale's rows, one named
//! behaviour chosen by fixed rules, and one plain-English sentence built from the facts.
//!
//! The definitions and thresholds are documented, with the real days that justify them, in
//! `docs/whale-behaviours.md`; `tests/reference/recount.py` computes the same facts independently.
//! Computed once during ingest (`facts::Profiler`), stored with the day, served as is.

mod facts;
mod sentence;

use serde::{Deserialize, Serialize};

pub use facts::{EnvClass, Profiler, Row};
pub use sentence::sentence;

/// What a whale's day looks like, one label per whale. The rules are tried in this order and the
/// first that holds wins (content before timing: what was fetched says more than when).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
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

    /// The rules of `docs/whale-behaviours.md`, in integers so that no rounding decides a label.
    pub fn of(f: &Facts) -> Behaviour {
        let (n, pk) = (f.downloads, f.packages);
        if pk >= 20 && 10 * f.versions >= 13 * pk {
            Behaviour::Archive
        } else if pk >= 500 || (pk >= 100 && 10 * pk >= f.day_packages) {
            Behaviour::Mirror
        } else if n >= 10 * pk {
            Behaviour::Loop
        } else if pk >= 5 && n >= 3 * pk {
            Behaviour::Classroom
        } else if f.active_hours >= 20 {
            Behaviour::Steady
        } else if 2 * f.burst >= n || f.last - f.first <= 900 {
            Behaviour::Burst
        } else {
            Behaviour::Session
        }
    }
}

/// Downloads by one kind of client (an OS family or an architecture).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mix {
    pub name: String,
    pub downloads: u64,
}

/// Everything measured about one whale's day (counts are downloads = rows with a package).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Facts {
    pub downloads: u64,
    /// Distinct packages, and distinct packages downloaded by anyone that day.
    pub packages: u64,
    pub day_packages: u64,
    /// The most downloaded package (ties: the alphabetically first) and its downloads.
    pub top_package: String,
    pub top_package_downloads: u64,
    /// Distinct (package, version) pairs.
    pub versions: u64,
    /// Downloads whose request named no R version, and the same share for the whole day.
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
    pub burst: u64,
    pub burst_start: u32,
    /// Gaps between consecutive downloads in seconds: lower quartile, median, upper quartile
    /// (element `floor(p * (m - 1))` of the m sorted gaps); `None` with a single download.
    pub gap_q1: Option<u32>,
    pub gap_median: Option<u32>,
    pub gap_q3: Option<u32>,
    /// Downloads of the day's top-100 whales together (this whale's share is `downloads / it`).
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
pub struct Profile {
    pub behaviour: Behaviour,
    pub label: String,
    pub sentence: String,
    pub facts: Facts,
}

impl Profile {
    /// Labels and describes `facts`.
    pub fn new(facts: Facts) -> Profile {
        let behaviour = Behaviour::of(&facts);
        Profile {
            behaviour,
            label: behaviour.label().to_owned(),
            sentence: sentence(&facts, behaviour),
            facts,
        }
    }
}
