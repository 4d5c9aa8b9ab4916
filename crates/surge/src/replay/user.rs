//! One simulated user: its start time, its loop of sessions, and each session's outcome.

use super::player::Player;
use super::shape::Shape;
use super::Shared;
use crate::failure::{Cause, Failure};
use crate::output::{RowEvent, SessionLog};
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
    while let Some(sid) = next_session(&sh) {
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
    if let Some(sid) = next_session(&sh) {
        run_session(&sh, sid, k, 0, &mut rng, &mut stop).await;
    }
    sh.active_users.fetch_sub(1, Ordering::AcqRel);
}

/// The next session's id, or None when the plan's session budget (a capacity step: sessions
/// started after the warm-up) is spent.
fn next_session(sh: &Shared) -> Option<u32> {
    if let Some(max) = sh.plan.max_sessions {
        if Instant::now() >= sh.warmup_end
            && sh.loaded_sessions.fetch_add(1, Ordering::Relaxed) >= max
        {
            return None;
        }
    }
    Some(sh.next_session.fetch_add(1, Ordering::Relaxed))
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
    let mut log = SessionLog::new(sid, w, iteration);
    log.push(RowEvent::SessionCreate, 0);
    let mut at = None;
    let result = {
        let mut player = Player {
            sh: &sh.plan,
            tokens: Tokens::new_session(rng),
            jar: CookieJar::default(),
            http: Conn::default(),
            ws: None,
            pending: VecDeque::new(),
            streams: tokio::task::JoinSet::new(),
        };
        let play = player.play(&mut log, &mut at);
        tokio::select! {
            r = play => r,
            _ = stopped(stop) => Err(Failure::from(Cause::Interrupted)),
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
    let write = log.write(&sh.plan.out_dir, &sh.plan.comment_lines);
    if let Err(e) = &write {
        tracing::error!("{who}: session CSV {} not written: {e}", log.file_name());
    }
    sh.running.fetch_sub(1, Ordering::Relaxed);
    if ok {
        sh.done.fetch_add(1, Ordering::Relaxed);
    } else {
        sh.failed.fetch_add(1, Ordering::Relaxed);
    }
    (sh.agg.lock().expect("aggregate lock")).record(&log, write.is_err());
    sh.observe(&log, ok);
    ok
}
