//! capacity.json, the result file of a `surge capacity` directory (beside its `step-NN/` run
//! directories): written by `capacity`, read by `report` for its capacity view. Its own module
//! so the report can read it without depending on the search.

use serde::{Deserialize, Serialize};
use std::path::Path;

/// File name of the search's result in the capacity directory.
pub const CAPACITY_JSON: &str = "capacity.json";

/// One step of the search, as capacity.json keeps it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct StepResult {
    /// Its run directory, relative to the capacity directory (`step-01`).
    pub dir: String,
    /// Concurrent users, or sessions/s for an open search.
    pub load: f64,
    /// Sessions judged (after warm-up; dropped arrivals included).
    pub sessions: usize,
    /// Of them failed.
    pub failed: usize,
    /// failed / sessions.
    pub failure_rate: f64,
    /// Each SLO's value (ms), in `--slo` order; null when nothing was measured.
    pub values: Vec<Option<f64>>,
    /// Met every SLO and the failure rate.
    pub ok: bool,
    /// What broke, as the answer line names it (`page_load p95 2.6 s`).
    pub broke: Vec<String>,
}

/// capacity.json: the search's plan, its steps in the order run, and the answer.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct CapacityResult {
    /// `users` (closed model) or `sessions/s` (`--open`).
    pub unit: String,
    /// The recording replayed.
    pub recording: String,
    /// The app's URL.
    pub target: String,
    /// Each `--slo` as given.
    pub slos: Vec<String>,
    /// How each SLO is named in the answer (`page_load p95`).
    pub slo_names: Vec<String>,
    /// Each SLO's limit (ms).
    pub limits_ms: Vec<f64>,
    /// `--max-failure-rate`.
    pub max_failure_rate: f64,
    /// Every step run, in order.
    pub steps: Vec<StepResult>,
    /// Highest load that met every objective (null when the first step broke).
    pub holds: Option<f64>,
    /// Lowest load that broke one (null when none did up to `--max-load`).
    pub breaks: Option<f64>,
    /// The answer line.
    pub answer: String,
    /// Stopped (Ctrl-C) before the answer was found.
    pub interrupted: bool,
    /// With `--manifold`: manifold's ready workers during the step that held (median of its
    /// polls); null without it.
    #[serde(default)]
    pub ready_workers: Option<u32>,
    /// `holds` / `ready_workers`: the users (or sessions/s) one ready worker held.
    #[serde(default)]
    pub per_worker: Option<f64>,
    /// The knee predicted from one user alone before the search (null with --no-predict, --start,
    /// --open or --workers).
    #[serde(default)]
    #[cfg_attr(test, ts(optional))]
    pub prediction: Option<Prediction>,
}

/// The knee predicted from one user alone by the operational laws of a closed interactive
/// system (each user: demand D at the server, then think time Z), before any load is made.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Prediction {
    /// `--slots`: requests the server works on at once (processes × threads), c.
    pub slots: u32,
    /// D: one session's time in requests and outputs alone (ms), taken as its demand.
    pub demand_ms: f64,
    /// Z: one session's pauses alone (ms).
    pub think_ms: f64,
    /// N* = (D + Z) / D_max with D_max = D / c: the users at which the slots saturate.
    pub saturation: f64,
    /// The users at which the first SLO is predicted to break (fractional).
    pub knee: f64,
    /// The SLO that bounds it (as given).
    pub limited_by: String,
    /// knee / slots: users per slot (per single-threaded process).
    pub per_slot: f64,
    /// The law and its assumptions, in words.
    pub law: String,
}

impl CapacityResult {
    /// Exit status: 0 with an answer, 1 when even the first step broke, 130 when interrupted.
    pub fn exit_code(&self) -> u8 {
        match (self.interrupted, self.holds) {
            (true, _) => 130,
            (false, None) if self.prediction.is_some() && self.steps.is_empty() => 0,
            (false, None) => 1,
            (false, Some(_)) => 0,
        }
    }
}

/// Reads `dir/capacity.json`; None when `dir` is not a capacity directory.
///
/// # Errors
/// The file exists but cannot be read or parsed (the message names it).
pub fn read(dir: &Path) -> Option<Result<CapacityResult, CapfileError>> {
    let path = dir.join(CAPACITY_JSON);
    if !path.is_file() {
        return None;
    }
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(err) => return Some(Err(CapfileError::Io { path, err })),
    };
    Some(serde_json::from_str(&text).map_err(|err| CapfileError::Json { path, err }))
}

/// A capacity.json that cannot be read; names the file.
#[derive(Debug, thiserror::Error)]
pub enum CapfileError {
    /// Unreadable.
    #[error("{}: {err}", path.display())]
    Io {
        /// The file.
        path: std::path::PathBuf,
        /// What the OS said.
        err: std::io::Error,
    },
    /// Not capacity.json's JSON.
    #[error("{}: {err}", path.display())]
    Json {
        /// The file.
        path: std::path::PathBuf,
        /// serde's reason.
        err: serde_json::Error,
    },
}
