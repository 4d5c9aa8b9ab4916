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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
}

/// `GET /api/days/{date}?count=N`: a day's totals, hourly traffic and top N whales.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct WhaleDetail {
    pub date: String,
    pub whale: Whale,
    /// `HH:MM:SS` of the first and last download.
    pub first: String,
    pub last: String,
    pub downloads: Vec<Download>,
}
