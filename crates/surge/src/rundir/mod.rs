//! The run directory: what a replay (or `surge merge`) writes and `report`, `capacity` and
//! `merge` read back, in one place. Layout:
//!
//! ```text
//! <run>/recording.log      the recording replayed (copied)
//! <run>/sessions/*.csv     one shinycannon-format CSV per session
//! <run>/summary.json       RunSummary: the run's header and its Outcome
//! <run>/shape.csv          users and arrivals over time, asked and achieved
//! <run>/timing/*.csv       per session, each request's `Server-Timing` (only when a server sent it)
//! ```
//!
//! Here: the directory prepared (`files`), a session's CSV rows rendered when it ends and read
//! back (`session`: the shinycannon vocabulary, `COLUMNS` and `RowEvent`; `csv`: the one reader),
//! shape.csv (`shape`), what the session rows say (the one `Outcome`, which summary.json and the
//! report both state), summary.json (`RunSummary`: the run's header around its `Outcome`, written
//! and read), the aggregate behind them, and the one segment join.
//!
//! Every figure derived from it uses one percentile definition, nearest rank over the exact
//! values ([`crate::stats::rank`]): summary.json, the terminal text and the report agree.
//!
//! `files` (prepare, copy the recording, write whole or not at all), `session` (a session's rows
//! and their CSV), `shape` (shape.csv), `aggregate` (durations, counts and failures as sessions
//! end, or from CSV rows), `outcome` (the `Outcome` an aggregate says), `summary` (summary.json
//! and computing it from an aggregate), `csv` (the one session-CSV reader), `join` (the one order
//! of a joined plan's sessions, for `merge` and `report`).

mod aggregate;
pub mod csv;
mod files;
pub mod join;
mod outcome;
mod session;
mod shape;
mod summary;

pub use aggregate::Aggregate;
pub use files::{copy_recording, prepare_dir, write_atomic, OutputError};
pub use outcome::{Ended, FailureCount, Outcome, Percentiles, SessionCounts};
pub use session::{csv_safe, fail_comment, parse_fail_comment, Row, RowEvent, SessionLog, COLUMNS};
pub use shape::{read_points, write_points, ShapePoint, SHAPE_CSV};
pub use summary::{from_aggregate, Head, JourneySummary, Plan, RunSummary, Split};

/// Where two runs' recording.log texts first differ, for the error refusing to join them
/// (`surge merge`, `surge report` of segments): `recording.log differs at line 12`.
pub fn first_difference(a: &str, b: &str) -> String {
    let (la, lb): (Vec<&str>, Vec<&str>) = (a.lines().collect(), b.lines().collect());
    match la.iter().zip(&lb).position(|(x, y)| x != y) {
        Some(i) => format!("recording.log differs at line {}", i + 1),
        None => format!("recording.log has {} vs {} lines", la.len(), lb.len()),
    }
}

/// The file name of a run's summary.
pub const SUMMARY_JSON: &str = "summary.json";

/// Writes `dir/summary.json` (temp file + rename: a reader never sees half of it); the error
/// names the file.
pub fn write_summary(
    dir: &std::path::Path,
    summary: &RunSummary,
) -> Result<(), (std::path::PathBuf, std::io::Error)> {
    let json = serde_json::to_string_pretty(summary).expect("summary serialises");
    let path = dir.join(SUMMARY_JSON);
    match write_atomic(&path, format!("{json}\n").as_bytes()) {
        Ok(()) => Ok(()),
        Err(err) => Err((path, err)),
    }
}

/// Reads `dir/summary.json` as JSON (a segment's, for `surge merge`); the error names the file.
pub fn read_summary(
    dir: &std::path::Path,
) -> Result<serde_json::Value, (std::path::PathBuf, SummaryReadError)> {
    let path = dir.join(SUMMARY_JSON);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) => return Err((path, SummaryReadError::Io(e))),
    };
    serde_json::from_str(&text).map_err(|e| (path, SummaryReadError::Json(e)))
}

/// Why summary.json could not be read.
#[derive(Debug, thiserror::Error)]
pub enum SummaryReadError {
    /// Missing or unreadable.
    #[error("{0}")]
    Io(std::io::Error),
    /// Not JSON.
    #[error("{0}")]
    Json(serde_json::Error),
}
