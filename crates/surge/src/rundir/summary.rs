//! summary.json: the machine-readable result of a run, and computing it from the aggregate (a
//! replay's, as its sessions ended, or `surge merge`'s, from the segments' CSV rows).

use super::aggregate::Aggregate;
use crate::checks::{CheckResult, Scope, Threshold};
use crate::failure::FailureKind;
use crate::recording::Kind;
use crate::stats::{self, Summary};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// summary.json: the machine-readable result of a run. Its JSON Schema, generated from this type,
/// is committed as `schemas/surge-summary.schema.json` (tests/summary_json.rs keeps them equal and
/// validates real runs against it).
#[derive(Serialize, JsonSchema, Debug)]
#[schemars(deny_unknown_fields)]
pub struct RunSummary {
    /// `surge <version>`.
    pub tool: String,
    /// The plan, as given.
    #[serde(flatten)]
    pub plan: Plan,
    /// Unix ms: run start.
    pub started_at_ms: i64,
    /// Unix ms: end of warm-up (the last user started).
    pub warmup_end_ms: i64,
    /// Unix ms: planned end of the loaded phase.
    pub loaded_end_ms: i64,
    /// Unix ms: end of the run.
    pub finished_at_ms: i64,
    /// `finished_at_ms - started_at_ms`.
    pub duration_ms: i64,
    /// The recorded session's own length (first to last event begin, ms).
    pub recording_duration_ms: i64,
    /// Stopped by Ctrl-C.
    pub interrupted: bool,
    /// Its part of a plan spread over several processes.
    #[serde(flatten)]
    pub split: Split,
    /// Sessions started, completed and failed.
    pub sessions: SessionCounts,
    /// `--arrival-rate`: arrivals not started because `--max-users` users were running (0 otherwise).
    pub arrivals_dropped: u64,
    /// failed / started (0 when none started).
    pub failure_rate: f64,
    /// Failed sessions per kind of failure (`timeout`, `wrong_status`, `closed`, ...).
    pub failures_by_kind: BTreeMap<FailureKind, u64>,
    /// Failed sessions grouped by kind and recording line, most frequent first.
    pub failures: Vec<FailureCount>,
    /// Per event type, all events and completed sessions: durations in ms.
    #[serde(flatten)]
    pub percentiles: Percentiles,
    /// `--max-failure-rate` and each `--threshold`, evaluated.
    pub checks: Vec<CheckResult>,
    /// A mix of journeys (`browse.log:70 export.log:30`): the figures above, per journey.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub journeys: BTreeMap<String, JourneySummary>,
    /// Every check passed (exit status 0 unless interrupted).
    pub ok: bool,
}

/// A run's latency percentiles (ms, nearest rank over the exact values): what summary.json, the
/// terminal text and the report state alike, from one [`Aggregate`].
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

impl Aggregate {
    /// The percentiles of every duration gathered so far.
    pub fn percentiles(&self) -> Percentiles {
        Percentiles {
            events: (self.per_kind.iter())
                .map(|(k, v)| (*k, stats::exact(v)))
                .collect(),
            overall: stats::exact(&self.overall()),
            session_duration: stats::exact(&self.session),
        }
    }
}

/// A run's plan as its flags gave it (a replay) or its segments' config line (`surge merge`).
#[derive(Serialize, JsonSchema, Debug, Clone)]
#[schemars(deny_unknown_fields)]
pub struct Plan {
    /// The recording.log replayed.
    pub recording: String,
    /// `--target`.
    pub target: String,
    /// `--users` (`--stages`: the highest target; `--arrival-rate`: `--max-users`).
    pub users: u32,
    /// Delay between user starts (ms).
    pub start_interval_ms: u64,
    /// `--loaded-duration` (ms).
    pub loaded_duration_ms: u64,
    /// `--think-time`: recorded, none or x<factor>.
    pub think_time: String,
    /// `--stages` or `--arrival-rate` as run (null for shinycannon's ramp of `users`).
    pub shape: Option<String>,
    /// `--message-timeout` (ms).
    pub message_timeout_ms: u64,
    /// `--insecure` against an https target: certificates were not verified (absent otherwise).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub insecure: bool,
}

/// Where a run stands in a plan spread over several processes (`--segment`, `--start-at`,
/// `surge merge`); all null or 0 for a whole run started at once.
#[derive(Serialize, JsonSchema, Debug, Clone)]
#[schemars(deny_unknown_fields)]
pub struct Split {
    /// `K/N` for one segment of a plan (`--segment`); null for a whole run.
    pub segment: Option<String>,
    /// `--start-at`: the instant every generator started the plan (RFC 3339); null without it.
    pub start_at: Option<String>,
    /// How long after `--start-at` this process got to start (0: on time).
    pub late_start_ms: u64,
    /// Users this segment ran (of `users` in the plan); null for a whole run.
    pub segment_users: Option<u32>,
    /// For a run made by `surge merge`: how many segments it joins; else null.
    pub merged_segments: Option<u32>,
}

/// One journey's figures in summary.json: the run's own figures, for its sessions only.
#[derive(Serialize, JsonSchema, Debug)]
#[schemars(deny_unknown_fields)]
pub struct JourneySummary {
    /// Its recording.log as given.
    pub recording: String,
    /// Its weight in the mix.
    pub weight: u32,
    /// Its sessions started, completed and failed.
    pub sessions: SessionCounts,
    /// failed / started (0 when none started).
    pub failure_rate: f64,
    /// Its failed sessions per kind of failure.
    pub failures_by_kind: BTreeMap<FailureKind, u64>,
    /// Its failures grouped by kind and recording line (lines of its own recording).
    pub failures: Vec<FailureCount>,
    /// Per event type: durations in ms.
    pub events: BTreeMap<Kind, Summary>,
    /// All its events together, ms.
    pub overall: Summary,
    /// Its whole completed sessions, ms.
    pub session_duration: Summary,
}

/// Session counts of a run.
#[derive(Serialize, JsonSchema, Debug)]
#[schemars(deny_unknown_fields)]
pub struct SessionCounts {
    /// Sessions begun (completed + failed).
    pub started: u64,
    /// Sessions that played to their end (PLAYBACK_DONE).
    pub completed: u64,
    /// Sessions that failed (PLAYBACK_FAIL), interrupted ones included.
    pub failed: u64,
    /// Sessions whose CSV could not be written (e.g. a full disk): absent from the run directory.
    pub unwritten: u64,
}

/// Sessions that failed the same way at the same recording line: the kind, where (line, event
/// type, URL), the first such failure's readable reason, and how many.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
#[schemars(deny_unknown_fields)]
pub struct FailureCount {
    /// What went wrong.
    pub kind: FailureKind,
    /// recording.log line (0: before the first event).
    pub line: u32,
    /// The recording event's type (absent before the first event).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event: Option<Kind>,
    /// The request's URL as sent (absent for failures outside a request).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The first such failure's readable line, as in the CSV's PLAYBACK_FAIL comment.
    pub reason: String,
    /// How many sessions failed so.
    pub count: u64,
}

/// The plan and timing of a run: everything in summary.json that is not computed from the
/// sessions' results (a replay fills it from its flags, `surge merge` from the segments').
#[derive(Debug, Clone)]
pub struct Head {
    /// The plan as given.
    pub plan: Plan,
    /// Unix ms: run start.
    pub started_at_ms: i64,
    /// Warm-up length (ms after the start).
    pub warmup_ms: i64,
    /// Unix ms: end of the run.
    pub finished_at_ms: i64,
    /// The recorded session's own length (ms).
    pub recording_duration_ms: i64,
    /// Stopped by the stop signal.
    pub interrupted: bool,
    /// Its part of a plan spread over several processes.
    pub split: Split,
}

/// summary.json from a run's head, its aggregate, its (completed, failed) session counts and its
/// failures, with the checks (`--max-failure-rate`, `--threshold`s) evaluated.
pub fn from_aggregate(
    head: Head,
    agg: &Aggregate,
    (done, failed): (u64, u64),
    mut failures: Vec<FailureCount>,
    (max_failure_rate, thresholds): (f64, &[Threshold]),
) -> RunSummary {
    let started = done + failed;
    let failure_rate = if started == 0 {
        0.0
    } else {
        failed as f64 / started as f64
    };
    failures.sort_by_key(|f| std::cmp::Reverse(f.count));
    let mut failures_by_kind = BTreeMap::new();
    for f in &failures {
        *failures_by_kind.entry(f.kind).or_insert(0) += f.count;
    }
    let mut checks_out = vec![CheckResult {
        check: format!("failure_rate<={max_failure_rate}"),
        value: failure_rate,
        limit: max_failure_rate,
        ok: failure_rate <= max_failure_rate && started > 0,
    }];
    let overall = agg.overall();
    for t in thresholds {
        let values = match t.scope {
            Scope::All => &overall,
            Scope::Session => &agg.session,
            Scope::Kind(k) => agg.per_kind.get(&k).map_or(&[][..], Vec::as_slice),
        };
        checks_out.push(t.eval(values));
    }
    if agg.write_errors > 0 {
        // The run directory lacks sessions: what reads it would be silently wrong.
        checks_out.push(CheckResult {
            check: "session_csvs_written".into(),
            value: agg.write_errors as f64,
            limit: 0.0,
            ok: false,
        });
    }
    let ok = checks_out.iter().all(|c| c.ok);
    let h = head;
    RunSummary {
        tool: format!("surge {}", env!("CARGO_PKG_VERSION")),
        started_at_ms: h.started_at_ms,
        warmup_end_ms: h.started_at_ms + h.warmup_ms,
        loaded_end_ms: h.started_at_ms + h.warmup_ms + h.plan.loaded_duration_ms as i64,
        finished_at_ms: h.finished_at_ms,
        duration_ms: h.finished_at_ms - h.started_at_ms,
        recording_duration_ms: h.recording_duration_ms,
        interrupted: h.interrupted,
        plan: h.plan,
        split: h.split,
        arrivals_dropped: 0,
        sessions: SessionCounts {
            started,
            completed: done,
            failed,
            unwritten: agg.write_errors,
        },
        failure_rate,
        failures_by_kind,
        failures,
        percentiles: agg.percentiles(),
        checks: checks_out,
        journeys: BTreeMap::new(),
        ok,
    }
}
