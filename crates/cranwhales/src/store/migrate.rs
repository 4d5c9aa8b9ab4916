//! Version 2 → 3, the rows' part: each stored day's whale blobs (formats 1 and 2, one per whale)
//! re-encoded into one `whale_log` blob, its profiles deflated, its `whale_ranks` re-encoded;
//! then `whale_rows` dropped. Runs inside `schema::create_or_migrate`'s one transaction, so a
//! crash at any point (even `kill -9`) leaves the store as it was: wholly version 2.

use rusqlite::{params, Connection};

use super::codec::{decode_ranks, encode_ranks, pack_profile};
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

/// Re-encodes every stored day (see the module doc), telling `progress` after each.
pub fn rows(conn: &Connection, progress: &mut dyn FnMut(&Step)) -> rusqlite::Result<()> {
    let dates: Vec<String> = conn
        .prepare("SELECT date FROM days ORDER BY date")?
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    for (i, date) in dates.iter().enumerate() {
        whale_log(conn, date)?;
        profiles(conn, date)?;
        ranks(conn, date)?;
        progress(&Step {
            done: i + 1,
            total: dates.len(),
            date: date.clone(),
        });
        #[cfg(feature = "fault-injection")]
        pause_for_crash_test();
    }
    conn.execute_batch("DROP TABLE whale_rows")
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

/// The day's `whale_ranks` in version 3's form (filtered counts unknown: 0, and the day's
/// `small`/`repeats` stay NULL).
fn ranks(conn: &Connection, date: &str) -> rusqlite::Result<()> {
    let old: Vec<(String, Vec<u8>)> = conn
        .prepare_cached(
            "SELECT package, whale_ranks FROM packages WHERE date = ?1 AND whale_ranks IS NOT NULL",
        )?
        .query_map([date], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    let mut up = conn
        .prepare_cached("UPDATE packages SET whale_ranks = ?3 WHERE date = ?1 AND package = ?2")?;
    for (package, b) in old {
        up.execute(params![date, package, encode_ranks(&decode_ranks(&b))])?;
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
