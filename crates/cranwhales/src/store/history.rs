//! `package_history` (since version 10): each package's per-day values of a closed calendar
//! month packed in one row, keyed by (package id, month), so a package over all stored days
//! reads a few adjacent leaf pages instead of one `packages` page per stored day (5,200 days on
//! a cold page cache: ~1 s). `packages` stays the one table a day's ingest writes; a month is
//! packed afterwards, all packages at once (`compact_month`): by the migration, by
//! `cranwhales migrate` and at the end of `cranwhales ingest` once all its days are stored.
//! Writing a row per package and day here instead would rewrite a leaf page of every package
//! every day (see `schema::SCHEMA_VERSION` on why `packages` has no (package, date) index).
//!
//! `history_months` says which months are packed, and in which generation: a day stored,
//! replaced or removed clears its month's `valid` in its own transaction (`invalidate`), and
//! the reader takes a packed row only for a valid month and only of that month's generation
//! (a package no longer in a re-packed month keeps an older row, never read). Days of other
//! months are read from `packages` as before.
//!
//! A row's `days` blob: deflated, per stored day of the month with a download of the package,
//! in day order: varints day-of-month offset (0..=30), downloads, then downloaders, small,
//! repeats and the `whale_ranks` length each as value + 1 (0: NULL), then the `whale_ranks`
//! bytes as stored (relative to the day's `days.common_whales`, `codec`).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::{Read, Write};

use flate2::{read::DeflateDecoder, write::DeflateEncoder, Compression};
use rusqlite::{params, Connection, OptionalExtension};

pub use super::codec::month_of;
use super::codec::{day_range, month_start};
use super::{sql, Result, Store};
use crate::date::Day;

/// The tables (created by version 10's migration, empty until months are packed).
pub const TABLES: &str = "
CREATE TABLE IF NOT EXISTS history_months (
    month INTEGER PRIMARY KEY,
    generation INTEGER NOT NULL,
    valid INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS package_history (
    id INTEGER NOT NULL,
    month INTEGER NOT NULL,
    generation INTEGER NOT NULL,
    days BLOB NOT NULL,
    PRIMARY KEY (id, month)
) WITHOUT ROWID;
";

/// A package on one stored day, as its `packages` row holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DayValues {
    /// Downloads.
    pub downloads: u64,
    /// Unique downloaders (NULL on days stored before version 2).
    pub downloaders: Option<u64>,
    /// `whale_ranks` as stored.
    pub ranks: Option<Vec<u8>>,
    /// Small downloads (NULL before version 3).
    pub small: Option<u64>,
    /// Repeated downloads (NULL before version 3).
    pub repeats: Option<u64>,
}

impl Store {
    /// Packs the months `pending` names (`whole_only`: only months whose every day is stored,
    /// as after an ingest; else also the earlier months with gaps, as `cranwhales migrate`
    /// does), each in its own transaction, with their breakdowns (`breakdown::month`), and the
    /// breakdowns of months packed before version 12; returns how many months.
    pub fn pack_months(&mut self, whole_only: bool) -> Result<usize> {
        self.pack_months_with(whole_only, &mut |_| {})
    }

    /// [`Store::pack_months`], telling `progress` before each month it packs (a month of the
    /// largest days takes seconds, a migrated history minutes).
    pub fn pack_months_with(
        &mut self,
        whole_only: bool,
        progress: &mut dyn FnMut(&PackStep),
    ) -> Result<usize> {
        self.check_writable("cannot pack months of package history")?;
        let path = self.path.clone();
        let mut run = |conn: &mut Connection| -> rusqlite::Result<usize> {
            let months = pending(conn, whole_only)?;
            for (i, (month, days)) in months.iter().enumerate() {
                progress(&PackStep::new(
                    *month,
                    i,
                    months.len(),
                    "package history and breakdowns",
                ));
                let tx =
                    conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
                // Re-read inside the transaction: another writer may have changed the month.
                if pending(&tx, whole_only)?
                    .iter()
                    .any(|(m, d)| m == month && d == days)
                {
                    compact_month(&tx, *month, days)?;
                }
                tx.commit()?;
            }
            // Months packed before version 12, whose breakdowns are still a day at a time.
            let breakdowns = super::breakdown::pending_months(conn)?;
            for (i, (month, days)) in breakdowns.iter().enumerate() {
                progress(&PackStep::new(*month, i, breakdowns.len(), "breakdowns"));
                let tx =
                    conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
                super::breakdown::pack_month(&tx, *month, days)?;
                tx.commit()?;
            }
            Ok(months.len() + breakdowns.len())
        };
        run(&mut self.conn).map_err(sql(&path))
    }
}

/// A month about to be packed, for progress lines.
#[derive(Debug, Clone)]
pub struct PackStep {
    /// The month, as YYYY-MM.
    pub month: String,
    /// Months of this kind packed before it.
    pub done: usize,
    /// Months of this kind to pack.
    pub total: usize,
    /// What is packed: "package history and breakdowns", or "breakdowns" (a month packed
    /// before version 12).
    pub what: &'static str,
}

impl PackStep {
    fn new(month: i64, done: usize, total: usize, what: &'static str) -> PackStep {
        let day = Day::month_start(month).to_string();
        PackStep {
            month: day[..7].to_owned(),
            done,
            total,
            what,
        }
    }
}

/// Marks day `day`'s month as not packed (a day of it was stored, replaced or removed): readers
/// go back to its `packages` rows until it is packed again.
pub fn invalidate(conn: &Connection, day: i64) -> rusqlite::Result<()> {
    conn.prepare_cached("UPDATE history_months SET valid = 0 WHERE month = ?1 AND valid = 1")?
        .execute([month_of(day)])?;
    Ok(())
}

/// Months to pack, each with its stored days: those not packed (or no longer valid) that are
/// whole (every calendar day stored) or, unless `whole_only`, before the newest stored day's
/// month (a gap in the source's days must not keep a month open for ever).
pub fn pending(conn: &Connection, whole_only: bool) -> rusqlite::Result<Vec<(i64, Vec<i64>)>> {
    let mut st = conn.prepare("SELECT unixepoch(date) / 86400 FROM days ORDER BY date")?;
    let days: Vec<i64> = st
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    let Some(&newest) = days.last() else {
        return Ok(Vec::new());
    };
    let mut st = conn.prepare("SELECT month FROM history_months WHERE valid = 1")?;
    let packed: HashSet<i64> = st
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    let mut by_month: BTreeMap<i64, Vec<i64>> = BTreeMap::new();
    for d in days {
        by_month.entry(month_of(d)).or_default().push(d);
    }
    let open = month_of(newest);
    Ok(by_month
        .into_iter()
        .filter(|(m, days)| {
            let whole = days.len() as i64 == month_start(m + 1) - month_start(*m);
            !packed.contains(m) && (whole || (!whole_only && *m < open))
        })
        .collect())
}

/// Packs `month` (its stored `days`) from `packages`: one row per package with a download in
/// it, under a new generation; returns the rows written.
pub fn compact_month(conn: &Connection, month: i64, days: &[i64]) -> rusqlite::Result<usize> {
    let generation: i64 = conn
        .query_row(
            "SELECT generation FROM history_months WHERE month = ?1",
            [month],
            |r| r.get(0),
        )
        .optional()?
        .map_or(1, |g: i64| g + 1);
    let first = month_start(month);
    let mut by_id: BTreeMap<i64, Vec<u8>> = BTreeMap::new();
    let mut st = conn.prepare_cached(
        "SELECT day_package, downloads, downloaders, whale_ranks, small, repeats FROM packages
         WHERE day_package BETWEEN ?1 AND ?2",
    )?;
    for &day in days {
        let (lo, hi) = day_range(day);
        let mut rows = st.query(params![lo, hi])?;
        while let Some(r) = rows.next()? {
            let id = r.get::<_, i64>(0)? - lo;
            let v = DayValues {
                downloads: r.get(1)?,
                downloaders: r.get(2)?,
                ranks: r.get(3)?,
                small: r.get(4)?,
                repeats: r.get(5)?,
            };
            encode_day(by_id.entry(id).or_default(), (day - first) as u64, &v);
        }
    }
    let mut ins = conn.prepare_cached(
        "INSERT OR REPLACE INTO package_history (id, month, generation, days) VALUES (?1, ?2, ?3, ?4)",
    )?;
    for (id, raw) in &by_id {
        ins.execute(params![id, month, generation, deflate(raw)])?;
    }
    conn.execute(
        "INSERT INTO history_months (month, generation, valid) VALUES (?1, ?2, 1)
         ON CONFLICT (month) DO UPDATE SET generation = excluded.generation, valid = 1",
        [month, generation],
    )?;
    // The month's breakdowns are packed with it (version 12, `breakdown::month`).
    super::breakdown::pack_month(conn, month, days)?;
    Ok(by_id.len())
}

/// Package `id`'s packed days in months `first..=last`: the valid months, and the values of each
/// of their days with a download (day number → values; a valid month's stored day not here had
/// none).
pub fn read(
    conn: &Connection,
    id: i64,
    first: i64,
    last: i64,
) -> rusqlite::Result<(HashSet<i64>, HashMap<i64, DayValues>)> {
    let mut st = conn.prepare_cached(
        "SELECT month, generation FROM history_months
         WHERE month BETWEEN ?1 AND ?2 AND valid = 1",
    )?;
    let valid: HashMap<i64, i64> = st
        .query_map([first, last], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    let mut out = HashMap::new();
    if !valid.is_empty() {
        let mut st = conn.prepare_cached(
            "SELECT month, generation, days FROM package_history
             WHERE id = ?1 AND month BETWEEN ?2 AND ?3",
        )?;
        let mut rows = st.query(params![id, first, last])?;
        while let Some(r) = rows.next()? {
            let (month, generation): (i64, i64) = (r.get(0)?, r.get(1)?);
            if valid.get(&month) != Some(&generation) {
                continue;
            }
            let blob = r.get_ref(2)?.as_blob()?;
            decode_month(blob, month_start(month), &mut out).ok_or_else(|| corrupt(id, month))?;
        }
    }
    Ok((valid.into_keys().collect(), out))
}

fn corrupt(id: i64, month: i64) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(
        3,
        rusqlite::types::Type::Blob,
        format!("package_history row ({id}, {month}) cannot be decoded").into(),
    )
}

fn encode_day(out: &mut Vec<u8>, offset: u64, v: &DayValues) {
    let opt = |x: Option<u64>| x.map_or(0, |n| n + 1);
    varint(out, offset);
    varint(out, v.downloads);
    varint(out, opt(v.downloaders));
    varint(out, opt(v.small));
    varint(out, opt(v.repeats));
    varint(out, opt(v.ranks.as_ref().map(|b| b.len() as u64)));
    if let Some(b) = &v.ranks {
        out.extend_from_slice(b);
    }
}

/// Adds the days of one packed row (its month starting at day number `first`) to `out`; `None`
/// if the blob is not one `compact_month` wrote.
fn decode_month(blob: &[u8], first: i64, out: &mut HashMap<i64, DayValues>) -> Option<()> {
    let mut raw = Vec::new();
    DeflateDecoder::new(blob).read_to_end(&mut raw).ok()?;
    let mut at = 0usize;
    let mut days = Vec::new();
    while at < raw.len() {
        let opt = |n: u64| n.checked_sub(1);
        let mut f = [0u64; 6];
        for x in &mut f {
            *x = varint_at(&raw, &mut at)?;
        }
        let [offset, downloads, downloaders, small, repeats, len] = f;
        let (downloaders, small, repeats) = (opt(downloaders), opt(small), opt(repeats));
        let ranks = match opt(len) {
            None => None,
            Some(len) => {
                let end = at.checked_add(usize::try_from(len).ok()?)?;
                let b = raw.get(at..end)?.to_vec();
                at = end;
                Some(b)
            }
        };
        let v = DayValues {
            downloads,
            downloaders,
            ranks,
            small,
            repeats,
        };
        days.push((first + i64::try_from(offset).ok()?, v));
    }
    out.extend(days);
    Some(())
}

fn deflate(raw: &[u8]) -> Vec<u8> {
    let mut e = DeflateEncoder::new(Vec::new(), Compression::default());
    // Writing to a Vec cannot fail.
    let _ = e.write_all(raw);
    e.finish().unwrap_or_default()
}

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn varint_at(b: &[u8], at: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *b.get(*at)?;
        *at += 1;
        v |= u64::from(byte & 0x7f) << shift;
        if byte < 0x80 {
            return Some(v);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_month_of_days_round_trips() {
        let days = [
            (
                0,
                DayValues {
                    downloads: 300,
                    downloaders: Some(200),
                    ranks: Some(vec![0xFE, 1, 2, 3]),
                    small: Some(4),
                    repeats: Some(0),
                },
            ),
            (
                30,
                DayValues {
                    downloads: 1,
                    downloaders: None,
                    ranks: None,
                    small: None,
                    repeats: None,
                },
            ),
        ];
        let mut raw = Vec::new();
        for (o, v) in &days {
            encode_day(&mut raw, *o, v);
        }
        let mut out = HashMap::new();
        decode_month(&deflate(&raw), 1000, &mut out).unwrap();
        assert_eq!(out.len(), 2);
        assert_eq!(out[&1000], days[0].1);
        assert_eq!(out[&1030], days[1].1);
        // A cut blob is refused, not misread.
        let mut cut = HashMap::new();
        assert!(decode_month(&deflate(&raw[..raw.len() - 2]), 0, &mut cut).is_none());
    }
}
