//! summary.json: the machine-readable result of a run, its header (tool, plan, times, split,
//! checks, journeys) around the sessions' one [`Outcome`], and computing it from the aggregate (a
//! replay's, as its sessions ended, or `surge merge`'s, from the segments' CSV rows).

use super::aggregate::Aggregate;
use super::outcome::Outcome;
use crate::checks::{CheckResult, Scope, Threshold};
use schemars::JsonSchema;
use serde::Serialize;
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
    /// `--arrival-rate`: arrivals not started because `--max-users` users were running (0 otherwise).
    pub arrivals_dropped: u64,
    /// What its sessions say: counts, failures, percentiles (the one [`Outcome`]).
    #[serde(flatten)]
    pub outcome: Outcome,
    /// `--max-failure-rate` and each `--threshold`, evaluated.
    pub checks: Vec<CheckResult>,
    /// A mix of journeys (`browse.log:70 export.log:30`): the figures above, per journey.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub journeys: BTreeMap<String, JourneySummary>,
    /// Every check passed (exit status 0 unless interrupted).
    pub ok: bool,
    /// The load generator's own CPU and event-loop lag during the run (a replay's; absent from
    /// a merge's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generator: Option<crate::health::Generator>,
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
    /// What its sessions say (failures at lines of its own recording).
    #[serde(flatten)]
    pub outcome: Outcome,
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

/// summary.json from a run's head and its aggregate (the sessions' [`Outcome`]), with the checks
/// (`--max-failure-rate`, `--threshold`s) evaluated.
pub fn from_aggregate(
    head: Head,
    agg: &Aggregate,
    (max_failure_rate, thresholds): (f64, &[Threshold]),
) -> RunSummary {
    let outcome = agg.outcome();
    let failure_rate = outcome.failure_rate;
    let mut checks_out = vec![CheckResult {
        check: format!("failure_rate<={max_failure_rate}"),
        value: failure_rate,
        limit: max_failure_rate,
        ok: failure_rate <= max_failure_rate && outcome.sessions.started > 0,
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
        outcome,
        checks: checks_out,
        journeys: BTreeMap::new(),
        ok,
        generator: None,
    }
}
