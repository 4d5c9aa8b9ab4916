//! The supervisor: the only place that starts, stops and forgets workers.
//!
//! One task `select!`s over a closed [`Event`] enum, a back-off timer and an idle tick, so
//! process management never runs on the request path (invariant: the proxy never waits on a
//! process).

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use tokio::sync::mpsc;

use super::{Inner, Pool, Slot, State, FAILING_AFTER};
use crate::config::Config;
use crate::worker::{Worker, WorkerError};

/// Back-off after the first failed start; doubles per failure up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(250);
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// Worker ids reserved under the lock, started after it is released with this generation's
/// settings (its command, stop and ready timeouts, health path).
pub(super) struct Reserved {
    ids: Vec<u64>,
    generation: u64,
    cfg: Arc<Config>,
}

/// Things the supervisor reacts to.
#[derive(Debug)]
pub(super) enum Event {
    /// A request is waiting (maybe start a worker).
    Demand,
    /// SIGHUP: start a new generation with these settings and command.
    Reload(Box<Config>),
    /// A worker passed its readiness check.
    Ready(u64),
    /// A worker failed its readiness check (it is being stopped).
    StartFailed(u64, String),
    /// A worker process was reaped.
    Exited(u64, String),
}

impl Pool {
    /// Starts the workers `scale` reserved, one by one, without holding the pool lock while a
    /// process is forked (a slow start never blocks dispatch); stops at the first failure.
    fn spawn_reserved(self: &Arc<Self>, r: Reserved) {
        let mut ids = r.ids.into_iter();
        while let Some(id) = ids.next() {
            let events = self.events.clone();
            let dir = self
                .tmp
                .dir(&format!("w{id}"))
                .map_err(|source| WorkerError::TempDir { id, source });
            let spawned = dir.and_then(|dir| {
                let parent = self.parent_for(r.generation, &r.cfg)?;
                Worker::spawn(
                    id,
                    &r.cfg.command,
                    parent,
                    (r.cfg.stop_timeout, dir),
                    &self.output,
                    move |status| {
                        let _ = events.send(Event::Exited(id, status));
                    },
                )
            });
            let mut st = self.lock();
            st.spawning -= 1;
            st.totals.worker_starts += 1;
            match spawned {
                Ok(worker) => self.insert_starting(&mut st, worker, r.generation, &r.cfg),
                Err(e) => {
                    st.spawning -= ids.len();
                    self.start_failed(&mut st, e.to_string());
                    return;
                }
            }
        }
    }

    /// Records a freshly spawned worker and probes its readiness off the supervisor.
    fn insert_starting(&self, st: &mut Inner, worker: Worker, generation: u64, cfg: &Config) {
        let id = worker.id;
        // A `--preload` fork's pid is known once its parent answers ("worker forked" logs it).
        let pid = Some(worker.pid()).filter(|p| *p != 0);
        let pid = pid.map_or_else(|| "pending".to_string(), |p| p.to_string());
        tracing::info!(worker = id, pid = %pid, port = worker.port, "worker starting");
        let probe = worker.probe();
        let now = Instant::now();
        st.slots.insert(
            id,
            Slot {
                worker,
                generation,
                state: State::Starting,
                busy: 0,
                served: 0,
                last_used: now,
                started: now,
                failed_start: false,
                health_failures: 0,
                errors_in_row: 0,
                due: None,
                request_limit: self.request_limit(id),
                draining_since: None,
                barrier: false,
                conns: Vec::new(),
            },
        );
        // Readiness is probed off the supervisor so that slow starts never hold it up.
        let health = cfg.health_path.clone();
        let timeout = cfg.ready_timeout;
        let events = self.events.clone();
        tokio::spawn(async move {
            let ev = match probe.wait_ready(health.as_deref(), timeout).await {
                Ok(()) => Event::Ready(id),
                // The exit event reports this one.
                Err(WorkerError::ExitedEarly { .. }) => return,
                Err(e) => Event::StartFailed(id, e.to_string()),
            };
            let _ = events.send(ev);
        });
    }

    fn start_failed(&self, st: &mut Inner, message: String) {
        tracing::error!(error = %message, "worker failed to start");
        st.totals.start_failures += 1;
        st.failures_in_row += 1;
        let backoff = FIRST_BACKOFF
            .saturating_mul(1 << (st.failures_in_row - 1).min(16))
            .min(MAX_BACKOFF);
        st.retry_at = Some(Instant::now() + backoff);
        st.last_error = Some(super::LastError::now(message));
        self.abort_reload_if_failing(st);
        if st.failures_in_row >= FAILING_AFTER
            && !st.slots.values().any(|s| s.state == State::Ready)
        {
            // Nobody will serve the waiters soon: fail them now rather than at the queue timeout.
            st.queue.clear();
        }
        // Wake start_min so it can give up.
        self.ready_count.send_modify(|_| {});
    }

    /// Supervisor step: reserves ids for the workers to start while below `min` or while waiters
    /// outnumber starting slots; [`Pool::spawn_reserved`] starts them after the lock is released.
    fn scale(&self, st: &mut Inner) -> Reserved {
        let mut ids = Vec::new();
        let (generation, cfg) = (st.generation, self.cfg());
        if st.shutting_down || st.retry_at.is_some_and(|t| t > Instant::now()) {
            return Reserved {
                ids,
                generation,
                cfg,
            };
        }
        // Due and draining workers do not count towards --min: their replacements start beside
        // them while --max has room (see `room` below).
        let alive = st.spawning
            + st.slots
                .values()
                .filter(|s| {
                    s.state == State::Starting || (s.state == State::Ready && s.due.is_none())
                })
                .count();
        let starting = st.spawning
            + st.slots
                .values()
                .filter(|s| s.state == State::Starting)
                .count();
        let due = st
            .slots
            .values()
            .filter(|s| s.state == State::Ready && s.due.is_some())
            .count();
        let demand = st.queue.iter().filter(|w| !w.tx.is_closed()).count();
        // --spare: idle ready workers (plus those starting) kept above the busy ones.
        let idle = idle_ready(st);
        let (mut alive, mut starting) = (alive, starting);
        // --max bounds every process: starting, ready, due, draining and stopping ones; a
        // replacement waits until one of them has exited.
        let mut room = cfg.max.saturating_sub(st.spawning + st.slots.len());
        while room > 0
            && alive < cfg.max
            && (alive < cfg.min
                || demand > starting * cfg.per_worker
                || due > starting
                || idle + starting < cfg.spare)
        {
            ids.push(st.next_id);
            st.next_id += 1;
            alive += 1;
            starting += 1;
            room -= 1;
        }
        // No room for their replacements: due workers drain now (the oldest first) and are
        // replaced once stopped, one ready worker kept serving meanwhile while another process
        // will free a place (with --max 1, the requests wait in the queue for the replacement).
        let ready = st
            .slots
            .values()
            .filter(|s| s.state == State::Ready)
            .count();
        let keep = usize::from(ready > 1 || st.spawning + st.slots.len() > ready);
        for _ in 0..due.saturating_sub(starting).min(ready.saturating_sub(keep)) {
            self.retire_one_due(st);
        }
        st.spawning += ids.len();
        Reserved {
            ids,
            generation,
            cfg,
        }
    }

    /// Stops the least recently used idle worker above `min` whose idle time passed.
    fn reap_idle(&self, st: &mut Inner) {
        let (now, cfg) = (Instant::now(), self.cfg());
        loop {
            let alive = st
                .slots
                .values()
                .filter(|s| s.state != State::Stopping)
                .count();
            if alive <= cfg.min || idle_ready(st) <= cfg.spare {
                return;
            }
            let victim = st
                .slots
                .values_mut()
                .filter(|s| {
                    s.state == State::Ready && s.busy == 0 && now - s.last_used >= cfg.idle_timeout
                })
                .min_by_key(|s| s.last_used);
            let Some(slot) = victim else { return };
            tracing::info!(worker = slot.worker.id, "stopping idle worker");
            slot.state = State::Stopping;
            slot.worker.stop();
            st.totals.idle_stops += 1;
        }
    }

    fn publish_ready(&self, st: &Inner) {
        let n = st
            .slots
            .values()
            .filter(|s| s.state == State::Ready)
            .count();
        self.ready_count.send_replace(n);
    }

    fn handle(self: &Arc<Self>, ev: Event) {
        let mut st = self.lock();
        match ev {
            Event::Demand => {}
            Event::Reload(cfg) => self.start_reload(&mut st, *cfg),
            Event::Ready(id) => {
                if let Some(slot) = st.slots.get_mut(&id) {
                    if slot.state == State::Starting {
                        slot.state = State::Ready;
                        slot.last_used = Instant::now();
                        tracing::info!(worker = id, "worker ready");
                    }
                }
                self.reload_ready(&mut st, id);
                // A replacement is ready: one due worker may now drain.
                self.retire_one_due(&mut st);
                st.failures_in_row = 0;
                st.retry_at = None;
                self.dispatch(&mut st);
            }
            Event::StartFailed(id, message) => {
                if let Some(slot) = st.slots.get_mut(&id) {
                    slot.failed_start = true;
                    slot.state = State::Stopping;
                    slot.worker.stop();
                }
                self.start_failed(&mut st, message);
            }
            Event::Exited(id, status) => {
                if let Some(slot) = st.slots.remove(&id) {
                    match slot.state {
                        State::Starting if !slot.failed_start => {
                            let e = WorkerError::ExitedEarly {
                                id,
                                status,
                                tail: slot.worker.tail_text(),
                            };
                            self.start_failed(&mut st, e.to_string());
                        }
                        State::Ready => {
                            st.totals.worker_crashes += 1;
                            tracing::warn!(worker = id, status = %status, busy = slot.busy, "worker died");
                            st.last_error = Some(super::LastError::now(format!(
                                "worker {id} {status} while ready ({} request(s) in flight)",
                                slot.busy
                            )));
                        }
                        // During shutdown, Pool::shutdown reports the exit.
                        _ if st.shutting_down => {}
                        _ => tracing::info!(worker = id, status = %status, "worker stopped"),
                    }
                }
            }
        }
        let ids = self.scale(&mut st);
        self.publish_ready(&st);
        drop(st);
        self.spawn_reserved(ids);
    }
}

/// Ready workers (not due for recycling) with nothing to do: the `--spare` count.
fn idle_ready(st: &Inner) -> usize {
    st.slots
        .values()
        .filter(|s| s.state == State::Ready && s.due.is_none() && s.busy == 0)
        .count()
}

/// The supervisor loop: events, back-off retries and the idle check.
pub(super) async fn supervise(pool: std::sync::Weak<Pool>, mut rx: mpsc::UnboundedReceiver<Event>) {
    let tick_every = {
        let Some(p) = pool.upgrade() else { return };
        let t = (p.cfg().idle_timeout / 4).clamp(Duration::from_millis(50), Duration::from_secs(1));
        // Draining workers are stopped, and limits checked, at least this often.
        t.min(Duration::from_millis(250))
    };
    let mut tick = tokio::time::interval(tick_every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let retry_at = pool.upgrade().and_then(|p| p.lock().retry_at);
        let backoff = async {
            match retry_at {
                Some(t) => tokio::time::sleep_until(t).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            ev = rx.recv() => {
                let (Some(ev), Some(p)) = (ev, pool.upgrade()) else { return };
                p.handle(ev);
            }
            _ = backoff => {
                let Some(p) = pool.upgrade() else { return };
                let mut st = p.lock();
                st.retry_at = None;
                // Retry only when someone needs a worker.
                let ids = p.scale(&mut st);
                p.publish_ready(&st);
                drop(st);
                p.spawn_reserved(ids);
            }
            _ = tick.tick() => {
                let Some(p) = pool.upgrade() else { return };
                // /proc is read before the lock is taken, only when --max-rss asks for it.
                let rss = p.cfg().max_rss.map(|_| crate::rss::by_group());
                let mut st = p.lock();
                if !st.shutting_down {
                    p.reap_idle(&mut st);
                    p.check_limits(&mut st, rss.as_ref());
                    p.stop_drained(&mut st);
                }
                let ids = p.scale(&mut st);
                drop(st);
                p.spawn_reserved(ids);
            }
        }
    }
}
