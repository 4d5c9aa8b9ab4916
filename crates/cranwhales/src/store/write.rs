//! Writing a day: every table of the day rewritten in one transaction, with the totals kept over
//! days (`package_totals`, `package_months`) following it; removing a day likewise.
//!
//! The work that needs no lock (packing the whales' rows, serialising their profiles, putting
//! rows in key order) is done first, in `PackedDay::new`, on the thread that read the day; the
//! transaction itself only inserts, in key order, so each table's B-tree grows at its right edge.

use rusqlite::{params, Transaction};

use super::codec::{
    day_number, day_range, encode_ranks, pack_profile, Common, WhaleCount, PACKAGE_IDS,
};
use super::months::WhaleParts;
use super::schema::DAY_TABLES;
use super::{breakdown, history, months, sql, Result, Store};
use crate::day::{DayTables, Threads};
use crate::parse::hms;
use crate::summary::Behaviour;

/// One day written at a time per process (other processes still meet SQLite's write lock).
static WRITERS: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// A day ready for its transaction: the whales' rows packed, profiles as deflated JSON,
/// packages and whales in the order of their tables' keys.
pub struct PackedDay {
    day: DayTables,
    /// All whales' rows: (rows, format-3 blob).
    log: (u64, Vec<u8>),
    profiles: Vec<Vec<u8>>,
    /// Indexes into `day.packages` with their encoded `whale_ranks`, by package name (the order
    /// of `package_totals`' name index, where each gets its id).
    packages: Vec<(u32, Option<Vec<u8>>)>,
    /// The whales most packages name (`whale_ranks` are relative to them).
    common: Common,
    /// Indexes into `day.whales`, by ip_id (the `whale_hourly` key).
    whale_order: Vec<u32>,
}

impl PackedDay {
    /// Packs `day` for writing, on `threads`.
    pub fn new(mut day: DayTables, threads: Threads) -> PackedDay {
        let packed = day.take_packed_log();
        let (log, profiles) = threads.join(
            || packed.unwrap_or_else(|| day.pack_log()),
            || {
                (day.whales.iter())
                    .map(|w| {
                        pack_profile(&serde_json::to_string(&w.profile).expect("serialisable"))
                    })
                    .collect()
            },
        );
        let mut by_name: Vec<(&str, u32)> = (day.packages.iter().enumerate())
            .map(|(i, p)| (p.package.as_str(), i as u32))
            .collect();
        by_name.sort_unstable();
        let all: Vec<Vec<WhaleCount>> = day.packages.iter().map(counts).collect();
        let common = Common::of(all.iter().map(Vec::as_slice));
        let packages = (by_name.into_iter())
            .map(|(_, i)| {
                let c = &all[i as usize];
                (i, (!c.is_empty()).then(|| encode_ranks(c, common)))
            })
            .collect();
        let mut whale_order: Vec<u32> = (0..day.whales.len() as u32).collect();
        whale_order.sort_unstable_by_key(|&i| day.whales[i as usize].ip_id);
        PackedDay {
            day,
            log,
            profiles,
            packages,
            common,
            whale_order,
        }
    }

    /// The day's tables.
    pub fn day(&self) -> &DayTables {
        &self.day
    }
}

impl Store {
    /// Replaces one day with `day`, atomically: readers and crashes see the old day or the new one.
    pub fn replace_day(&mut self, day: &PackedDay, source: &str) -> Result<()> {
        self.check_writable("cannot store a day")?;
        let path = self.path.clone();
        self.write(day, source).map_err(sql(&path))
    }

    fn write(&mut self, packed: &PackedDay, source: &str) -> rusqlite::Result<()> {
        let day = &packed.day;
        let d = day.date.as_str();
        // Writers of this process queue here and wake as soon as the one before commits; waiting
        // on SQLite's own lock instead sleeps in its busy handler (1, 2, 5, … 100 ms steps).
        let _turn = WRITERS.lock().unwrap_or_else(|e| e.into_inner());
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        let n = number(d)?;
        let replaced = clear_day(&tx, d, n)?;
        day_row(&tx, day, packed.common, source)?;
        let mut st = tx.prepare_cached("INSERT INTO hourly VALUES (?1, ?2, ?3)")?;
        for (h, n) in day.hourly.iter().enumerate() {
            st.execute(params![d, h, n])?;
        }
        drop(st);
        let ids = package_totals(&tx, packed)?;
        let mut by_index: Vec<(i64, usize)> = (ids.iter())
            .map(|&(id, at)| (id, packed.packages[at].0 as usize))
            .collect();
        by_index.sort_unstable();
        packages(&tx, packed, day_range(n).0, ids)?;
        breakdown::insert(&tx, day, n, &by_index)?;
        // After the whale log: the month rows sum its small downloads too.
        whales(&tx, packed)?;
        months::add_day_parts(&tx, n, &whale_parts(day, &by_index))?;
        history::invalidate(&tx, n)?;
        if replaced {
            months::prune(&tx, n)?;
        }
        #[cfg(feature = "fault-injection")]
        {
            fail_for_test(d)?;
            hold_for_crash_test();
        }
        tx.commit()
    }
}

impl Store {
    /// Removes one day, atomically: its rows of every table, and its share of the totals kept
    /// over days (`package_totals`, `package_months`), so every answer reads as if it had never
    /// been stored. Returns whether it was stored.
    pub fn remove_day(&mut self, date: &str) -> Result<bool> {
        self.check_writable("cannot remove a day")?;
        let path = self.path.clone();
        self.remove(date).map_err(sql(&path))
    }

    fn remove(&mut self, date: &str) -> rusqlite::Result<bool> {
        let n = number(date)?;
        let _turn = WRITERS.lock().unwrap_or_else(|e| e.into_inner());
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        let stored = clear_day(&tx, date, n)?;
        months::prune(&tx, n)?;
        history::invalidate(&tx, n)?;
        tx.prepare_cached("DELETE FROM package_totals WHERE days <= 0")?
            .execute([])?;
        tx.commit()?;
        Ok(stored)
    }
}

/// Day number of a stored date.
fn number(d: &str) -> rusqlite::Result<i64> {
    day_number(d).ok_or_else(|| {
        rusqlite::Error::ToSqlConversionFailure(format!("'{d}' is not a date").into())
    })
}

/// Deletes day `n` (`d`)'s rows of every table, its packages first taken out of the totals kept
/// over days (a name or month row left without days stays until pruned). Returns whether the
/// day was stored.
fn clear_day(tx: &Transaction<'_>, d: &str, n: i64) -> rusqlite::Result<bool> {
    let (lo, hi) = day_range(n);
    tx.prepare_cached(&format!(
        "UPDATE package_totals SET downloads = package_totals.downloads - p.downloads,
             days = package_totals.days - 1
         FROM (SELECT day_package % {PACKAGE_IDS} AS id, downloads FROM packages
               WHERE day_package BETWEEN ?1 AND ?2) AS p
         WHERE package_totals.id = p.id"
    ))?
    .execute([lo, hi])?;
    months::take_day(tx, n)?;
    tx.prepare_cached("DELETE FROM packages WHERE day_package BETWEEN ?1 AND ?2")?
        .execute([lo, hi])?;
    breakdown::delete(tx, n)?;
    let mut stored = false;
    for t in DAY_TABLES {
        let gone = tx
            .prepare_cached(&format!("DELETE FROM {t} WHERE date = ?1"))?
            .execute([d])?;
        stored |= t == "days" && gone > 0;
    }
    Ok(stored)
}

/// Rows per `INSERT` of `packages`: one statement run per 64 rows instead of per row (the
/// 78-day backfill's store step: ~0.5 s → ~0.4 s of CPU).
const PACKAGE_ROWS: usize = 64;

/// Columns of a `packages` row as inserted.
const PACKAGE_COLS: usize = 7;

/// The day's `packages` rows (`ids`: (package id, index into `packed.packages`)), in key order,
/// `PACKAGE_ROWS` per statement (the last few one by one). `day0` is the day's first key.
fn packages(
    tx: &Transaction<'_>,
    packed: &PackedDay,
    day0: i64,
    mut ids: Vec<(i64, usize)>,
) -> rusqlite::Result<()> {
    ids.sort_unstable();
    let day = &packed.day;
    let sql = |n: usize| {
        let row = "(?, ?, ?, ?, ?, ?, ?)";
        format!(
            "INSERT INTO packages (day_package, downloads, whale_downloads, downloaders, whale_ranks,
                 small, repeats) VALUES {}",
            vec![row; n].join(", ")
        )
    };
    let insert = |st: &mut rusqlite::CachedStatement<'_>, rows: &[(i64, usize)]| {
        for (k, &(id, at)) in rows.iter().enumerate() {
            let (i, ranks) = &packed.packages[at];
            let (p, col) = (&day.packages[*i as usize], k * PACKAGE_COLS);
            st.raw_bind_parameter(col + 1, day0 + id)?;
            st.raw_bind_parameter(col + 2, p.downloads)?;
            st.raw_bind_parameter(col + 3, p.whale_downloads)?;
            st.raw_bind_parameter(col + 4, p.downloaders)?;
            st.raw_bind_parameter(col + 5, ranks)?;
            st.raw_bind_parameter(col + 6, p.small)?;
            st.raw_bind_parameter(col + 7, p.repeats)?;
        }
        st.raw_execute().map(drop)
    };
    let (full, rest) = ids.split_at(ids.len() / PACKAGE_ROWS * PACKAGE_ROWS);
    let mut many = tx.prepare_cached(&sql(PACKAGE_ROWS))?;
    for rows in full.chunks(PACKAGE_ROWS) {
        insert(&mut many, rows)?;
    }
    let mut one = tx.prepare_cached(&sql(1))?;
    for row in rest.chunks(1) {
        insert(&mut one, row)?;
    }
    Ok(())
}

/// The day's packages added to `package_totals` (in name order, like its name index), a new name
/// given the next id; packages no stored day has any more are dropped. Returns each package's id
/// with its index into `packed.packages`.
fn package_totals(tx: &Transaction<'_>, packed: &PackedDay) -> rusqlite::Result<Vec<(i64, usize)>> {
    let mut st = tx.prepare_cached(
        "INSERT INTO package_totals (package, downloads, days) VALUES (?1, ?2, 1)
         ON CONFLICT (package) DO UPDATE SET downloads = downloads + excluded.downloads,
             days = days + 1
         RETURNING id",
    )?;
    let mut ids = Vec::with_capacity(packed.packages.len());
    for (at, (i, _)) in packed.packages.iter().enumerate() {
        let p = &packed.day.packages[*i as usize];
        let id: i64 = st.query_row(params![p.package, p.downloads], |r| r.get(0))?;
        if !(1..PACKAGE_IDS).contains(&id) {
            let e = format!("package id {id} of {} is beyond {PACKAGE_IDS}", p.package);
            return Err(rusqlite::Error::ToSqlConversionFailure(e.into()));
        }
        ids.push((id, at));
    }
    tx.prepare_cached("DELETE FROM package_totals WHERE days <= 0")?
        .execute([])?;
    Ok(ids)
}

/// The `days` row: totals and the day's stats.
fn day_row(
    tx: &Transaction<'_>,
    day: &DayTables,
    common: Common,
    source: &str,
) -> rusqlite::Result<()> {
    let (t, s) = (&day.totals, &day.stats);
    let behaviours: serde_json::Map<String, serde_json::Value> = (Behaviour::ALL.iter())
        .zip(s.behaviours)
        .map(|(b, n)| (b.key().to_owned(), n.into()))
        .collect();
    tx.execute(
        "INSERT INTO days (date, downloads, downloaders, bytes, packages, skipped_rows, rows, source,
             ingested_at, top1, top6, top25, top100, behaviours, no_r_rows, baseline, small, repeats,
             common_whales)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, strftime('%Y-%m-%dT%H:%M:%SZ', 'now'),
             ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18)",
        params![
            day.date,
            t.downloads,
            t.downloaders,
            t.bytes,
            t.packages,
            t.skipped_rows,
            day.rows,
            source,
            s.top[0],
            s.top[1],
            s.top[2],
            s.top[3],
            serde_json::Value::Object(behaviours).to_string(),
            s.no_r_rows,
            s.baseline,
            s.small,
            s.repeats,
            common.to_blob()
        ],
    )?;
    Ok(())
}

/// The whales' rows in `whales`, `whale_hourly` and `whale_log`, each table in its key order.
fn whales(tx: &Transaction<'_>, packed: &PackedDay) -> rusqlite::Result<()> {
    let day = &packed.day;
    let d = day.date.as_str();
    let mut st = tx.prepare_cached(
        "INSERT INTO whales (date, rank, ip_id, name, country, downloads, bytes, packages,
             first_time, last_time, behaviour, profile)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
    )?;
    for (w, profile) in day.whales.iter().zip(&packed.profiles) {
        st.execute(params![
            d,
            w.rank,
            w.ip_id,
            w.name,
            w.country,
            w.downloads,
            w.bytes,
            w.packages,
            hms(w.first),
            hms(w.last),
            w.profile.behaviour.key(),
            profile
        ])?;
    }
    let mut hour = tx.prepare_cached("INSERT INTO whale_hourly VALUES (?1, ?2, ?3, ?4)")?;
    for &i in &packed.whale_order {
        let w = &day.whales[i as usize];
        // Hours without downloads have no row (three in four of a whale's hours; readers
        // start from zeros).
        for (h, n) in w.hourly.iter().enumerate().filter(|(_, &n)| n > 0) {
            hour.execute(params![d, w.ip_id, h, n])?;
        }
    }
    let (n, log) = &packed.log;
    tx.prepare_cached("INSERT INTO whale_log (date, rows, log) VALUES (?1, ?2, ?3)")?
        .execute(params![d, n, log])?;
    Ok(())
}

/// Per package id (`by_index`: (id, index into `day.packages`), by id): the day's whales' small
/// and filtered downloads, as `months::whale_parts` reads them back from the stored rows.
fn whale_parts(day: &DayTables, by_index: &[(i64, usize)]) -> Vec<(i64, WhaleParts)> {
    let small = day.whale_small();
    (by_index.iter())
        .map(|&(id, i)| {
            let filtered = day.packages[i].whale_filtered.iter().map(|w| w.1).sum();
            (
                id,
                WhaleParts {
                    filtered,
                    small: small[i],
                },
            )
        })
        .filter(|(_, p)| p.filtered > 0 || p.small > 0)
        .collect()
}

/// A package's whales: (rank, downloads, small + repeated downloads), by rank.
fn counts(p: &crate::day::PackageCount) -> Vec<WhaleCount> {
    let mut filtered = p.whale_filtered.iter().peekable();
    (p.whale_ranks.iter())
        .map(|&(rank, n)| {
            let f = filtered.next_if(|(r, _)| *r == rank).map_or(0, |(_, f)| *f);
            (rank, n, f)
        })
        .collect()
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

/// Fault injection for the batch tests: with `CRANWHALES_TEST_FAIL_WRITE` holding this date
/// (comma-separated list), the day's transaction fails after all its rows were inserted (so the
/// rollback has something to undo). Test-only, like `hold_for_crash_test`.
#[cfg(feature = "fault-injection")]
fn fail_for_test(date: &str) -> rusqlite::Result<()> {
    let dates = std::env::var("CRANWHALES_TEST_FAIL_WRITE").unwrap_or_default();
    if dates.split(',').any(|d| d == date) {
        return Err(rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_IOERR),
            Some("write failed on purpose (CRANWHALES_TEST_FAIL_WRITE)".into()),
        ));
    }
    Ok(())
}
