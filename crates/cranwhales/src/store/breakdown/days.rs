//! Which stored blob holds a package's breakdown on each stored day of a range: its day's chunk,
//! or (since version 12) its month's pack (`month`).

use std::collections::hash_map::{Entry, HashMap};
use std::io::Read;

use flate2::read::DeflateDecoder;
use rusqlite::{params, OptionalExtension};

use super::decode::{decode_keys, part, DayKeys};
use super::month::{self, PackageMonth};
use super::{CHUNK, CHUNKS};
use crate::store::codec::{decode_ranks, Common, WhaleCount, PACKAGE_IDS};
use crate::store::codec::{month_of, month_start};

/// A package's breakdown on one stored day with breakdowns.
#[derive(Debug, Default)]
pub(super) struct DayEntry {
    /// The day's keys and uniform whales.
    pub keys: DayKeys,
    /// The package's part of its chunk (empty: not downloaded).
    pub blob: Vec<u8>,
    /// The package's `whale_ranks` that day (read only when the day has uniform whales).
    pub ranks: Vec<WhaleCount>,
}

/// A package's stored breakdowns over the stored days from `from` to `to`, in date order:
/// (date, `None` when the day has no breakdowns).
pub(super) type DayBlobs = Vec<(String, Option<DayEntry>)>;

/// Reads `DayBlobs` of package `id` (0: none) through `conn`.
pub(super) fn day_blobs(
    conn: &rusqlite::Connection,
    id: i64,
    from: &str,
    to: &str,
) -> rusqlite::Result<DayBlobs> {
    let mut st = conn.prepare_cached(&format!(
        "SELECT d.date, k.keys, b.day_chunk, b.data, p.whale_ranks, d.common_whales,
             unixepoch(d.date) / 86400,
             EXISTS (SELECT 1 FROM breakdowns
                 WHERE day_chunk BETWEEN unixepoch(d.date) / 86400 * {PACKAGE_IDS}
                 AND unixepoch(d.date) / 86400 * {PACKAGE_IDS} + {PACKAGE_IDS} - 1)
         FROM days d
         LEFT JOIN breakdown_keys k ON k.day = unixepoch(d.date) / 86400
         LEFT JOIN breakdowns b ON b.day_chunk = coalesce(
             (SELECT max(day_chunk) FROM breakdowns
              WHERE day_chunk BETWEEN unixepoch(d.date) / 86400 * {PACKAGE_IDS}
              AND unixepoch(d.date) / 86400 * {PACKAGE_IDS} + ?4),
             (SELECT max(day_chunk) FROM breakdowns
              WHERE day_chunk BETWEEN unixepoch(d.date) / 86400 * {CHUNKS}
              AND unixepoch(d.date) / 86400 * {CHUNKS} + ?1))
         LEFT JOIN packages p ON p.day_package = unixepoch(d.date) / 86400 * {PACKAGE_IDS} + ?4
         WHERE d.date BETWEEN ?2 AND ?3 ORDER BY d.date"
    ))?;
    type Blob = Option<Vec<u8>>;
    type Row = (String, Blob, Option<i64>, Blob, Blob, Blob, i64, bool);
    let rows = st.query_map(
        params![id / CHUNK, from, to, id],
        |r| -> rusqlite::Result<Row> {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
                r.get(6)?,
                r.get(7)?,
            ))
        },
    )?;
    let mut out = Vec::new();
    // Packed months read so far (`None`: not packed).
    let mut months: HashMap<i64, Option<PackageMonth>> = HashMap::new();
    for row in rows {
        let (date, keys, chunk, data, ranks, common, day, daily) = row?;
        let Some(keys) = keys else {
            out.push((date, None));
            continue;
        };
        let keys = decode_keys(&keys).ok_or_else(|| corrupt(&date))?;
        // A version-11 day without chunks of its own was packed with its month.
        if keys.by_first && !daily {
            let m = month_of(day);
            if let Entry::Vacant(e) = months.entry(m) {
                e.insert(month::read(conn, id, m)?);
            }
            if let Some(Some(pm)) = months.get_mut(&m) {
                let offset = u8::try_from(day - month_start(m)).map_err(|_| corrupt(&date))?;
                // Each day of the month is read once: its part is taken, not copied.
                let blob = pm.parts.remove(&offset).unwrap_or_default();
                let ranks = ranks_of(ranks, common, &keys);
                let keys = pm.day_keys(&keys).ok_or_else(|| corrupt(&date))?;
                out.push((date, Some(DayEntry { keys, blob, ranks })));
                continue;
            }
        }
        // The package's place in its chunk: its id less the chunk's first.
        let first = match chunk {
            Some(c) if keys.by_first => c.rem_euclid(PACKAGE_IDS),
            Some(c) => c.rem_euclid(CHUNKS) * CHUNK,
            None => 0,
        };
        let at = id - first;
        let blob = match (keys.builds.is_some(), data) {
            (false, Some(d)) => part(inflate(&d).as_deref(), at),
            (true, Some(d)) => part(zstd_raw(&d).as_deref(), at),
            (_, None) => Some(Vec::new()),
        }
        .ok_or_else(|| corrupt(&date))?;
        let ranks = ranks_of(ranks, common, &keys);
        out.push((date, Some(DayEntry { keys, blob, ranks })));
    }
    Ok(out)
}

/// The package's `whale_ranks` that day, read only when the day has uniform whales.
fn ranks_of(ranks: Option<Vec<u8>>, common: Option<Vec<u8>>, keys: &DayKeys) -> Vec<WhaleCount> {
    match ranks {
        Some(r) if !keys.uniform.is_empty() => {
            decode_ranks(&r, Common::from_blob(common.as_deref()))
        }
        _ => Vec::new(),
    }
}

/// A version 6 or 7 chunk inflated (`None`: it does not inflate).
fn inflate(chunk: &[u8]) -> Option<Vec<u8>> {
    let mut raw = Vec::new();
    DeflateDecoder::new(chunk).read_to_end(&mut raw).ok()?;
    Some(raw)
}

/// A version-9 chunk decompressed (`None`: it does not).
fn zstd_raw(chunk: &[u8]) -> Option<Vec<u8>> {
    zstd::stream::decode_all(chunk).ok()
}

/// The package id of `package` (0 when it was never stored: no row has it).
pub(super) fn package_id(conn: &rusqlite::Connection, package: &str) -> rusqlite::Result<i64> {
    Ok(conn
        .prepare_cached("SELECT id FROM package_totals WHERE package = ?1")?
        .query_row([package], |r| r.get(0))
        .optional()?
        .unwrap_or(0))
}

/// The error of a blob that does not decode.
pub(super) fn corrupt(date: &str) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(
        0,
        rusqlite::types::Type::Blob,
        format!("breakdown of {date} does not decode").into(),
    )
}
