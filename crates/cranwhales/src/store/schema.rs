//! The schema: its version, the tables of a new store, and the migration of an older one.

use rusqlite::Connection;

use super::migrate::{self, Step};

/// `PRAGMA user_version` of the current schema. 1: days, hourly, whales, whale rows, packages.
/// 2: whale profiles, unique downloaders and per-whale counts per package, day stats for trends.
/// 3: a day's whale rows in one blob (`whale_log`, `blob::daylog`) instead of one per whale,
/// profiles deflated, whale counts per package in a denser form with each whale's filtered
/// downloads, and per package and day the small and repeated downloads (issue 21: 2015-01-08
/// took 3.4 MB in version 2).
///
/// There is deliberately no index on `packages (package, date)`: a day adds a row for almost every
/// package, so such an index has its every leaf page rewritten by each day (78 days: ~5x the
/// page writes of the whole ingest). A package over the stored days is instead one primary-key
/// seek per day (`store::insight`), ~80 seeks for 78 days.
pub const SCHEMA_VERSION: i64 = 3;

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
    ingested_at TEXT NOT NULL,
    -- Since version 2 (NULL for days stored before): see day::DayStats.
    top1 INTEGER, top6 INTEGER, top25 INTEGER, top100 INTEGER,
    behaviours TEXT, no_r_rows INTEGER, baseline INTEGER,
    -- Since version 3 (NULL before): downloads under 1,000 bytes, and repeats (day::filters).
    small INTEGER, repeats INTEGER
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
    -- Since version 2: the behaviour key and the whole profile (summary::Profile): JSON,
    -- deflated since version 3.
    behaviour TEXT, profile BLOB,
    PRIMARY KEY (date, rank),
    UNIQUE (date, ip_id),
    UNIQUE (date, name)
) WITHOUT ROWID;
-- A whale's hours without downloads may have no row: readers start from zeros.
CREATE TABLE IF NOT EXISTS whale_hourly (
    date TEXT NOT NULL,
    ip_id INTEGER NOT NULL,
    hour INTEGER NOT NULL,
    downloads INTEGER NOT NULL,
    PRIMARY KEY (date, ip_id, hour)
) WITHOUT ROWID;
-- Every download of the day's top-100 whales, in one blob (format 3: `blob::daylog`).
CREATE TABLE IF NOT EXISTS whale_log (
    date TEXT PRIMARY KEY,
    rows INTEGER NOT NULL,
    log BLOB NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS packages (
    date TEXT NOT NULL,
    package TEXT NOT NULL,
    downloads INTEGER NOT NULL,
    whale_downloads INTEGER NOT NULL,
    -- Since version 2: distinct ip_ids, and each whale's downloads by rank (encoding:
    -- store::ranks).
    downloaders INTEGER, whale_ranks BLOB,
    -- Since version 3 (NULL before): downloads under 1,000 bytes, and repeats (day::filters).
    small INTEGER, repeats INTEGER,
    PRIMARY KEY (date, package)
) WITHOUT ROWID;
";

/// Version 1 → 2: the new columns (NULL for the days already stored).
const MIGRATE_1_2: &str = "
ALTER TABLE days ADD COLUMN top1 INTEGER;
ALTER TABLE days ADD COLUMN top6 INTEGER;
ALTER TABLE days ADD COLUMN top25 INTEGER;
ALTER TABLE days ADD COLUMN top100 INTEGER;
ALTER TABLE days ADD COLUMN behaviours TEXT;
ALTER TABLE days ADD COLUMN no_r_rows INTEGER;
ALTER TABLE days ADD COLUMN baseline INTEGER;
ALTER TABLE whales ADD COLUMN behaviour TEXT;
ALTER TABLE whales ADD COLUMN profile TEXT;
ALTER TABLE packages ADD COLUMN downloaders INTEGER;
ALTER TABLE packages ADD COLUMN whale_ranks BLOB;
";

/// Every package over all stored days (since version 3): what the name search and "did you
/// mean" read. Grouping `packages` instead reads every row of every day (5,200 days x ~15k
/// packages: minutes); `write` keeps this up to date in each day's transaction.
const PACKAGE_TOTALS: &str = "
CREATE TABLE IF NOT EXISTS package_totals (
    package TEXT PRIMARY KEY,
    downloads INTEGER NOT NULL,
    days INTEGER NOT NULL
) WITHOUT ROWID;
";

/// Version 2 → 3, the tables' part (`migrate` re-encodes the rows between these and the end).
const MIGRATE_2_3: &str = "
ALTER TABLE days ADD COLUMN small INTEGER;
ALTER TABLE days ADD COLUMN repeats INTEGER;
ALTER TABLE packages ADD COLUMN small INTEGER;
ALTER TABLE packages ADD COLUMN repeats INTEGER;
CREATE TABLE whale_log (
    date TEXT PRIMARY KEY,
    rows INTEGER NOT NULL,
    log BLOB NOT NULL
) WITHOUT ROWID;
";

/// The per-day tables, in deletion order.
pub const DAY_TABLES: [&str; 6] = [
    "whale_log",
    "whale_hourly",
    "whales",
    "packages",
    "hourly",
    "days",
];

/// Creates the schema in a new store or brings an older one up to date, in one transaction
/// (re-reading the version inside it, so two processes opening an old store at once migrate it
/// once), telling `progress` after each day re-encoded. Returns the version found (0: new); a
/// newer one is left alone for the caller to refuse.
pub fn create_or_migrate(
    conn: &Connection,
    progress: &mut dyn FnMut(&Step),
) -> rusqlite::Result<i64> {
    let version = |c: &Connection| c.query_row("PRAGMA user_version", [], |r| r.get::<_, i64>(0));
    if version(conn)? >= SCHEMA_VERSION {
        return version(conn);
    }
    conn.execute_batch("BEGIN IMMEDIATE")?;
    let mut run = || -> rusqlite::Result<i64> {
        let found = version(conn)?;
        match found {
            0 => conn.execute_batch(&format!("{SCHEMA}{PACKAGE_TOTALS}"))?,
            1 | 2 => {
                if found == 1 {
                    conn.execute_batch(MIGRATE_1_2)?;
                }
                conn.execute_batch(&format!("{MIGRATE_2_3}{PACKAGE_TOTALS}"))?;
                migrate::rows(conn, progress)?;
                conn.execute_batch(
                    "INSERT INTO package_totals (package, downloads, days)
                     SELECT package, sum(downloads), count(*) FROM packages GROUP BY package",
                )?;
            }
            _ => return Ok(found),
        }
        conn.execute_batch(&format!("PRAGMA user_version = {SCHEMA_VERSION};"))?;
        Ok(found)
    };
    match run() {
        Ok(found) => conn.execute_batch("COMMIT").map(|()| found),
        Err(e) => {
            let _ = conn.execute_batch("ROLLBACK");
            Err(e)
        }
    }
}
