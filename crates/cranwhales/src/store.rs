//! The SQLite store: per-day precomputed tables, written in one transaction per day and read by
//! `show`, `days` and the server.
//!
//! Invariant: a day is visible whole or not at all. `replace_day` deletes and rewrites every table
//! of the day inside one transaction, so readers (WAL mode: many readers beside one writer) see
//! the old day or the new one, and a crash (even `kill -9`) mid-write leaves the old one.
//!
//! `Store` owns one connection: it is `Send` but not `Sync`. Open one per thread (or per
//! `spawn_blocking` call); opening is cheap (a file open and a schema-version read).

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{params, Connection, OptionalExtension};

use crate::blob;
use crate::day::{DayTables, PackScratch, TOP};
use crate::parse::hms;
use crate::summary::{DayInfo, DaySummary, Hour, Totals, Whale, WhaleDetail};

/// Where the database lives unless `--db` says otherwise (relative to the working directory);
/// every command's default.
pub const DEFAULT_DB: &str = "data/cranwhales.db";

/// Why a store operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("store {}: {source}", path.display())]
    Sqlite {
        path: PathBuf,
        source: rusqlite::Error,
    },
    #[error("store {}: cannot create directory: {source}", path.display())]
    Dir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("store {}: schema version {found} is newer than this program ({SCHEMA_VERSION})", path.display())]
    Version { path: PathBuf, found: i64 },
}

/// Result of store operations.
pub type Result<T> = std::result::Result<T, StoreError>;

const SCHEMA_VERSION: i64 = 1;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS days (
    date TEXT PRIMARY KEY,
    downloads INTEGER NOT NULL,
    downloaders INTEGER NOT NULL,
    bytes INTEGER NOT NULL,
    packages INTEGER NOT NULL,
    skipped_rows INTEGER NOT NULL,
    rows INTEGER NOT NULL,
    source TEXT NOT NULL,
    ingested_at TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS hourly (
    date TEXT NOT NULL,
    hour INTEGER NOT NULL,
    downloads INTEGER NOT NULL,
    PRIMARY KEY (date, hour)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS whales (
    date TEXT NOT NULL,
    rank INTEGER NOT NULL,
    ip_id INTEGER NOT NULL,
    name TEXT NOT NULL,
    country TEXT,
    downloads INTEGER NOT NULL,
    bytes INTEGER NOT NULL,
    packages INTEGER NOT NULL,
    first_time TEXT NOT NULL,
    last_time TEXT NOT NULL,
    PRIMARY KEY (date, rank),
    UNIQUE (date, ip_id),
    UNIQUE (date, name)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS whale_hourly (
    date TEXT NOT NULL,
    ip_id INTEGER NOT NULL,
    hour INTEGER NOT NULL,
    downloads INTEGER NOT NULL,
    PRIMARY KEY (date, ip_id, hour)
) WITHOUT ROWID;
-- Every download of a top-100 whale, packed into one blob per whale (format: `blob.rs`).
-- The key is the index for 'all rows of whale X on day D'.
CREATE TABLE IF NOT EXISTS whale_rows (
    date TEXT NOT NULL,
    ip_id INTEGER NOT NULL,
    n INTEGER NOT NULL,
    rows BLOB NOT NULL,
    PRIMARY KEY (date, ip_id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS packages (
    date TEXT NOT NULL,
    package TEXT NOT NULL,
    downloads INTEGER NOT NULL,
    whale_downloads INTEGER NOT NULL,
    PRIMARY KEY (date, package)
) WITHOUT ROWID;
";

/// The per-day tables, in deletion order.
const DAY_TABLES: [&str; 6] = [
    "whale_rows",
    "whale_hourly",
    "whales",
    "packages",
    "hourly",
    "days",
];

/// A connection to the cranwhales database.
pub struct Store {
    conn: Connection,
    path: PathBuf,
}

/// A package's downloads on a day (all, and by the day's top-100 whales).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PackageDownloads {
    pub package: String,
    pub downloads: u64,
    pub whale_downloads: u64,
}

impl Store {
    /// Opens (creating the file, its directory and the schema if needed) in WAL mode.
    pub fn open(path: &Path) -> Result<Store> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|source| StoreError::Dir {
                path: path.to_owned(),
                source,
            })?;
        }
        let store = Store {
            conn: Connection::open(path).map_err(sql(path))?,
            path: path.to_owned(),
        };
        store.init().map_err(sql(path))?;
        let found: i64 = store
            .conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(sql(path))?;
        if found > SCHEMA_VERSION {
            return Err(StoreError::Version {
                path: path.to_owned(),
                found,
            });
        }
        Ok(store)
    }

    fn init(&self) -> rusqlite::Result<()> {
        self.conn.busy_timeout(Duration::from_secs(30))?;
        // New stores only (a no-op once the file exists): the whale-row blobs fill ~4x fewer
        // overflow pages and WAL frames; the bench day's store step took ~205 ms vs ~250 ms.
        self.conn.execute_batch("PRAGMA page_size=16384")?;
        let mode: String = self
            .conn
            .query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))?;
        debug_assert_eq!(mode, "wal");
        // NORMAL is durable to a process crash in WAL mode; only a power cut may lose the last day.
        self.conn.execute_batch("PRAGMA synchronous=NORMAL")?;
        let version: i64 = self
            .conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))?;
        if version == 0 {
            self.conn.execute_batch(&format!(
                "BEGIN IMMEDIATE; {SCHEMA} PRAGMA user_version = {SCHEMA_VERSION}; COMMIT;"
            ))?;
        }
        Ok(())
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Replaces one day with `day`, atomically: readers and crashes see the old day or the new one.
    pub fn replace_day(&mut self, day: &DayTables, source: &str) -> Result<()> {
        let path = self.path.clone();
        self.write(day, source).map_err(sql(&path))
    }

    fn write(&mut self, day: &DayTables, source: &str) -> rusqlite::Result<()> {
        let d = day.date.as_str();
        // Packed before the write lock is taken.
        let blobs = pack_all(day);
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        for t in DAY_TABLES {
            tx.execute(&format!("DELETE FROM {t} WHERE date = ?1"), [d])?;
        }
        let t = &day.totals;
        tx.execute(
            "INSERT INTO days VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, strftime('%Y-%m-%dT%H:%M:%SZ', 'now'))",
            params![d, t.downloads, t.downloaders, t.bytes, t.packages, t.skipped_rows, day.rows, source],
        )?;
        {
            let mut st = tx.prepare("INSERT INTO hourly VALUES (?1, ?2, ?3)")?;
            for (h, n) in day.hourly.iter().enumerate() {
                st.execute(params![d, h, n])?;
            }
            let mut st = tx.prepare("INSERT INTO packages VALUES (?1, ?2, ?3, ?4)")?;
            for p in &day.packages {
                st.execute(params![d, p.package, p.downloads, p.whale_downloads])?;
            }
            let mut whale =
                tx.prepare("INSERT INTO whales VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)")?;
            let mut hour = tx.prepare("INSERT INTO whale_hourly VALUES (?1, ?2, ?3, ?4)")?;
            let mut rows = tx.prepare("INSERT INTO whale_rows VALUES (?1, ?2, ?3, ?4)")?;
            for (w, (n, blob)) in day.whales.iter().zip(blobs) {
                whale.execute(params![
                    d,
                    w.rank,
                    w.ip_id,
                    w.name,
                    w.country,
                    w.downloads,
                    w.bytes,
                    w.packages,
                    hms(w.first),
                    hms(w.last)
                ])?;
                for (h, n) in w.hourly.iter().enumerate() {
                    hour.execute(params![d, w.ip_id, h, n])?;
                }
                rows.execute(params![d, w.ip_id, n, blob])?;
            }
        }
        #[cfg(feature = "fault-injection")]
        hold_for_crash_test();
        tx.commit()
    }

    /// Every ingested day with its totals, oldest first.
    pub fn days(&self) -> Result<Vec<DayInfo>> {
        let q = || -> rusqlite::Result<Vec<DayInfo>> {
            let mut st = self.conn.prepare(
                "SELECT date, downloads, downloaders, bytes, packages, skipped_rows FROM days ORDER BY date",
            )?;
            let rows = st.query_map([], |r| {
                Ok(DayInfo {
                    date: r.get(0)?,
                    totals: totals(r, 1)?,
                })
            })?;
            rows.collect()
        };
        q().map_err(sql(&self.path))
    }

    /// True if the day is in the store (whole, by the invariant).
    pub fn has_day(&self, date: &str) -> Result<bool> {
        self.conn
            .query_row("SELECT 1 FROM days WHERE date = ?1", [date], |_| Ok(()))
            .optional()
            .map(|o| o.is_some())
            .map_err(sql(&self.path))
    }

    /// The day's summary with its top `count` whales (`count` is clamped to 1..=100);
    /// `None` if the day is not ingested. Reads in one transaction so it sees one version of the day.
    pub fn day_summary(&self, date: &str, count: u32) -> Result<Option<DaySummary>> {
        let count = count.clamp(1, TOP as u32);
        let q = || -> rusqlite::Result<Option<DaySummary>> {
            let tx = self.conn.unchecked_transaction()?;
            let Some(totals) = tx
                .query_row(
                    "SELECT downloads, downloaders, bytes, packages, skipped_rows FROM days WHERE date = ?1",
                    [date],
                    |r| totals(r, 0),
                )
                .optional()?
            else {
                return Ok(None);
            };
            let mut hourly: Vec<Hour> = (0..24)
                .map(|h| Hour {
                    hour: h,
                    downloads: 0,
                    whale_downloads: 0,
                })
                .collect();
            let mut st = tx.prepare_cached("SELECT hour, downloads FROM hourly WHERE date = ?1")?;
            for r in st.query_map([date], |r| Ok((r.get::<_, usize>(0)?, r.get::<_, u64>(1)?)))? {
                let (h, n) = r?;
                hourly[h].downloads = n;
            }
            let whales = whales(&tx, date, Some(count), None)?;
            for w in &whales {
                for (h, n) in w.hourly.iter().enumerate() {
                    hourly[h].whale_downloads += n;
                }
            }
            drop(st);
            tx.commit()?;
            Ok(Some(DaySummary {
                date: date.to_owned(),
                count,
                totals,
                hourly,
                whales,
            }))
        };
        q().map_err(sql(&self.path))
    }

    /// One whale of a day with every one of its downloads (chronological); `None` if the day is
    /// not ingested or `ip_id` is not among its top 100.
    pub fn whale_detail(&self, date: &str, ip_id: u64) -> Result<Option<WhaleDetail>> {
        let q = || -> rusqlite::Result<Option<WhaleDetail>> {
            let tx = self.conn.unchecked_transaction()?;
            let Some(whale) = whales(&tx, date, None, Some(ip_id))?.pop() else {
                return Ok(None);
            };
            let (first, last): (String, String) = tx.query_row(
                "SELECT first_time, last_time FROM whales WHERE date = ?1 AND ip_id = ?2",
                params![date, ip_id],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )?;
            let blob: Vec<u8> = tx.query_row(
                "SELECT rows FROM whale_rows WHERE date = ?1 AND ip_id = ?2",
                params![date, ip_id],
                |r| r.get(0),
            )?;
            let downloads = blob::unpack(&blob).ok_or_else(|| {
                let e = "corrupt whale_rows blob".into();
                rusqlite::Error::FromSqlConversionFailure(0, rusqlite::types::Type::Blob, e)
            })?;
            tx.commit()?;
            Ok(Some(WhaleDetail {
                date: date.to_owned(),
                whale,
                first,
                last,
                downloads,
            }))
        };
        q().map_err(sql(&self.path))
    }

    /// Per-package downloads of a day, most downloaded first (ties by name).
    pub fn packages(&self, date: &str, limit: u32) -> Result<Vec<PackageDownloads>> {
        let q = || -> rusqlite::Result<Vec<PackageDownloads>> {
            let mut st = self.conn.prepare_cached(
                "SELECT package, downloads, whale_downloads FROM packages WHERE date = ?1
                 ORDER BY downloads DESC, package LIMIT ?2",
            )?;
            let rows = st.query_map(params![date, limit], |r| {
                Ok(PackageDownloads {
                    package: r.get(0)?,
                    downloads: r.get(1)?,
                    whale_downloads: r.get(2)?,
                })
            })?;
            rows.collect()
        };
        q().map_err(sql(&self.path))
    }

    /// Runs SQLite's own consistency check; `Ok(true)` when the file is sound.
    pub fn integrity_ok(&self) -> Result<bool> {
        let r: String = self
            .conn
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .map_err(sql(&self.path))?;
        Ok(r == "ok")
    }
}

fn sql(path: &Path) -> impl Fn(rusqlite::Error) -> StoreError + '_ {
    move |source| StoreError::Sqlite {
        path: path.to_owned(),
        source,
    }
}

fn totals(r: &rusqlite::Row<'_>, at: usize) -> rusqlite::Result<Totals> {
    Ok(Totals {
        downloads: r.get(at)?,
        downloaders: r.get(at + 1)?,
        bytes: r.get(at + 2)?,
        packages: r.get(at + 3)?,
        skipped_rows: r.get(at + 4)?,
    })
}

/// Whales of a day by rank: the top `limit`, or the one with `ip_id`.
fn whales(
    conn: &Connection,
    date: &str,
    limit: Option<u32>,
    ip_id: Option<u64>,
) -> rusqlite::Result<Vec<Whale>> {
    let mut st = conn.prepare_cached(
        "SELECT rank, ip_id, name, country, downloads, bytes, packages FROM whales
         WHERE date = ?1 AND rank <= ?2 AND (?3 IS NULL OR ip_id = ?3) ORDER BY rank",
    )?;
    let mut whales = st
        .query_map(params![date, limit.unwrap_or(TOP as u32), ip_id], |r| {
            Ok(Whale {
                rank: r.get(0)?,
                ip_id: r.get(1)?,
                name: r.get(2)?,
                country: r.get(3)?,
                downloads: r.get(4)?,
                bytes: r.get(5)?,
                packages: r.get(6)?,
                hourly: vec![0; 24],
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let mut st = conn.prepare_cached(
        "SELECT hour, downloads FROM whale_hourly WHERE date = ?1 AND ip_id = ?2",
    )?;
    for w in &mut whales {
        for r in st.query_map(params![date, w.ip_id], |r| {
            Ok((r.get::<_, usize>(0)?, r.get::<_, u64>(1)?))
        })? {
            let (h, n) = r?;
            w.hourly[h] = n;
        }
    }
    Ok(whales)
}

/// Every whale's rows packed (see `DayTables::pack_whale`), on two threads: the reading thread
/// is done by now.
fn pack_all(day: &DayTables) -> Vec<(u64, Vec<u8>)> {
    let n = day.whales.len();
    let pack = |from: usize| {
        let mut scratch = PackScratch::default();
        (from..n)
            .step_by(2)
            .map(|i| day.pack_whale(i, &mut scratch))
            .collect::<Vec<_>>()
    };
    let (even, odd) = std::thread::scope(|s| {
        let odd = s.spawn(|| pack(1));
        (pack(0), odd.join().expect("packing thread"))
    });
    let mut out = Vec::with_capacity(n);
    let mut odd = odd.into_iter();
    for e in even {
        out.push(e);
        out.extend(odd.next());
    }
    out
}

/// Fault injection for the crash test: with `CRANWHALES_TEST_HOLD_TXN` set, announce on stderr
/// that the day's transaction is fully written but not committed, then wait (to be `kill -9`ed).
/// Compiled only with the test-only `fault-injection` feature (`make test` turns it on), so a
/// production write never looks at the environment.
#[cfg(feature = "fault-injection")]
fn hold_for_crash_test() {
    if std::env::var_os("CRANWHALES_TEST_HOLD_TXN").is_some() {
        eprintln!("cranwhales: holding transaction open (CRANWHALES_TEST_HOLD_TXN)");
        let mut line = String::new();
        let _ = std::io::stdin().read_line(&mut line);
    }
}
