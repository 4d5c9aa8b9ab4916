//! One simulated user: its start time, its loop of sessions, and each session's outcome.

use super::player::Player;
use super::shape::Shape;
use super::Shared;
use crate::failure::{Cause, Failure};
use crate::rundir::{RowEvent, SessionLog};
use crate::target::{Conn, CookieJar};
use crate::timefmt;
use crate::tokens::Tokens;
use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::{sleep_until, Instant};

/// Resolves once the run is told to stop (Ctrl-C).
pub(super) async fn stopped(stop: &mut watch::Receiver<bool>) {
    while !*stop.borrow() {
        if stop.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

/// One simulated user: wait for its start time (a ramp's user w at w × interval), then run
/// sessions while the shape keeps it.
pub(super) async fn worker(sh: Arc<Shared>, w: u32, mut stop: watch::Receiver<bool>) {
    let start = sh.t0 + sh.plan.interval() * w;
    tokio::select! {
        _ = sleep_until(start) => {}
        _ = stopped(&mut stop) => return,
    }
    tracing::info!("user {w} started");
    sh.active_users.fetch_add(1, Ordering::AcqRel);
    let mut rng = (u64::from(w) + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ timefmt::now_ms() as u64;
    let mut iteration = 0;
    while let Some(sid) = next_session(&sh, &mut rng) {
        let ok = run_session(&sh, sid, w, iteration, &mut rng, &mut stop).await;
        iteration += 1;
        if *stop.borrow() || !keeps(&sh, w) {
            break;
        }
        if !ok {
            // A failing target must not turn into a hot loop of empty sessions.
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_millis(500)) => {}
                _ = stopped(&mut stop) => break,
            }
            if !keeps(&sh, w) {
                break;
            }
        }
    }
    sh.active_users.fetch_sub(1, Ordering::AcqRel);
    tracing::info!("user {w} stopped after {iteration} sessions");
}

/// An open model's arrival: one session, then gone (counted as active by the caller).
pub(super) async fn one_session(sh: Arc<Shared>, k: u32, mut stop: watch::Receiver<bool>) {
    let mut rng = (u64::from(k) + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ timefmt::now_ms() as u64;
    if let Some(sid) = next_session(&sh, &mut rng) {
        run_session(&sh, sid, k, 0, &mut rng, &mut stop).await;
    }
    sh.active_users.fetch_sub(1, Ordering::AcqRel);
}

/// The next session's id, or None when the plan's session budget (a capacity step: sessions
/// started after the warm-up) or `--data-mode unique`'s rows are spent.
fn next_session(sh: &Shared, rng: &mut u64) -> Option<u32> {
    if sh.data_exhausted.load(Ordering::Relaxed) {
        return None;
    }
    if let Some(max) = sh.plan.max_sessions {
        if Instant::now() >= sh.warmup_end
            && sh.loaded_sessions.fetch_add(1, Ordering::Relaxed) >= max
        {
            return None;
        }
    }
    let sid = sh.next_session.fetch_add(1, Ordering::Relaxed);
    if let Some(d) = &sh.plan.data {
        if d.row(sid, sh.plan.segment, rng).is_none() {
            if !sh.data_exhausted.swap(true, Ordering::Relaxed) {
                eprintln!("{}", d.exhausted_line());
                tracing::warn!("{}", d.exhausted_line());
            }
            return None;
        }
    }
    Some(sid)
}

/// A new session's placeholder values: fresh ids, the run's declared names, its `--data` row;
/// and that row's number (1-based, the header not counted), which its CSV records.
fn session_tokens(plan: &super::ReplayPlan, sid: u32, rng: &mut u64) -> (Tokens, Option<u32>) {
    let mut tokens = Tokens::new_session(rng);
    if plan.vars.is_empty() {
        return (tokens, None);
    }
    tokens.declare(&plan.vars);
    let mut number = None;
    if let Some(d) = &plan.data {
        if let Some(i) = d.row_index(sid, plan.segment, rng) {
            for (c, v) in d.columns.iter().zip(&d.rows[i]) {
                tokens.set(c, v);
            }
            number = Some(i as u32 + 1);
        }
    }
    (tokens, number)
}

/// Whether user `w` goes on with another session: before the loaded phase's end, and for
/// stages while the target still counts it.
fn keeps(sh: &Shared, w: u32) -> bool {
    let now = Instant::now();
    if now >= sh.loaded_end {
        return false;
    }
    match &sh.plan.shape {
        Shape::Stages(_) => w < sh.plan.shape.asked_users(now - sh.t0),
        Shape::Ramp { .. } => true,
        Shape::Arrivals { .. } => false,
    }
}

async fn run_session(
    sh: &Shared,
    sid: u32,
    w: u32,
    iteration: u32,
    rng: &mut u64,
    stop: &mut watch::Receiver<bool>,
) -> bool {
    sh.running.fetch_add(1, Ordering::Relaxed);
    let j = super::journey::pick(&sh.plan.weights, sid, sh.plan.segment);
    let journey = &sh.plan.journeys[j];
    let mut log = SessionLog::new(sid, w, iteration);
    if sh.plan.journeys.len() > 1 {
        log.journey = Some(journey.name.clone());
    }
    let (tokens, data_row) = session_tokens(&sh.plan, sid, rng);
    log.data_row = data_row;
    log.push(RowEvent::SessionCreate, 0);
    let mut at = None;
    let result = {
        let mut player = Player {
            sh: &sh.plan,
            journey,
            tokens,
            jar: CookieJar::default(),
            http: Conn::default(),
            ws: None,
            pending: VecDeque::new(),
            streams: tokio::task::JoinSet::new(),
            server_timing: None,
        };
        let play = player.play(&mut log, &mut at);
        let cut = async {
            stopped(stop).await;
            tokio::time::sleep(sh.plan.stop_grace).await;
        };
        tokio::select! {
            r = play => r,
            () = cut => Err(Failure::from(Cause::Interrupted)),
        }
    };
    let ok = result.is_ok();
    let who = format!("session {sid} (user {w}, iteration {iteration})");
    match result {
        Ok(()) => {
            tracing::info!("{who} done");
            log.push(RowEvent::Done, 0);
        }
        Err(mut failure) => {
            if let Some(a) = at {
                failure = failure.at(a);
            }
            if *stop.borrow() {
                tracing::info!("{who} {failure}");
            } else {
                tracing::warn!("{who} failed: {failure}");
            }
            log.push(RowEvent::Fail, failure.line());
            log.failure = Some(failure);
        }
    }
    let write = write_session(&log, sh).await;
    if let Err(e) = &write {
        let path = sh.plan.out_dir.join("sessions").join(log.file_name());
        let mut first = sh.write_error.lock().expect("write error lock");
        if first.is_none() {
            // Once: every later session would fail the same way (a full disk, a removed run dir).
            tracing::error!("{who}: {}: {e}; stopping the run", path.display());
            *first = Some((path, std::io::Error::new(e.kind(), e.to_string())));
            let _ = sh.halt.send(true);
        } else {
            tracing::debug!("{who}: {}: {e}", path.display());
        }
    }
    sh.running.fetch_sub(1, Ordering::Relaxed);
    if ok {
        sh.done.fetch_add(1, Ordering::Relaxed);
    } else {
        sh.failed.fetch_add(1, Ordering::Relaxed);
    }
    (sh.agg.lock().expect("aggregate lock")).record(&log, write.is_err());
    if let Some(a) = (sh.by_journey.lock().expect("journey aggregate lock")).get_mut(j) {
        a.record(&log, write.is_err());
    }
    sh.observe(&log, ok);
    if sh.plan.keep_sessions {
        // One push per session: a poisoned lock is taken back (the list stays valid).
        (sh.kept.lock())
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(log);
    }
    ok
}

/// Writes a session's CSV; at "too many open files" (every user's connection open at once, at
/// the process's limit) waits for other sessions to close theirs and tries again, for up to ~3 s,
/// rather than stopping the run: that error passes, a full disk does not.
async fn write_session(log: &SessionLog, sh: &Shared) -> std::io::Result<()> {
    let mut wait = std::time::Duration::from_millis(25);
    for _ in 0..7 {
        match log.write(&sh.plan.out_dir, &sh.plan.comment_lines) {
            Err(e) if matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE)) => {
                tokio::time::sleep(wait).await;
                wait *= 2;
            }
            done => return done,
        }
    }
    log.write(&sh.plan.out_dir, &sh.plan.comment_lines)
}
