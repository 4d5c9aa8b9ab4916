//! One day's aggregation: rows go in one at a time, the day's tables come out.
//!
//! Memory grows with distinct ips (16 B each + an index slot), distinct strings (packages,
//! versions, R builds, countries: interned once each) and rows (20 B each, kept so that the rows
//! of the top-100 whales can be listed at the end without a second pass over the input).
//!
//! Modules: `builder` (the one pass), `interner` (strings → ids), `ips` (per-downloader
//! totals), `rank` (top 100), `whales` (their tables and behaviour profiles), `downloaders`
//! (unique downloaders per package), `filters` (small and repeated downloads per package),
//! `stats` (day-level numbers for trends), `pack` (the whales' stored blob), `breakdown`
//! (each package by version, country, OS, R version and arch).

pub mod breakdown;
mod builder;
mod downloaders;
pub mod filters;
mod interner;
mod ips;
mod pack;
mod rank;
mod stats;
mod whales;

use std::collections::HashMap;

use crate::summary::{Profile, Totals};

pub use crate::blob::DownloadRef;
pub use builder::DayBuilder;
pub use interner::key_hash;
pub use stats::DayStats;

/// How many downloaders are ranked and kept with all their rows.
pub const TOP: usize = 100;

/// How many threads one day's work may use. A lone day splits its long steps (the row log's
/// scans, the whales' tables, packing) over two threads so that a 2-core machine's second core
/// does not idle; when several days are in flight every core already has a day, and splitting
/// only adds work (each downloader-counting thread scans the whole log) and hand-offs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Threads {
    /// Everything on the calling thread.
    One,
    /// The long steps on the calling thread and one more.
    Two,
}

impl Threads {
    /// Runs `a` and `b`, on two threads when `self` is `Two`.
    pub(crate) fn join<A: Send, B: Send>(
        self,
        a: impl FnOnce() -> A + Send,
        b: impl FnOnce() -> B + Send,
    ) -> (A, B) {
        match self {
            Threads::One => (a(), b()),
            Threads::Two => std::thread::scope(|s| {
                let second = s.spawn(b);
                (a(), second.join().expect("second thread of a day's step"))
            }),
        }
    }
}

/// A row that breaks the day's rules; the caller adds the file name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowError {
    /// Line number in the file (the header is line 1), so the message can point at it.
    pub line: u64,
    /// The column at fault (`row` for the line as a whole: field count, length, UTF-8).
    pub field: &'static str,
    /// What is wrong, in words (e.g. `"12k" is not a number`).
    pub problem: String,
}

fn row_err(line: u64, field: &'static str, problem: impl Into<String>) -> RowError {
    RowError {
        line,
        field,
        problem: problem.into(),
    }
}

type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

/// One kept row, 20 bytes: everything a whale's download list needs, as dictionary ids.
#[derive(Clone, Copy)]
struct RowRec {
    ip: u32,
    pkgver: u32,
    env: u32,
    /// Size, or `u32::MAX` when it is in `DayBuilder::big_sizes`.
    size: u32,
    /// Seconds since midnight (17 bits) | country id << 17.
    time_country: u32,
}

/// Bits of `RowRec::time_country` that hold the time; the country id is above them.
const COUNTRY_SHIFT: u32 = 17;

/// Dictionaries of one day's distinct strings, indexed by the ids in kept rows.
#[derive(Default)]
struct Dict {
    packages: Vec<String>,
    /// pkgver id → (package id, version).
    pkgvers: Vec<(u32, Option<String>)>,
    /// env id → (r_version, r_arch, r_os).
    envs: Vec<[Option<String>; 3]>,
    countries: Vec<Option<String>>,
}

/// One download of a whale, as dictionary ids.
#[derive(Clone, Copy)]
struct WhaleRow {
    secs: u32,
    country: u32,
    pkgver: u32,
    env: u32,
    size: u64,
}

/// A top downloader of the day with all its rows.
pub struct WhaleTable {
    /// 1 is the day's biggest downloader (most downloads; ties: lower `ip_id` first).
    pub rank: u32,
    /// cranlogs' anonymised downloader id, renumbered every day.
    pub ip_id: u64,
    /// Its `adjective_animal` name for (date, `ip_id`) (`names`).
    pub name: String,
    /// Modal country code; `None` when every row's country was missing.
    pub country: Option<String>,
    /// Its downloads (rows with a package).
    pub downloads: u64,
    /// Sum of their sizes.
    pub bytes: u64,
    /// Distinct packages among them.
    pub packages: u64,
    /// Seconds since midnight (UTC) of its first download.
    pub first: u32,
    /// Seconds since midnight (UTC) of its last download.
    pub last: u32,
    /// Its downloads per UTC hour.
    pub hourly: [u64; 24],
    /// What it is doing (docs/whale-behaviours.md).
    pub profile: Profile,
    rows: Vec<WhaleRow>,
    /// (package id, downloads) of every package it downloaded.
    package_counts: Vec<(u32, u32)>,
}

/// Downloads of one package on the day: all, by distinct ips, and by the top-100 whales.
pub struct PackageCount {
    /// The package name as logged.
    pub package: String,
    /// Every download of it that day.
    pub downloads: u64,
    /// Distinct `ip_id`s among them.
    pub downloaders: u64,
    /// Of which by the top-100 whales together.
    pub whale_downloads: u64,
    /// (rank, downloads) of each top-100 whale that downloaded it, by rank: the downloads
    /// without the top N are `downloads` minus the entries of rank ≤ N.
    pub whale_ranks: Vec<(u32, u64)>,
    /// Downloads under `filters::SMALL_BYTES` bytes.
    pub small: u64,
    /// Downloads repeated within `filters::REPEAT_WINDOW_SECS` (small ones aside).
    pub repeats: u64,
    /// (rank, small + repeated downloads) of each top-100 whale that made some, by rank.
    pub whale_filtered: Vec<(u32, u64)>,
}

/// Everything stored for one day, computed in memory before the store's single transaction.
pub struct DayTables {
    /// `YYYY-MM-DD`: the day every row is dated.
    pub date: String,
    /// Data rows read, skipped ones included.
    pub rows: u64,
    /// Empty lines, tolerated.
    pub blank_lines: u64,
    /// The day's totals, as served in every summary.
    pub totals: Totals,
    /// Downloads per UTC hour, whales or not.
    pub hourly: [u64; 24],
    /// Ranked, at most [`TOP`].
    pub whales: Vec<WhaleTable>,
    /// Every package downloaded that day (in order of first download), for the package view.
    pub packages: Vec<PackageCount>,
    /// Day-level numbers for trends and the package view.
    pub stats: DayStats,
    /// Each package's downloads by version, country, OS, R version and arch (issue 34).
    pub breakdowns: breakdown::Breakdowns,
    /// The whales' blob (`pack_log`) when it was packed beside the breakdowns.
    packed_log: Option<(u64, Vec<u8>)>,
    dict: Dict,
}

impl DayTables {
    /// The downloads of whale `i` (index into `whales`), chronological, strings resolved: the
    /// plain reading that tests hold `pack_whale` to.
    pub fn whale_downloads(&self, i: usize) -> impl Iterator<Item = DownloadRef<'_>> + '_ {
        self.whales[i].rows.iter().map(move |w| {
            let (pkg, version) = &self.dict.pkgvers[w.pkgver as usize];
            let [rv, ra, ro] = &self.dict.envs[w.env as usize];
            DownloadRef {
                secs: w.secs,
                package: &self.dict.packages[*pkg as usize],
                version: version.as_deref(),
                size: w.size,
                r_version: rv.as_deref(),
                r_arch: ra.as_deref(),
                r_os: ro.as_deref(),
                country: self.dict.countries[w.country as usize].as_deref(),
            }
        })
    }

    /// Per package (index into `packages`): the whales' downloads under `filters::SMALL_BYTES`,
    /// which the stored whale log holds (`store::months` sums them per month).
    pub fn whale_small(&self) -> Vec<u64> {
        let mut small = vec![0; self.packages.len()];
        for r in self.whales.iter().flat_map(|w| &w.rows) {
            if r.size < filters::SMALL_BYTES {
                small[self.dict.pkgvers[r.pkgver as usize].0 as usize] += 1;
            }
        }
        small
    }

    /// Rows stored for all whales together.
    pub fn whale_row_count(&self) -> u64 {
        self.whales.iter().map(|w| w.rows.len() as u64).sum()
    }
}
