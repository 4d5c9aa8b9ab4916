//! On-demand fetch of days that are not ingested yet, single-flight: however many clients ask for
//! the same new day, one download + ingest runs and every one of them follows its progress. Ingests
//! run on blocking threads, at most `max_ingests` at once; a source that stops sending is given up
//! on after `stall` so waiting clients get an answer (the store only ever sees whole days).

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

// tokio's clock, so tests on a paused clock can move time.
use tokio::time::Instant;

use serde::Serialize;
use tokio::sync::{watch, OwnedSemaphorePermit, Semaphore};

use super::db::Db;
use crate::date::Day;
use crate::day::Threads;
use crate::follow::Attempt;
use crate::ingest::{self, IngestError};
use crate::progress::{Event, Progress};
use crate::source::{Source, SourceConfig, SourceError};

/// Where a fetch is, as sent to browsers over SSE (one JSON object per event, tagged by `phase`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "phase", rename_all = "snake_case")]
#[cfg_attr(test, derive(ts_rs::TS), ts(rename = "Progress"))]
pub enum Status {
    /// Waiting for a free ingest slot.
    Queued,
    /// Has a slot; connecting to the source.
    Starting,
    /// Bytes of the `.csv.gz` received so far; `total` from Content-Length when known.
    Downloading {
        #[cfg_attr(test, ts(type = "number"))]
        done: u64,
        #[cfg_attr(test, ts(type = "number | null"))]
        total: Option<u64>,
    },
    /// Compressed bytes consumed and rows parsed so far.
    Parsing {
        #[cfg_attr(test, ts(type = "number"))]
        bytes: u64,
        #[cfg_attr(test, ts(type = "number | null"))]
        total: Option<u64>,
        #[cfg_attr(test, ts(type = "number"))]
        rows: u64,
    },
    /// Writing the day's tables.
    Storing,
    /// Committed and visible.
    Done {
        #[cfg_attr(test, ts(type = "number"))]
        rows: u64,
    },
    /// Failed; `status` is the HTTP status a GET of the day now gets (404: source has no such day).
    #[serde(rename = "error")]
    Failed { status: u16, error: String },
}

impl From<Event> for Status {
    fn from(e: Event) -> Status {
        match e {
            Event::Downloading { done, total } => Status::Downloading { done, total },
            Event::Parsing { bytes, total, rows } => Status::Parsing { bytes, total, rows },
            Event::Storing => Status::Storing,
            Event::Done { rows } => Status::Done { rows },
        }
    }
}

impl Status {
    /// The SSE `data:` payload.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("serialisable")
    }

    /// No further updates follow.
    pub fn is_final(&self) -> bool {
        matches!(self, Status::Done { .. } | Status::Failed { .. })
    }
}

/// One running fetch; clients subscribe to its status.
pub struct Flight {
    tx: watch::Sender<Status>,
}

impl Flight {
    /// A receiver that sees the current status and every later one.
    pub fn subscribe(&self) -> watch::Receiver<Status> {
        self.tx.subscribe()
    }
}

/// How long a "source has no such day" answer is remembered (no re-download on every click).
const NOT_FOUND_TTL: Duration = Duration::from_secs(600);
/// How long other failures are kept for clients that subscribe late (retries are allowed at once).
const FAILURE_TTL: Duration = Duration::from_secs(60);

/// The fetcher: running flights, recent failures, the ingest slots and the days known to be stored.
pub struct Fetcher {
    db: Arc<Db>,
    source: SourceConfig,
    stall: Duration,
    slots: Arc<Semaphore>,
    flights: Mutex<HashMap<Day, Arc<Flight>>>,
    failures: Mutex<HashMap<Day, (Instant, Status)>>,
    known: RwLock<BTreeSet<Day>>,
    on_ingested: Box<dyn Fn(Day) + Send + Sync>,
}

/// What [`Fetcher::begin`] found.
enum Begun {
    /// A new flight, with its slot if one was free.
    New(Arc<Flight>, Option<OwnedSemaphorePermit>),
    /// A flight already running.
    Running(Arc<Flight>),
    /// The day is stored.
    Stored,
}

/// What a request for a day that is not in memory gets.
pub enum Lookup {
    /// Stored: read it.
    Stored,
    /// Being fetched (just started or joined).
    Fetching(Arc<Flight>),
    /// Cannot be fetched: HTTP status and message.
    Unavailable(u16, String),
}

impl Fetcher {
    /// A fetcher over `db`; `on_ingested` runs after each new day is committed (cache invalidation).
    pub fn new(
        db: Arc<Db>,
        source: SourceConfig,
        max_ingests: usize,
        stall: Duration,
        known: BTreeSet<Day>,
        on_ingested: Box<dyn Fn(Day) + Send + Sync>,
    ) -> Arc<Fetcher> {
        Arc::new(Fetcher {
            db,
            source,
            stall,
            slots: Arc::new(Semaphore::new(max_ingests.max(1))),
            flights: Mutex::new(HashMap::new()),
            failures: Mutex::new(HashMap::new()),
            known: RwLock::new(known),
            on_ingested,
        })
    }

    /// Whether the day is known to be stored (no database access).
    pub fn is_known(&self, day: Day) -> bool {
        self.known
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .contains(&day)
    }

    /// The newest stored day, if any (no database access).
    pub fn newest(&self) -> Option<Day> {
        self.known
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .last()
            .copied()
    }

    /// The stored days changed outside this fetcher (another process ingested, or deleted).
    pub fn update_known(&self, added: &[Day], removed: &[Day]) {
        let mut known = self.known.write().unwrap_or_else(|e| e.into_inner());
        known.extend(added);
        for d in removed {
            known.remove(d);
        }
    }

    /// The running flight for a day, if any.
    pub fn flight(&self, day: Day) -> Option<Arc<Flight>> {
        self.flights
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&day)
            .cloned()
    }

    /// The recent failure of a day, if any and still fresh.
    pub fn recent_failure(&self, day: Day) -> Option<Status> {
        let mut failures = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        failures.retain(|_, (at, s)| at.elapsed() < ttl(s));
        failures.get(&day).map(|(_, s)| s.clone())
    }

    /// Finds out whether `day` is stored, being fetched, or starts fetching it. `admit` is asked
    /// before a NEW fetch starts (the per-client rate limit); joining a running fetch is free.
    pub async fn lookup(
        self: &Arc<Self>,
        day: Day,
        admit: impl FnOnce() -> Result<(), (u16, String)>,
    ) -> Lookup {
        if self.is_known(day) {
            return Lookup::Stored;
        }
        if !day.in_log_range() {
            return Lookup::Unavailable(
                404,
                format!("no CRAN log for {day}: logs exist from 2012-10-01 to yesterday (UTC)"),
            );
        }
        if let Some(Status::Failed { status: 404, error }) = self.recent_failure(day) {
            return Lookup::Unavailable(404, error);
        }
        if let Some(f) = self.flight(day) {
            return Lookup::Fetching(f);
        }
        // Stored by someone else (e.g. `cranwhales ingest` on the same file)?
        let date = day.to_string();
        match self.db.read(move |s| Ok(s.has_day(&date)?)).await {
            Ok(true) => {
                self.known
                    .write()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(day);
                return Lookup::Stored;
            }
            Ok(false) => {}
            Err(e) => return Lookup::Unavailable(500, format!("store: {e:#}")),
        }
        if let Some(why) = self.db.read_only() {
            // Nothing fetched could be stored: say so at once instead of downloading for nothing.
            return Lookup::Unavailable(
                404,
                format!("{day} is not stored, and this server's store is read-only ({why}): days cannot be fetched"),
            );
        }
        let (flight, slot) = match self.begin(day, Some(admit)) {
            Ok(Begun::New(flight, slot)) => (flight, slot),
            Ok(Begun::Running(f)) => return Lookup::Fetching(f),
            Ok(Begun::Stored) => return Lookup::Stored,
            Err((status, msg)) => return Lookup::Unavailable(status, msg),
        };
        let fetcher = self.clone();
        let running = flight.clone();
        tokio::spawn(async move {
            let _ = fetcher.run(day, running, slot).await;
        });
        Lookup::Fetching(flight)
    }

    /// Joins the running flight of `day`, or starts one (asking `admit` first, when given).
    fn begin(
        &self,
        day: Day,
        admit: Option<impl FnOnce() -> Result<(), (u16, String)>>,
    ) -> Result<Begun, (u16, String)> {
        let mut flights = self.flights.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(f) = flights.get(&day) {
            return Ok(Begun::Running(f.clone()));
        }
        if self.is_known(day) {
            return Ok(Begun::Stored);
        }
        if let Some(admit) = admit {
            admit()?;
        }
        // Take a free slot now, so fetches start in the order they were asked for.
        let slot = self.slots.clone().try_acquire_owned().ok();
        let status = if slot.is_some() {
            Status::Starting
        } else {
            Status::Queued
        };
        let flight = Arc::new(Flight {
            tx: watch::Sender::new(status),
        });
        flights.insert(day, flight.clone());
        Ok(Begun::New(flight, slot))
    }

    /// The follower's try of `day` (`--follow`): the same single flight as a browser's fetch
    /// (joined if one runs), but a remembered 404 does not stop it, and its outcome is typed.
    pub async fn follow(self: &Arc<Self>, day: Day) -> Attempt {
        if self.db.read_only().is_some() {
            return Attempt::Failed("the store is read-only: days cannot be stored".into());
        }
        self.failures
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&day);
        // Stored by another process that `watch` has not reported yet: not fetched again.
        let date = day.to_string();
        if let Ok(true) = self.db.read(move |s| Ok(s.has_day(&date)?)).await {
            self.update_known(&[day], &[]);
            return Attempt::Stored(None);
        }
        match self.begin(day, None::<fn() -> Result<(), (u16, String)>>) {
            Ok(Begun::Stored) => Attempt::Stored(None),
            // Its own task: the flight ends (and leaves the table) even if this try is dropped.
            Ok(Begun::New(flight, slot)) => {
                match tokio::spawn(self.clone().run(day, flight, slot)).await {
                    Ok(Ok(rows)) => Attempt::Stored(Some(rows)),
                    Ok(Err(Some(e))) => Attempt::of_error(&e),
                    _ => Attempt::Failed(format!("fetching {day} was given up or crashed")),
                }
            }
            Ok(Begun::Running(flight)) => {
                let mut rx = flight.subscribe();
                let end = rx.wait_for(Status::is_final).await.map(|s| s.clone());
                match end {
                    Ok(Status::Done { .. }) => Attempt::Stored(None),
                    Ok(Status::Failed { status: 404, .. }) => Attempt::NotPublished,
                    Ok(Status::Failed { error, .. }) => Attempt::Failed(error),
                    _ => Attempt::Failed(format!("fetching {day} ended without an answer")),
                }
            }
            Err((_, msg)) => Attempt::Failed(msg),
        }
    }

    /// Runs one fetch to its end and publishes the outcome; the rows stored, or the ingest's
    /// error (`None`: given up on a stall, or crashed).
    async fn run(
        self: Arc<Self>,
        day: Day,
        flight: Arc<Flight>,
        slot: Option<OwnedSemaphorePermit>,
    ) -> Result<u64, Option<IngestError>> {
        let slot = match slot {
            Some(s) => s,
            None => match self.slots.clone().acquire_owned().await {
                Ok(s) => s,
                Err(_) => return Err(None),
            },
        };
        flight.tx.send_replace(Status::Starting);
        let reporter = Arc::new(Reporter {
            tx: flight.tx.clone(),
            last: AtomicU64::new(0),
            start: Instant::now(),
        });
        let (db, source, rep) = (self.db.clone(), self.source.clone(), reporter.clone());
        tracing::info!(%day, "fetching day from source");
        let mut job = tokio::task::spawn_blocking(move || {
            let _slot = slot; // the slot is free only when the ingest has really ended
                              // Read in this slot, then stored through the server's one writer.
            let read = ingest::read(&Source::Date(day), &source, Threads::Two, rep.as_ref())?;
            db.write(|store| {
                let report = ingest::store_day(store, &read, rep.as_ref())?;
                // A month this day makes whole is packed for reading a package's history
                // (`store::history`); the day is stored either way.
                if let Err(e) = store.pack_months(true) {
                    tracing::warn!(%day, "packing package history: {e}");
                }
                Ok(report)
            })?
        });
        let mut given_up = false;
        let result = loop {
            tokio::select! {
                r = &mut job => break r,
                _ = tokio::time::sleep(Duration::from_millis(500)), if !given_up => {
                    if reporter.stalled(self.stall) {
                        given_up = true;
                        let error = format!("source stopped sending {} for {}s; try again later", self.source.url(&day.to_string()), self.stall.as_secs());
                        tracing::warn!(%day, "{}", grammar::echo::Escaped(&error));
                        self.finish(day, &flight, Status::Failed { status: 502, error });
                    }
                }
            }
        };
        let status = match &result {
            Ok(Ok(report)) => {
                self.known
                    .write()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(day);
                (self.on_ingested)(day);
                tracing::info!(%day, "fetched and stored");
                Status::Done { rows: report.rows }
            }
            Ok(Err(IngestError::Source(SourceError::NotFound { url }))) => Status::Failed {
                status: 404,
                error: format!("the source has no log for {day} ({url} answered 404)"),
            },
            Ok(Err(e)) => Status::Failed {
                status: 502,
                error: format!("fetching {day} failed: {e}"),
            },
            Err(e) => Status::Failed {
                status: 500,
                error: format!("ingest of {day} crashed: {e}"),
            },
        };
        match &status {
            // Not published yet (what `--follow` hears every hour until a day is out): no warning.
            Status::Failed { status: 404, error } => {
                tracing::info!(%day, "{}", grammar::echo::Escaped(error));
            }
            Status::Failed { error, .. } => {
                tracing::warn!(%day, "{}", grammar::echo::Escaped(error))
            }
            _ => {}
        }
        if !given_up {
            self.finish(day, &flight, status);
        }
        match result {
            Ok(Ok(report)) => Ok(report.rows),
            Ok(Err(e)) if !given_up => Err(Some(e)),
            _ => Err(None),
        }
    }

    fn finish(&self, day: Day, flight: &Arc<Flight>, status: Status) {
        if let Status::Failed { .. } = status {
            self.failures
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(day, (Instant::now(), status.clone()));
        }
        {
            let mut flights = self.flights.lock().unwrap_or_else(|e| e.into_inner());
            if flights.get(&day).is_some_and(|f| Arc::ptr_eq(f, flight)) {
                flights.remove(&day);
            }
        }
        flight.tx.send_replace(status);
    }
}

fn ttl(s: &Status) -> Duration {
    match s {
        Status::Failed { status: 404, .. } => NOT_FOUND_TTL,
        _ => FAILURE_TTL,
    }
}

/// Forwards ingest events to the flight and notes when data last arrived.
struct Reporter {
    tx: watch::Sender<Status>,
    /// Milliseconds since `start` of the last event.
    last: AtomicU64,
    start: Instant,
}

impl Reporter {
    /// True when the download has sent nothing for `limit` (parsing and storing are local work
    /// and never count as stalled).
    fn stalled(&self, limit: Duration) -> bool {
        let downloading = matches!(
            *self.tx.borrow(),
            Status::Starting | Status::Downloading { .. }
        );
        let since = self
            .start
            .elapsed()
            .saturating_sub(Duration::from_millis(self.last.load(Ordering::Relaxed)));
        downloading && since > limit
    }
}

impl Progress for Reporter {
    fn event(&self, event: Event) {
        self.last
            .store(self.start.elapsed().as_millis() as u64, Ordering::Relaxed);
        // `Done` is published by the fetcher once the day is visible to every request.
        if !matches!(event, Event::Done { .. }) {
            self.tx.send_replace(Status::from(event));
        }
    }
}
