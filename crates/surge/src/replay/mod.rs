//! `surge replay`: many simulated users, each replaying the recorded session in a loop, shinycannon
//! semantics by default (user w starts at w × interval; users loop until the loaded duration
//! ends, then finish their current session), or another load shape (stages, an arrival rate).
//! One task per user; the parsed recording is shared, per-user state is a few small buffers
//! (target: ≤ 50 KB per user at 10,000 users). [`run`] takes a checked [`ReplayPlan`] and a stop
//! signal, so it runs in-process (`surge capacity`, tests); `main.rs` owns flags, logger, Ctrl-C.
//!
//! Modules, along the run: `flags`, `plan` (flags → plan, `ReplayError`), `shape` (load shapes),
//! `think` (pauses), `drive` (starting users as the shape asks; shape.csv), `user` (one user's
//! loop of sessions), `player` (one session) and `stream` (SSE in the background), `summary`
//! (summary.json from the run directory's aggregate), `print` (text), `progress`.

mod drive;
mod flags;
mod journey;
mod placeholders;
mod plan;
mod player;
mod print;
mod progress;
mod shape;
mod stream;
mod summary;
mod think;
mod user;

use crate::rundir::Aggregate;
use crate::rundir::ShapePoint;
use crate::segment::Start;
use std::future::Future;
use std::sync::atomic::AtomicU32;
use std::sync::{Arc, Mutex};
use tokio::sync::watch;
use tokio::time::Instant;

pub use crate::rundir::{FailureCount, JourneySummary, Plan, RunSummary, SessionCounts, Split};
pub use flags::{FlagError, ReplayArgs, SessionArgs};
pub use journey::Journey;
pub use journey::JourneyFailuresError;
pub(crate) use journey::{merged as merged_journeys, of_row as journey_of_row};
pub use placeholders::UnfilledPlaceholder;
pub use plan::{ReplayError, ReplayPlan};
pub use print::replay_text;
pub use shape::{parse_rate, parse_stages, Shape, Stage, Stages};
pub use think::ThinkTime;

/// Everything users share, read-only except the counters and the aggregate.
struct Shared {
    plan: ReplayPlan,
    /// The plan's start (`--start-at` or now); user w of a ramp starts at t0 + w × interval.
    start: Start,
    t0: Instant,
    /// The last user of a ramp has started (stages: the peak is first reached).
    warmup_end: Instant,
    /// No session starts after this.
    loaded_end: Instant,
    /// Sessions started after `warmup_end` (the budget `max_sessions` counts).
    loaded_sessions: AtomicU32,
    next_session: AtomicU32,
    running: AtomicU32,
    /// Users in their loop of sessions now.
    active_users: AtomicU32,
    /// `--data-mode unique` ran out of rows: no session starts any more.
    data_exhausted: std::sync::atomic::AtomicBool,
    /// `--arrival-rate`: arrivals not started because `--max-users` were running.
    dropped: AtomicU32,
    done: AtomicU32,
    failed: AtomicU32,
    agg: Mutex<Aggregate>,
    /// The same, per journey of a mix (empty for one recording).
    by_journey: Mutex<Vec<crate::rundir::Aggregate>>,
    /// Users and arrivals over time, asked and achieved (shape.csv).
    points: Mutex<Vec<ShapePoint>>,
    /// Stops the run early (as the caller's stop does): a session CSV could not be written.
    halt: watch::Sender<bool>,
    /// The first session CSV that could not be written (a full disk): the run stops and fails
    /// with it, instead of logging the same error for every session after it.
    write_error: Mutex<Option<(std::path::PathBuf, std::io::Error)>>,
    /// Every ended session's rows, when the plan keeps them (`keep_sessions`).
    kept: Mutex<Vec<crate::rundir::SessionLog>>,
}

impl Shared {
    /// Tells `--dashboard`'s metrics about a session that ended: each event's duration (a
    /// `<TYPE>_START` .. `<TYPE>_END` pair, as the aggregate pairs them) and its outcome.
    fn observe(&self, log: &crate::rundir::SessionLog, ok: bool) {
        use crate::rundir::RowEvent;
        let Some(m) = &self.plan.live else { return };
        let mut open = None;
        for r in &log.rows {
            match (r.event, open) {
                (RowEvent::Start(k), _) => open = Some((k, r.ts)),
                (RowEvent::End(k), Some((o, start))) if k == o => {
                    m.event(k.name(), (r.ts - start).max(0) as u64);
                    open = None;
                }
                _ => {}
            }
        }
        m.session(ok);
        m.set_users(self.active_users.load(std::sync::atomic::Ordering::Relaxed));
    }
}

/// Exit status: all good.
pub const EXIT_OK: u8 = 0;
/// Exit status: a check failed (failure rate or threshold).
pub const EXIT_CHECKS: u8 = 1;
/// Exit status: interrupted by Ctrl-C (results written so far are consistent; the terminal says
/// 143 when SIGTERM stopped it).
pub const EXIT_INTERRUPTED: u8 = 130;

/// What a finished replay gives its caller: the summary (also in the run directory, with the
/// sessions' [`crate::rundir::Outcome`]), the sessions' rows when the plan kept them, and the
/// exit status it stands for.
#[derive(Debug)]
pub struct Replayed {
    /// summary.json's content.
    pub summary: RunSummary,
    /// Stopped by the stop signal before the plan's end.
    pub interrupted: bool,
    /// Every session's rows in the order they ended, when [`ReplayPlan::keep_sessions`] asked
    /// for them (`surge capacity` judges a step on them); empty otherwise.
    pub sessions: Vec<crate::rundir::SessionLog>,
    /// `--manifold`'s polls during the run (manifold.csv's rows); empty without it.
    pub manifold: Vec<crate::manifold_poll::Point>,
}

impl Replayed {
    /// The process exit status this outcome stands for.
    pub fn exit_code(&self) -> u8 {
        if self.interrupted {
            EXIT_INTERRUPTED
        } else if self.summary.ok {
            EXIT_OK
        } else {
            EXIT_CHECKS
        }
    }
}

/// Runs a replay plan until its shape ends or `stop` resolves (then users finish as after
/// Ctrl-C: sessions cut short count as failed and the results so far are written). Writes
/// summary.json and shape.csv into the run directory. Installs no logger and no signal handler.
pub async fn run(
    plan: ReplayPlan,
    stop: impl Future<Output = ()> + Send + 'static,
) -> Result<Replayed, ReplayError> {
    tracing::info!(
        "{}; loaded phase ends {:?} after the start; target {}",
        plan.shape,
        plan.shape.end(),
        plan.url
    );
    // Each user of this process holds a connection at a time.
    if let Some(line) = crate::health::open_files_for(plan.users.len() as u64) {
        eprintln!("{line}");
    }
    let start = Start::at(plan.start_at);
    if let Some(line) = start.late_line("users whose start time has passed") {
        eprintln!("{line}");
    }
    let t0 = start.t0;
    let loaded_end = t0 + plan.shape.end();
    let warmup_end = t0 + plan.shape.warmup();
    let counting = plan.progress;
    let mixed = plan.journeys.len() > 1;
    let journey_aggs = (0..plan.journeys.len())
        .filter(|_| mixed)
        .map(|_| Default::default());
    let (stop_tx, stop_rx) = watch::channel(false);
    let sh = Arc::new(Shared {
        plan,
        start,
        t0,
        warmup_end,
        loaded_end,
        loaded_sessions: AtomicU32::new(0),
        next_session: AtomicU32::new(0),
        running: AtomicU32::new(0),
        active_users: AtomicU32::new(0),
        dropped: AtomicU32::new(0),
        data_exhausted: std::sync::atomic::AtomicBool::new(false),
        done: AtomicU32::new(0),
        failed: AtomicU32::new(0),
        agg: Mutex::new(Aggregate::new()),
        by_journey: Mutex::new(journey_aggs.collect()),
        points: Mutex::new(Vec::new()),
        halt: stop_tx.clone(),
        write_error: Mutex::new(None),
        kept: Mutex::new(Vec::new()),
    });
    if counting {
        // Users wait for t0 on their own; this only tells the person watching.
        let start = sh.start;
        tokio::spawn(async move { start.count_down(|| false).await });
    }
    let stopper = tokio::spawn(async move {
        stop.await;
        let _ = stop_tx.send(true);
    });
    let progress = counting.then(|| tokio::spawn(progress::progress(sh.clone())));
    let pool = Arc::new(Mutex::new(Vec::new()));
    let poller = match &sh.plan.manifold {
        Some(url) => {
            let p = crate::manifold_poll::Poller::new(url)
                .map_err(|e| ReplayError::Usage(e.to_string()))?;
            let (dir, live) = (sh.plan.out_dir.clone(), sh.plan.live.clone());
            Some(tokio::spawn(p.run(dir, live, pool.clone())))
        }
        None => None,
    };
    let sampler = tokio::spawn(drive::sample(sh.clone()));
    let health = crate::health::Monitor::start();
    drive::drive(&sh, stop_rx.clone()).await;
    let generator = health.finish().await;
    sampler.abort();
    for task in [progress, poller].into_iter().flatten() {
        task.abort();
    }
    stopper.abort();
    let interrupted = *stop_rx.borrow();
    drive::push_point(&sh);
    let out_dir = &sh.plan.out_dir;
    let shape_written = drive::write_points(&sh);
    let mut summary = summary::summarize(&sh, interrupted);
    let by_journey = sh.by_journey.lock().expect("journey aggregate lock");
    summary.journeys = journey::summaries(&sh.plan.journeys, &by_journey);
    summary.generator = Some(generator);
    drop(by_journey);
    let written = crate::rundir::write_summary(out_dir, &summary);
    let first_lost = sh.write_error.lock().expect("write error lock").take();
    if let Some((path, err)) = first_lost {
        return Err(ReplayError::Io { path, err });
    }
    shape_written?;
    written.map_err(|(path, err)| ReplayError::Io { path, err })?;
    Ok(Replayed {
        summary,
        interrupted,
        sessions: take(&sh.kept),
        manifold: take(&pool),
    })
}

/// What a list collected during the run holds, taken out (a poisoned lock is taken back: each
/// push left the list valid).
fn take<T>(list: &Mutex<Vec<T>>) -> Vec<T> {
    std::mem::take(
        &mut *list
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner),
    )
}
