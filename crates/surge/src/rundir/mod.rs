//! The run directory: what a replay (or `surge merge`) writes and `report`, `capacity` and
//! `merge` read back, in one place. Layout:
//!
//! ```text
//! <run>/recording.log      the recording replayed (copied)
//! <run>/sessions/*.csv     one shinycannon-format CSV per session
//! <run>/summary.json       RunSummary (this module's one summary type)
//! <run>/shape.csv          users and arrivals over time, asked and achieved
//! ```
//!
//! Every figure derived from it uses one percentile definition, nearest rank over the exact
//! values ([`crate::stats::rank`]): summary.json, the terminal text and the report agree.
//!
//! `aggregate` (durations and failures as sessions end, or from CSV rows), `summary`
//! (summary.json and computing it from an aggregate), `csv` (the one session-CSV reader), `join` (the one order of
//! a joined plan's sessions, for `merge` and `report`).

mod aggregate;
pub mod csv;
pub mod join;
mod summary;

pub use aggregate::Aggregate;
pub use summary::{
    from_aggregate, FailureCount, Head, Percentiles, Plan, RunSummary, SessionCounts, Split,
};

/// The file name of a run's summary.
pub const SUMMARY_JSON: &str = "summary.json";
