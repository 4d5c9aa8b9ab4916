//! The schema: its version, the tables of a new store, and the migration of an older one.

use rusqlite::Connection;

/// `PRAGMA user_version` of the current schema. 1: days, hourly, whales, whale rows, packages.
/// 2: whale profiles, unique downloaders and per-whale counts per package, day stats for trends.
///
/// There is deliberately no index on `packages (package, date)`: a day adds a row for almost every
/// package, so such an index has its every leaf page rewritten by each day (78 days: ~5x the
/// page writes of the whole ingest). A package over the stored days is instead one primary-key
/// seek per day (`store::insight`), ~80 seeks for 78 days.
pub const SCHEMA_VERSION: i64 = 2;

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
    behaviours TEXT, no_r_rows INTEGER, baseline INTEGER
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
    -- Since version 2: the behaviour key and the whole profile as JSON (summary::Profile).
    behaviour TEXT, profile TEXT,
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
    -- Since version 2: distinct ip_ids, and (rank, downloads) of each whale as varint pairs.
    downloaders INTEGER, whale_ranks BLOB,
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

/// The per-day tables, in deletion order.
pub const DAY_TABLES: [&str; 6] = [
    "whale_rows",
    "whale_hourly",
    "whales",
    "packages",
    "hourly",
    "days",
];

/// Creates the schema in a new store or brings an older one up to date, in one transaction
/// (re-reading the version inside it, so two processes opening an old store at once migrate it
/// once). Returns the version found (0: new); a newer one is left alone for the caller to refuse.
pub fn create_or_migrate(conn: &Connection) -> rusqlite::Result<i64> {
    let version = |c: &Connection| c.query_row("PRAGMA user_version", [], |r| r.get::<_, i64>(0));
    if version(conn)? >= SCHEMA_VERSION {
        return version(conn);
    }
    conn.execute_batch("BEGIN IMMEDIATE")?;
    let run = || -> rusqlite::Result<i64> {
        let found = version(conn)?;
        let steps = match found {
            0 => SCHEMA,
            1 => MIGRATE_1_2,
            _ => return Ok(found),
        };
        conn.execute_batch(&format!("{steps} PRAGMA user_version = {SCHEMA_VERSION};"))?;
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
