//! Driving the load shape: starting users as the shape asks (all of a ramp up front, each waiting
//! for its start; stages' users as the target rises; one single-session user per arrival), and
//! sampling users and arrivals over time, asked and achieved, into the run directory's shape.csv.

use super::shape::Shape;
use super::{user, ReplayError, Shared};
use crate::rundir::{self, ShapePoint};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::{sleep_until, Instant};

/// How often the shape is sampled (and stages' targets are followed).
const TICK: Duration = Duration::from_millis(100);
/// How often a point is written to shape.csv.
const SAMPLE: Duration = Duration::from_secs(1);

/// Starts users as the shape asks and returns when every user has stopped.
pub(super) async fn drive(sh: &Arc<Shared>, stop: watch::Receiver<bool>) {
    let mut workers = tokio::task::JoinSet::new();
    match &sh.plan.shape {
        Shape::Ramp { .. } => {
            for &w in &sh.plan.users {
                workers.spawn(user::worker(sh.clone(), w, stop.clone()));
            }
        }
        Shape::Stages(_) => follow_stages(sh, &mut workers, stop.clone()).await,
        Shape::Arrivals {
            per_sec, max_users, ..
        } => arrivals(sh, &mut workers, stop.clone(), *per_sec, *max_users).await,
    }
    while workers.join_next().await.is_some() {}
}

/// Stages: every tick, starts a user for each slot below the target that has none (users above
/// a falling target stop on their own after their session).
async fn follow_stages(
    sh: &Arc<Shared>,
    workers: &mut tokio::task::JoinSet<()>,
    mut stop: watch::Receiver<bool>,
) {
    let slots: Arc<Vec<std::sync::atomic::AtomicBool>> = Arc::new(
        (0..sh.plan.shape.peak_users())
            .map(|_| Default::default())
            .collect(),
    );
    let mut tick = tokio::time::interval_at(sh.t0, TICK);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = user::stopped(&mut stop) => return,
        }
        let now = Instant::now();
        if now >= sh.loaded_end {
            return;
        }
        let target = sh.plan.shape.asked_users(now - sh.t0) as usize;
        for (w, busy) in slots.iter().enumerate().take(target) {
            if !busy.swap(true, Ordering::AcqRel) {
                let (sh, stop, slots) = (sh.clone(), stop.clone(), slots.clone());
                workers.spawn(async move {
                    user::worker(sh, w as u32, stop).await;
                    slots[w].store(false, Ordering::Release);
                });
            }
        }
        while workers.try_join_next().is_some() {}
    }
}

/// Open model: arrival k starts at t0 + k / rate as a one-session user, unless `max_users` are
/// running (then it is dropped; the first drop is announced on stderr).
async fn arrivals(
    sh: &Arc<Shared>,
    workers: &mut tokio::task::JoinSet<()>,
    mut stop: watch::Receiver<bool>,
    per_sec: f64,
    max_users: u32,
) {
    for k in 0u64.. {
        let at = sh.t0 + Duration::from_secs_f64(k as f64 / per_sec);
        if at >= sh.loaded_end {
            return;
        }
        tokio::select! {
            _ = sleep_until(at) => {}
            _ = user::stopped(&mut stop) => return,
        }
        if sh.active_users.load(Ordering::Acquire) >= max_users {
            if sh.dropped.fetch_add(1, Ordering::Relaxed) == 0 {
                eprintln!(
                    "surge: --max-users {max_users} reached {:.1} s into the run: the app is slower than \
                     --arrival-rate {per_sec}/s; arrivals are dropped (counted in summary.json's arrivals_dropped)",
                    (at - sh.t0).as_secs_f64()
                );
            }
            continue;
        }
        // Counted here so the next arrival sees it even before the task runs.
        sh.active_users.fetch_add(1, Ordering::AcqRel);
        workers.spawn(user::one_session(sh.clone(), k as u32, stop.clone()));
        while workers.try_join_next().is_some() {}
    }
}

/// Samples the shape every second until aborted.
pub(super) async fn sample(sh: Arc<Shared>) {
    let mut tick = tokio::time::interval_at(sh.t0, SAMPLE);
    loop {
        tick.tick().await;
        push_point(&sh);
        if let Some(m) = &sh.plan.live {
            m.set_users(sh.active_users.load(Ordering::Relaxed));
        }
    }
}

/// Adds the current point to the series.
pub(super) fn push_point(sh: &Shared) {
    let t = Instant::now().saturating_duration_since(sh.t0);
    let p = ShapePoint {
        at_ms: sh.start.unix_ms + t.as_millis() as i64,
        asked_users: if Instant::now() < sh.loaded_end {
            sh.plan.shape.asked_users(t)
        } else {
            0
        },
        users: sh.active_users.load(Ordering::Relaxed),
        asked_arrivals: sh.plan.shape.asked_arrivals(t),
        arrivals: u64::from(sh.next_session.load(Ordering::Relaxed)),
    };
    sh.points.lock().expect("points lock").push(p);
}

/// Writes shape.csv into the run directory.
pub(super) fn write_points(sh: &Shared) -> Result<(), ReplayError> {
    let points = sh.points.lock().expect("points lock");
    rundir::write_points(&sh.plan.out_dir, &points)
        .map_err(|(path, err)| ReplayError::Io { path, err })
}
