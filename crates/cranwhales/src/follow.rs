//! Follow mode (`serve --follow`, `ingest --follow`): new days stored without anyone asking.
//!
//! The follower looks at the source for the day after the newest stored one (forward only: a gap
//! is not backfilled), stores it once it is complete, and goes on to the next. CRAN publishes
//! day D some hours after D ends (UTC), so:
//! - a day that has not ended yet is not asked for; the next look is `--follow-every` later;
//! - a 404 is "not published yet", not an error: the next look is `--follow-every` later;
//! - a download that is not complete (shorter than its Content-Length, or a gzip stream that does
//!   not end properly: a half-written file) is "not complete yet": nothing is stored, and it is
//!   retried on the error schedule;
//! - any other failure (HTTP 5xx, connection refused, a broken file) is an error: after the n-th
//!   error in a row the next try comes after a random time between half and all of
//!   `min(--follow-every × 2^(n−1), --follow-max-backoff)` (exponential, capped, jittered).
//!
//! This module is the schedule and the loop; the caller says how a day is stored ([`Target`]):
//! the server through its fetcher (single flight, its one writer, readers keep answering), the
//! CLI through its store.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Serialize;

use crate::date::Day;
use crate::ingest::IngestError;
use crate::source::SourceError;

/// `--follow` and its schedule, the same flags for `serve` and `ingest`.
#[derive(Debug, Clone, clap::Args)]
pub struct FollowArgs {
    /// Store each new day once the source has it whole: the day after the newest stored one is
    /// looked for every --follow-every; errors back off (see --follow-max-backoff).
    #[arg(long)]
    pub follow: bool,
    /// Time between looks for the next day while it is not published (404) or has not ended
    /// (UTC); also the first back-off after an error (10ms to 1d).
    #[arg(long, default_value = "1h", value_parser = every)]
    pub follow_every: Duration,
    /// Longest back-off after errors in a row: the n-th waits a random time between half and all
    /// of min(--follow-every × 2^(n−1), this) (10ms to 7d).
    #[arg(long, default_value = "6h", value_parser = max_backoff)]
    pub follow_max_backoff: Duration,
}

/// `--follow-every`: 10ms to 1d.
fn every(s: &str) -> Result<Duration, grammar::duration::Error> {
    grammar::duration::parse_in(s, Duration::from_millis(10), Duration::from_secs(86_400))
}

/// `--follow-max-backoff`: 10ms to 7d.
fn max_backoff(s: &str) -> Result<Duration, grammar::duration::Error> {
    grammar::duration::parse_in(
        s,
        Duration::from_millis(10),
        Duration::from_secs(7 * 86_400),
    )
}

impl FollowArgs {
    /// The schedule these flags give.
    pub fn schedule(&self) -> Schedule {
        Schedule {
            every: self.follow_every,
            cap: self.follow_max_backoff.max(self.follow_every),
        }
    }
}

/// When the follower looks again.
#[derive(Debug, Clone, Copy)]
pub struct Schedule {
    /// Between looks while nothing is due, and the first back-off.
    pub every: Duration,
    /// The longest back-off.
    pub cap: Duration,
}

impl Schedule {
    /// The ceiling of the back-off after the `n`-th error in a row (n ≥ 1):
    /// `min(every × 2^(n−1), cap)`.
    pub fn ceiling(&self, n: u32) -> Duration {
        let factor = 1u32 << n.saturating_sub(1).min(20);
        self.every.saturating_mul(factor).min(self.cap)
    }

    /// The back-off after the `n`-th error in a row: `ceiling(n)` scaled by `jitter` ∈ [0, 1) to
    /// between half and all of it, so followers that failed together do not retry together.
    pub fn backoff(&self, n: u32, jitter: f64) -> Duration {
        self.ceiling(n).mul_f64(0.5 + 0.5 * jitter.clamp(0.0, 1.0))
    }
}

/// What one try of a day found.
#[derive(Debug, Clone, PartialEq)]
pub enum Attempt {
    /// Stored now (`Some(rows)`), or found stored by someone else (`None`).
    Stored(Option<u64>),
    /// The source has no such day yet (HTTP 404).
    NotPublished,
    /// The source has it, but not whole yet (short body, truncated gzip): nothing stored.
    Incomplete(String),
    /// Anything else: an error, retried with back-off.
    Failed(String),
}

impl Attempt {
    /// How a failed ingest counts for the follower.
    pub fn of_error(e: &IngestError) -> Attempt {
        match e {
            IngestError::Source(SourceError::NotFound { .. }) => Attempt::NotPublished,
            IngestError::Source(SourceError::Incomplete { .. })
            | IngestError::Gzip { .. }
            | IngestError::Empty { .. } => Attempt::Incomplete(e.to_string()),
            _ => Attempt::Failed(e.to_string()),
        }
    }
}

/// Where the follower is, as `GET /api/days` says it (`follow`).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct FollowStatus {
    /// Whether this server follows the source (`--follow`).
    pub on: bool,
    /// The newest day the source had when last looked at (`YYYY-MM-DD`): the day stored last, or
    /// the newest stored one when the next was not published yet; null before the first look.
    pub source_newest: Option<String>,
    /// When the source was last looked at (UTC, `YYYY-MM-DDTHH:MM:SSZ`).
    pub checked_at: Option<String>,
    /// Looks at the source so far.
    #[cfg_attr(test, ts(type = "number"))]
    pub checks: u64,
    /// Errors in a row (0 after a day stored or a 404).
    pub errors: u32,
    /// The back-off chosen after the last error, in milliseconds; null when the last look was
    /// not an error.
    #[cfg_attr(test, ts(type = "number | null"))]
    pub retry_ms: Option<u64>,
    /// The last error's one line; null when the last look was not an error.
    pub last_error: Option<String>,
}

/// What the follower did, for its one line (the CLI prints it, the server logs it).
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// A day was stored (`rows` read).
    Stored {
        /// The day.
        day: Day,
        /// Rows read.
        rows: u64,
    },
    /// A try failed (or found the day incomplete); the next comes after `delay`.
    BackOff {
        /// The day tried.
        day: Day,
        /// Why, in one line.
        error: String,
        /// Errors in a row, this one included.
        errors: u32,
        /// The back-off chosen.
        delay: Duration,
    },
}

impl std::fmt::Display for Event {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Event::Stored { day, rows } => {
                write!(
                    f,
                    "follow: {day}: stored, {} rows",
                    crate::numfmt::thousands(*rows)
                )
            }
            Event::BackOff {
                day,
                error,
                errors,
                delay,
            } => write!(
                f,
                "follow: {day}: {}; error {errors} in a row, next try in {}",
                grammar::echo::Escaped(error),
                grammar::duration::format(Duration::from_millis(delay.as_millis() as u64))
            ),
        }
    }
}

/// How a day gets stored, and what is stored already: the server's fetcher or the CLI's store.
pub trait Target: Send + Sync {
    /// The newest stored day, if any.
    fn newest(&self) -> impl Future<Output = Option<Day>> + Send;
    /// Downloads `day` and stores it if it is complete.
    fn attempt(&self, day: Day) -> impl Future<Output = Attempt> + Send;
    /// Told each event (one line each).
    fn event(&self, event: &Event);
}

/// The follower's status, shared with whoever reports it; `on_change` runs after each look (the
/// server drops its cached `/api/days`).
pub struct Shared {
    status: Mutex<FollowStatus>,
    on_change: Box<dyn Fn() + Send + Sync>,
}

impl Shared {
    /// A status saying whether follow is `on`.
    pub fn new(on: bool, on_change: Box<dyn Fn() + Send + Sync>) -> Arc<Shared> {
        Arc::new(Shared {
            status: Mutex::new(FollowStatus {
                on,
                ..FollowStatus::default()
            }),
            on_change,
        })
    }

    /// The status now.
    pub fn status(&self) -> FollowStatus {
        // Every change under the lock is one assignment of fields that stand alone: taken back.
        self.status
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn update(&self, f: impl FnOnce(&mut FollowStatus)) {
        f(&mut self.status.lock().unwrap_or_else(|e| e.into_inner()));
        (self.on_change)();
    }
}

/// Follows the source until `stop` resolves: looks for the day after the newest stored one,
/// stores it when complete, then the next; waits as the [`Schedule`] says in between.
pub async fn run(
    target: impl Target,
    schedule: Schedule,
    shared: Arc<Shared>,
    stop: impl Future<Output = ()>,
) {
    tokio::pin!(stop);
    let mut errors = 0u32;
    loop {
        // A stop in the middle of a try abandons it (the CLI's blocking read goes on until the
        // process ends; the server's fetch runs on as its own task): no day is half-stored.
        let delay = tokio::select! {
            _ = &mut stop => return,
            d = look(&target, schedule, &shared, &mut errors) => d,
        };
        if let Some(delay) = delay {
            tokio::select! {
                _ = &mut stop => return,
                _ = tokio::time::sleep(delay) => {}
            }
        } else {
            // A day was stored: the next one may be out too (catching up after a stop).
            tokio::select! {
                biased;
                _ = &mut stop => return,
                _ = std::future::ready(()) => {}
            }
        }
    }
}

/// One look; how long to wait before the next (`None`: at once).
async fn look(
    target: &impl Target,
    schedule: Schedule,
    shared: &Shared,
    errors: &mut u32,
) -> Option<Duration> {
    let newest = target.newest().await;
    let day = newest.map_or_else(Day::yesterday, |d| d.plus(1));
    if day >= Day::today() {
        // Not ended yet (UTC): nothing can be published; nothing asked.
        return Some(schedule.every);
    }
    let attempt = target.attempt(day).await;
    let checked_at = Some(utc_now());
    let (delay, error) = match attempt {
        Attempt::Stored(rows) => {
            *errors = 0;
            if let Some(rows) = rows {
                target.event(&Event::Stored { day, rows });
            }
            shared.update(|s| {
                s.source_newest = Some(day.to_string());
                s.checked_at = checked_at;
                s.checks += 1;
                s.errors = 0;
                s.retry_ms = None;
                s.last_error = None;
            });
            return None;
        }
        Attempt::NotPublished => {
            *errors = 0;
            (schedule.every, None)
        }
        Attempt::Incomplete(e) => {
            *errors += 1;
            (
                backoff(schedule, *errors),
                Some(format!("not complete yet: {e}")),
            )
        }
        Attempt::Failed(e) => {
            *errors += 1;
            (backoff(schedule, *errors), Some(e))
        }
    };
    if let Some(error) = &error {
        target.event(&Event::BackOff {
            day,
            error: error.clone(),
            errors: *errors,
            delay,
        });
    }
    shared.update(|s| {
        if error.is_none() {
            s.source_newest = newest.map(|d| d.to_string());
        }
        s.checked_at = checked_at;
        s.checks += 1;
        s.errors = *errors;
        s.retry_ms = error.is_some().then_some(delay.as_millis() as u64);
        s.last_error = error;
    });
    Some(delay)
}

/// The back-off after the `n`-th error, with a fresh jitter.
fn backoff(schedule: Schedule, n: u32) -> Duration {
    use std::hash::{BuildHasher, Hasher};
    // A random u64 without a dependency: std's per-process random hash keys, salted by the time.
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos(),
    );
    let jitter = (h.finish() >> 11) as f64 / (1u64 << 53) as f64;
    schedule.backoff(n, jitter)
}

/// Now, UTC, as the store writes `ingested_at` (`YYYY-MM-DDTHH:MM:SSZ`).
pub fn utc_now() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    let (y, m, d) = grammar::date::civil_from_days(secs.div_euclid(86_400));
    let t = secs.rem_euclid(86_400);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        t / 3600,
        t / 60 % 60,
        t % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The schedule doubles from --follow-every up to the cap; the jitter keeps half to all of it.
    #[test]
    fn backoff_doubles_to_the_cap_with_jitter_between_half_and_all() {
        let s = Schedule {
            every: Duration::from_secs(60),
            cap: Duration::from_secs(300),
        };
        let ceilings: Vec<u64> = (1..=5).map(|n| s.ceiling(n).as_secs()).collect();
        assert_eq!(ceilings, [60, 120, 240, 300, 300]);
        assert_eq!(s.backoff(2, 0.0), Duration::from_secs(60));
        assert_eq!(s.backoff(2, 0.999_999).as_secs(), 119);
        assert_eq!(s.ceiling(1000), Duration::from_secs(300));
        for _ in 0..100 {
            let d = backoff(s, 3);
            assert!(
                d >= Duration::from_secs(120) && d <= Duration::from_secs(240),
                "{d:?}"
            );
        }
    }

    #[test]
    fn utc_now_has_the_store_format() {
        let now = utc_now();
        assert_eq!(now.len(), 20, "{now}");
        assert!(now.ends_with('Z') && now.as_bytes()[10] == b'T', "{now}");
    }
}
