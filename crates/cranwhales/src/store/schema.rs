//! The schema: its version, the tables of a new store, and the migration of an older one.

use rusqlite::Connection;

use super::breakdown;
use super::history;
use super::migrate::{self, Step};

/// `PRAGMA user_version` of the current schema. 1: days, hourly, whales, whale rows, packages.
/// 2: whale profiles, unique downloaders and per-whale counts per package, day stats for trends.
/// 3: a day's whale rows in one blob (`whale_log`, `blob::daylog`) instead of one per whale,
/// profiles deflated, whale counts per package in a denser form with each whale's filtered
/// downloads, and per package and day the small and repeated downloads (issue 21: 2015-01-08
/// took 3.4 MB in version 2). 4: `packages` keyed by one integer, the day number and a package
/// id from `package_totals` (`codec::day_package`), instead of the date and name as text (a
/// rowid table: 2015-01-08's 6,722 rows carried ~17 bytes of key text each, and a rowid table
/// appended in key order fills its pages), `whale_ranks` relative to the day's common whales
/// (`days.common_whales`, `codec::Common`), profiles deflated with a preset dictionary of their
/// keys and words (`codec::pack_profile`); see `migrate_3_4`. 5: `package_months`, every
/// package's downloads per month (a year's top list summed ~7M `packages` rows on the synthetic
/// history: 1.9 s), filled from the stored days by the migration. 6: `breakdown_keys` and
/// `breakdowns`, each package's downloads by version, country, OS, R version and arch
/// (`store::breakdown`); days stored before have none (the raw rows are gone) until ingested
/// again. 7: breakdowns with each key's small and repeated downloads, and the uniform whales'
/// keys once a day instead of in every package they fetched (`store::breakdown`); the format
/// extends version 6's, so version-6 rows stay as they are and read the same (they cannot be
/// re-encoded: which whale made which key is not in them), without the small and repeats split
/// (the API names such days in `days_without_filters`). 8: `package_months` with each month's
/// sums of what a filtered list leaves out (`whale_downloads`: each day's top-100 whales, `small`,
/// `repeats`, and the whales' own small and repeated downloads), refilled from the stored days by
/// the migration (`migrate::months`), so top and trending lists and ranks can be counted
/// `without=whales,small,repeats` (any of them) from whole months (`store::filtered`).
/// 9: breakdowns by R build (OS, R version
/// and arch as one key per package) in zstd chunks of 512 packages (`store::breakdown`); older
/// days' rows stay as they are and read the same (their OS, R version and arch were counted
/// apart: the builds cannot be made from them), so the step changes no row.
/// 10: `package_history` and
/// `history_months`, each package's per-day values of a closed month packed in one row keyed by
/// (package id, month) (`store::history`), built by the migration for every month before the
/// newest stored day's.
/// 11: breakdown chunks cut at any package, each keyed by its first package's `day_package`,
/// so each fills its one 16 KB page (runs of 128 ids compressed to ~12 KB on the larger days, and
/// a page held one: 2025's synthetic day took 3.47 MB of pages for 2.50 MB of chunks); older
/// days' rows stay as they are and read the same (`store::breakdown`), so the step changes no row.
/// 12: `breakdown_months` and `breakdown_month_keys`, a closed month's breakdowns packed by
/// package (`store::breakdown::month`: 0.47-0.68x the pages of its daily chunks on the real
/// months); the step only makes the tables, and a month packed before is packed again by the next
/// `pack_months` (the end of an ingest, `cranwhales migrate`, follow mode).
///
/// There is deliberately no index on `packages (package, date)`: a day adds a row for almost every
/// package, so such an index has its every leaf page rewritten by each day (78 days: ~5x the
/// page writes of the whole ingest). A package over the stored days was instead one rowid seek
/// per day (`store::insight`), ~80 seeks for 78 days, and one 16 KB page read per stored day on
/// a cold page cache (5,200 days: ~1 s); since version 10 the closed months are read from
/// `package_history`, packed once a month is whole, not per day.
pub const SCHEMA_VERSION: i64 = 12;

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
    small INTEGER, repeats INTEGER,
    -- Since version 4: the whales most packages' whale_ranks name (store::codec::Common).
    common_whales BLOB
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
    -- deflated since version 3, with a preset dictionary since version 4 (store::codec).
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
";

/// A package's downloads on a day (since version 4; before, keyed by `date` and `package` text).
/// `day_package` is `codec::day_package`: the day number (days since 1970-01-01) times 2^20
/// plus the package's `package_totals.id`, so a day's rows are one key range and a package on
/// a day one rowid seek.
const PACKAGES: &str = "
CREATE TABLE IF NOT EXISTS packages (
    day_package INTEGER PRIMARY KEY,
    downloads INTEGER NOT NULL,
    whale_downloads INTEGER NOT NULL,
    -- Since version 2: distinct ip_ids, and each whale's downloads by rank (encoding:
    -- store::codec).
    downloaders INTEGER, whale_ranks BLOB,
    -- Since version 3 (NULL before): downloads under 1,000 bytes, and repeats (day::filters).
    small INTEGER, repeats INTEGER
);
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
/// Since version 4 each name also has its `id` (what `packages` rows carry); a name whose
/// days all went is deleted, and its id may be given again (no row refers to it any more).
const PACKAGE_TOTALS: &str = "
CREATE TABLE IF NOT EXISTS package_totals (
    id INTEGER PRIMARY KEY,
    package TEXT NOT NULL UNIQUE,
    downloads INTEGER NOT NULL,
    days INTEGER NOT NULL
);
";

/// Every package's downloads per calendar month over the stored days (since version 5): a
/// range's whole months are read here instead of its every day (`store::months`, kept up to
/// date in each day's transaction). `month_package` is `codec::month_package`: the month number
/// (months since 1970-01) times 2^20 plus the package's `package_totals.id`; `days` counts the
/// month's stored days with a download of it (a row whose days all went is deleted).
/// Since version 8 the sums a filtered count takes out (`store::filtered`): `whale_downloads`
/// (each day's top-100 whales), `small` and `repeats` (0 for days stored before version 3, which
/// a filtered count reads day by day and leaves out), and of the whales' downloads the small ones
/// (`whale_small`) and the small and repeated ones together (`whale_filtered`).
const PACKAGE_MONTHS: &str = "
CREATE TABLE IF NOT EXISTS package_months (
    month_package INTEGER PRIMARY KEY,
    downloads INTEGER NOT NULL,
    days INTEGER NOT NULL,
    whale_downloads INTEGER NOT NULL DEFAULT 0,
    small INTEGER NOT NULL DEFAULT 0,
    repeats INTEGER NOT NULL DEFAULT 0,
    whale_filtered INTEGER NOT NULL DEFAULT 0,
    whale_small INTEGER NOT NULL DEFAULT 0
);
";

/// Version 7 → 8, the table's part: the new sums (`migrate::months` fills them).
const MIGRATE_7_8: &str = "
ALTER TABLE package_months ADD COLUMN whale_downloads INTEGER NOT NULL DEFAULT 0;
ALTER TABLE package_months ADD COLUMN small INTEGER NOT NULL DEFAULT 0;
ALTER TABLE package_months ADD COLUMN repeats INTEGER NOT NULL DEFAULT 0;
ALTER TABLE package_months ADD COLUMN whale_filtered INTEGER NOT NULL DEFAULT 0;
ALTER TABLE package_months ADD COLUMN whale_small INTEGER NOT NULL DEFAULT 0;
";

/// Version 2 → 3, the tables' part (`migrate` re-encodes the rows between these and the end;
/// `package_totals` comes with version 4's part).
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

/// Version 3 → 4, the tables' part: `package_totals` gets ids (names in order: new ids follow
/// the names, so one day's rows are written in name order too) and the new `packages` is made
/// beside the old one (`packages_v3`); `migrate` copies each day's rows across, then
/// `FINISH_3_4` drops the old table. A version 2 store has no `package_totals` yet: it is summed
/// from its `packages` rows.
fn migrate_3_4(found: i64) -> String {
    let totals = if found >= 3 {
        "SELECT package, downloads, days FROM package_totals_v3"
    } else {
        "SELECT package, sum(downloads), count(*) FROM packages_v3 GROUP BY package"
    };
    let rename_totals = if found >= 3 {
        "ALTER TABLE package_totals RENAME TO package_totals_v3;"
    } else {
        ""
    };
    format!(
        "ALTER TABLE packages RENAME TO packages_v3;
         ALTER TABLE days ADD COLUMN common_whales BLOB;
         {rename_totals}
         {PACKAGE_TOTALS}{PACKAGES}
         INSERT INTO package_totals (package, downloads, days) {totals} ORDER BY 1;"
    )
}

/// Version 3 → 4, after every day's rows are copied.
const FINISH_3_4: &str = "
DROP TABLE packages_v3;
DROP TABLE IF EXISTS package_totals_v3;
";

/// The per-day tables keyed by `date`, in deletion order (`packages` is keyed by day number).
pub const DAY_TABLES: [&str; 5] = ["whale_log", "whale_hourly", "whales", "hourly", "days"];

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
            0 => conn.execute_batch(&format!(
                "{SCHEMA}{PACKAGE_TOTALS}{PACKAGES}{PACKAGE_MONTHS}{}",
                breakdown::TABLES
            ))?,
            1..=4 => {
                if found == 1 {
                    conn.execute_batch(MIGRATE_1_2)?;
                }
                if found <= 2 {
                    conn.execute_batch(MIGRATE_2_3)?;
                }
                if found <= 3 {
                    conn.execute_batch(&migrate_3_4(found))?;
                }
                conn.execute_batch(PACKAGE_MONTHS)?;
                migrate::rows(conn, found, progress)?;
                if found <= 3 {
                    conn.execute_batch(FINISH_3_4)?;
                }
                conn.execute_batch(breakdown::TABLES)?;
            }
            5 => conn.execute_batch(breakdown::TABLES)?,
            6..=11 => {}
            _ => return Ok(found),
        }
        // Version 5's `package_months` (1 to 4 made it with version 8's columns above).
        if (5..8).contains(&found) {
            conn.execute_batch(MIGRATE_7_8)?;
            migrate::months(conn, progress)?;
        }
        if found < 9 {
            // Breakdowns by R build (version 9): a day's `breakdown_keys` row says which form
            // its rows are in, so version 6 and 7 rows are left as they are; only the tables
            // must be there (they are since version 6).
            conn.execute_batch(breakdown::TABLES)?;
        }
        if found < 12 {
            // The month packs of breakdowns (version 12), before a month is packed below.
            conn.execute_batch(breakdown::TABLES)?;
        }
        if found < 10 {
            conn.execute_batch(history::TABLES)?;
            for (month, days) in history::pending(conn, false)? {
                history::compact_month(conn, month, &days)?;
            }
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
