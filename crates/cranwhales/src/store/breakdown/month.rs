//! Version 12: a closed month's breakdowns packed by package (issue 34's store budget). A day's
//! chunks number its keys for that day and write each package's keys again every day; a month
//! packed writes each package's keys once, then per key the days it has and its counts on them,
//! exactly the counts the days held. On the real months (`make bench-ingest PART=months`) that
//! took 0.59-0.77x the bytes and 0.47-0.68x the pages of the daily chunks, and a package over a
//! range reads one blob per packed month instead of one per day.
//!
//! Two tables:
//! - `breakdown_month_keys (month, keys)`: the month's key strings (every string of its packed
//!   days' `breakdown_keys`, numbered from 1, 0 the missing field), its R builds as triples of
//!   those numbers, then a varint bitmap of the packed days (bit: day of month - 1);
//! - `breakdown_months (month_chunk, data)`: packages' parts in zstd chunks that fill a page, as
//!   a day's (`super::write_chunks`), at month × 2^20 + the chunk's first package id. A
//!   package's part: its versions, countries and builds, each a varint count of entries, each
//!   entry its key (a version as text, else the difference of its month number from the entry's
//!   before), a varint bitmap of its days (bit: day of month - 1) and its counts on each of those
//!   days in order, as a day's part writes them (`super::counts`).
//!
//! Packed with the package history (`history::compact_month`), or on its own for a month packed
//! before version 12 (`pending`). Only days in version 11's form are packed (older forms keep
//! their daily rows). A packed day's daily chunks are deleted with the packing; a day stored
//! again later has daily chunks again, and a day is read from its month only when it has none
//! (`super::days`), so a replaced day is never read from its month's older pack. Its
//! `breakdown_keys` row stays: its uniform whales and its filters flag are the day's own.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use rusqlite::{params, Connection, OptionalExtension};

use super::decode::{decode_keys, DayKeys, Reader};
use super::{text, varint, write_chunks};
use crate::store::codec::{month_start, PACKAGE_IDS};

/// A month's key strings and R builds, numbered as its packed parts use them.
#[derive(Debug, Default)]
pub(super) struct MonthKeys {
    /// The strings, index 0 the missing field.
    pub keys: Arc<Vec<Option<String>>>,
    /// The R builds: key numbers of OS, R version and arch.
    pub builds: Arc<Vec<[u32; 3]>>,
    /// Days of the month packed (bit: day of month - 1).
    pub days: u64,
}

/// The numbering a packing builds: strings and builds get numbers as first met.
struct Numbering {
    keys: Vec<Option<String>>,
    key_index: HashMap<Option<String>, u32>,
    builds: Vec<[u32; 3]>,
    build_index: HashMap<[u32; 3], u32>,
}

impl Numbering {
    fn new() -> Numbering {
        Numbering {
            keys: vec![None],
            key_index: HashMap::from([(None, 0)]),
            builds: Vec::new(),
            build_index: HashMap::new(),
        }
    }

    fn key(&mut self, s: &Option<String>) -> u32 {
        if let Some(&n) = self.key_index.get(s) {
            return n;
        }
        let n = self.keys.len() as u32;
        self.keys.push(s.clone());
        self.key_index.insert(s.clone(), n);
        n
    }

    fn build(&mut self, b: [u32; 3]) -> u32 {
        *self.build_index.entry(b).or_insert_with(|| {
            self.builds.push(b);
            self.builds.len() as u32 - 1
        })
    }

    /// The numbers, in this month's numbering, of a table's strings and builds.
    fn translate(&mut self, keys: &[Option<String>], builds: &[[u32; 3]]) -> Option<Translation> {
        let strings: Vec<u32> = keys.iter().map(|k| self.key(k)).collect();
        let mut out = Vec::with_capacity(builds.len());
        for b in builds {
            let mut t = [0u32; 3];
            for (x, &k) in t.iter_mut().zip(b) {
                *x = *strings.get(k as usize)?;
            }
            out.push(self.build(t));
        }
        Some(Translation {
            strings,
            builds: out,
        })
    }

    fn encode(&self, days: u64) -> Vec<u8> {
        let mut out = Vec::new();
        varint(&mut out, self.keys.len() as u64 - 1);
        for k in &self.keys[1..] {
            text(&mut out, k.as_deref());
        }
        varint(&mut out, self.builds.len() as u64);
        for b in &self.builds {
            b.iter().for_each(|&k| varint(&mut out, u64::from(k)));
        }
        varint(&mut out, days);
        out
    }
}

/// A table's key and build numbers (a day's, or an older pack's) in the month's numbering.
struct Translation {
    strings: Vec<u32>,
    builds: Vec<u32>,
}

/// A month keys blob read back.
pub(super) fn decode_month_keys(b: &[u8]) -> Option<MonthKeys> {
    let mut r = Reader { b, at: 0 };
    let (keys, builds) = (r.strings()?, r.builds()?);
    let days = r.varint()?;
    (r.at == b.len()).then_some(MonthKeys {
        keys: Arc::new(keys),
        builds: Arc::new(builds),
        days,
    })
}

/// One cell of a package's month: a day's counts of one key, as bytes in `Matrix::arena`.
#[derive(Debug, Clone, Copy)]
struct Cell {
    day: u8,
    at: u32,
    len: u32,
}

/// One package's month being packed: per dimension, per key, its cells.
#[derive(Debug, Default)]
struct Matrix {
    arena: Vec<u8>,
    versions: Vec<(Option<String>, Vec<Cell>)>,
    /// Countries (0) and builds (1), by month number.
    dims: [BTreeMap<u32, Vec<Cell>>; 2],
}

impl Matrix {
    fn cell(&mut self, day: u8, counts: &[u8]) -> Cell {
        let at = self.arena.len() as u32;
        self.arena.extend_from_slice(counts);
        Cell {
            day,
            at,
            len: counts.len() as u32,
        }
    }

    fn version(&mut self, v: Option<&str>, day: u8, counts: &[u8]) {
        let c = self.cell(day, counts);
        match self.versions.iter_mut().find(|(k, _)| k.as_deref() == v) {
            Some((_, cells)) => cells.push(c),
            None => self.versions.push((v.map(str::to_owned), vec![c])),
        }
    }

    fn key(&mut self, dim: usize, key: u32, day: u8, counts: &[u8]) {
        let c = self.cell(day, counts);
        self.dims[dim].entry(key).or_default().push(c);
    }

    /// Adds a day's part (version 9's form, its keys numbered as `t` translates).
    fn add_day(&mut self, part: &[u8], day: u8, t: &Translation) -> Option<()> {
        let mut r = Reader { b: part, at: 0 };
        for _ in 0..r.varint()? {
            let v = r.text()?;
            let at = r.at;
            r.counts()?;
            self.version(v, day, &part[at..r.at]);
        }
        for (dim, table) in [&t.strings, &t.builds].into_iter().enumerate() {
            let mut key = 0u64;
            for _ in 0..r.varint()? {
                key = key.checked_add(r.varint()?)?;
                let at = r.at;
                r.counts()?;
                let k = *table.get(usize::try_from(key).ok()?)?;
                self.key(dim, k, day, &part[at..r.at]);
            }
        }
        (r.at == part.len()).then_some(())
    }

    fn encode(&mut self) -> Vec<u8> {
        let mut out = Vec::new();
        let cells = |out: &mut Vec<u8>, arena: &[u8], cells: &mut Vec<Cell>| {
            cells.sort_by_key(|c| c.day);
            varint(out, cells.iter().fold(0u64, |m, c| m | 1 << c.day));
            for c in cells.iter() {
                out.extend_from_slice(&arena[c.at as usize..(c.at + c.len) as usize]);
            }
        };
        self.versions.sort_by(|a, b| a.0.cmp(&b.0));
        varint(&mut out, self.versions.len() as u64);
        for (v, cs) in &mut self.versions {
            text(&mut out, v.as_deref());
            cells(&mut out, &self.arena, cs);
        }
        for dim in &mut self.dims {
            varint(&mut out, dim.len() as u64);
            let mut last = 0;
            for (&k, cs) in dim.iter_mut() {
                varint(&mut out, u64::from(k - last));
                last = k;
                cells(&mut out, &self.arena, cs);
            }
        }
        out
    }
}

/// Calls `f(dim, version, key, day, counts)` for each cell of a packed part (`dim` 0: versions,
/// with `version`; 1 countries and 2 builds, with `key`, a month number).
fn each_cell<'a>(
    part: &'a [u8],
    mut f: impl FnMut(usize, Option<&'a str>, u32, u8, &'a [u8]),
) -> Option<()> {
    let mut r = Reader { b: part, at: 0 };
    for dim in 0..3 {
        let mut key = 0u64;
        for _ in 0..r.varint()? {
            let v = if dim == 0 {
                r.text()?
            } else {
                key = key.checked_add(r.varint()?)?;
                None
            };
            let days = r.varint()?;
            for day in 0..64u8 {
                if days & (1 << day) != 0 {
                    let at = r.at;
                    r.counts()?;
                    f(dim, v, u32::try_from(key).ok()?, day, &part[at..r.at]);
                }
            }
        }
    }
    (r.at == part.len()).then_some(())
}

/// A package's month read back: each of its days' parts in version 9's form, numbered as the
/// month's keys (`MonthKeys`).
pub(super) struct PackageMonth {
    pub keys: MonthKeys,
    index: HashMap<Option<String>, u32>,
    /// Day of month - 1 → the package's part that day.
    pub parts: HashMap<u8, Vec<u8>>,
}

impl PackageMonth {
    /// The keys a packed day's part is read with: the month's strings and builds, the day's own
    /// filters flag and uniform whales (renumbered: their keys are among the month's strings).
    pub fn day_keys(&self, day: &DayKeys) -> Option<DayKeys> {
        let mut uniform = Vec::with_capacity(day.uniform.len());
        for &(rank, keys) in &day.uniform {
            let mut k = [None; 4];
            for (x, key) in k.iter_mut().zip(keys) {
                if let Some(key) = key {
                    *x = Some(*self.index.get(day.keys.get(key as usize)?)?);
                }
            }
            uniform.push((rank, k));
        }
        Some(DayKeys {
            keys: self.keys.keys.clone(),
            filters: day.filters,
            uniform,
            builds: Some(self.keys.builds.clone()),
            by_first: true,
        })
    }
}

/// Package `id`'s part of `month`'s pack; `Ok(None)` when the month is not packed, `Err` when
/// its blobs do not decode.
pub(super) fn read(
    conn: &Connection,
    id: i64,
    month: i64,
) -> rusqlite::Result<Option<PackageMonth>> {
    let keys: Option<Vec<u8>> = conn
        .prepare_cached("SELECT keys FROM breakdown_month_keys WHERE month = ?1")?
        .query_row([month], |r| r.get(0))
        .optional()?;
    let Some(keys) = keys else {
        return Ok(None);
    };
    let keys = decode_month_keys(&keys).ok_or_else(|| corrupt(month))?;
    let base = month * PACKAGE_IDS;
    let chunk: Option<(i64, Vec<u8>)> = conn
        .prepare_cached(
            "SELECT month_chunk, data FROM breakdown_months WHERE month_chunk BETWEEN ?1 AND ?2
             ORDER BY month_chunk DESC LIMIT 1",
        )?
        .query_row([base, base + id], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?;
    let part = match chunk {
        Some((key, data)) => {
            let raw = zstd::stream::decode_all(&data[..]).map_err(|_| corrupt(month))?;
            super::decode::part(Some(&raw), id - (key - base)).ok_or_else(|| corrupt(month))?
        }
        None => Vec::new(),
    };
    let parts = day_parts(&part).ok_or_else(|| corrupt(month))?;
    let index = (keys.keys.iter().enumerate())
        .map(|(i, k)| (k.clone(), i as u32))
        .collect();
    Ok(Some(PackageMonth { keys, index, parts }))
}

/// A packed part split into its days' parts (version 9's form, month numbers).
fn day_parts(part: &[u8]) -> Option<HashMap<u8, Vec<u8>>> {
    type Day<'a> = (Vec<(Option<&'a str>, &'a [u8])>, [Vec<(u32, &'a [u8])>; 2]);
    let mut days: BTreeMap<u8, Day<'_>> = BTreeMap::new();
    // `each_cell` gives a dimension's keys in order, each key's days in order: a day's entries
    // come out in key order, as a day's part lists them.
    each_cell(part, |dim, v, k, day, c| {
        let d = days.entry(day).or_default();
        match dim {
            0 => d.0.push((v, c)),
            _ => d.1[dim - 1].push((k, c)),
        }
    })?;
    let mut out = HashMap::with_capacity(days.len());
    for (day, (versions, dims)) in days {
        let mut b = Vec::new();
        varint(&mut b, versions.len() as u64);
        for (v, c) in versions {
            text(&mut b, v);
            b.extend_from_slice(c);
        }
        for entries in dims {
            varint(&mut b, entries.len() as u64);
            let mut last = 0;
            for (k, c) in entries {
                varint(&mut b, u64::from(k - last));
                last = k;
                b.extend_from_slice(c);
            }
        }
        out.insert(day, b);
    }
    Some(out)
}

/// Calls `f(id - first, part)` for each package's part of a decompressed chunk.
fn each_part(raw: &[u8], mut f: impl FnMut(i64, &[u8]) -> Option<()>) -> Option<()> {
    let mut r = Reader { b: raw, at: 0 };
    while r.at < raw.len() {
        let (at, len) = (i64::try_from(r.varint()?).ok()?, r.varint()? as usize);
        let end = r.at.checked_add(len)?;
        f(at, raw.get(r.at..end)?)?;
        r.at = end;
    }
    Some(())
}

/// Package ids packed at a time: a month of the largest days (~1.5M cells a day) is too much to
/// hold at once; a batch's chunks end at its last package (a few part-full chunks a month).
const BATCH: i64 = 4096;

/// A day packed from its own chunks, its keys numbered as the month's by `t`.
struct Daily {
    day: i64,
    offset: u8,
    t: Translation,
}

/// Packs `month`'s breakdowns: its stored `days` in version 11's form, each from its daily
/// chunks or, packed before and not stored again since, from the month's older pack; then
/// deletes those daily chunks and the older pack. Returns the packages packed.
pub(crate) fn pack(conn: &Connection, month: i64, days: &[i64]) -> rusqlite::Result<usize> {
    let base = month * PACKAGE_IDS;
    let old: Option<Vec<u8>> = conn
        .prepare_cached("SELECT keys FROM breakdown_month_keys WHERE month = ?1")?
        .query_row([month], |r| r.get(0))
        .optional()?;
    let old = old
        .map(|b| decode_month_keys(&b).ok_or_else(|| corrupt(month)))
        .transpose()?;
    let mut numbering = Numbering::new();
    let (daily, packed, from_old) = sources(conn, month, days, old.as_ref(), &mut numbering)?;
    let older = match (&old, from_old) {
        (Some(o), 1..) => {
            Some((numbering.translate(&o.keys, &o.builds)).ok_or_else(|| corrupt(month))?)
        }
        _ => None,
    };
    let last: i64 = conn.query_row("SELECT coalesce(max(id), 0) FROM package_totals", [], |r| {
        r.get(0)
    })?;
    let (mut staged, mut packages) = (Vec::new(), 0);
    for lo in (0..=last).step_by(BATCH as usize) {
        let ids = lo..lo + BATCH;
        let mut mats: BTreeMap<i64, Matrix> = BTreeMap::new();
        for d in &daily {
            let at = d.day * PACKAGE_IDS;
            read_range(conn, "breakdowns", "day_chunk", at, &ids, |id, p| {
                (mats.entry(id).or_default()).add_day(p, d.offset, &d.t)
            })?
            .ok_or_else(|| corrupt(month))?;
        }
        if let Some(t) = &older {
            read_range(
                conn,
                "breakdown_months",
                "month_chunk",
                base,
                &ids,
                |id, p| add_older(mats.entry(id).or_default(), p, from_old, t),
            )?
            .ok_or_else(|| corrupt(month))?;
        }
        let parts: Vec<(i64, Vec<u8>)> = (mats.into_iter())
            .map(|(id, mut m)| (id, m.encode()))
            .collect();
        packages += parts.len();
        let mut stage = |key: i64, data: Vec<u8>| {
            staged.push((key, data));
            Ok(())
        };
        write_chunks(&mut stage, base, &parts)?;
    }
    conn.prepare_cached("DELETE FROM breakdown_months WHERE month_chunk BETWEEN ?1 AND ?2")?
        .execute([base, base + PACKAGE_IDS - 1])?;
    let mut del =
        conn.prepare_cached("DELETE FROM breakdowns WHERE day_chunk BETWEEN ?1 AND ?2")?;
    for d in &daily {
        del.execute([d.day * PACKAGE_IDS, (d.day + 1) * PACKAGE_IDS - 1])?;
    }
    conn.prepare_cached(
        "INSERT OR REPLACE INTO breakdown_month_keys (month, keys) VALUES (?1, ?2)",
    )?
    .execute(params![month, numbering.encode(packed)])?;
    let mut ins =
        conn.prepare_cached("INSERT INTO breakdown_months (month_chunk, data) VALUES (?1, ?2)")?;
    for (key, data) in staged {
        ins.execute(params![key, data])?;
    }
    Ok(packages)
}

/// Where each of `days` is packed from: its own chunks (`Daily`, its keys numbered by
/// `numbering`) or the month's older pack `old`; returns those days, and bitmaps (bit: day of
/// month - 1) of the days packed and of those read from `old`. Days in an older form are left.
fn sources(
    conn: &Connection,
    month: i64,
    days: &[i64],
    old: Option<&MonthKeys>,
    numbering: &mut Numbering,
) -> rusqlite::Result<(Vec<Daily>, u64, u64)> {
    let first = month_start(month);
    // Days packed, and of them those read from the older pack (bit: day of month - 1).
    let (mut packed, mut from_old) = (0u64, 0u64);
    let mut daily = Vec::new();
    let mut keys_st = conn.prepare_cached("SELECT keys FROM breakdown_keys WHERE day = ?1")?;
    let mut has_st = conn.prepare_cached(
        "SELECT EXISTS (SELECT 1 FROM breakdowns WHERE day_chunk BETWEEN ?1 AND ?2)",
    )?;
    for &day in days {
        let kb: Option<Vec<u8>> = keys_st.query_row([day], |r| r.get(0)).optional()?;
        let Some(kb) = kb else { continue };
        let dk = decode_keys(&kb).ok_or_else(|| corrupt(month))?;
        let (true, Some(builds)) = (dk.by_first, &dk.builds) else {
            continue;
        };
        let offset = u8::try_from(day - first)
            .ok()
            .filter(|&o| o < 31)
            .ok_or_else(|| corrupt(month))?;
        let t = (numbering.translate(&dk.keys, builds)).ok_or_else(|| corrupt(month))?;
        let own: bool = has_st
            .query_row([day * PACKAGE_IDS, (day + 1) * PACKAGE_IDS - 1], |r| {
                r.get(0)
            })?;
        if own {
            daily.push(Daily { day, offset, t });
        } else if old.is_some_and(|o| o.days & (1 << offset) != 0) {
            from_old |= 1 << offset;
        } else {
            continue;
        }
        packed |= 1 << offset;
    }
    Ok((daily, packed, from_old))
}

/// Calls `f(id, part)` for each package part with its id in `ids` of the chunks of `table`
/// (keyed by `key` = `base` + the chunk's first package id) that hold such ids; `Ok(None)` when
/// a chunk or part does not decode.
fn read_range(
    conn: &Connection,
    table: &str,
    key: &str,
    base: i64,
    ids: &std::ops::Range<i64>,
    mut f: impl FnMut(i64, &[u8]) -> Option<()>,
) -> rusqlite::Result<Option<()>> {
    let mut st = conn.prepare_cached(&format!(
        "SELECT {key}, data FROM {table} WHERE {key} BETWEEN
         coalesce((SELECT max({key}) FROM {table} WHERE {key} BETWEEN ?1 AND ?2), ?2) AND ?3"
    ))?;
    let mut rows = st.query([base, base + ids.start, base + ids.end - 1])?;
    while let Some(r) = rows.next()? {
        let first = r.get::<_, i64>(0)? - base;
        let Ok(raw) = zstd::stream::decode_all(r.get_ref(1)?.as_blob()?) else {
            return Ok(None);
        };
        let ok = each_part(&raw, |at, p| match first + at {
            id if ids.contains(&id) => f(id, p),
            _ => Some(()),
        });
        if ok.is_none() {
            return Ok(None);
        }
    }
    Ok(Some(()))
}

/// Adds to `m` the cells of an older pack's part `p` on the days `from_old` names (bit: day of
/// month - 1), renumbered by `t`.
fn add_older(m: &mut Matrix, p: &[u8], from_old: u64, t: &Translation) -> Option<()> {
    let mut ok = true;
    each_cell(p, |dim, v, k, day, c| {
        if from_old & (1 << day) == 0 {
            return;
        }
        let table = if dim == 1 { &t.strings } else { &t.builds };
        match (dim, table.get(k as usize)) {
            (0, _) => m.version(v, day, c),
            (_, Some(&k)) => m.key(dim - 1, k, day, c),
            (_, None) => ok = false,
        }
    })?;
    ok.then_some(())
}

/// Months whose package history is packed but whose breakdowns are not (packed before version
/// 12), each with its stored days.
pub(crate) fn pending(conn: &Connection) -> rusqlite::Result<Vec<(i64, Vec<i64>)>> {
    let mut st = conn.prepare(
        "SELECT month FROM history_months WHERE valid = 1
         AND month NOT IN (SELECT month FROM breakdown_month_keys) ORDER BY month",
    )?;
    let months: Vec<i64> = st
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    let mut days = conn.prepare_cached(
        "SELECT unixepoch(date) / 86400 FROM days
         WHERE date BETWEEN date(?1 * 86400, 'unixepoch') AND date(?2 * 86400, 'unixepoch')
         ORDER BY date",
    )?;
    let mut out = Vec::with_capacity(months.len());
    for m in months {
        let d: Vec<i64> = days
            .query_map([month_start(m), month_start(m + 1) - 1], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        out.push((m, d));
    }
    Ok(out)
}

/// The error of a month's pack that does not decode.
fn corrupt(month: i64) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(
        0,
        rusqlite::types::Type::Blob,
        format!("breakdowns of month {month} (months since 1970-01) do not decode").into(),
    )
}
