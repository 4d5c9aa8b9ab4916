//! The rows' part of a migration, a day at a time. Version 2 → 3: each stored day's whale blobs
//! (formats 1 and 2, one per whale) re-encoded into one `whale_log` blob, its profiles deflated;
//! then `whale_rows` dropped. Version 3 → 4 (and 2 → 4): each day's `packages` rows copied to
//! the table keyed by day number and package id, `whale_ranks` (any version's) re-encoded
//! against the day's common whales, profiles deflated with the preset dictionary, the whale
//! log in format 4 (`blob::daylog`). Version 4 → 5 (and every older one): each day's
//! `packages` rows added to its month's `package_months` rows, as a day's write adds them.
//! Version 5, 6 or 7 → 8: `package_months` emptied and refilled the same way, day by day
//! (`months`), now with the sums a filtered list needs. Runs inside
//! `schema::create_or_migrate`'s one transaction, so a crash at any point (even `kill -9`) leaves
//! the store as it was: wholly the old version.

use rusqlite::{params, Connection};

use super::codec::{
    day_number, day_package, decode_ranks, encode_ranks, pack_profile, unpack_profile_v3, Common,
    WhaleCount,
};
use super::months;
use crate::blob::{self, daylog};
use crate::summary::Download;

/// Where a migration is: `done` of `total` days re-encoded, the last one `date`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// Days re-encoded so far.
    pub done: usize,
    /// Days to re-encode.
    pub total: usize,
    /// The day just re-encoded.
    pub date: String,
}

/// Re-encodes every stored day of a version `found` store (see the module doc), telling
/// `progress` after each.
pub fn rows(
    conn: &Connection,
    found: i64,
    progress: &mut dyn FnMut(&Step),
) -> rusqlite::Result<()> {
    let dates: Vec<String> = conn
        .prepare("SELECT date FROM days ORDER BY date")?
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    for (i, date) in dates.iter().enumerate() {
        let day =
            day_number(date).ok_or_else(|| corrupt(format!("days holds '{date}', not a date")))?;
        if found <= 2 {
            whale_log(conn, date)?;
            profiles(conn, date)?;
        } else if found == 3 {
            repack_profiles(conn, date)?;
            repack_log(conn, date)?;
        }
        if found <= 3 {
            packages(conn, date, day)?;
        }
        months::add_day(conn, day)?;
        progress(&Step {
            done: i + 1,
            total: dates.len(),
            date: date.clone(),
        });
        #[cfg(feature = "fault-injection")]
        pause_for_crash_test();
    }
    if found <= 2 {
        conn.execute_batch("DROP TABLE whale_rows")?;
    }
    Ok(())
}

/// Refills `package_months` (version 5, 6 or 7 → 8: the new columns are there, empty) from every
/// stored day's rows, as a day's write adds them, telling `progress` after each day.
pub fn months(conn: &Connection, progress: &mut dyn FnMut(&Step)) -> rusqlite::Result<()> {
    conn.execute_batch("DELETE FROM package_months")?;
    let dates: Vec<String> = conn
        .prepare("SELECT date FROM days ORDER BY date")?
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    for (i, date) in dates.iter().enumerate() {
        let day =
            day_number(date).ok_or_else(|| corrupt(format!("days holds '{date}', not a date")))?;
        months::add_day(conn, day)?;
        progress(&Step {
            done: i + 1,
            total: dates.len(),
            date: date.clone(),
        });
        #[cfg(feature = "fault-injection")]
        pause_for_crash_test();
    }
    Ok(())
}

/// The day's (day number `day`) `packages_v3` rows (keyed by date and name) into `packages` (keyed by day number
/// and package id, in key order), their `whale_ranks` relative to the day's common whales (kept
/// in `days.common_whales`).
fn packages(conn: &Connection, date: &str, day: i64) -> rusqlite::Result<()> {
    type Row = (
        i64,
        i64,
        i64,
        Option<i64>,
        Option<Vec<u8>>,
        Option<i64>,
        Option<i64>,
    );
    let rows: Vec<Row> = conn
        .prepare_cached(
            "SELECT t.id, p.downloads, p.whale_downloads, p.downloaders, p.whale_ranks, p.small,
                 p.repeats
             FROM packages_v3 p JOIN package_totals t ON t.package = p.package
             WHERE p.date = ?1 ORDER BY t.id",
        )?
        .query_map([date], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
                r.get(6)?,
            ))
        })?
        .collect::<rusqlite::Result<_>>()?;
    let counts: Vec<Vec<WhaleCount>> = (rows.iter())
        .map(|r| (r.4.as_deref()).map_or_else(Vec::new, |b| decode_ranks(b, Common::default())))
        .collect();
    let common = Common::of(counts.iter().map(Vec::as_slice));
    let mut st = conn.prepare_cached(
        "INSERT INTO packages (day_package, downloads, whale_downloads, downloaders, whale_ranks,
             small, repeats) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?;
    for (r, c) in rows.iter().zip(&counts) {
        let ranks = r.4.is_some().then(|| encode_ranks(c, common));
        st.execute(params![
            day_package(day, r.0),
            r.1,
            r.2,
            r.3,
            ranks,
            r.5,
            r.6
        ])?;
    }
    conn.prepare_cached("UPDATE days SET common_whales = ?2 WHERE date = ?1")?
        .execute(params![date, common.to_blob()])?;
    Ok(())
}

/// A version-2 row that cannot be read: the migration stops (and rolls back) naming it.
fn corrupt(what: String) -> rusqlite::Error {
    let code = rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CORRUPT);
    rusqlite::Error::SqliteFailure(code, Some(format!("{what}; nothing was migrated")))
}

/// The day's whale blobs, by rank, as one format-3 blob.
fn whale_log(conn: &Connection, date: &str) -> rusqlite::Result<()> {
    let mut st = conn.prepare_cached(
        "SELECT w.ip_id, r.rows FROM whales w JOIN whale_rows r ON r.date = w.date AND r.ip_id = w.ip_id
         WHERE w.date = ?1 ORDER BY w.rank",
    )?;
    let whales = st
        .query_map([date], |r| {
            Ok((r.get::<_, u64>(0)?, r.get::<_, Vec<u8>>(1)?))
        })?
        .map(|r| {
            let (ip, b) = r?;
            let rows: Vec<Download> = blob::unpack(&b)
                .ok_or_else(|| corrupt(format!("corrupt whale_rows blob ({date}, ip_id {ip})")))?;
            Ok((ip, rows))
        })
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let n: usize = whales.iter().map(|(_, r)| r.len()).sum();
    conn.prepare_cached("INSERT INTO whale_log (date, rows, log) VALUES (?1, ?2, ?3)")?
        .execute(params![date, n as u64, daylog::encode_downloads(&whales)])?;
    Ok(())
}

/// The day's profiles (JSON text) deflated.
fn profiles(conn: &Connection, date: &str) -> rusqlite::Result<()> {
    let texts: Vec<(u32, String)> = conn
        .prepare_cached(
            "SELECT rank, profile FROM whales WHERE date = ?1 AND typeof(profile) = 'text'",
        )?
        .query_map([date], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    let mut up =
        conn.prepare_cached("UPDATE whales SET profile = ?3 WHERE date = ?1 AND rank = ?2")?;
    for (rank, json) in texts {
        up.execute(params![date, rank, pack_profile(&json)])?;
    }
    Ok(())
}

/// The day's format-3 whale log (each whale's columns deflated apart) in format 4.
fn repack_log(conn: &Connection, date: &str) -> rusqlite::Result<()> {
    let log: Vec<u8> =
        conn.query_row("SELECT log FROM whale_log WHERE date = ?1", [date], |r| {
            r.get(0)
        })?;
    let whales = daylog::unpack_all(&log)
        .ok_or_else(|| corrupt(format!("corrupt whale_log blob ({date})")))?;
    conn.prepare_cached("UPDATE whale_log SET log = ?2 WHERE date = ?1")?
        .execute(params![date, daylog::encode_downloads(&whales)])?;
    Ok(())
}

/// The day's version-3 profiles (deflated alone) deflated with the preset dictionary.
fn repack_profiles(conn: &Connection, date: &str) -> rusqlite::Result<()> {
    let old: Vec<(u32, Vec<u8>)> = conn
        .prepare_cached(
            "SELECT rank, profile FROM whales WHERE date = ?1 AND typeof(profile) = 'blob'",
        )?
        .query_map([date], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    let mut up =
        conn.prepare_cached("UPDATE whales SET profile = ?3 WHERE date = ?1 AND rank = ?2")?;
    for (rank, b) in old {
        let json = unpack_profile_v3(&b)
            .ok_or_else(|| corrupt(format!("corrupt profile ({date}, rank {rank})")))?;
        up.execute(params![date, rank, pack_profile(&json)])?;
    }
    Ok(())
}

/// Fault injection for the migration crash test: with `CRANWHALES_TEST_MIGRATE_PAUSE_MS` set,
/// sleep that long after each day (so a test can `kill -9` the process mid-migration).
#[cfg(feature = "fault-injection")]
fn pause_for_crash_test() {
    if let Some(ms) = std::env::var("CRANWHALES_TEST_MIGRATE_PAUSE_MS")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        std::thread::sleep(std::time::Duration::from_millis(ms));
    }
}
