//! One simulated user: its start time, its loop of sessions, and each session's outcome.

use super::player::Player;
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
async fn stopped(stop: &mut watch::Receiver<bool>) {
    while !*stop.borrow() {
        if stop.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

/// One simulated user: wait for its start time, then run sessions until the loaded phase is over.
pub(super) async fn worker(sh: Arc<Shared>, w: u32, mut stop: watch::Receiver<bool>) {
    let start = sh.t0 + sh.interval * w;
    tokio::select! {
        _ = sleep_until(start) => {}
        _ = stopped(&mut stop) => return,
    }
    tracing::info!("user {w} started");
    let mut rng = (u64::from(w) + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ timefmt::now_ms() as u64;
    let mut iteration = 0;
    loop {
        let sid = sh.next_session.fetch_add(1, Ordering::Relaxed);
        let ok = run_session(&sh, sid, w, iteration, &mut rng, &mut stop).await;
        iteration += 1;
        if *stop.borrow() || Instant::now() >= sh.loaded_end {
            break;
        }
        if !ok {
            // A failing target must not turn into a hot loop of empty sessions.
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_millis(500)) => {}
                _ = stopped(&mut stop) => break,
            }
            if Instant::now() >= sh.loaded_end {
                break;
            }
        }
    }
    tracing::info!("user {w} stopped after {iteration} sessions");
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
            sh,
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
    let write = log.write(&sh.out_dir, &sh.comment_lines);
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
    ok
}
