//! The capacity search: steps growing by `--growth` until one breaks, then bisection between the
//! last good and the first bad step; each step an in-process replay into `step-NN/` whose plan is
//! built as a value (no command line), judged on the sessions `replay::run` returns (no run
//! directory read back), and capacity.json rewritten after every step.

use super::slo::{self, fmt_ms, Slo};
use super::{CapacityArgs, CapacityPlan};
use crate::capfile::{CapacityResult, StepResult, CAPACITY_JSON};
use crate::dashboard::Dashboard;
use crate::recording::{Kind, Recording};
use crate::replay::{self, ReplayArgs, ReplayError, ReplayPlan};
use crate::report::{lines, load, ReportError};
use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::sync::watch;

/// Most users an open step may run at once (arrivals beyond are dropped and count as failed).
const OPEN_MAX_USERS: u32 = 10_000;

/// Why a capacity search could not run. One line each, naming the flag or file.
#[derive(Debug, thiserror::Error)]
pub enum CapacityError {
    /// A flag's value is wrong.
    #[error("{0}")]
    Usage(String),
    /// A step's replay could not run.
    #[error(transparent)]
    Replay(#[from] ReplayError),
    /// The recording (or a step's sessions) cannot be read as the report reads them.
    #[error(transparent)]
    Report(#[from] ReportError),
    /// The one user alone of `--predict` could not run.
    #[error(transparent)]
    Solo(#[from] super::predict::RunError),
    /// A file or directory could not be written.
    #[error("{path}: {err}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What the OS said.
        err: std::io::Error,
    },
}

/// Runs the search until it has its answer or `stop` resolves; writes the steps and
/// capacity.json under the output directory (and serves `--dashboard` meanwhile). Installs no
/// logger and no signal handler.
pub async fn run(
    plan: CapacityPlan,
    stop: impl Future<Output = ()> + Send + 'static,
) -> Result<CapacityResult, CapacityError> {
    let dir = prepare(&plan.args)?;
    let stop_rx = stop_watch(stop);
    let dash = start_dashboard(&plan.args).await?;
    let res = search(&plan, &dir, &stop_rx, dash.as_ref()).await;
    if let Some(d) = dash {
        d.finish(res.is_ok().then_some(dir.as_path()), stopped(&stop_rx))
            .await;
    }
    res
}

/// Resolves once the stop watch turned true.
pub(super) fn stopped(stop: &watch::Receiver<bool>) -> impl Future<Output = ()> + Send + 'static {
    let mut rx = stop.clone();
    async move {
        let _ = rx.wait_for(|s| *s).await;
    }
}

/// A watch that turns true once `stop` resolves (capacity and explain).
pub fn stop_watch(stop: impl Future<Output = ()> + Send + 'static) -> watch::Receiver<bool> {
    let (stop_tx, stop_rx) = watch::channel(false);
    tokio::spawn(async move {
        stop.await;
        let _ = stop_tx.send(true);
    });
    stop_rx
}

/// `--dashboard`, with the recording's event types as histogram labels.
pub(super) async fn start_dashboard(
    args: &CapacityArgs,
) -> Result<Option<Dashboard>, CapacityError> {
    let kinds: Vec<&'static str> = Kind::ALL.iter().map(|k| k.name()).collect();
    Dashboard::start(&args.dashboard, &kinds)
        .await
        .map_err(|e| CapacityError::Usage(e.to_string()))
}

/// One search into `dir` (created): steps up, then bisection; the answer in capacity.json.
pub(super) async fn search(
    plan: &CapacityPlan,
    dir: &Path,
    stop_rx: &watch::Receiver<bool>,
    dash: Option<&Dashboard>,
) -> Result<CapacityResult, CapacityError> {
    let args = &plan.args;
    let mut res = CapacityResult {
        unit: if args.open { "sessions/s" } else { "users" }.into(),
        recording: args.recording.display().to_string(),
        target: args.app_url.clone(),
        slos: args.slos.iter().map(|s| s.text.clone()).collect(),
        slo_names: args.slos.iter().map(Slo::name).collect(),
        limits_ms: args.slos.iter().map(|s| s.limit_ms).collect(),
        max_failure_rate: args.max_failure_rate,
        steps: Vec::new(),
        holds: None,
        breaks: None,
        answer: String::new(),
        interrupted: false,
        ready_workers: None,
        per_worker: None,
        prediction: None,
    };
    let at = Ctx {
        args,
        rec: &plan.rec,
        dir,
        stop: stop_rx,
        dash,
    };
    let (mut good, mut bad): (Option<f64>, Option<f64>) = (None, None);
    // Each step's manifold ready workers (median of its polls), by step.
    let mut ready = Vec::new();
    let mut load = args.start_load();
    if args.predicts() {
        let one = step_args(args, 1.0, &dir.join("solo"));
        let solo = super::predict::solo(one, &plan.rec, stop_rx).await?;
        let Some(p) = super::predict::predict(args, &plan.rec, &solo) else {
            return Err(CapacityError::Usage(
                "the prediction's one user alone did not complete a session (see solo/; \
                 --no-predict skips it)"
                    .into(),
            ));
        };
        eprintln!("surge capacity: {}", super::predict::line(&p));
        load = super::predict::start(&p, args.max_load);
        res.answer = super::predict::line(&p);
        res.prediction = Some(p);
        if args.predict_only {
            write_json(dir, &res)?;
            return Ok(res);
        }
    }
    let guided = res.prediction.is_some();
    // Up: grow until a step breaks (or --max-load holds).
    loop {
        let ok = step(&at, &mut res, &mut ready, load).await?;
        if res.interrupted {
            return finish(args, dir, res, (good, bad), &ready);
        }
        if !ok {
            bad = Some(load);
            break;
        }
        good = Some(load);
        if load >= args.max_load {
            break;
        }
        load = grow(args, load, guided);
    }
    // Guided, the first step may break: down by the margin until one holds.
    while guided && good.is_none() && !res.interrupted {
        let Some(lower) = bad.and_then(super::predict::below) else {
            break;
        };
        if step(&at, &mut res, &mut ready, lower).await? {
            good = Some(lower);
        } else {
            bad = Some(lower);
        }
    }
    // Down: bisect between the last good and the first bad step.
    while let (Some(lo), Some(hi)) = (good, bad) {
        let Some(mid) = middle(args, lo, hi) else {
            break;
        };
        let ok = step(&at, &mut res, &mut ready, mid).await?;
        if res.interrupted {
            break;
        }
        if ok {
            good = Some(mid);
        } else {
            bad = Some(mid);
        }
    }
    finish(args, dir, res, (good, bad), &ready)
}

/// What every step of one search shares.
struct Ctx<'a> {
    args: &'a CapacityArgs,
    /// The recording as the report reads it: a step's sessions pair into events against it.
    rec: &'a lines::Lines,
    dir: &'a Path,
    stop: &'a watch::Receiver<bool>,
    dash: Option<&'a Dashboard>,
}

/// Refuses bad combinations before any load is made; the recording, read as the report reads
/// it (a step is judged against it).
pub(super) fn check(args: &CapacityArgs) -> Result<lines::Lines, CapacityError> {
    let usage = |m: String| Err(CapacityError::Usage(m));
    let start = args.start_load();
    if !(start > 0.0 && start.is_finite()) || (!args.open && start.fract() != 0.0) {
        return usage(format!(
            "--start {start}: expected a positive {}",
            unit_word(args)
        ));
    }
    if !(args.growth > 1.0 && args.growth.is_finite()) {
        return usage(format!("--growth {}: must be above 1", args.growth));
    }
    if args.max_load.is_nan() || args.max_load < start {
        return usage(format!(
            "--max-load {}: below --start {start}",
            args.max_load
        ));
    }
    if args.predict_only && (args.open || !args.workers.is_empty()) {
        return usage(
            "--predict-only: a closed search of one server (not --open or --workers)".into(),
        );
    }
    if args.slots == 0 {
        return usage("--slots must be at least 1".into());
    }
    if args.manifold_cmd.is_some() && args.workers.is_empty() {
        return usage("--manifold-cmd needs --workers (the counts to start it with)".into());
    }
    if args.step_sessions == 0 {
        return usage("--step-sessions must be at least 1".into());
    }
    let rec = Recording::load(&args.recording).map_err(ReplayError::from)?;
    if let Some(p) = &args.session.data {
        // Each step reads it again from its first row; a bad file stops the search here.
        crate::data::DataSet::load(p, args.session.data_mode).map_err(ReplayError::from)?;
    }
    for s in &args.slos {
        if let super::Metric::Until(line) = s.metric {
            if !rec.events.iter().any(|e| e.line == line) {
                return usage(format!(
                    "--slo \"{}\": {} has no event at line {line}",
                    s.text,
                    args.recording.display()
                ));
            }
        }
        let needs = match s.metric {
            super::Metric::PageLoad => Some(Kind::ReqHome),
            super::Metric::Kind(k) => Some(k),
            _ => None,
        };
        if let Some(k) = needs {
            if !rec.events.iter().any(|e| e.kind == k) {
                return usage(format!(
                    "--slo \"{}\": {} has no {} event to measure",
                    s.text,
                    args.recording.display(),
                    k.name()
                ));
            }
        }
    }
    Ok(lines::read(&args.recording)?)
}

fn unit_word(args: &CapacityArgs) -> &'static str {
    if args.open {
        "rate (sessions/s)"
    } else {
        "whole number of users"
    }
}

/// The capacity directory, created empty.
pub(super) fn prepare(args: &CapacityArgs) -> Result<PathBuf, CapacityError> {
    let dir = args.output_dir.clone().unwrap_or_else(|| {
        let t = crate::timefmt::format_iso(crate::timefmt::now_ms()).replace(':', "-");
        PathBuf::from(format!("capacity-{t}"))
    });
    if dir.exists() {
        if !args.overwrite_output {
            return Err(CapacityError::Usage(format!(
                "output directory {} already exists (use --overwrite-output)",
                dir.display()
            )));
        }
        std::fs::remove_dir_all(&dir).map_err(|err| CapacityError::Io {
            path: dir.clone(),
            err,
        })?;
    }
    std::fs::create_dir_all(&dir).map_err(|err| CapacityError::Io {
        path: dir.clone(),
        err,
    })?;
    Ok(dir)
}

/// The next step up: load × growth (× the prediction's margin when `guided`; a closed step at
/// least one more user), capped at --max-load.
fn grow(args: &CapacityArgs, load: f64, guided: bool) -> f64 {
    let growth = if guided {
        super::predict::STEP
    } else {
        args.growth
    };
    let next = if args.open {
        load * args.growth
    } else {
        (load * growth).round().max(load + 1.0)
    };
    next.min(args.max_load)
}

/// The load between `lo` (good) and `hi` (bad) to try next; None when they are close enough.
fn middle(args: &CapacityArgs, lo: f64, hi: f64) -> Option<f64> {
    if args.open {
        let close = hi - lo <= lo * args.resolution;
        (!close).then(|| ((lo + hi) / 2.0 * 1000.0).round() / 1000.0)
    } else {
        let close = hi - lo <= (lo * args.resolution).floor().max(1.0);
        (!close).then(|| ((lo + hi) / 2.0).floor())
    }
}

/// The replay flags of one step, as a value: the step's load and length, its directory, and the
/// search's per-session flags as they are (one struct: none is left behind); everything else is
/// replay's default. `ReplayPlan::from_args` checks them as it checks a command line's.
pub(super) fn step_args(args: &CapacityArgs, load: f64, dir: &Path) -> ReplayArgs {
    let at = |users, loaded| {
        super::predict::closed_args(
            (&args.recording, &args.app_url),
            users,
            Some(loaded),
            dir,
            &args.session,
            args.manifold.clone(),
        )
    };
    if args.open {
        let total = (f64::from(args.step_sessions) / 0.9).ceil();
        let secs = (total / load).min(args.step_max.as_secs_f64());
        let ms = Duration::from_millis((secs * 1000.0).ceil() as u64);
        ReplayArgs {
            arrival_rate: Some(load),
            max_users: OPEN_MAX_USERS,
            ..at(1, ms)
        }
    } else {
        at(
            load as u32,
            Duration::from_millis(args.step_max.as_millis() as u64),
        )
    }
}

/// Runs one step at `load`, judges it, records it in `res` and capacity.json; true if it held.
async fn step(
    at: &Ctx<'_>,
    res: &mut CapacityResult,
    ready: &mut Vec<Option<u32>>,
    load: f64,
) -> Result<bool, CapacityError> {
    let (args, dir, stop) = (at.args, at.dir, at.stop);
    let n = res.steps.len() + 1;
    let name = format!("step-{n:02}");
    let step_dir = dir.join(&name);
    let replay_args = step_args(args, load, &step_dir);
    let argv = vec![format!("(surge capacity step {n}: {load} {})", res.unit)];
    let mut plan = ReplayPlan::from_args(&replay_args, &argv).await?;
    plan.progress = false;
    plan.keep_sessions = true;
    if let Some(d) = at.dash {
        plan.live = Some(d.metrics.clone());
        let what = format!("surge capacity, step {n}: {} {}", fmt_load(load), res.unit);
        d.show(&step_dir, &what);
    }
    plan.max_sessions = Some(if args.open {
        (f64::from(args.step_sessions) / 0.9).ceil() as u32
    } else {
        args.step_sessions + load as u32
    });
    let outcome = replay::run(plan, stopped(stop)).await?;
    if outcome.interrupted {
        res.interrupted = true;
        return Ok(false);
    }
    let mut sessions = (outcome.sessions.iter())
        .map(|log| load::session_of(log, at.rec))
        .collect::<Result<Vec<_>, _>>()?;
    sessions.sort_by_key(|s| (s.start, s.id));
    let rec = at.rec;
    let measured = if args.open {
        // An open step's first 10% of sessions met an idle app: left out.
        let cut = sessions.get(sessions.len() / 10).map_or(0, |s| s.start);
        let dropped = outcome.summary.arrivals_dropped as usize;
        slo::measure(&sessions, rec, &args.slos, &|s| s.start >= cut, dropped)
    } else {
        // Sessions begun before the last user started, and each user's first one (they all
        // begin together), met a partly loaded app: left out.
        let warm = outcome.summary.warmup_end_ms;
        let keep = |s: &load::Session| s.start >= warm && s.iteration > 0;
        slo::measure(&sessions, rec, &args.slos, &keep, 0)
    };
    ready.push(crate::manifold_poll::median_ready(
        &outcome.manifold,
        i64::MIN,
        i64::MAX,
    ));
    let result = judge(args, name, load, measured);
    eprintln!("surge capacity: {}", step_line(&result, res));
    let ok = result.ok;
    res.steps.push(result);
    write_json(dir, res)?;
    Ok(ok)
}

/// A step's verdict from what it measured.
fn judge(args: &CapacityArgs, dir: String, load: f64, m: slo::Measured) -> StepResult {
    let rate = if m.sessions == 0 {
        0.0
    } else {
        m.failed as f64 / m.sessions as f64
    };
    let mut broke = Vec::new();
    if m.sessions == 0 {
        broke.push("no session finished after warm-up within --step-max".to_string());
    }
    if rate > args.max_failure_rate {
        broke.push(format!("failure rate {:.1}%", rate * 100.0));
    }
    for (s, v) in args.slos.iter().zip(&m.values) {
        if let Some(v) = v.filter(|v| *v >= s.limit_ms) {
            broke.push(format!("{} {}", s.name(), fmt_ms(v)));
        }
    }
    StepResult {
        dir,
        load,
        sessions: m.sessions,
        failed: m.failed,
        failure_rate: rate,
        values: m.values,
        ok: broke.is_empty(),
        broke,
    }
}

/// `step-03  8 users: 120 sessions, 0.0% failed, page_load p95 210 ms: holds`.
fn step_line(s: &StepResult, res: &CapacityResult) -> String {
    format!(
        "{}  {} {}: {} sessions, {:.1}% failed, {}: {}",
        s.dir,
        fmt_load(s.load),
        res.unit,
        s.sessions,
        s.failure_rate * 100.0,
        values_text(s, res),
        if s.ok { "holds" } else { "breaks" }
    )
}

/// `page_load p95 1.41 s, WS_RECV p95 2.2 s`.
fn values_text(s: &StepResult, res: &CapacityResult) -> String {
    let parts: Vec<String> = (res.slo_names.iter().zip(&s.values))
        .map(|(n, v)| match v {
            Some(v) => format!("{n} {}", fmt_ms(*v)),
            None => format!("{n} -"),
        })
        .collect();
    parts.join(", ")
}

/// `23`, `2.5`: a load as printed.
fn fmt_load(x: f64) -> String {
    let s = format!("{x:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Writes the answer into `res` and capacity.json.
fn finish(
    args: &CapacityArgs,
    dir: &Path,
    mut res: CapacityResult,
    (good, bad): (Option<f64>, Option<f64>),
    ready: &[Option<u32>],
) -> Result<CapacityResult, CapacityError> {
    res.holds = good;
    res.breaks = bad;
    let unit = if args.open {
        "sessions/s".to_string()
    } else {
        "concurrent users".to_string()
    };
    let at = |load: f64| res.steps.iter().rev().find(|s| s.load == load);
    let holds = good.and_then(at).map(|s| values_text(s, &res));
    let breaks = bad.and_then(at).map(|s| s.broke.join(", "));
    let per = if args.open { " sessions/s" } else { "" };
    res.answer = match (good, holds, bad, breaks) {
        (Some(g), Some(h), Some(b), Some(w)) => format!(
            "holds {} {unit} ({h}); breaks at {}{per} ({w})",
            fmt_load(g),
            fmt_load(b)
        ),
        (Some(g), Some(h), _, _) => format!(
            "holds at least {} {unit} ({h}); no step up to --max-load {} broke",
            fmt_load(g),
            fmt_load(args.max_load)
        ),
        (None, _, Some(b), Some(w)) => format!(
            "breaks already at the first step, {} {unit} ({w}); try a lower --start",
            fmt_load(b)
        ),
        _ => "interrupted before any step finished".to_string(),
    };
    if let Some(g) = good.filter(|_| args.manifold.is_some()) {
        per_worker(&mut res, g, ready);
    }
    super::predict::versus_found(&mut res);
    if res.interrupted && !res.steps.is_empty() {
        res.answer = format!("interrupted; so far: {}", res.answer);
    }
    write_json(dir, &res)?;
    Ok(res)
}

/// The ready workers of the step that held at `good` (median of its polls, `ready` by step) and
/// the load one of them held, added to the answer: `; 5.5 users per ready worker (4 ready)`.
fn per_worker(res: &mut CapacityResult, good: f64, ready: &[Option<u32>]) {
    let Some(i) = res.steps.iter().rposition(|s| s.load == good) else {
        return;
    };
    let Some(&Some(ready)) = ready.get(i) else {
        return;
    };
    res.ready_workers = Some(ready);
    if ready > 0 {
        let per = good / f64::from(ready);
        res.per_worker = Some(per);
        let unit = if res.unit == "users" {
            "users"
        } else {
            "sessions/s"
        };
        res.answer = format!(
            "{}; {per:.1} {unit} per ready worker ({ready} ready)",
            res.answer
        );
    }
}

fn write_json(dir: &Path, res: &CapacityResult) -> Result<(), CapacityError> {
    let path = dir.join(CAPACITY_JSON);
    let json = serde_json::to_string_pretty(res).expect("capacity result serialises");
    crate::rundir::write_atomic(&path, format!("{json}\n").as_bytes())
        .map_err(|err| CapacityError::Io { path, err })
}
