//! The knee predicted before the search (every closed search of one server unless `--no-predict`
//! or `--start`), from one user alone (the `solo/` run) and the recording's pauses, by the
//! operational laws of a closed interactive system; the search then starts there and steps by
//! the prediction's own margin (×1.25) instead of doubling from `--start`. `--predict-only` stops
//! after the prediction.
//!
//! The law. One session alone spends D in requests and outputs (its demand: nothing else is
//! running, so its response times are its service times) and Z in pauses. The server works on
//! c requests at once (`--slots`, default 1: one single-threaded process, such as one R process), so its
//! bottleneck demand per session is D_max = D / c. With N users, throughput is at most 1 / D_max
//! and the response time at least N·D_max − Z (the interactive response time law), so the slots
//! saturate at N* = (D + Z) / D_max. A latency SLO whose value alone is m grows with the session's
//! response time, m·(N·D_max − Z) / D, and breaks when that reaches its limit L:
//! N = (L·D/m + Z) / D_max (a `session` SLO, which includes the pauses: N = L / D_max).
//! Assumptions: the slots are the only bottleneck (no CPU, database or network limit before
//! them), every request of a session lands on them, service times do not change with load, and a
//! percentile grows as the mean does (a p95 breaks a little before the prediction when requests
//! queue in whole rounds).

use super::slo::{self, Metric};
use super::CapacityArgs;
use crate::capfile::{CapacityResult, Prediction};
use crate::replay::{self, ReplayArgs, ReplayPlan};
use crate::report::{lines::Lines, load};
use std::path::Path;
use std::time::Duration;
use tokio::sync::watch;

/// replay's `--max-users` default (unused by a closed run).
const REPLAY_MAX_USERS: u32 = 1000;

/// The margin the guided search steps by: the prediction's own ±25%.
pub const STEP: f64 = 1.25;

/// Why a run for the prediction (or `surge explain`) could not be made or read.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The replay could not run.
    #[error(transparent)]
    Replay(#[from] crate::replay::ReplayError),
    /// Its sessions cannot be read as the report reads them.
    #[error(transparent)]
    Report(#[from] crate::report::ReportError),
}

/// Runs `args` in-process (no progress line) and returns its sessions paired into events against
/// `rec`, as the report reads them, with the replay's outcome.
///
/// # Errors
/// The plan is refused or a session names a line `rec` does not have.
pub async fn replay_sessions(
    args: &ReplayArgs,
    rec: &Lines,
    what: &str,
    stop: &watch::Receiver<bool>,
) -> Result<(Vec<load::Session>, replay::Replayed), RunError> {
    let mut plan = ReplayPlan::from_args(args, &[format!("({what})")]).await?;
    plan.progress = false;
    plan.keep_sessions = true;
    let mut rx = stop.clone();
    let stopped = async move {
        let _ = rx.wait_for(|s| *s).await;
    };
    let outcome = replay::run(plan, stopped).await?;
    let mut sessions = (outcome.sessions.iter())
        .map(|log| load::session_of(log, rec))
        .collect::<Result<Vec<_>, _>>()?;
    sessions.sort_by_key(|s| (s.start, s.id));
    Ok((sessions, outcome))
}

/// The replay flags of a closed run of `users` (a capacity step, the one user alone, explain's
/// two runs) into `dir`: `loaded` as --loaded-duration (None: each user plays the recording
/// once), the per-session flags as given, everything else replay's default.
pub(crate) fn closed_args(
    (recording, app_url): (&Path, &str),
    users: u32,
    loaded: Option<Duration>,
    dir: &Path,
    session: &crate::replay::SessionArgs,
    manifold: Option<String>,
) -> ReplayArgs {
    ReplayArgs {
        recording: recording.to_path_buf(),
        app_url: vec![app_url.to_string()],
        target: None,
        users,
        start_interval: None,
        stages: None,
        arrival_rate: None,
        max_users: REPLAY_MAX_USERS,
        loaded_duration: loaded,
        loaded_duration_minutes: None,
        segment: None,
        start_at: None,
        output_dir: Some(dir.to_path_buf()),
        overwrite_output: false,
        max_failure_rate: 0.0,
        thresholds: Vec::new(),
        stop_grace: Duration::ZERO,
        json: false,
        debug_log: false,
        log_level: Default::default(),
        session: session.clone(),
        manifold,
    }
}

/// One user alone, one session: `step` is a capacity step's flags for one user (into `solo/`).
pub(super) async fn solo(
    mut a: ReplayArgs,
    rec: &Lines,
    stop: &watch::Receiver<bool>,
) -> Result<Vec<load::Session>, RunError> {
    a.loaded_duration = Some(Duration::ZERO);
    let (sessions, _) = replay_sessions(&a, rec, "surge capacity: one user alone", stop).await?;
    Ok(sessions)
}

/// D and Z of the completed sessions (means, ms): time in events, and the rest of the session.
pub fn demand_and_think(sessions: &[load::Session]) -> Option<(f64, f64)> {
    let done: Vec<&load::Session> = (sessions.iter())
        .filter(|s| s.outcome == crate::rundir::Ended::Done)
        .collect();
    if done.is_empty() {
        return None;
    }
    let n = done.len() as f64;
    let d: i64 = (done.iter())
        .flat_map(|s| s.events.iter().map(|e| e.end - e.start))
        .sum();
    let span: i64 = done.iter().map(|s| s.end - s.start).sum();
    let d = d as f64 / n;
    Some((d, (span as f64 / n - d).max(0.0)))
}

/// The prediction from the solo sessions; None when no solo session completed or it took no time.
pub fn predict(args: &CapacityArgs, rec: &Lines, sessions: &[load::Session]) -> Option<Prediction> {
    let (d, z) = demand_and_think(sessions).filter(|(d, _)| *d > 0.0)?;
    let c = f64::from(args.slots.max(1));
    let d_max = d / c;
    let mut best: Option<(f64, &str)> = None;
    for s in &args.slos {
        let n = if s.metric == Metric::Session {
            s.limit_ms / d_max
        } else {
            let m = slo::measure(sessions, rec, std::slice::from_ref(s), &|_| true, 0).values[0];
            let Some(m) = m.filter(|m| *m > 0.0) else {
                continue;
            };
            (s.limit_ms * d / m + z) / d_max
        };
        if best.is_none_or(|(b, _)| n < b) {
            best = Some((n, &s.text));
        }
    }
    let (knee, by) = best?;
    Some(Prediction {
        slots: args.slots.max(1),
        demand_ms: d,
        think_ms: z,
        saturation: (d + z) / d_max,
        knee,
        limited_by: by.to_string(),
        per_slot: knee / c,
        law: "closed interactive system, operational laws: D_max = D/c, saturation N* = (D+Z)/D_max; \
              an SLO of value m alone and limit L breaks at N = (L·D/m + Z)/D_max (session: L/D_max). \
              Assumes the c slots are the only bottleneck, every request lands on them, service times \
              do not change with load, and percentiles grow as the mean does"
            .into(),
    })
}

/// The prediction as printed: `predicted knee 40 users (4 slots × 10.0 users per slot) …`.
pub fn line(p: &Prediction) -> String {
    format!(
        "predicted knee {:.0} users ({} slot{} × {:.1} users per slot; {}) from one user alone: \
         D = {:.0} ms in requests per session, Z = {:.0} ms of pauses, the slots saturate at N* = {:.1}; \
         law: {}",
        p.knee.floor().max(1.0),
        p.slots,
        if p.slots == 1 {
            " (one single-threaded process; --slots N for a server working on N at once)"
        } else {
            "s"
        },
        p.per_slot,
        p.limited_by,
        p.demand_ms,
        p.think_ms,
        p.saturation,
        p.law
    )
}

/// The first load of a guided search: the predicted knee, whole, within --max-load.
pub fn start(p: &Prediction, max_load: f64) -> f64 {
    p.knee.floor().clamp(1.0, max_load.max(1.0))
}

/// The next load below a bad first step (by the margin, at least one user less); None at 1.
pub fn below(load: f64) -> Option<f64> {
    (load > 1.0).then(|| (load / STEP).floor().min(load - 1.0).max(1.0))
}

/// Adds `; predicted 40, found 36 (+11%) in 5 steps after one user alone` to the answer once
/// the search has one.
pub(super) fn versus_found(res: &mut CapacityResult) {
    let (Some(p), Some(found)) = (&res.prediction, res.holds) else {
        return;
    };
    let predicted = p.knee.floor().max(1.0);
    let n = res.steps.len();
    res.answer = format!(
        "{}; predicted {predicted:.0}, found {found:.0} ({:+.0}%) in {n} step{} after one user alone",
        res.answer,
        (predicted - found) / found * 100.0,
        if n == 1 { "" } else { "s" }
    );
}
