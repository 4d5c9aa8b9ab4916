//! `cranwhales ingest --follow`: the follower ([`crate::follow`]) for a box without cron. It
//! runs until SIGTERM or Ctrl-C (`grammar::signal`), prints one line per day stored and one per
//! back-off, and exits 0 on the signal; a download cut by the signal leaves no partial file.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::date::Day;
use crate::day::Threads;
use crate::follow::{self, Attempt, Event, FollowArgs, Target};
use crate::ingest;
use crate::partial;
use crate::progress::Silent;
use crate::source::{Source, SourceConfig};
use crate::store::Store;

/// The CLI's store as the follower's target: days read on a blocking thread, stored through its
/// one connection.
struct Cli {
    /// One connection for the whole run (see `cli::ingest` on why it stays open).
    store: Arc<Mutex<Store>>,
    source: SourceConfig,
}

/// The store, taken back if a thread panicked holding it: an unfinished transaction is rolled
/// back by SQLite, so what the connection sees is always whole days.
fn lock(store: &Mutex<Store>) -> std::sync::MutexGuard<'_, Store> {
    store.lock().unwrap_or_else(|e| e.into_inner())
}

impl Target for Cli {
    async fn newest(&self) -> Option<Day> {
        let store = self.store.clone();
        let days = tokio::task::spawn_blocking(move || lock(&store).days()).await;
        match days {
            Ok(Ok(days)) => days.last().and_then(|d| Day::parse(&d.date)),
            Ok(Err(e)) => {
                eprintln!("cranwhales: follow: {e}");
                None
            }
            Err(_) => None,
        }
    }

    async fn attempt(&self, day: Day) -> Attempt {
        let (store, source) = (self.store.clone(), self.source.clone());
        let job = tokio::task::spawn_blocking(move || {
            let read = ingest::read(&Source::Date(day), &source, Threads::Two, &Silent)?;
            let mut store = lock(&store);
            let report = ingest::store_day(&mut store, &read, &Silent)?;
            // A month this day makes whole is packed for reading a package's history.
            if let Err(e) = store.pack_months(true) {
                eprintln!("cranwhales: follow: packing package history: {e}");
            }
            Ok(report)
        });
        match job.await {
            Ok(Ok(report)) => Attempt::Stored(Some(report.rows)),
            Ok(Err(e)) => Attempt::of_error(&e),
            Err(e) => Attempt::Failed(format!("ingest of {day} crashed: {e}")),
        }
    }

    fn event(&self, event: &Event) {
        match event {
            Event::Stored { .. } => println!("{event}"),
            Event::BackOff { .. } => eprintln!("{event}"),
        }
    }
}

/// Follows `source` into the store `db` until SIGTERM or Ctrl-C.
pub fn follow(db: &Path, source: SourceConfig, args: &FollowArgs) -> anyhow::Result<()> {
    partial::remove_stale_at_start(&source.cache_dir);
    let store = Store::open(db)?;
    store.check_writable("cannot store days")?;
    let cache_dir = source.cache_dir.clone();
    let url = source.base_url.clone();
    let target = Cli {
        store: Arc::new(Mutex::new(store)),
        source,
    };
    let schedule = args.schedule();
    let rt = tokio::runtime::Runtime::new()?;
    rt.block_on(async {
        // Handlers installed before the line that says it runs: a signal after it stops cleanly.
        let (first, _second) = grammar::signal::stages();
        eprintln!(
            "cranwhales: following {} into {}: a look every {} (errors back off up to {}); Ctrl-C or SIGTERM stops",
            grammar::echo::Escaped(&url),
            db.display(),
            grammar::duration::format(schedule.every),
            grammar::duration::format(schedule.cap),
        );
        let shared = follow::Shared::new(true, Box::new(|| {}));
        follow::run(target, schedule, shared, first).await;
    });
    // A day being read or stored is abandoned: its transaction never commits, so the store keeps
    // whole days; its partial download is removed below.
    rt.shutdown_timeout(Duration::from_millis(200));
    partial::remove_own_in(&cache_dir);
    eprintln!("cranwhales: follow stopped");
    Ok(())
}
