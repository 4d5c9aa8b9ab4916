//! The SQLite store: per-day precomputed tables, written in one transaction per day and read by
//! `show`, `days` and the server.
//!
//! Invariant: a day is visible whole or not at all. `replace_day` deletes and rewrites every table
//! of the day inside one transaction, so readers (WAL mode: many readers beside one writer) see
//! the old day or the new one, and a crash (even `kill -9`) mid-write leaves the old one.
//!
//! `Store` owns one connection: it is `Send` but not `Sync`. Open one per thread (or per
//! `spawn_blocking` call); opening is cheap (a file open and a schema-version read).
//!
//! Modules: `schema` (tables, version, migration), `write` (a day's one transaction), `read`
//! (a day's summary and whales), `insight` (a package over days, trends), `months` (every
//! package's downloads per month, kept by each day's transaction), `range` (every package over
//! a range, the calendar), `filtered` (the same without whales, small or repeated downloads).

pub mod breakdown;
pub mod codec;
mod filtered;
mod history;
mod insight;
mod migrate;
mod months;
mod range;
mod read;
mod schema;
mod write;

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension};

use crate::summary::{DayInfo, Totals};
use schema::SCHEMA_VERSION;

pub use history::PackStep;
pub use migrate::Step as MigrateStep;
pub use read::PackageDownloads;
pub use write::PackedDay;

/// Where the database lives unless `--db` says otherwise (relative to the working directory);
/// every command's default.
pub const DEFAULT_DB: &str = "data/cranwhales.db";

/// Why a store operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A SQLite call failed (not a database, busy, disk full, ...).
    // SQLite's error is in the message, not chained as a source: its own source repeats the same
    // words ("unable to open database file: … Error code 14: unable to open database file").
    #[error("store {}: {error}", path.display())]
    Sqlite {
        /// The database file.
        path: PathBuf,
        /// SQLite's error.
        error: rusqlite::Error,
    },
    /// The store can only be read (read-only file system, or no write permission on the file or
    /// its directory) and this needs to write.
    #[error("store {}: read-only ({why}); {needed}", path.display())]
    ReadOnly {
        /// The database file.
        path: PathBuf,
        /// What makes it read-only.
        why: String,
        /// What could not be done.
        needed: &'static str,
    },
    /// The database's directory did not exist and could not be created.
    #[error("store {}: cannot create directory: {source}", path.display())]
    Dir {
        /// The database file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The database was written by a newer cranwhales: left alone rather than misread.
    #[error("store {}: schema version {found} is newer than this program ({SCHEMA_VERSION})", path.display())]
    Version {
        /// The database file.
        path: PathBuf,
        /// The schema version stored in the file.
        found: i64,
    },
}

/// Result of store operations.
pub type Result<T> = std::result::Result<T, StoreError>;

/// One stored version of a day: when and from which file it was ingested, and how big it is. A
/// re-ingest (`--force`) changes it, unless it came within the same second from the same file with
/// the same rows and downloads, and then it stored the same day again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DayStamp {
    /// When it was written (UTC, to the second).
    pub ingested_at: String,
    /// The file it was read from.
    pub source: String,
    /// Data rows read.
    pub rows: u64,
    /// Downloads counted.
    pub downloads: u64,
}

/// A connection to the cranwhales database.
pub struct Store {
    conn: Connection,
    path: PathBuf,
    /// Why the store can only be read, when it can only be read (see `Store::open`).
    read_only: Option<String>,
    /// The schema version this open migrated the store from (`None`: new, or already current).
    migrated_from: Option<i64>,
}

/// How long opening a store waits out another process creating or migrating it.
const OPEN_BUSY_WAIT: Duration = Duration::from_secs(30);

impl Store {
    /// Opens (creating the file, its directory and the schema if needed, migrating an older
    /// schema) in WAL mode.
    ///
    /// A store that exists but cannot be written (a read-only mount, or no write permission on
    /// the file or its directory, where SQLite must create the WAL's side files) is opened
    /// read-only and immutable instead: `days`, `show`, `package` and `serve` read it; writing
    /// fails with `StoreError::ReadOnly`.
    pub fn open(path: &Path) -> Result<Store> {
        Store::open_with_progress(path, &mut |_| {})
    }

    /// `open`, telling `progress` after each day an older store's migration re-encoded (all in
    /// one transaction: a crash leaves the old store).
    pub fn open_with_progress(
        path: &Path,
        progress: &mut dyn FnMut(&MigrateStep),
    ) -> Result<Store> {
        if let Some(why) = read_only_reason(path) {
            return Store::open_read_only(path, why);
        }
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|source| StoreError::Dir {
                path: path.to_owned(),
                source,
            })?;
        }
        let mut store = Store {
            conn: Connection::open(path).map_err(sql(path))?,
            path: path.to_owned(),
            read_only: None,
            migrated_from: None,
        };
        let found = store.init_schema(progress).map_err(sql(path))?;
        if found > SCHEMA_VERSION {
            return Err(StoreError::Version {
                path: path.to_owned(),
                found,
            });
        }
        store.migrated_from = (found > 0 && found < SCHEMA_VERSION).then_some(found);
        Ok(store)
    }

    fn open_read_only(path: &Path, why: String) -> Result<Store> {
        // `immutable=1`: SQLite neither locks nor creates the -wal/-shm files it cannot create
        // here; nothing can change a file that no one can write.
        let uri = format!(
            "file:{}?immutable=1",
            path.to_string_lossy()
                .replace('%', "%25")
                .replace('?', "%3f")
                .replace('#', "%23")
        );
        let flags = rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY
            | rusqlite::OpenFlags::SQLITE_OPEN_URI
            | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(&uri, flags).map_err(sql(path))?;
        let found: i64 = conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(sql(path))?;
        if found > SCHEMA_VERSION {
            return Err(StoreError::Version {
                path: path.to_owned(),
                found,
            });
        }
        if found < SCHEMA_VERSION {
            return Err(StoreError::ReadOnly {
                path: path.to_owned(),
                why,
                needed:
                    "its schema is older and must be migrated: open it once where it can be written",
            });
        }
        Ok(Store {
            conn,
            path: path.to_owned(),
            read_only: Some(why),
            migrated_from: None,
        })
    }

    /// The schema version this open migrated the store from, if it migrated it (so `migrate`
    /// can say what it did), and the current one.
    pub fn schema(&self) -> (Option<i64>, i64) {
        (self.migrated_from, SCHEMA_VERSION)
    }

    /// Why the store can only be read, if it can only be read.
    pub fn read_only(&self) -> Option<&str> {
        self.read_only.as_deref()
    }

    /// Fails with `StoreError::ReadOnly` on a read-only store, before a write is attempted.
    pub fn check_writable(&self, needed: &'static str) -> Result<()> {
        match &self.read_only {
            None => Ok(()),
            Some(why) => Err(StoreError::ReadOnly {
                path: self.path.clone(),
                why: why.clone(),
                needed,
            }),
        }
    }

    /// Pragmas, then the schema created or migrated. Two processes creating the same new store
    /// meet here: switching a new file to WAL (and the first schema write) can be refused at once
    /// with SQLITE_BUSY, without SQLite's busy handler (two ingests into a new store failed
    /// "database is locked" in 2 of 5 tries). So a busy refusal is retried for a bounded time.
    fn init_schema(&self, progress: &mut dyn FnMut(&MigrateStep)) -> rusqlite::Result<i64> {
        let start = std::time::Instant::now();
        loop {
            match self
                .init()
                .and_then(|()| schema::create_or_migrate(&self.conn, progress))
            {
                Err(rusqlite::Error::SqliteFailure(f, _))
                    if matches!(
                        f.code,
                        rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked
                    ) && start.elapsed() < OPEN_BUSY_WAIT =>
                {
                    std::thread::sleep(Duration::from_millis(20));
                }
                r => return r,
            }
        }
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
        self.conn.execute_batch("PRAGMA synchronous=NORMAL")
    }

    /// Returns the pages an older version's tables left free to the file system (`VACUUM`,
    /// itself all or nothing); `cranwhales migrate` runs it after migrating.
    pub fn compact(&self) -> Result<()> {
        self.conn.execute_batch("VACUUM").map_err(sql(&self.path))
    }

    /// The file's size in bytes as SQLite sees it (pages × page size, WAL not included).
    pub fn file_bytes(&self) -> Result<u64> {
        let q = "SELECT page_count * page_size FROM pragma_page_count, pragma_page_size";
        (self.conn.query_row(q, [], |r| r.get(0))).map_err(sql(&self.path))
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
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

    /// When the newest stored day (by date) was stored (UTC, `YYYY-MM-DDTHH:MM:SSZ`), if any:
    /// how fresh the store is, for `GET /api/days`.
    pub fn newest_ingested_at(&self) -> Result<Option<String>> {
        use rusqlite::OptionalExtension;
        self.conn
            .query_row(
                "SELECT ingested_at FROM days ORDER BY date DESC LIMIT 1",
                [],
                |r| r.get(0),
            )
            .optional()
            .map_err(sql(&self.path))
    }

    /// SQLite's `PRAGMA data_version`: it changes when another connection (this process's or
    /// another's) committed since this connection last asked; this connection's own commits do not
    /// change it. In WAL mode a read of shared memory, no file I/O: cheap enough to poll.
    pub fn data_version(&self) -> Result<i64> {
        self.conn
            .query_row("PRAGMA data_version", [], |r| r.get(0))
            .map_err(sql(&self.path))
    }

    /// Every stored day with what tells one ingest of it from another (see [`DayStamp`]).
    pub fn day_stamps(&self) -> Result<Vec<(String, DayStamp)>> {
        let q = || -> rusqlite::Result<Vec<(String, DayStamp)>> {
            let mut st = self.conn.prepare(
                "SELECT date, ingested_at, source, rows, downloads FROM days ORDER BY date",
            )?;
            let rows = st.query_map([], |r| {
                let stamp = DayStamp {
                    ingested_at: r.get(1)?,
                    source: r.get(2)?,
                    rows: r.get(3)?,
                    downloads: r.get(4)?,
                };
                Ok((r.get(0)?, stamp))
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

    /// Runs SQLite's own consistency check; `Ok(true)` when the file is sound.
    pub fn integrity_ok(&self) -> Result<bool> {
        let r: String = self
            .conn
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .map_err(sql(&self.path))?;
        Ok(r == "ok")
    }
}

/// Why an existing store at `path` cannot be written, or `None` when it can (or does not exist
/// yet: then creating it reports its own error). `access(2)` sees read-only mounts (EROFS) and
/// permissions as the process has them.
fn read_only_reason(path: &Path) -> Option<String> {
    use std::os::unix::ffi::OsStrExt;
    let writable = |p: &Path| -> std::result::Result<(), std::io::Error> {
        let c = std::ffi::CString::new(p.as_os_str().as_bytes()).map_err(std::io::Error::other)?;
        // SAFETY: `c` is a valid NUL-terminated path for the duration of the call.
        if unsafe { libc::access(c.as_ptr(), libc::W_OK) } == 0 {
            Ok(())
        } else {
            Err(std::io::Error::last_os_error())
        }
    };
    if !path.is_file() {
        return None;
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let explain = |e: std::io::Error, what: &str| match e.raw_os_error() {
        Some(libc::EROFS) => "read-only file system".to_string(),
        _ => format!("{what} is not writable: {}", e.kind()),
    };
    if let Err(e) = writable(path) {
        return Some(explain(e, "the file"));
    }
    if let Err(e) = writable(dir) {
        return Some(explain(e, "its directory"));
    }
    None
}

fn sql(path: &Path) -> impl Fn(rusqlite::Error) -> StoreError + '_ {
    move |error| StoreError::Sqlite {
        path: path.to_owned(),
        error,
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
