//! The worker pool: who serves the next request, when to start or stop workers, the FIFO queue.
//!
//! Requests call [`Pool::acquire`] and hold the returned [`Lease`] while the worker serves them;
//! dropping it frees the slot and hands it to the oldest waiter. Everything that changes the set of
//! workers (start, ready, exit, idle stop, back-off) happens in one supervisor task that `select!`s
//! over a closed [`Event`] enum, so the request path never spawns or waits on a process.
//!
//! Invariants: a worker serves at most `per_worker` requests that were assigned by the picker
//! (sticky requests follow their session regardless); waiters are served strictly in arrival order;
//! at most `max` worker processes are alive, whatever their state (starting, ready, due,
//! draining, stopping); every spawned process is reaped before [`Pool::shutdown`] returns.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock};
// tokio's clock, so back-off and idle stops can be tested on a paused clock.
use tokio::time::Instant;

use serde::Serialize;
use tokio::sync::{mpsc, oneshot, watch};

use crate::config::Config;
use crate::upstream::{Conn, Idle};
use crate::worker::tmpdir::TempRoot;
use crate::worker::{OutputSink, Worker};

mod health;
mod preload;
mod recycle;
mod reload;
mod snapshot;
pub use snapshot::{LastError, ParentStatus, Snapshot, Totals, WorkerStatus};
mod supervisor;
pub use recycle::Recycle;
use supervisor::{supervise, Event};

/// Start attempts before giving up while starting `--min` workers.
const STARTUP_ATTEMPTS: u32 = 3;
/// Consecutive start failures after which waiting requests are failed instead of kept waiting.
const FAILING_AFTER: u32 = 3;

/// Why a request got no worker.
#[derive(Debug, Clone, thiserror::Error)]
pub enum AcquireError {
    /// The queue already holds `--queue-size` requests.
    #[error("queue full")]
    QueueFull,
    /// Waited longer than `--queue-timeout`.
    #[error("queue timeout")]
    Timeout,
    /// Workers keep failing to start.
    #[error("workers cannot start: {0}")]
    Failing(String),
}

/// Why the `--min` workers could not be started.
#[derive(Debug, Clone, thiserror::Error)]
pub enum StartError {
    /// Workers failed to start [`STARTUP_ATTEMPTS`] times in a row.
    #[error("{last_error} (gave up after {attempts} attempts)")]
    GaveUp {
        /// What the last failure said.
        last_error: String,
        /// Failed starts in a row.
        attempts: u32,
    },
    /// The pool stopped before the workers were ready.
    #[error("pool stopped")]
    Stopped,
}

/// Lifecycle of a worker as the pool sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    /// Spawned, not yet accepting.
    Starting,
    /// Takes requests.
    Ready,
    /// Recycled or of an old generation: finishes its requests and sticky sessions, takes no new
    /// ones; stopped once idle (or after its drain limit).
    Draining,
    /// SIGTERM sent; takes nothing new.
    Stopping,
}

struct Slot {
    worker: Worker,
    /// Generation of the command it runs (1, then +1 per reload).
    generation: u64,
    state: State,
    busy: usize,
    served: u64,
    last_used: Instant,
    started: Instant,
    failed_start: bool,
    /// Health probes failed in a row.
    health_failures: u32,
    /// Its own 5xx answers in a row (`--max-5xx`).
    errors_in_row: u64,
    /// Why it is due for recycling: a replacement is started, and once one is ready this worker
    /// goes [`State::Draining`]. It serves normally until then.
    due: Option<Recycle>,
    /// Requests after which it is due (`--max-requests` plus its jitter).
    request_limit: Option<u64>,
    /// When it went [`State::Draining`].
    draining_since: Option<Instant>,
    /// Draining and quiet: the last request it must answer before it is stopped is in flight
    /// (see `recycle`).
    barrier: bool,
    /// Idle keep-alive connections to this worker (reused within `upstream::REUSE_WITHIN`).
    conns: Vec<Idle>,
}

struct Waiter {
    tx: oneshot::Sender<Lease>,
}

/// Why a ready worker is replaced by the pool (it is stopped and a new one started).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replace {
    /// A request got no answer within --request-timeout: the worker may be stuck.
    RequestTimeout,
    /// A response body got no byte for --request-timeout: the worker may be stuck.
    BodyTimeout,
    /// The worker failed the health probe twice in a row.
    Unhealthy,
    /// The worker refused a new connection: it is dead or dying.
    Refused,
    /// The worker sent no byte of an answer to a request it may retry (see `proxy::retry`):
    /// died (its exit may not be noticed yet), or drops requests.
    NoAnswer,
}

struct Inner {
    slots: BTreeMap<u64, Slot>,
    queue: VecDeque<Waiter>,
    next_id: u64,
    /// Generation new workers get.
    generation: u64,
    /// While a reload waits for its first ready worker: the generation and settings to go back
    /// to if the new one cannot start.
    reloading: Option<(u64, Arc<Config>)>,
    /// Workers the supervisor reserved and is forking right now (outside the lock).
    spawning: usize,
    failures_in_row: u32,
    retry_at: Option<Instant>,
    last_error: Option<LastError>,
    /// A given-up reload's error, kept in status until a reload succeeds.
    reload_error: Option<LastError>,
    shutting_down: bool,
    totals: Totals,
}

/// The pool shared by the proxy, the status page and the supervisor.
pub struct Pool {
    /// The settings in force; a reload swaps them (see `config::live` for what applies when).
    cfg: RwLock<Arc<Config>>,
    inner: Mutex<Inner>,
    events: mpsc::UnboundedSender<Event>,
    output: OutputSink,
    ready_count: watch::Sender<usize>,
    /// Set once on SIGTERM (see `drain`): new sessions are refused, status answers 404.
    draining: AtomicBool,
    /// Per-run random seed for the `--max-requests-jitter`.
    seed: u64,
    /// `--preload` parents (see `pool::preload`).
    parents: Mutex<preload::Parents>,
    /// The run's temp directory: each worker gets its own `TMPDIR` in it (`worker::tmpdir`).
    tmp: Arc<TempRoot>,
}

/// One request's claim on a worker; dropping it frees the slot.
pub struct Lease {
    pool: Arc<Pool>,
    /// Worker id (for the sticky cookie and logs).
    pub worker: u64,
    /// Worker port.
    pub port: u16,
    /// Worker generation (for the access log).
    pub generation: u64,
    armed: bool,
    conn: Option<Idle>,
}

impl Lease {
    /// An idle connection to this worker, if the pool holds one.
    pub fn take_conn(&mut self) -> Option<Conn> {
        self.conn.take().map(Idle::into_conn)
    }

    /// Gives a connection back; it returns to the worker's idle list when the lease drops.
    pub fn put_conn(&mut self, conn: Conn) {
        self.conn = Some(Idle::new(conn));
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        if self.armed {
            self.pool.release(self.worker, self.conn.take());
        }
    }
}

impl Pool {
    /// Creates the pool and its supervisor task; no worker is started yet.
    pub fn new(cfg: Config, output: OutputSink, tmp: Arc<TempRoot>) -> Arc<Pool> {
        let (tx, rx) = mpsc::unbounded_channel();
        let pool = Arc::new(Pool {
            cfg: RwLock::new(Arc::new(cfg)),
            inner: Mutex::new(Inner {
                slots: BTreeMap::new(),
                queue: VecDeque::new(),
                next_id: 1,
                generation: 1,
                reloading: None,
                spawning: 0,
                failures_in_row: 0,
                retry_at: None,
                last_error: None,
                reload_error: None,
                shutting_down: false,
                totals: Totals::default(),
            }),
            events: tx,
            output,
            ready_count: watch::channel(0).0,
            draining: AtomicBool::new(false),
            seed: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default()
                .as_nanos() as u64
                ^ u64::from(std::process::id()),
            parents: Mutex::default(),
            tmp,
        });
        tokio::spawn(supervise(Arc::downgrade(&pool), rx));
        tokio::spawn(health::probe_loop(Arc::downgrade(&pool)));
        pool
    }

    /// The settings in force now (a reload may swap them at any time; callers read them once
    /// per decision).
    pub fn cfg(&self) -> Arc<Config> {
        // Taken back if poisoned: the only write is one pointer swap.
        self.cfg
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn set_cfg(&self, cfg: Arc<Config>) {
        *self.cfg.write().unwrap_or_else(PoisonError::into_inner) = cfg;
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().expect("pool lock poisoned")
    }

    /// Starts `--min` workers and waits until they are ready.
    ///
    /// # Errors
    /// A worker failed to start [`STARTUP_ATTEMPTS`] times in a row; the message says why.
    pub async fn start_min(self: &Arc<Self>) -> Result<(), StartError> {
        let _ = self.events.send(Event::Demand);
        let mut rx = self.ready_count.subscribe();
        let min = self.cfg().min;
        loop {
            {
                let st = self.lock();
                if st.failures_in_row >= STARTUP_ATTEMPTS {
                    return Err(StartError::GaveUp {
                        last_error: last_message(&st),
                        attempts: st.failures_in_row,
                    });
                }
            }
            if *rx.borrow_and_update() >= min {
                return Ok(());
            }
            if rx.changed().await.is_err() {
                return Err(StartError::Stopped);
            }
        }
    }

    /// Gets a worker for one request: the session's worker if `sticky` names a ready one, else
    /// the least-busy, most recently used worker with room, else a place in the FIFO queue.
    ///
    /// # Errors
    /// Queue full, queue timeout, or workers failing to start.
    pub async fn acquire(self: &Arc<Self>, sticky: Option<u64>) -> Result<Lease, AcquireError> {
        let cfg = self.cfg();
        let rx = {
            let mut st = self.lock();
            if let Some(id) = sticky {
                if let Some(slot) = st.slots.get_mut(&id) {
                    // A draining worker still serves the sessions it has.
                    if matches!(slot.state, State::Ready | State::Draining) {
                        slot.busy += 1;
                        return Ok(self.lease(id, slot));
                    }
                }
            }
            if st.queue.is_empty() {
                if let Some(id) = pick(&st, cfg.per_worker) {
                    let slot = st.slots.get_mut(&id).expect("picked slot");
                    slot.busy += 1;
                    if cfg.spare > 0 {
                        // One idle worker fewer: the supervisor may start a spare.
                        let _ = self.events.send(Event::Demand);
                    }
                    return Ok(self.lease(id, slot));
                }
            }
            let backing_off = st.retry_at.is_some_and(|t| t > Instant::now());
            if backing_off
                && st.failures_in_row >= FAILING_AFTER
                && !st.slots.values().any(|s| s.state == State::Ready)
            {
                return Err(AcquireError::Failing(last_message(&st)));
            }
            if st.queue.len() >= cfg.queue_size {
                st.totals.queue_full += 1;
                return Err(AcquireError::QueueFull);
            }
            let (tx, rx) = oneshot::channel();
            st.queue.push_back(Waiter { tx });
            rx
        };
        let _ = self.events.send(Event::Demand);
        match tokio::time::timeout(cfg.queue_timeout, rx).await {
            Ok(Ok(lease)) => Ok(lease),
            // Sender dropped: the pool failed all waiters because workers cannot start.
            Ok(Err(_)) => Err(AcquireError::Failing(last_message(&self.lock()))),
            Err(_) => {
                // The closed receiver is skipped by dispatch; a lease sent just now was dropped
                // with the receiver and released itself.
                let mut st = self.lock();
                st.queue.retain(|w| !w.tx.is_closed());
                st.totals.queue_timeouts += 1;
                Err(AcquireError::Timeout)
            }
        }
    }

    fn lease(self: &Arc<Self>, worker: u64, slot: &mut Slot) -> Lease {
        // Drop (close) connections the worker closed or idle too long; hand out the newest.
        slot.conns.retain(Idle::usable);
        Lease {
            pool: self.clone(),
            worker,
            port: slot.worker.port,
            generation: slot.generation,
            armed: true,
            conn: slot.conns.pop(),
        }
    }

    /// Marks the pool as draining: from now on only existing sessions are served.
    pub fn start_draining(&self) {
        self.draining.store(true, Ordering::Relaxed);
    }

    /// Whether [`Pool::start_draining`] was called.
    pub fn is_draining(&self) -> bool {
        self.draining.load(Ordering::Relaxed)
    }

    /// Requests (and WebSockets) being served or waiting in the queue, over all workers.
    pub fn pending(&self) -> usize {
        let st = self.lock();
        st.queue.len() + st.slots.values().map(|s| s.busy).sum::<usize>()
    }

    /// Counts a request sent to a worker once more instead of a 502 (see `proxy::retry`; a
    /// refused connect is counted by [`Pool::replace`]).
    pub fn count_retry(&self) {
        self.lock().totals.connect_retries += 1;
    }

    /// Counts a 502 answer (worker died or refused mid-request) and records why.
    pub fn count_bad_gateway(&self, message: String) {
        let mut st = self.lock();
        st.totals.bad_gateway += 1;
        st.last_error = Some(LastError::now(message));
    }

    /// Stops ready worker `id` and lets the supervisor start its replacement; its other requests
    /// end with it (it is presumed stuck). Returns false if it was not ready (already replaced).
    pub fn replace(&self, id: u64, why: Replace) -> bool {
        let mut st = self.lock();
        if why == Replace::Refused {
            // Counted whether or not the worker was already known to be gone.
            st.totals.connect_retries += 1;
        }
        let Some(slot) = st.slots.get_mut(&id) else {
            return false;
        };
        if !matches!(slot.state, State::Ready | State::Draining) {
            return false;
        }
        slot.state = State::Stopping;
        slot.worker.stop();
        let (message, counter) = match why {
            Replace::RequestTimeout => (
                format!(
                    "worker {id} did not answer within {} (--request-timeout); replaced",
                    humantime::format_duration(self.cfg().request_timeout)
                ),
                &mut st.totals.request_timeouts,
            ),
            Replace::BodyTimeout => (
                format!(
                    "worker {id} fell silent mid-body for {} (--request-timeout); replaced",
                    humantime::format_duration(self.cfg().request_timeout)
                ),
                &mut st.totals.request_timeouts,
            ),
            Replace::Unhealthy => (
                format!(
                    "worker {id} failed its health probe twice ({}); replaced",
                    self.cfg().health_path.as_deref().unwrap_or("/")
                ),
                &mut st.totals.health_replacements,
            ),
            Replace::Refused => (
                format!("worker {id} refused a connection; replaced, request retried"),
                &mut 0,
            ),
            Replace::NoAnswer => (
                format!("worker {id} sent no byte of an answer; replaced"),
                &mut 0,
            ),
        };
        *counter += 1;
        tracing::warn!(worker = id, "{message}");
        st.last_error = Some(LastError::now(message));
        drop(st);
        let _ = self.events.send(Event::Demand);
        true
    }

    /// Whether worker `id` exists and takes requests (for sticky cookies).
    pub fn is_ready(&self, id: u64) -> bool {
        self.lock()
            .slots
            .get(&id)
            .is_some_and(|s| matches!(s.state, State::Ready | State::Draining))
    }

    fn release(self: &Arc<Self>, id: u64, conn: Option<Idle>) {
        let mut st = self.lock();
        if let Some(slot) = st.slots.get_mut(&id) {
            // Idle from now: its response may have streamed for long after it was put back.
            if let Some(c) = conn.and_then(Idle::renewed) {
                slot.conns.push(c);
            }
            slot.busy = slot.busy.saturating_sub(1);
            slot.served += 1;
            slot.last_used = Instant::now();
            let at_limit = slot.request_limit.filter(|l| slot.served >= *l);
            st.totals.served += 1;
            if let Some(limit) = at_limit {
                if self.mark_due(&mut st, id, Recycle::Requests(limit)) {
                    let _ = self.events.send(Event::Demand);
                }
            }
        }
        self.dispatch(&mut st);
    }

    /// Hands free slots to waiters, oldest first.
    fn dispatch(self: &Arc<Self>, st: &mut Inner) {
        let per_worker = self.cfg().per_worker;
        while let Some(front) = st.queue.front() {
            if front.tx.is_closed() {
                st.queue.pop_front();
                continue;
            }
            let Some(id) = pick(st, per_worker) else {
                break;
            };
            let waiter = st.queue.pop_front().expect("front exists");
            let slot = st.slots.get_mut(&id).expect("picked slot");
            slot.busy += 1;
            if let Err(mut lease) = waiter.tx.send(self.lease(id, slot)) {
                // Waiter gave up in the meantime: undo without re-locking.
                lease.armed = false;
                slot.busy -= 1;
                if let Some(c) = lease.conn.take() {
                    slot.conns.push(c);
                }
            }
        }
    }

    /// Current state for the status page and metrics.
    pub fn snapshot(&self) -> Snapshot {
        // /proc is read before the lock is taken.
        let rss = crate::rss::by_group();
        let cfg = self.cfg();
        let st = self.lock();
        let now = Instant::now();
        Snapshot {
            workers: st
                .slots
                .values()
                .map(|s| WorkerStatus {
                    id: s.worker.id,
                    pid: Some(s.worker.pid()).filter(|p| *p != 0),
                    port: s.worker.port,
                    generation: s.generation,
                    state: s.state,
                    rss_bytes: rss.get(&s.worker.pid()).copied().unwrap_or(0),
                    recycle: s.due.map(|d| d.to_string()),
                    busy: s.busy,
                    served: s.served,
                    uptime_s: (now - s.started).as_secs_f64(),
                    idle_s: (now - s.last_used).as_secs_f64(),
                })
                .collect(),
            queue: st.queue.len(),
            queue_size: cfg.queue_size,
            min: cfg.min,
            max: cfg.max,
            per_worker: cfg.per_worker,
            spare: cfg.spare,
            request_timeout_s: cfg.request_timeout.as_secs_f64(),
            totals: st.totals,
            output_lines_dropped: self.output.dropped(),
            access_log_lines_dropped: 0,
            settings: cfg.shown().into_iter().collect(),
            last_error: LastError::standing(st.reload_error.as_ref(), st.last_error.as_ref()),
            generation: st.generation,
            draining: self.is_draining(),
            preload: self.parent_statuses(),
        }
    }

    /// Stops every worker (SIGTERM, then SIGKILL after `--stop-timeout`) and waits until all are
    /// reaped.
    pub async fn shutdown(&self) {
        self.shutdown_within(self.cfg().stop_timeout).await;
    }

    /// [`Pool::shutdown`] with SIGKILL after `grace` at most, so a shutdown keeps its bound.
    pub async fn shutdown_within(&self, grace: std::time::Duration) {
        let waits: Vec<(u64, watch::Receiver<Option<String>>)> = {
            let mut st = self.lock();
            st.shutting_down = true;
            st.queue.clear();
            st.slots
                .values_mut()
                .map(|s| {
                    s.state = State::Stopping;
                    s.worker.stop_within(grace);
                    (s.worker.id, s.worker.exited.clone())
                })
                .collect()
        };
        for (id, mut rx) in waits {
            if let Ok(status) = rx.wait_for(|s| s.is_some()).await {
                let status = status.clone().unwrap_or_default();
                tracing::info!(worker = id, status = %status, "worker stopped");
            }
        }
        self.stop_parents(grace).await;
    }
}

/// The last error's message, or "" if none.
fn last_message(st: &Inner) -> String {
    st.last_error
        .as_ref()
        .map(|e| e.message.clone())
        .unwrap_or_default()
}

/// Picks the ready worker with room: least busy, then most recently used.
fn pick(st: &Inner, per_worker: usize) -> Option<u64> {
    st.slots
        .values()
        .filter(|s| s.state == State::Ready && s.busy < per_worker)
        // After a reload, new sessions go to the newest generation while it has room.
        .min_by_key(|s| {
            (
                std::cmp::Reverse(s.generation),
                s.busy,
                std::cmp::Reverse(s.last_used),
                s.worker.id,
            )
        })
        .map(|s| s.worker.id)
}
