//! `cranwhales ingest`: files, dates and `FROM..TO` ranges of dates, N days read at a time and
//! written by one writer. Each day is stored on its own (its own transaction), so a failed day
//! leaves the others stored; dates already in the store are skipped unless `--force`.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{channel, sync_channel};

use anyhow::bail;

use crate::bar::{Bar, BatchBar};
use crate::date;
use crate::day::Threads;
use crate::ingest::{self, IngestError, IngestReport, ReadDay};
use crate::numfmt::thousands;
use crate::partial;
use crate::progress::Progress;
use crate::source::{Source, SourceConfig, DEFAULT_BASE_URL, DEFAULT_CACHE_DIR, DEFAULT_STALL};
use crate::store::{Store, DEFAULT_DB};

/// Options of `cranwhales ingest`.
#[derive(Debug, clap::Args)]
pub struct IngestArgs {
    /// SQLite database file (created if missing).
    #[arg(long, default_value = DEFAULT_DB)]
    pub db: PathBuf,
    /// Base URL of the daily logs: {URL}/{YYYY}/{YYYY-MM-DD}.csv.gz.
    #[arg(long, default_value = DEFAULT_BASE_URL)]
    pub source_url: String,
    /// Where downloaded days are kept (each day is downloaded once).
    #[arg(long, default_value = DEFAULT_CACHE_DIR)]
    pub cache_dir: PathBuf,
    /// Days ingested at once (each reads on two threads; 2 suits a 2-core machine).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=16))]
    pub jobs: u32,
    /// Give up a download when the source sends nothing for this long (1s to 1h, as serve's).
    #[arg(long, default_value = DEFAULT_STALL, value_parser = crate::source::parse_stall)]
    pub stall_timeout: std::time::Duration,
    /// Ingest dates that are already stored again (they are skipped otherwise).
    #[arg(long)]
    pub force: bool,
    /// Local .csv.gz / .csv files, dates (YYYY-MM-DD) to download, ranges FROM..TO, or URLs of
    /// a day's log whose file name starts with its date (http(s)://…/YYYY-MM-DD.csv.gz).
    #[arg(
        required_unless_present = "follow",
        conflicts_with = "follow",
        value_name = "SOURCE"
    )]
    pub sources: Vec<String>,
    /// Follow mode (instead of SOURCEs): new days stored as the source publishes them, until
    /// SIGTERM or Ctrl-C.
    #[command(flatten)]
    pub follow: crate::follow::FollowArgs,
}

/// One unit of work, in argument order.
enum Job {
    Read(Source),
    /// A source that cannot be read (as given, and why), reported in its turn.
    Bad(String, String),
}

/// Why one source's day was not stored: its one result line.
#[derive(Debug, thiserror::Error)]
enum DayError {
    /// Read or stored, and failed there.
    #[error(transparent)]
    Ingest(#[from] IngestError),
    /// Refused before reading (a bad date, range or URL): the planned line.
    #[error("{0}")]
    Refused(String),
}

impl Job {
    fn label(&self) -> String {
        match self {
            Job::Read(s) => s.label(),
            Job::Bad(s, _) => s.clone(),
        }
    }
}

/// The jobs of the arguments: ranges expanded to their days, a date asked twice done once.
fn plan(sources: &[String]) -> Vec<Job> {
    let mut jobs = Vec::new();
    let mut dates = std::collections::HashSet::new();
    let mut date_job = |d: date::Day, jobs: &mut Vec<Job>| {
        if dates.insert(d) {
            jobs.push(Job::Read(Source::Date(d)));
        }
    };
    for s in sources {
        if Source::is_url(s) {
            jobs.push(match Source::url(s) {
                Ok(src) => Job::Read(src),
                Err(e) => Job::Bad(s.clone(), e.to_string()),
            });
        } else if let Some((from, to)) = s.split_once("..").filter(|_| !Path::new(s).exists()) {
            match date::Range::parse(Some(from), Some(to)) {
                Ok(r) => r.days().for_each(|d| date_job(d, &mut jobs)),
                Err(e) => jobs.push(Job::Bad(s.clone(), format!("{s}: bad range FROM..TO: {e}"))),
            }
        } else if let Some(day) =
            date::Day::parse(s).filter(|_| date::is_log_date(s) && !Path::new(s).exists())
        {
            // The same rule as a range's ends: a day outside the logs never goes to the network.
            match day.check_log_range("") {
                Err(e) => jobs.push(Job::Bad(s.clone(), format!("{e}; not downloaded"))),
                Ok(d) => date_job(d, &mut jobs),
            }
        } else if Path::new(s).exists() {
            jobs.push(Job::Read(Source::File(s.into())));
        } else if date::looks_like_date(s) {
            jobs.push(Job::Bad(
                s.clone(),
                IngestError::BadDate(s.clone()).to_string(),
            ));
        } else {
            let e = IngestError::Io {
                path: s.into(),
                reason: "no such file (and not a YYYY-MM-DD date or a FROM..TO range)".into(),
            };
            jobs.push(Job::Bad(s.clone(), e.to_string()));
        }
    }
    jobs
}

/// Ingests every source, `--jobs` at a time, continuing past failures; fails if any failed.
pub fn ingest(args: IngestArgs) -> anyhow::Result<()> {
    let source = SourceConfig {
        base_url: args.source_url.clone(),
        cache_dir: args.cache_dir.clone(),
        stall: args.stall_timeout,
    };
    if args.follow.follow {
        return super::follow::follow(&args.db, source, &args.follow);
    }
    // Ctrl-C or SIGTERM during a download leaves no partial file in the cache.
    partial::remove_on_signal();
    // Partial downloads left by an ingest or a server that is gone (kill -9), whatever their day.
    partial::remove_stale_at_start(&args.cache_dir);
    let mut jobs = plan(&args.sources);
    // Held open for the whole run: when the last connection to a WAL database closes, SQLite
    // checkpoints the whole log into the file, fsyncs and deletes it; each day's ingest closing
    // its own connection did that once per day (78-day backfill: ~2x the time of the ingests).
    let created = !args.db.exists();
    let mut store = Store::open(&args.db)?;
    store.check_writable("cannot store days")?;
    if !args.force
        && jobs
            .iter()
            .any(|j| matches!(j, Job::Read(s) if s.is_download()))
    {
        let before = jobs.len();
        let mut keep = Vec::with_capacity(before);
        for j in jobs {
            match &j {
                Job::Read(src)
                    if src.is_download() && store.has_day(&src.date().unwrap_or_default())? => {}
                _ => keep.push(j),
            }
        }
        jobs = keep;
        if jobs.len() < before {
            eprintln!(
                "skipped {} day{} already in {} (--force ingests them again)",
                before - jobs.len(),
                if before - jobs.len() == 1 { "" } else { "s" },
                args.db.display()
            );
        }
    }
    let workers = (args.jobs as usize).min(jobs.len()).max(1);
    // A lone day splits its steps over two threads; with several days in flight each has one.
    let threads = if workers > 1 {
        Threads::One
    } else {
        Threads::Two
    };
    let read = |job: &Job, progress: &dyn Progress| match job {
        Job::Read(src) => ingest::read(src, &source, threads, progress).map_err(DayError::from),
        Job::Bad(_, e) => Err(DayError::Refused(e.clone())),
    };
    let failed = if jobs.len() == 1 {
        let bar = Bar::new(&jobs[0].label());
        let result =
            read(&jobs[0], &bar).and_then(|day| Ok(ingest::store_day(&mut store, &day, &bar)?));
        drop(bar);
        let (line, _) = outcome(&result);
        match result {
            Ok(_) => println!("{line}"),
            Err(_) => eprintln!("{line}"),
        }
        usize::from(result.is_err())
    } else {
        batch(&jobs, workers, read, &mut store)
    };
    // A month whose every day is now stored is packed for reading a package's history
    // (`store::history`): once a month, not per day.
    let packed = store.pack_months(true)?;
    if packed > 0 {
        eprintln!("packed {packed} month(s) of package history and breakdowns");
    }
    drop(store);
    if failed > 0 && failed == jobs.len() && created {
        // Nothing was stored in a store this run made: leave no empty database behind (a
        // mistyped file name would otherwise leave one that serves nothing).
        for suffix in ["", "-wal", "-shm"] {
            let mut p = args.db.clone().into_os_string();
            p.push(suffix);
            let _ = std::fs::remove_file(p);
        }
        bail!(
            "{failed} of {} sources failed; {} was not created",
            jobs.len(),
            args.db.display()
        );
    }
    if failed > 0 {
        bail!(
            "{failed} of {} sources failed; the store keeps what it had for them",
            jobs.len()
        );
    }
    Ok(())
}

/// Reads `jobs` on `workers` threads and writes them, as each is read, from this thread through
/// `store`'s one connection (one transaction per day), under one progress display; returns how
/// many failed. The writer never waits for SQLite's lock behind another job, and the readers
/// never wait for a write: a day read is queued (at most `workers` of them) while the one before
/// is written.
fn batch(
    jobs: &[Job],
    workers: usize,
    read: impl Fn(&Job, &dyn Progress) -> Result<ReadDay, DayError> + Sync,
    store: &mut Store,
) -> usize {
    let display = BatchBar::new(jobs.len());
    let next = AtomicUsize::new(0);
    let mut failed = 0;
    std::thread::scope(|s| {
        let (tx, rx) = sync_channel(workers);
        for _ in 0..workers {
            let tx = tx.clone();
            let (read, display, next) = (&read, &display, &next);
            s.spawn(move || {
                // Days written come back here to be freed by the thread that allocated them.
                let (written_tx, written) = channel::<ReadDay>();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(job) = jobs.get(i) else { break };
                    let progress = display.job(&job.label());
                    let day = read(job, &progress);
                    written.try_iter().for_each(drop);
                    if tx.send((job, progress, day, written_tx.clone())).is_err() {
                        break;
                    }
                }
            });
        }
        drop(tx);
        for (job, progress, day, back) in rx {
            let result = day.and_then(|d| {
                let report = ingest::store_day(store, &d, &progress).map_err(DayError::from);
                let _ = back.send(d);
                report
            });
            let (line, rows) = outcome(&result);
            failed += usize::from(result.is_err());
            display.finish(&job.label(), &line, rows, result.is_err());
        }
    });
    failed
}

/// The result line of one source, and its rows.
fn outcome(result: &Result<IngestReport, DayError>) -> (String, u64) {
    match result {
        Ok(r) => (
            format!(
                "{}: {} rows, {} downloads, {} skipped, {} whale rows stored in {:.1} s",
                r.date,
                thousands(r.rows),
                thousands(r.downloads),
                thousands(r.skipped_rows),
                thousands(r.whale_rows),
                r.seconds
            ),
            r.rows,
        ),
        Err(e) => (format!("cranwhales: error: {e}"), 0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_expand_and_dates_are_done_once() {
        let args: Vec<String> = [
            "2015-01-30..2015-02-02",
            "2015-01-31",
            "2015-02-05",
            "2015-02-05",
        ]
        .map(String::from)
        .to_vec();
        let labels: Vec<String> = plan(&args).iter().map(Job::label).collect();
        assert_eq!(
            labels,
            [
                "2015-01-30",
                "2015-01-31",
                "2015-02-01",
                "2015-02-02",
                "2015-02-05"
            ]
        );
        let bad = plan(&["2015-02-05..2015-02-01".to_owned()]);
        match &bad[..] {
            [Job::Bad(_, e)] => assert!(e.contains("is after"), "{e}"),
            _ => panic!("one bad job"),
        }
    }
}
