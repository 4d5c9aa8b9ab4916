//! Breakdowns (issue 34): each package's downloads on each day by version, country, OS, R
//! version and arch, with the top-100 whales' share of each key, as counted at ingest
//! (`day::breakdown`). Written in the day's one transaction, removed with it.
//!
//! Storage (since version 6), two rowid tables:
//! - `breakdown_keys (day, keys)`: the day's distinct country, OS, R version and arch strings,
//!   numbered from 1 (0 is a missing field); its row also says that the day has breakdowns (days
//!   stored before version 6 have none until they are ingested again);
//! - `breakdowns (day_chunk, data)`: the packages of ids `128k .. 128k + 127` on a day in one
//!   deflated blob (`day_chunk` = day number × 2^13 + id / 128, so a package over a range is one
//!   rowid seek and one ~5 KB inflate per stored day). A package's part of a chunk: varint
//!   `id % 128`, varint length, then its versions and each of `day::breakdown::DIMS`, each a
//!   varint count of entries, each entry its key (a version: varint length + 1, 0 when missing,
//!   then its bytes; else a varint key number) and its counts (`counts` below). Deflating 128
//!   packages together halves them (one blob per package and day took 610 KB on 2015-01-08;
//!   chunks: ~240 KB).
//!
//! Since version 7 (the format extends version 6's, whose rows read the same):
//! - a key's counts may carry its small and repeated downloads (tag 3 in `counts`);
//! - the `breakdown_keys` blob has a tail after the key strings: varint 1 (the day's small and
//!   repeats are counted per key; a version-6 blob has no tail, and such a day is named in
//!   `days_without_filters` when they are asked to be left out), varint n, then per uniform
//!   whale (`day::breakdown`) varint rank, varint mask (bit d: uniform in `DIMS[d]`) and the key
//!   number of each field in the mask. A whale's clean downloads are in no package's entries of
//!   a field it is uniform in: a package's part of them is read from its `packages.whale_ranks`
//!   (downloads less small and repeated ones).
//!
//! Since version 9 (written so; version 6 and 7 rows still read as above, the `breakdown_keys`
//! tail saying which a day is):
//! - the tail's first varint has bit 1 set, and after the uniform whales come the day's R builds
//!   (`Breakdowns::builds`): varint n, then per build the key numbers of its OS, R version and
//!   arch. A whale uniform in one of those three is uniform in all three;
//! - a package's part is its versions (as above), then its countries and its builds, each a
//!   varint count of entries, each entry the difference of its key (country key number or build
//!   index) from the entry's before (the first: from 0) and its counts. OS, R version and arch
//!   are read off the builds: one entry where version 7 wrote three;
//! - a chunk holds the packages of ids `128k .. 128j + 127` for some k ≤ j, compressed with zstd
//!   at `day_chunk` = day × 2^13 + k, as many runs of 128 ids as keep it within one 16 KB page
//!   (the store's page size: a row over a page spills to an overflow page mostly left empty; two
//!   ~13 KB chunks cannot share a page). A package's part has the varint `id - 128k`. Its chunk is
//!   the day's last at or before `id / 128`, as a version-7 package's is.
//!
//! Since version 11 (version 6 to 9 rows still read as above): the tail's first varint has bit 2
//! set, and a chunk holds the packages from any id on, as many as keep it within one page, at
//! `day_chunk` = the `day_package` of its first (day × 2^20 + id, `codec::day_package`); a
//! package's part has the varint `id - first`. Runs of 128 ids compressed to ~12 KB on the larger
//! days, so a page held one run and a quarter of the page was empty (the synthetic 2025 day: 211
//! chunks, 2.50 MB in 3.46 MB of pages; now 162 chunks of 15.3 KB on average). A package's chunk
//! is the day's last at or before its `day_package`. The two forms' keys of two days meet only
//! when one day's number is ≥ 128 times the other's (day × 2^13 + k against day × 2^20 + id):
//! never for dates after 1970-08-23.
mod read;

pub use read::{BreakdownReport, By, KeyRow, Kinds, Release, Releases, Share, SHARE_WINDOWS};

use std::io::Read;

use flate2::read::DeflateDecoder;
use rusqlite::{params, OptionalExtension, Transaction};

use super::codec::{day_package, day_range, decode_ranks, Common, WhaleCount, PACKAGE_IDS};
use crate::day::breakdown::{Breakdowns, Counts, PackageBreakdown, DIMS};
use crate::day::DayTables;

/// The tables (version 6).
pub(super) const TABLES: &str = "
CREATE TABLE IF NOT EXISTS breakdown_keys (
    day INTEGER PRIMARY KEY,
    keys BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS breakdowns (
    day_chunk INTEGER PRIMARY KEY,
    data BLOB NOT NULL
);
";

/// Package ids per chunk of a version 6 or 7 day; a version-9 chunk holds runs of this many.
const CHUNK: i64 = 128;
/// A chunk's target size, and the most it may take: one row in one 16 KB page (a chunk of one
/// package may take more).
const FILL: (usize, usize) = (15_600, 16_300);
/// The zstd level of a chunk (since version 9): level 19 made 2015-01-08's chunks 3% smaller (187 vs
/// 192 KB) in six times the time (0.30 vs 0.05 s), on the ingest's one writing thread.
const LEVEL: i32 = 9;
/// Chunk keys per day before version 11: `day_chunk` = day × `CHUNKS` + id / `CHUNK`.
const CHUNKS: i64 = PACKAGE_IDS / CHUNK;

/// Writes day `n`'s breakdowns: `ids` are (package id, index into `day.packages`), in id order.
pub(super) fn insert(
    tx: &Transaction<'_>,
    day: &DayTables,
    n: i64,
    ids: &[(i64, usize)],
) -> rusqlite::Result<()> {
    let b = &day.breakdowns;
    tx.prepare_cached("INSERT INTO breakdown_keys (day, keys) VALUES (?1, ?2)")?
        .execute(params![n, encode_keys(b)])?;
    let mut st = tx.prepare_cached("INSERT INTO breakdowns (day_chunk, data) VALUES (?1, ?2)")?;
    let compress = |raw: &[u8]| zstd::bulk::compress(raw, LEVEL).expect("compressing in memory");
    // Each package's part, in id order: (id, its bytes with their `id - first` prefix left
    // for the chunk). A chunk takes parts while its raw bytes, at the last chunk's ratio, fit
    // FILL.0; one over FILL.1 gives back as many of its last parts as its excess needs (the
    // ratio varies a little) and is compressed again.
    let parts: Vec<(i64, Vec<u8>)> = (ids.iter())
        .filter_map(|&(id, i)| b.packages.get(i).map(|p| (id, encode(p))))
        .collect();
    let (mut ratio, mut from) = (0.5, 0usize);
    while from < parts.len() {
        let first = parts[from].0;
        let (mut to, mut size) = (from, 0usize);
        while to < parts.len() && (size == 0 || (size as f64 * ratio) < FILL.0 as f64) {
            size += parts[to].1.len() + 6;
            to += 1;
        }
        let chunk = |to: usize| {
            let mut raw = Vec::with_capacity(size);
            for (id, data) in &parts[from..to] {
                varint(&mut raw, (id - first) as u64);
                varint(&mut raw, data.len() as u64);
                raw.extend_from_slice(data);
            }
            raw
        };
        let mut raw = chunk(to);
        let mut packed = compress(&raw);
        while packed.len() > FILL.1 && to > from + 1 {
            // Give back about the excess, in raw bytes at this chunk's ratio (at least a part).
            let excess = (packed.len() - FILL.0) as f64 * raw.len() as f64 / packed.len() as f64;
            let mut dropped = 0.0;
            while to > from + 1 && dropped < excess {
                to -= 1;
                dropped += parts[to].1.len() as f64;
            }
            raw = chunk(to);
            packed = compress(&raw);
        }
        ratio = packed.len() as f64 / raw.len().max(1) as f64;
        st.execute(params![day_package(n, first), packed])?;
        from = to;
    }
    Ok(())
}

/// Deletes day `n`'s breakdowns (none is fine), in either form of chunk key.
pub(super) fn delete(tx: &Transaction<'_>, n: i64) -> rusqlite::Result<()> {
    let mut st = tx.prepare_cached("DELETE FROM breakdowns WHERE day_chunk BETWEEN ?1 AND ?2")?;
    st.execute([n * CHUNKS, n * CHUNKS + CHUNKS - 1])?;
    st.execute(<[i64; 2]>::from(day_range(n)))?;
    tx.prepare_cached("DELETE FROM breakdown_keys WHERE day = ?1")?
        .execute([n])?;
    Ok(())
}

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// `downloads << 2 | tag`: tag 0 no whale, 1 all by whales (most keys of most packages on a day
/// with mirrors: 102,790 of 157,013 on 2015-01-08), 2 some, their number following; these three
/// when none is small or a repeat. Tag 3 (since version 7): varints whales, small, repeats, then
/// whale_small and whale_repeats when whales is not 0.
fn counts(out: &mut Vec<u8>, c: Counts) {
    let tag = match c.whales {
        _ if c.small + c.repeats > 0 => 3,
        0 => 0,
        w if w == c.downloads => 1,
        _ => 2,
    };
    varint(out, c.downloads << 2 | tag);
    if tag >= 2 {
        varint(out, c.whales);
    }
    if tag == 3 {
        varint(out, c.small);
        varint(out, c.repeats);
        if c.whales > 0 {
            varint(out, c.whale_small);
            varint(out, c.whale_repeats);
        }
    }
}

fn text(out: &mut Vec<u8>, s: Option<&str>) {
    match s {
        None => varint(out, 0),
        Some(s) => {
            varint(out, s.len() as u64 + 1);
            out.extend_from_slice(s.as_bytes());
        }
    }
}

fn encode_keys(b: &Breakdowns) -> Vec<u8> {
    let mut out = Vec::new();
    let rest = b.keys.get(1..).unwrap_or_default();
    varint(&mut out, rest.len() as u64);
    for k in rest {
        text(&mut out, k.as_deref());
    }
    // Bit 0: small and repeats per key (version 7); bit 1: R builds (version 9); bit 2: chunks
    // keyed by their first package (version 11).
    varint(&mut out, 7);
    varint(&mut out, b.uniform.len() as u64);
    for (rank, keys) in &b.uniform {
        varint(&mut out, u64::from(*rank));
        let mask = (0..4).fold(0, |m, d| m | u64::from(keys[d].is_some()) << d);
        varint(&mut out, mask);
        keys.iter()
            .flatten()
            .for_each(|&k| varint(&mut out, u64::from(k)));
    }
    varint(&mut out, b.builds.len() as u64);
    for build in &b.builds {
        build.iter().for_each(|&k| varint(&mut out, u64::from(k)));
    }
    out
}

/// A day's `breakdown_keys` blob read back.
#[derive(Debug, Default)]
pub(super) struct DayKeys {
    /// The key strings, index 0 being the missing field.
    pub keys: Vec<Option<String>>,
    /// The day's keys carry their small and repeated downloads (stored since version 7).
    pub filters: bool,
    /// The uniform whales: (rank, per `DIMS` entry its key number when uniform in it).
    pub uniform: Vec<(u32, [Option<u32>; 4])>,
    /// Version 9: the day's R builds (key numbers of OS, R version, arch); its packages' parts
    /// are in the version-9 form. `None`: a version 6 or 7 day.
    pub builds: Option<Vec<[u32; 3]>>,
    /// Version 11: the day's chunks are keyed by their first package's `day_package` (else by
    /// runs of `CHUNK` ids).
    pub by_first: bool,
}

/// One package's blob (version 9's format above).
pub fn encode(p: &PackageBreakdown) -> Vec<u8> {
    let mut out = Vec::new();
    varint(&mut out, p.versions.len() as u64);
    for (v, c) in &p.versions {
        text(&mut out, v.as_deref());
        counts(&mut out, *c);
    }
    for dim in [&p.countries, &p.builds] {
        varint(&mut out, dim.len() as u64);
        let mut last = 0;
        for &(k, c) in dim {
            varint(&mut out, u64::from(k - last));
            last = k;
            counts(&mut out, c);
        }
    }
    out
}

/// A reader of a blob; `None` at any malformed byte.
struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn varint(&mut self) -> Option<u64> {
        let (mut v, mut shift) = (0u64, 0u32);
        loop {
            let byte = *self.b.get(self.at)?;
            self.at += 1;
            v |= u64::from(byte & 0x7f) << shift.min(63);
            shift += 7;
            if byte & 0x80 == 0 {
                return Some(v);
            }
        }
    }

    fn text(&mut self) -> Option<Option<&'a str>> {
        match self.varint()? as usize {
            0 => Some(None),
            len => {
                let end = self.at.checked_add(len - 1)?;
                let s = std::str::from_utf8(self.b.get(self.at..end)?).ok()?;
                self.at = end;
                Some(Some(s))
            }
        }
    }

    fn counts(&mut self) -> Option<Counts> {
        let v = self.varint()?;
        let downloads = v >> 2;
        let mut c = Counts {
            downloads,
            ..Counts::default()
        };
        match v & 3 {
            0 => {}
            1 => c.whales = downloads,
            2 => c.whales = self.varint()?.min(downloads),
            _ => {
                c.whales = self.varint()?.min(downloads);
                c.small = self.varint()?.min(downloads);
                c.repeats = self.varint()?.min(downloads - c.small);
                if c.whales > 0 {
                    c.whale_small = self.varint()?.min(c.small).min(c.whales);
                    c.whale_repeats = (self.varint()?.min(c.repeats)).min(c.whales - c.whale_small);
                }
            }
        }
        Some(c)
    }
}

/// A `breakdown_keys` blob read back (a version-6 one has no tail: no filters, no uniform
/// whales).
pub(super) fn decode_keys(b: &[u8]) -> Option<DayKeys> {
    let mut r = Reader { b, at: 0 };
    let n = r.varint()? as usize;
    let mut keys = Vec::with_capacity(n.min(1 << 16) + 1);
    keys.push(None);
    for _ in 0..n {
        keys.push(r.text()?.map(str::to_owned));
    }
    let mut day = DayKeys {
        keys,
        ..DayKeys::default()
    };
    if r.at == b.len() {
        return Some(day);
    }
    let flags = r.varint()?;
    day.filters = flags & 1 == 1;
    day.by_first = flags & 4 == 4;
    for _ in 0..r.varint()?.min(256) {
        let (rank, mask) = (u32::try_from(r.varint()?).ok()?, r.varint()?);
        let mut k = [None; 4];
        for (d, x) in k.iter_mut().enumerate() {
            if mask & (1 << d) != 0 {
                *x = Some(u32::try_from(r.varint()?).ok()?);
            }
        }
        day.uniform.push((rank, k));
    }
    if flags & 2 == 2 {
        let n = r.varint()? as usize;
        let mut builds = Vec::with_capacity(n.min(1 << 16));
        for _ in 0..n {
            let mut b = [0u32; 3];
            for k in &mut b {
                *k = u32::try_from(r.varint()?).ok()?;
            }
            builds.push(b);
        }
        day.builds = Some(builds);
    }
    Some(day)
}

/// One dimension of a package on a day: its blob's entries, then (not for versions) the uniform
/// whales' clean downloads of it from `ranks` (its `whale_ranks`). `by` is 0 for versions, else
/// 1 + its index in `DIMS`. Calls `f(key, counts)` per entry; a key may come more than once.
pub(super) fn day_dim(
    e: &DayEntry,
    by: usize,
    mut f: impl FnMut(Option<&str>, Counts),
) -> Option<()> {
    if !e.blob.is_empty() {
        match &e.keys.builds {
            Some(builds) => decode_dim9(&e.blob, by, &e.keys.keys, builds, &mut f)?,
            None => decode_dim(&e.blob, by, &e.keys.keys, &mut f)?,
        }
    }
    if by == 0 || e.keys.uniform.is_empty() {
        return Some(());
    }
    for &(rank, downloads, filtered) in &e.ranks {
        let Some(k) = (e.keys.uniform.iter())
            .find(|u| u.0 == rank)
            .and_then(|u| u.1[by - 1])
        else {
            continue;
        };
        let clean = downloads.saturating_sub(filtered);
        if clean > 0 {
            let key = e.keys.keys.get(k as usize)?;
            let c = Counts {
                downloads: clean,
                whales: clean,
                ..Counts::default()
            };
            f(key.as_deref(), c);
        }
    }
    Some(())
}

/// One dimension of a package's blob: `by` is 0 for versions, else 1 + its index in `DIMS`.
/// Calls `f(key, counts)` per entry (a key of `keys`, the day's `decode_keys`).
fn decode_dim(
    b: &[u8],
    by: usize,
    keys: &[Option<String>],
    mut f: impl FnMut(Option<&str>, Counts),
) -> Option<()> {
    let mut r = Reader { b, at: 0 };
    let n = r.varint()?;
    for _ in 0..n {
        let (v, c) = (r.text()?, r.counts()?);
        if by == 0 {
            f(v, c);
        }
    }
    if by == 0 {
        return Some(());
    }
    for dim in 1..=DIMS.len() {
        for _ in 0..r.varint()? {
            let (k, c) = (r.varint()? as usize, r.counts()?);
            if dim == by {
                f(keys.get(k)?.as_deref(), c);
            }
        }
        if dim == by {
            return Some(());
        }
    }
    None
}

/// [`decode_dim`] of a version-9 blob, whose OS, R version and arch are read off its `builds`
/// (the day's, `DayKeys::builds`).
fn decode_dim9(
    b: &[u8],
    by: usize,
    keys: &[Option<String>],
    builds: &[[u32; 3]],
    mut f: impl FnMut(Option<&str>, Counts),
) -> Option<()> {
    let mut r = Reader { b, at: 0 };
    for _ in 0..r.varint()? {
        let (v, c) = (r.text()?, r.counts()?);
        if by == 0 {
            f(v, c);
        }
    }
    if by == 0 {
        return Some(());
    }
    let mut key = 0u64;
    for _ in 0..r.varint()? {
        key = key.checked_add(r.varint()?)?;
        let c = r.counts()?;
        if by == 1 {
            f(keys.get(usize::try_from(key).ok()?)?.as_deref(), c);
        }
    }
    if by == 1 {
        return Some(());
    }
    let mut build = 0u64;
    for _ in 0..r.varint()? {
        build = build.checked_add(r.varint()?)?;
        let c = r.counts()?;
        let k = builds.get(usize::try_from(build).ok()?)?[by - 2];
        f(keys.get(k as usize)?.as_deref(), c);
    }
    Some(())
}

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
        "SELECT d.date, k.keys, b.day_chunk, b.data, p.whale_ranks, d.common_whales
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
    type Row = (String, Blob, Option<i64>, Blob, Blob, Blob);
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
            ))
        },
    )?;
    let mut out = Vec::new();
    for row in rows {
        let (date, keys, chunk, data, ranks, common) = row?;
        let Some(keys) = keys else {
            out.push((date, None));
            continue;
        };
        let keys = decode_keys(&keys).ok_or_else(|| corrupt(&date))?;
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
        let ranks = match ranks {
            Some(r) if !keys.uniform.is_empty() => {
                decode_ranks(&r, Common::from_blob(common.as_deref()))
            }
            _ => Vec::new(),
        };
        out.push((date, Some(DayEntry { keys, blob, ranks })));
    }
    Ok(out)
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

/// Package `at`'s part (its id less the chunk's first id) of a chunk decompressed: empty when it
/// has none.
fn part(raw: Option<&[u8]>, at: i64) -> Option<Vec<u8>> {
    let raw = raw?;
    let mut r = Reader { b: raw, at: 0 };
    while r.at < raw.len() {
        let (k, len) = (r.varint()?, r.varint()? as usize);
        let end = r.at.checked_add(len)?;
        if k == at as u64 {
            return Some(raw.get(r.at..end)?.to_vec());
        }
        r.at = end;
    }
    Some(Vec::new())
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
