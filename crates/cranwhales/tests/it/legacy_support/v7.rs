//! A store's breakdowns as version 7 and version 9 wrote them, made here from version 11's rows
//! with this file's own codec (no old binary). Version 7: each package's OS, R version and arch
//! counted apart (the sums of its R builds' counts), 128 packages a chunk, deflated; the day's
//! `breakdown_keys` without its builds. Version 9: the same parts as version 11, in zstd chunks
//! of 128 package ids keyed by day × 2^13 + id / 128. The same facts in the old forms: what the
//! migrations to version 11 must read the same.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use flate2::{write::DeflateEncoder, Compression};
use rusqlite::{params, Connection};

/// `day_chunk` slots a day before version 11.
const SLOTS: i64 = 1 << 13;
/// `day_chunk` = day × `IDS` + the chunk's first package id, since version 11.
const IDS: i64 = 1 << 20;

/// [downloads, whales, small, repeats, whale_small, whale_repeats].
type Counts = [u64; 6];

struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn varint(&mut self) -> u64 {
        let (mut v, mut shift) = (0u64, 0);
        loop {
            let byte = self.b[self.at];
            self.at += 1;
            v |= u64::from(byte & 0x7f) << shift;
            shift += 7;
            if byte & 0x80 == 0 {
                return v;
            }
        }
    }

    fn text(&mut self) -> Option<Vec<u8>> {
        match self.varint() as usize {
            0 => None,
            n => {
                self.at += n - 1;
                Some(self.b[self.at - (n - 1)..self.at].to_vec())
            }
        }
    }

    fn counts(&mut self) -> Counts {
        let v = self.varint();
        let mut c = [v >> 2, 0, 0, 0, 0, 0];
        match v & 3 {
            0 => {}
            1 => c[1] = c[0],
            2 => c[1] = self.varint(),
            _ => {
                c[1] = self.varint();
                c[2] = self.varint();
                c[3] = self.varint();
                if c[1] > 0 {
                    c[4] = self.varint();
                    c[5] = self.varint();
                }
            }
        }
        c
    }

    fn done(&self) -> bool {
        self.at >= self.b.len()
    }
}

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Version 7's counts: tag 0 no whale, 1 all whales, 2 some, 3 with small or repeats.
fn counts(out: &mut Vec<u8>, c: Counts) {
    let tag = match c[1] {
        _ if c[2] + c[3] > 0 => 3,
        0 => 0,
        w if w == c[0] => 1,
        _ => 2,
    };
    varint(out, c[0] << 2 | tag);
    if tag >= 2 {
        varint(out, c[1]);
    }
    if tag == 3 {
        varint(out, c[2]);
        varint(out, c[3]);
        if c[1] > 0 {
            varint(out, c[4]);
            varint(out, c[5]);
        }
    }
}

/// A version-9 `breakdown_keys` blob → (version 7's, the day's builds).
fn keys_to_v7(b: &[u8]) -> (Vec<u8>, Vec<[u64; 3]>) {
    let mut r = Reader { b, at: 0 };
    for _ in 0..r.varint() {
        r.text();
    }
    let strings_end = r.at;
    assert_eq!(r.varint(), 7, "a version-11 keys blob");
    let uniform_start = r.at;
    for _ in 0..r.varint() {
        r.varint();
        let mask = r.varint();
        for _ in 0..mask.count_ones() {
            r.varint();
        }
    }
    let mut out = b[..strings_end].to_vec();
    varint(&mut out, 1);
    out.extend_from_slice(&b[uniform_start..r.at]);
    let builds = (0..r.varint())
        .map(|_| [r.varint(), r.varint(), r.varint()])
        .collect();
    assert!(r.done());
    (out, builds)
}

/// A version-9 package part → version 7's.
fn package_to_v7(b: &[u8], builds: &[[u64; 3]]) -> Vec<u8> {
    let mut r = Reader { b, at: 0 };
    let mut out = Vec::new();
    let n = r.varint();
    varint(&mut out, n);
    for _ in 0..n {
        let start = r.at;
        r.text();
        r.counts();
        out.extend_from_slice(&b[start..r.at]);
    }
    let mut key = 0;
    let countries: Vec<(u64, Counts)> = (0..r.varint())
        .map(|_| {
            key += r.varint();
            (key, r.counts())
        })
        .collect();
    let mut fields: [BTreeMap<u64, Counts>; 3] = Default::default();
    let mut build = 0;
    for _ in 0..r.varint() {
        build += r.varint() as usize;
        let c = r.counts();
        for (field, &k) in fields.iter_mut().zip(&builds[build]) {
            let sum = field.entry(k).or_default();
            sum.iter_mut().zip(c).for_each(|(s, x)| *s += x);
        }
    }
    assert!(r.done());
    let dims = std::iter::once(countries).chain(fields.map(|f| f.into_iter().collect()));
    for dim in dims {
        varint(&mut out, dim.len() as u64);
        for (k, c) in dim {
            varint(&mut out, k);
            counts(&mut out, c);
        }
    }
    out
}

/// Rewrites every day's breakdowns at `db` in version 7's form and sets the store's version to 7.
pub fn breakdowns_to_v7(db: &Path) {
    rewrite(db, 7, |keys, parts| {
        let (keys7, builds) = keys_to_v7(keys);
        let parts = (parts.into_iter())
            .map(|(id, part)| (id, package_to_v7(&part, &builds)))
            .collect();
        let chunks = (runs_of_128(parts).into_iter())
            .map(|(run, raw)| {
                let mut enc = DeflateEncoder::new(Vec::new(), Compression::new(9));
                enc.write_all(&raw).unwrap();
                (run, enc.finish().unwrap())
            })
            .collect();
        (keys7, chunks)
    });
}

/// Rewrites every day's breakdowns at `db` in version 9's form (runs of 128 ids a chunk, the
/// keys blob's tail without bit 2) and sets the store's version to 10 (the last to write them).
/// Returns the number of chunks written.
pub fn breakdowns_to_v9(db: &Path) -> usize {
    rewrite(db, 10, |keys, parts| {
        let chunks = (runs_of_128(parts).into_iter())
            .map(|(run, raw)| (run, zstd::bulk::compress(&raw, 9).unwrap()))
            .collect();
        (keys_to_v9(keys), chunks)
    })
}

/// Rewrites every day's breakdowns at `db` by `form` (the day's keys blob and version-11 parts,
/// id → part → the old form's keys blob and chunks, run of 128 ids → its compressed bytes), keyed
/// by runs of 128 ids, and sets the store's version to `version`. Returns the chunks written.
fn rewrite(
    db: &Path,
    version: i64,
    form: impl Fn(&[u8], BTreeMap<i64, Vec<u8>>) -> (Vec<u8>, BTreeMap<i64, Vec<u8>>),
) -> usize {
    let mut c = Connection::open(db).unwrap();
    let tx = c.transaction().unwrap();
    let days: Vec<(i64, Vec<u8>)> = (tx.prepare("SELECT day, keys FROM breakdown_keys").unwrap())
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let mut written = 0;
    for (day, keys) in days {
        let (keys, chunks) = form(&keys, parts_v11(&tx, day));
        tx.execute(
            "DELETE FROM breakdowns WHERE day_chunk BETWEEN ?1 AND ?2",
            [day * IDS, day * IDS + IDS - 1],
        )
        .unwrap();
        for (run, data) in chunks {
            tx.execute(
                "INSERT INTO breakdowns (day_chunk, data) VALUES (?1, ?2)",
                params![day * SLOTS + run, data],
            )
            .unwrap();
            written += 1;
        }
        tx.execute(
            "UPDATE breakdown_keys SET keys = ?2 WHERE day = ?1",
            params![day, keys],
        )
        .unwrap();
    }
    tx.execute_batch(&format!("PRAGMA user_version = {version}"))
        .unwrap();
    tx.commit().unwrap();
    written
}

/// Parts (id → part) in runs of 128 ids (run → its raw chunk: varint `id % 128`, varint length,
/// the part).
fn runs_of_128(parts: BTreeMap<i64, Vec<u8>>) -> BTreeMap<i64, Vec<u8>> {
    let mut runs: BTreeMap<i64, Vec<u8>> = BTreeMap::new();
    for (id, part) in parts {
        let raw = runs.entry(id / 128).or_default();
        varint(raw, (id % 128) as u64);
        varint(raw, part.len() as u64);
        raw.extend_from_slice(&part);
    }
    runs
}

/// Day `day`'s package parts (id → part) of its version-11 chunks.
fn parts_v11(tx: &rusqlite::Transaction<'_>, day: i64) -> BTreeMap<i64, Vec<u8>> {
    let chunks: Vec<(i64, Vec<u8>)> = (tx
        .prepare("SELECT day_chunk, data FROM breakdowns WHERE day_chunk BETWEEN ?1 AND ?2")
        .unwrap())
    .query_map([day * IDS, day * IDS + IDS - 1], |r| {
        Ok((r.get(0)?, r.get(1)?))
    })
    .unwrap()
    .map(Result::unwrap)
    .collect();
    let mut parts = BTreeMap::new();
    for (key, data) in chunks {
        let raw = zstd::stream::decode_all(&data[..]).unwrap();
        let mut r = Reader { b: &raw, at: 0 };
        while !r.done() {
            let (k, len) = (r.varint() as i64, r.varint() as usize);
            parts.insert(key - day * IDS + k, raw[r.at..r.at + len].to_vec());
            r.at += len;
        }
    }
    parts
}

/// A version-11 keys blob → version 9's: the same, its flags varint 7 → 3.
fn keys_to_v9(b: &[u8]) -> Vec<u8> {
    let mut r = Reader { b, at: 0 };
    for _ in 0..r.varint() {
        r.text();
    }
    let at = r.at;
    assert_eq!(r.varint(), 7, "a version-11 keys blob");
    let mut out = b[..at].to_vec();
    varint(&mut out, 3);
    out.extend_from_slice(&b[r.at..]);
    out
}
