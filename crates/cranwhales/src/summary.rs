//! The shapes a day is served in: what `cranwhales show --json` prints and `GET /api/days/...`
//! returns. Built once from the store and immutable afterwards, so the server can cache them.

use serde::{Deserialize, Serialize};

/// Totals for one day (all rows with a package).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Totals {
    pub downloads: u64,
    pub downloaders: u64,
    pub bytes: u64,
    pub packages: u64,
    pub skipped_rows: u64,
}

/// Downloads in one UTC hour: everyone, and the top-N whales of the request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hour {
    pub hour: u8,
    pub downloads: u64,
    pub whale_downloads: u64,
}

/// One of the top downloaders of a day.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Whale {
    pub rank: u32,
    pub ip_id: u64,
    pub name: String,
    /// Modal country code; `None` when every row's country was missing.
    pub country: Option<String>,
    pub downloads: u64,
    pub bytes: u64,
    pub packages: u64,
    /// Downloads per UTC hour, 24 entries.
    pub hourly: Vec<u64>,
}

/// `GET /api/days/{date}?count=N`: a day's totals, hourly traffic and top N whales.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DaySummary {
    pub date: String,
    pub count: u32,
    pub totals: Totals,
    pub hourly: Vec<Hour>,
    pub whales: Vec<Whale>,
}

/// One ingested day in `GET /api/days` and `cranwhales days`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DayInfo {
    pub date: String,
    pub totals: Totals,
}

/// One download row of a whale.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Download {
    /// `HH:MM:SS`, UTC.
    pub time: String,
    pub package: String,
    pub version: Option<String>,
    pub size: u64,
    pub r_version: Option<String>,
    pub r_arch: Option<String>,
    pub r_os: Option<String>,
    pub country: Option<String>,
}

/// `GET /api/days/{date}/whales/{ip_id}`: one whale's summary and every one of its downloads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WhaleDetail {
    pub date: String,
    pub whale: Whale,
    /// `HH:MM:SS` of the first and last download.
    pub first: String,
    pub last: String,
    pub downloads: Vec<Download>,
}
