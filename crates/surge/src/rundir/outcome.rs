//! What a run's session rows say, the one type for it: sessions started, completed, failed and
//! unfinished, failures by kind and by (kind, line) with a reason, and the latency percentiles.
//! summary.json embeds it (a replay's, a merge's, each journey's), the terminal prints it, and the
//! report states it for every run it reads (a shinycannon run too, which has no summary.json), all
//! computed by one function, [`super::Aggregate::outcome`].

use crate::failure::{Failure, FailureKind};
use crate::recording::Kind;
use crate::stats::Summary;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What a run's (or a journey's) sessions say. summary.json flattens it (its keys `sessions`,
/// `failure_rate`, `failures_by_kind`, `failures`, `events`, `overall`, `session_duration`); the
/// report embeds it as each run's `summary.outcome`.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[schemars(deny_unknown_fields)]
pub struct Outcome {
    /// Sessions started, completed, failed (and unfinished).
    pub sessions: SessionCounts,
    /// failed / started (0 when none started).
    pub failure_rate: f64,
    /// Failed sessions per kind of failure (`timeout`, `wrong_status`, `closed`, ...).
    #[cfg_attr(test, ts(type = "Record<string, number>"))]
    pub failures_by_kind: BTreeMap<FailureKind, u64>,
    /// Failed sessions grouped by kind and recording line, most frequent first.
    pub failures: Vec<FailureCount>,
    /// Per event type, all events and completed sessions: durations in ms.
    #[serde(flatten)]
    pub percentiles: Percentiles,
}

/// A run's latency percentiles (ms, nearest rank over the exact values): what summary.json, the
/// terminal text and the report state alike, from one [`super::Aggregate`].
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Default, PartialEq)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[schemars(deny_unknown_fields)]
pub struct Percentiles {
    /// Per event type (REQ_HOME, WS_RECV, ...): durations in ms.
    #[cfg_attr(test, ts(as = "BTreeMap<String, Summary>"))]
    pub events: BTreeMap<Kind, Summary>,
    /// All events together, ms.
    pub overall: Summary,
    /// Whole completed sessions, ms.
    pub session_duration: Summary,
}

/// Session counts of a run.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Default, PartialEq)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[schemars(deny_unknown_fields)]
pub struct SessionCounts {
    /// Sessions begun (completed + failed + unfinished).
    #[cfg_attr(test, ts(type = "number"))]
    pub started: u64,
    /// Sessions that played to their end (PLAYBACK_DONE).
    #[cfg_attr(test, ts(type = "number"))]
    pub completed: u64,
    /// Sessions that failed (PLAYBACK_FAIL), interrupted ones included.
    #[cfg_attr(test, ts(type = "number"))]
    pub failed: u64,
    /// Sessions whose CSV ends with neither (a shinycannon run stopped midway; a replay writes
    /// PLAYBACK_FAIL for the sessions it stops, so its summary.json leaves this out).
    #[serde(default, skip_serializing_if = "is_zero")]
    #[cfg_attr(test, ts(as = "Option<f64>", optional))]
    pub unfinished: u64,
    /// Sessions whose CSV could not be written (e.g. a full disk): absent from the run directory.
    #[cfg_attr(test, ts(type = "number"))]
    pub unwritten: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Sessions that failed the same way at the same recording line: the kind, where (line, event
/// type, URL), the first such failure's readable reason, and how many.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[schemars(deny_unknown_fields)]
pub struct FailureCount {
    /// What went wrong.
    #[cfg_attr(test, ts(type = "string"))]
    pub kind: FailureKind,
    /// recording.log line (0: before the first event).
    pub line: u32,
    /// The recording event's type (absent before the first event).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(type = "string", optional))]
    pub event: Option<Kind>,
    /// The request's URL as sent (absent for failures outside a request, and in what the report
    /// reads from session CSVs, whose comment has it inside the reason only).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub url: Option<String>,
    /// The first such failure's readable line (in the report: as the CSV's PLAYBACK_FAIL comment
    /// holds it, commas as `;`).
    pub reason: String,
    /// How many sessions failed so.
    #[cfg_attr(test, ts(type = "number"))]
    pub count: u64,
}

impl FailureCount {
    /// One session's failure, counted once.
    pub fn of(f: &Failure) -> FailureCount {
        FailureCount {
            kind: f.cause.kind(),
            line: f.line(),
            event: f.at.map(|a| a.kind),
            url: f.url.clone(),
            reason: f.to_string(),
            count: 1,
        }
    }
}

/// How a session ended, as its CSV's last row says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// `PLAYBACK_DONE`.
    Done = 0,
    /// `PLAYBACK_FAIL`.
    Failed = 1,
    /// Neither (the run was stopped).
    Unfinished = 2,
}
