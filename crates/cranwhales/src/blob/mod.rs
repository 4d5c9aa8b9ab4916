//! The packed form of one whale's downloads: one SQLite blob per whale and day (`whale_rows`).
//!
//! The rows of a whale are always read together, and 750k separate SQLite rows took 3 s to
//! insert on a 10M-row day, so they are packed. Format 2 (written now) is varints with times as
//! deltas: ~13 bytes a row where format 1 took 36, which made writing the bench day's 757k whale
//! rows the largest part of the store step. Format 1 (from the first release) is still read.
//!
//! Format 2, little-endian: `u32 0xFFFF_FFFF` (format 1 starts with a string count, never this),
//! `u32 nstrings, (u16 len, utf8)*, u32 nrows`, then per row the varints `secs - previous secs`
//! (zigzag), `size`, and the 1-based string indexes of package, version, r_version, r_arch, r_os,
//! country (0: missing).
//! Format 1: `u32 nstrings, (u16 len, utf8)*, u32 nrows, (u32 secs, u64 size, u32 ids[6])*`.
//!
//! Since schema 3 the store keeps all whales of a day in one format-3 blob (`daylog`); formats 1
//! and 2 are read to migrate older stores.

pub mod daylog;

use std::collections::HashMap;

use crate::parse::hms;
use crate::summary::Download;

const FORMAT2: u32 = u32::MAX;

/// One whale download with its strings resolved (borrowed from the day's dictionaries): what
/// [`pack`] packs; `DayTables::whale_downloads` yields them.
#[derive(Clone, Copy)]
pub struct DownloadRef<'a> {
    /// Seconds since midnight (UTC): rows are kept in time order, so format 2 stores deltas.
    pub secs: u32,
    /// The package downloaded.
    pub package: &'a str,
    /// Its version; missing in some log rows.
    pub version: Option<&'a str>,
    /// Bytes sent.
    pub size: u64,
    /// R version of the client, from its user agent when it had one.
    pub r_version: Option<&'a str>,
    /// R's architecture (`x86_64`, `aarch64`, ...).
    pub r_arch: Option<&'a str>,
    /// R's OS (`linux-gnu`, `mingw32`, ...).
    pub r_os: Option<&'a str>,
    /// Two-letter country code from the client's address.
    pub country: Option<&'a str>,
}

/// Builds one format-2 blob: strings are added once and referred to by their 1-based index.
pub struct Writer<'a> {
    strings: Vec<&'a str>,
    body: Vec<u8>,
    n: u64,
    prev: i64,
}

impl<'a> Writer<'a> {
    /// A writer for about `rows` rows.
    pub fn new(rows: usize) -> Self {
        Writer {
            strings: Vec::new(),
            body: Vec::with_capacity(rows * 14),
            n: 0,
            prev: 0,
        }
    }

    /// Adds a string to the blob's table; returns the index rows refer to it by.
    pub fn string(&mut self, s: &'a str) -> u32 {
        self.strings.push(s);
        self.strings.len() as u32
    }

    /// Appends a row (rows come in time order): `ids` are string indexes of package, version,
    /// r_version, r_arch, r_os, country (0: missing).
    pub fn row(&mut self, secs: u32, size: u64, ids: [u32; 6]) {
        self.n += 1;
        let secs = i64::from(secs);
        varint(&mut self.body, zigzag(secs - self.prev));
        self.prev = secs;
        varint(&mut self.body, size);
        for id in ids {
            varint(&mut self.body, u64::from(id));
        }
    }

    /// The blob and its row count.
    pub fn finish(self) -> (u64, Vec<u8>) {
        let mut blob = Vec::with_capacity(self.body.len() + 16 * self.strings.len() + 12);
        blob.extend_from_slice(&FORMAT2.to_le_bytes());
        put_strings(&mut blob, &self.strings);
        blob.extend_from_slice(&(self.n as u32).to_le_bytes());
        blob.extend_from_slice(&self.body);
        (self.n, blob)
    }
}

/// Packs a whale's downloads (chronological) into one blob; returns the row count too. The store
/// packs by dictionary id (`DayTables::pack_whale`); this resolved-strings form is its reference.
pub fn pack<'a>(rows: impl Iterator<Item = DownloadRef<'a>>) -> (u64, Vec<u8>) {
    let mut w = Writer::new(0);
    // Keyed by address: the day's dictionaries hold each distinct value once, so this dedups
    // without hashing text, and a row mostly repeats the previous row's field (`last`).
    let mut index: HashMap<usize, u32, foldhash::fast::RandomState> = HashMap::default();
    let mut last = [(usize::MAX, 0u32); 6];
    for r in rows {
        let mut ids = [0u32; 6];
        for (k, s) in strings_of(&r).into_iter().enumerate() {
            ids[k] = match s {
                None => 0,
                Some(s) if s.as_ptr() as usize == last[k].0 => last[k].1,
                Some(s) => {
                    let id = *index
                        .entry(s.as_ptr() as usize)
                        .or_insert_with(|| w.string(s));
                    last[k] = (s.as_ptr() as usize, id);
                    id
                }
            };
        }
        w.row(r.secs, r.size, ids);
    }
    w.finish()
}

/// A row's string fields in blob order.
fn strings_of<'a>(r: &DownloadRef<'a>) -> [Option<&'a str>; 6] {
    [
        Some(r.package),
        r.version,
        r.r_version,
        r.r_arch,
        r.r_os,
        r.country,
    ]
}

fn put_strings(blob: &mut Vec<u8>, strings: &[&str]) {
    blob.extend_from_slice(&(strings.len() as u32).to_le_bytes());
    for s in strings {
        // Longer strings are cut at a char boundary; log fields are short.
        let mut end = s.len().min(u16::MAX as usize);
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        blob.extend_from_slice(&(end as u16).to_le_bytes());
        blob.extend_from_slice(&s.as_bytes()[..end]);
    }
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn unzigzag(v: u64) -> i64 {
    (v >> 1) as i64 ^ -((v & 1) as i64)
}

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// A bounds-checked reader over a blob.
struct Cursor<'a> {
    blob: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, k: usize) -> Option<&'a [u8]> {
        let s = self.blob.get(self.at..self.at.checked_add(k)?)?;
        self.at += k;
        Some(s)
    }

    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }

    fn varint(&mut self) -> Option<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = *self.take(1)?.first()?;
            v |= u64::from(b & 0x7f) << shift;
            if b < 0x80 {
                return Some(v);
            }
        }
        None
    }

    fn strings(&mut self) -> Option<Vec<String>> {
        let n = self.u32()? as usize;
        let mut out = Vec::with_capacity(n.min(1 << 16));
        for _ in 0..n {
            let len = u16::from_le_bytes(self.take(2)?.try_into().ok()?) as usize;
            out.push(std::str::from_utf8(self.take(len)?).ok()?.to_owned());
        }
        Some(out)
    }
}

/// Reads back a blob of either format; `None` if it is malformed.
pub fn unpack(blob: &[u8]) -> Option<Vec<Download>> {
    let mut c = Cursor { blob, at: 0 };
    let format2 = blob.get(..4)? == FORMAT2.to_le_bytes();
    if format2 {
        c.at = 4;
    }
    let strings = c.strings()?;
    let nrows = c.u32()? as usize;
    let mut out = Vec::with_capacity(nrows.min(1 << 20));
    let mut secs = 0i64;
    for _ in 0..nrows {
        let (size, ids) = if format2 {
            secs = secs.checked_add(unzigzag(c.varint()?))?;
            let size = c.varint()?;
            let mut ids = [0u64; 6];
            for id in &mut ids {
                *id = c.varint()?;
            }
            (size, ids)
        } else {
            secs = i64::from(c.u32()?);
            let size = u64::from_le_bytes(c.take(8)?.try_into().ok()?);
            let mut ids = [0u64; 6];
            for id in &mut ids {
                *id = u64::from(c.u32()?);
            }
            (size, ids)
        };
        let mut s: [Option<String>; 6] = Default::default();
        for (slot, id) in s.iter_mut().zip(ids) {
            if id > 0 {
                *slot = Some(strings.get(usize::try_from(id).ok()? - 1)?.clone());
            }
        }
        let [package, version, r_version, r_arch, r_os, country] = s;
        out.push(Download {
            time: hms(u32::try_from(secs).ok().filter(|&s| s < 86_400 + 1)?),
            package: package?,
            version,
            size,
            r_version,
            r_arch,
            r_os,
            country,
        });
    }
    (c.at == blob.len()).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refs(rows: &[(u32, u64, [Option<&'static str>; 6])]) -> Vec<DownloadRef<'static>> {
        rows.iter()
            .map(|&(secs, size, [p, v, rv, ra, ro, c])| DownloadRef {
                secs,
                package: p.unwrap(),
                version: v,
                size,
                r_version: rv,
                r_arch: ra,
                r_os: ro,
                country: c,
            })
            .collect()
    }

    fn same(got: &[Download], want: &[DownloadRef<'_>]) {
        assert_eq!(got.len(), want.len());
        for (g, w) in got.iter().zip(want) {
            assert_eq!(g.time, hms(w.secs));
            assert_eq!((g.package.as_str(), g.size), (w.package, w.size));
            assert_eq!(g.version.as_deref(), w.version);
            assert_eq!(g.r_version.as_deref(), w.r_version);
            assert_eq!(g.r_arch.as_deref(), w.r_arch);
            assert_eq!(g.r_os.as_deref(), w.r_os);
            assert_eq!(g.country.as_deref(), w.country);
        }
    }

    const ROWS: &[(u32, u64, [Option<&str>; 6])] = &[
        (
            5,
            0,
            [
                Some("Rcpp"),
                Some("0.12.2"),
                Some("3.2.3"),
                Some("x86_64"),
                Some("mingw32"),
                Some("US"),
            ],
        ),
        (5, u64::MAX, [Some("ggplot2"), None, None, None, None, None]),
        (
            86_399,
            1 << 40,
            [
                Some("Rcpp"),
                Some("0.12.2"),
                Some("3.2.3"),
                Some("x86_64"),
                Some("mingw32"),
                Some("NA"),
            ],
        ),
        (
            3,
            17,
            [
                Some("\u{e9}t\u{e9}"),
                Some("1"),
                Some("3.2.3"),
                Some("i386"),
                Some("linux-gnu"),
                Some("US"),
            ],
        ),
    ];

    #[test]
    fn format2_round_trips_and_is_compact() {
        let want = refs(ROWS);
        let (n, blob) = pack(want.iter().copied());
        assert_eq!(n, 4);
        same(&unpack(&blob).unwrap(), &want);
        let v1 = format1(&want);
        assert!(blob.len() < v1.len(), "{} vs {}", blob.len(), v1.len());
    }

    /// Format 1 as the first release wrote it, built independently here.
    fn format1(rows: &[DownloadRef<'_>]) -> Vec<u8> {
        let mut strings: Vec<&str> = Vec::new();
        let mut body = Vec::new();
        for r in rows {
            body.extend_from_slice(&r.secs.to_le_bytes());
            body.extend_from_slice(&r.size.to_le_bytes());
            for s in strings_of(r) {
                let id = s.map_or(0, |s| match strings.iter().position(|&x| x == s) {
                    Some(i) => i + 1,
                    None => {
                        strings.push(s);
                        strings.len()
                    }
                });
                body.extend_from_slice(&(id as u32).to_le_bytes());
            }
        }
        let mut blob = Vec::new();
        put_strings(&mut blob, &strings);
        blob.extend_from_slice(&(rows.len() as u32).to_le_bytes());
        blob.extend(body);
        blob
    }

    #[test]
    fn format1_blobs_from_the_first_release_still_read() {
        let want = refs(ROWS);
        same(&unpack(&format1(&want)).unwrap(), &want);
    }

    #[test]
    fn malformed_blobs_are_none_not_panics() {
        let want = refs(ROWS);
        let (_, blob) = pack(want.iter().copied());
        for cut in 0..blob.len() {
            assert!(unpack(&blob[..cut]).is_none(), "cut at {cut}");
        }
        let mut extra = blob.clone();
        extra.push(0);
        assert!(unpack(&extra).is_none());
        let v1 = format1(&want);
        for cut in 0..v1.len() {
            assert!(unpack(&v1[..cut]).is_none(), "v1 cut at {cut}");
        }
        // A string index past the string list.
        let mut bad = blob.clone();
        let last = bad.len() - 1;
        bad[last] = 0x7f;
        assert!(unpack(&bad).is_none());
    }
}
