//! Days stored by another process (`cranwhales ingest` beside a running server) show up without
//! a restart. A background task asks SQLite every `--store-poll-ms` whether another connection
//! committed (`PRAGMA data_version`: a read of the WAL index in shared memory, no file I/O); only
//! then does it read the day list and drop what depends on it: the day list, the cross-day answers
//! (packages, trends, package names), and the summaries and whale details of days that were
//! re-ingested or removed. Requests never wait for it: they are served from the old bodies until
//! those are dropped, then rebuild from the store (`Cache::insert_at` keeps a body read before a
//! drop from coming back).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::App;
use crate::date::Day;
use crate::store::{DayStamp, Store};

/// The watcher: its own connection (`data_version` counts other connections' commits) and the
/// day list as last seen.
pub struct Watch {
    app: Arc<App>,
    conn: Arc<Mutex<Store>>,
    version: i64,
    seen: BTreeMap<String, DayStamp>,
}

/// What one look at the store found (`None` from `look` when nothing was committed).
struct Seen {
    version: i64,
    stamps: Vec<(String, DayStamp)>,
}

impl Watch {
    /// A watcher of `app`'s store as it is now.
    pub fn new(app: Arc<App>) -> anyhow::Result<Watch> {
        let conn = Store::open(app.db.path())?;
        let version = conn.data_version()?;
        let stamps = conn.day_stamps()?;
        Ok(Watch {
            app,
            conn: Arc::new(Mutex::new(conn)),
            version,
            seen: stamps.into_iter().collect(),
        })
    }

    /// Looks every `every` until dropped (the server aborts it when it stops).
    pub async fn run(mut self, every: Duration) {
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            match self.look().await {
                Ok(Some(seen)) => self.apply(seen),
                Ok(None) => {}
                Err(e) => tracing::warn!("watching the store for new days: {e:#}"),
            }
        }
    }

    /// The day list, if anything was committed since the last look.
    async fn look(&self) -> anyhow::Result<Option<Seen>> {
        let (conn, version) = (self.conn.clone(), self.version);
        tokio::task::spawn_blocking(move || {
            let conn = conn.lock().unwrap_or_else(|e| e.into_inner());
            let now = conn.data_version()?;
            if now == version {
                return Ok(None);
            }
            let stamps = conn.day_stamps()?;
            Ok(Some(Seen {
                version: now,
                stamps,
            }))
        })
        .await?
    }

    /// Drops the bodies the change makes stale and tells the fetcher which days are stored.
    fn apply(&mut self, seen: Seen) {
        self.version = seen.version;
        let now: BTreeMap<String, DayStamp> = seen.stamps.into_iter().collect();
        let day = |d: &String| Day::parse(d);
        // A day this server fetched itself is known already, and its fetch dropped the caches.
        let added: Vec<Day> = (now.keys())
            .filter(|d| !self.seen.contains_key(*d))
            .filter_map(day)
            .filter(|d| !self.app.fetcher.is_known(*d))
            .collect();
        let removed: Vec<Day> = (self.seen.keys())
            .filter(|d| !now.contains_key(*d))
            .filter_map(day)
            .collect();
        let replaced: Vec<Day> = (now.iter())
            .filter(|(d, s)| self.seen.get(*d).is_some_and(|old| old != *s))
            .filter_map(|(d, _)| day(d))
            .collect();
        self.seen = now;
        if added.is_empty() && removed.is_empty() && replaced.is_empty() {
            return;
        }
        let app = &self.app;
        let stale = |d: &Day| removed.contains(d) || replaced.contains(d);
        if !removed.is_empty() || !replaced.is_empty() {
            app.summaries.retain(|(d, _)| !stale(d));
            app.whales.retain(|(d, _)| !stale(d));
        }
        app.fetcher.update_known(&added, &removed);
        app.days.clear();
        app.insight.invalidate();
        tracing::info!(
            added = added.len(),
            replaced = replaced.len(),
            removed = removed.len(),
            "the store changed (another process ingested); caches refreshed"
        );
    }
}
