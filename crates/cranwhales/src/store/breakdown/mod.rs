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
//!
//! Since version 12 a closed month's days in version 11's form are packed by package (`month`):
//! their daily chunks are deleted, and a day without chunks of its own is read from its month.
mod days;
mod decode;
mod month;
mod read;

pub(crate) use month::{pack as pack_month, pending as pending_months};
pub use read::{BreakdownReport, By, KeyRow, Kinds, Release, Releases, Share, SHARE_WINDOWS};

use rusqlite::{params, Transaction};

use super::codec::{day_package, day_range, PACKAGE_IDS};
use crate::day::breakdown::{Breakdowns, Counts, PackageBreakdown, DIMS};
use crate::day::DayTables;
use days::{corrupt, day_blobs, package_id, DayEntry};
use decode::day_dim;

/// The tables (version 6; the month packs since version 12, `month`).
pub(super) const TABLES: &str = "
CREATE TABLE IF NOT EXISTS breakdown_keys (
    day INTEGER PRIMARY KEY,
    keys BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS breakdowns (
    day_chunk INTEGER PRIMARY KEY,
    data BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS breakdown_month_keys (
    month INTEGER PRIMARY KEY,
    keys BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS breakdown_months (
    month_chunk INTEGER PRIMARY KEY,
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
    // Each package's part, in id order.
    let parts: Vec<(i64, Vec<u8>)> = (ids.iter())
        .filter_map(|&(id, i)| b.packages.get(i).map(|p| (id, encode(p))))
        .collect();
    let mut emit = |key: i64, data: Vec<u8>| st.execute(params![key, data]).map(drop);
    write_chunks(&mut emit, day_package(n, 0), &parts)
}

/// Compresses `parts` ((package id, its bytes), in id order) into chunks that each fill one
/// page, and gives each to `emit` as (`base` + its first package's id, chunk): a package's
/// bytes in a chunk follow its `id - first` and their length. A chunk takes parts while its raw
/// bytes, at the last chunk's ratio, fit FILL.0; one over FILL.1 gives back as many of its last
/// parts as its excess needs (the ratio varies a little) and is compressed again.
fn write_chunks(
    emit: &mut dyn FnMut(i64, Vec<u8>) -> rusqlite::Result<()>,
    base: i64,
    parts: &[(i64, Vec<u8>)],
) -> rusqlite::Result<()> {
    let compress = |raw: &[u8]| zstd::bulk::compress(raw, LEVEL).expect("compressing in memory");
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
        emit(base + first, packed)?;
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
