//! Formats 3 and 4: every top-100 whale's downloads of one day in one blob (`whale_log`, one row
//! a day). Schema 4 writes format 4 (`columns`: the same dictionary and columns, each column of
//! all whales one zstd frame); format 3 is read to migrate version-3 stores.
//!
//! Measured on 2015-01-08 (265,741 rows, 95,081 whale rows): format 2 took 21 B a whale row
//! (each whale repeating the package names and versions it fetched, and SQLite leaving ~8 KiB
//! of every whale's last overflow page empty); this one takes ~5 B. The day's distinct strings
//! and each package+version's distinct sizes are written once for all whales (a crawler and a
//! mirror fetch the same files), and each whale's rows are columns (time deltas, package+version
//! deltas, environment, country, size index) deflated on their own, so one whale is read
//! without inflating the others.
//!
//! Layout: `u32 0xFFFF_FFFD` (LE), `varint len, deflate(dictionary)`, `varint nwhales`, then per
//! whale `varint ip_id, varint nrows, varint len`, then the whales' deflated segments in that
//! order. Dictionary: packages (`varint n, str*`), package+versions (`varint n, (varint package,
//! optstr version)*`), environments (`varint n, (optstr r_version, r_arch, r_os)*`), countries
//! (`varint n, optstr*`), then per package+version `varint nsizes, varint size*` (ascending, each
//! after the first as its difference from the one before). A `str` is
//! `varint len, utf8`; an `optstr` is `varint 0` (missing) or `varint len + 1, utf8`. Segment:
//! `nrows` varints per column: zigzag(secs - previous secs), zigzag(pkgver - previous pkgver),
//! env, country, size index (into its package+version's sizes).

use std::collections::HashMap;
use std::io::{Read, Write};

use flate2::{read::DeflateDecoder, write::DeflateEncoder, Compression};

use super::{unzigzag, varint, zigzag, Cursor};
use crate::parse::hms;
use crate::summary::Download;

/// One whale's downloads as read back: its ip_id and rows in stored order.
pub type WhaleRows = (u64, Vec<Download>);

/// The first four bytes of a format-3 blob (formats 1 and 2 never start with them).
pub const FORMAT3: u32 = 0xFFFF_FFFD;

/// The day's distinct values that whale rows refer to by index (`LogRow`).
#[derive(Default)]
pub struct LogDict<'a> {
    /// Package names.
    pub packages: Vec<&'a str>,
    /// (index into `packages`, version).
    pub pkgvers: Vec<(u32, Option<&'a str>)>,
    /// (r_version, r_arch, r_os).
    pub envs: Vec<[Option<&'a str>; 3]>,
    /// Country codes.
    pub countries: Vec<Option<&'a str>>,
    /// Per package+version, its distinct sizes (a row names one by index).
    pub sizes: Vec<Vec<u64>>,
}

/// One whale download as indexes into a [`LogDict`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogRow {
    /// Seconds since midnight (UTC).
    pub secs: u32,
    /// Index into `LogDict::pkgvers`.
    pub pkgver: u32,
    /// Index into `LogDict::envs`.
    pub env: u32,
    /// Index into `LogDict::countries`.
    pub country: u32,
    /// Index into `LogDict::sizes[pkgver]`.
    pub size: u32,
}

/// Deflate level: 6 is within 2% of 9 on the measured day's segments, at about half the time.
const LEVEL: u32 = 6;

/// Encodes the day in format 4 (`columns`): `whales` are (ip_id, rows in their stored order).
pub fn encode(dict: &LogDict<'_>, whales: &[(u64, &[LogRow])]) -> Vec<u8> {
    let (sizes, new_index) = sorted_sizes(dict);
    let mut raw = Vec::new();
    put_dict(&mut raw, dict, &sizes);
    let mut cols: [Vec<u8>; columns::COLUMNS] = Default::default();
    for (_, rows) in whales {
        put_columns(&mut cols, rows, &new_index);
    }
    let counts: Vec<(u64, u64)> = (whales.iter())
        .map(|(ip, rows)| (*ip, rows.len() as u64))
        .collect();
    columns::encode(&raw, &counts, &cols)
}

/// Each package+version's sizes ascending, with each old size index's place in the sorted list.
/// As deltas: a file's sizes differ by a few bytes to a few hundred between builds, and its
/// partial transfers are below it (2015-01-08's 60k sizes: 173 KB deflated in order of first
/// use, 93 KB so).
fn sorted_sizes(dict: &LogDict<'_>) -> (Vec<Vec<u64>>, Vec<Vec<u32>>) {
    let mut sizes = dict.sizes.clone();
    let new_index: Vec<Vec<u32>> = (sizes.iter_mut())
        .map(|list| {
            let mut order: Vec<u32> = (0..list.len() as u32).collect();
            order.sort_unstable_by_key(|&i| list[i as usize]);
            let mut new = vec![0u32; list.len()];
            for (at, &old) in order.iter().enumerate() {
                new[old as usize] = at as u32;
            }
            list.sort_unstable();
            new
        })
        .collect();
    (sizes, new_index)
}

/// Encodes the day in format 3 (whales' columns deflated apart): what schema 3 stored; kept for
/// tests that make a version-3 store.
pub fn encode_v3(dict: &LogDict<'_>, whales: &[(u64, &[LogRow])]) -> Vec<u8> {
    let (sizes, new_index) = sorted_sizes(dict);
    let mut raw = Vec::new();
    put_dict(&mut raw, dict, &sizes);
    let mut out = FORMAT3.to_le_bytes().to_vec();
    let packed = deflate(&raw);
    varint(&mut out, packed.len() as u64);
    out.extend_from_slice(&packed);
    let segments: Vec<Vec<u8>> = (whales.iter())
        .map(|(_, rows)| segment(rows, &new_index))
        .collect();
    varint(&mut out, whales.len() as u64);
    for ((ip_id, rows), seg) in whales.iter().zip(&segments) {
        varint(&mut out, *ip_id);
        varint(&mut out, rows.len() as u64);
        varint(&mut out, seg.len() as u64);
    }
    for seg in segments {
        out.extend_from_slice(&seg);
    }
    out
}

/// Encodes whales given as resolved downloads in format 4 (the migrations from formats 1 to 3,
/// and the reference the store's id-based packing is tested against): strings interned in order
/// of first appearance.
pub fn encode_downloads(whales: &[WhaleRows]) -> Vec<u8> {
    encode_downloads_with(whales, encode)
}

/// `encode_downloads` in format 3 (for tests that make a version-3 store).
pub fn encode_downloads_v3(whales: &[WhaleRows]) -> Vec<u8> {
    encode_downloads_with(whales, encode_v3)
}

/// A day's encoder: format 3 or 4.
type Encoder = fn(&LogDict<'_>, &[(u64, &[LogRow])]) -> Vec<u8>;

fn encode_downloads_with(whales: &[WhaleRows], encode: Encoder) -> Vec<u8> {
    type Ix<K> = HashMap<K, u32, foldhash::fast::RandomState>;
    fn id<K: std::hash::Hash + Eq>(ix: &mut Ix<K>, k: K, added: impl FnOnce()) -> u32 {
        let n = ix.len() as u32;
        *ix.entry(k).or_insert_with(|| {
            added();
            n
        })
    }
    let mut dict = LogDict::default();
    let mut pk: Ix<&str> = Ix::default();
    let mut pv: Ix<(u32, Option<&str>)> = Ix::default();
    let mut env: Ix<[Option<&str>; 3]> = Ix::default();
    let mut co: Ix<Option<&str>> = Ix::default();
    let mut size_ix: Ix<(u32, u64)> = Ix::default();
    let mut rows: Vec<Vec<LogRow>> = Vec::with_capacity(whales.len());
    for (_, downloads) in whales {
        let mut list = Vec::with_capacity(downloads.len());
        for d in downloads {
            let p = id(&mut pk, d.package.as_str(), || {
                dict.packages.push(&d.package)
            });
            let key = (p, d.version.as_deref());
            let pkgver = id(&mut pv, key, || {
                dict.pkgvers.push(key);
                dict.sizes.push(Vec::new());
            });
            let e = [
                d.r_version.as_deref(),
                d.r_arch.as_deref(),
                d.r_os.as_deref(),
            ];
            let env = id(&mut env, e, || dict.envs.push(e));
            let c = d.country.as_deref();
            let country = id(&mut co, c, || dict.countries.push(c));
            let sizes = &mut dict.sizes[pkgver as usize];
            let size = *size_ix.entry((pkgver, d.size)).or_insert_with(|| {
                sizes.push(d.size);
                sizes.len() as u32 - 1
            });
            let secs = secs_of(&d.time);
            list.push(LogRow {
                secs,
                pkgver,
                env,
                country,
                size,
            });
        }
        rows.push(list);
    }
    let refs: Vec<(u64, &[LogRow])> = (whales.iter().zip(&rows))
        .map(|((ip, _), r)| (*ip, r.as_slice()))
        .collect();
    encode(&dict, &refs)
}

/// `HH:MM:SS` → seconds (times come from `hms`, so they are well formed; anything else is 0).
fn secs_of(t: &str) -> u32 {
    let mut it = t.split(':').map(|p| p.parse::<u32>().unwrap_or(0));
    let (h, m, s) = (it.next(), it.next(), it.next());
    h.unwrap_or(0) * 3600 + m.unwrap_or(0) * 60 + s.unwrap_or(0)
}

fn put_dict(raw: &mut Vec<u8>, d: &LogDict<'_>, sizes: &[Vec<u64>]) {
    varint(raw, d.packages.len() as u64);
    for p in &d.packages {
        put_str(raw, Some(p), false);
    }
    varint(raw, d.pkgvers.len() as u64);
    for (p, v) in &d.pkgvers {
        varint(raw, u64::from(*p));
        put_str(raw, *v, true);
    }
    varint(raw, d.envs.len() as u64);
    for env in &d.envs {
        for s in env {
            put_str(raw, *s, true);
        }
    }
    varint(raw, d.countries.len() as u64);
    for c in &d.countries {
        put_str(raw, *c, true);
    }
    for list in sizes {
        varint(raw, list.len() as u64);
        let mut prev = 0;
        for &s in list {
            varint(raw, s - prev);
            prev = s;
        }
    }
}

fn put_str(raw: &mut Vec<u8>, s: Option<&str>, optional: bool) {
    match s {
        None => raw.push(0),
        Some(s) => {
            varint(raw, s.len() as u64 + u64::from(optional));
            raw.extend_from_slice(s.as_bytes());
        }
    }
}

/// One whale's rows as deflated columns (format 3; `new_index`: each size index's place in its
/// sorted list).
fn segment(rows: &[LogRow], new_index: &[Vec<u32>]) -> Vec<u8> {
    let mut cols: [Vec<u8>; columns::COLUMNS] = Default::default();
    put_columns(&mut cols, rows, new_index);
    deflate(&cols.concat())
}

/// One whale's rows appended to the five columns (deltas start from 0 at each whale).
fn put_columns(cols: &mut [Vec<u8>; columns::COLUMNS], rows: &[LogRow], new_index: &[Vec<u32>]) {
    let mut prev = 0i64;
    for r in rows {
        varint(&mut cols[0], zigzag(i64::from(r.secs) - prev));
        prev = i64::from(r.secs);
    }
    prev = 0;
    for r in rows {
        varint(&mut cols[1], zigzag(i64::from(r.pkgver) - prev));
        prev = i64::from(r.pkgver);
    }
    for r in rows {
        varint(&mut cols[2], u64::from(r.env));
        varint(&mut cols[3], u64::from(r.country));
        let new = new_index[r.pkgver as usize][r.size as usize];
        varint(&mut cols[4], u64::from(new));
    }
}

fn deflate(raw: &[u8]) -> Vec<u8> {
    let mut enc = DeflateEncoder::new(Vec::with_capacity(raw.len() / 3), Compression::new(LEVEL));
    enc.write_all(raw).expect("writing to a Vec");
    enc.finish().expect("writing to a Vec")
}

/// Inflates at most `limit` bytes (a corrupt length cannot make it allocate more).
fn inflate(packed: &[u8], limit: u64) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    DeflateDecoder::new(packed)
        .take(limit)
        .read_to_end(&mut out)
        .ok()?;
    Some(out)
}

/// A whale's place in a format-3 blob.
struct Entry {
    ip_id: u64,
    rows: u64,
    at: usize,
    len: usize,
}

/// The dictionary read back, strings owned.
struct Dict {
    packages: Vec<String>,
    pkgvers: Vec<(usize, Option<String>)>,
    envs: Vec<[Option<String>; 3]>,
    countries: Vec<Option<String>>,
    sizes: Vec<Vec<u64>>,
}

/// Upper bound of an inflated dictionary or segment: far above any day's (a 10M-row day's
/// dictionary inflates to a few MB).
const MAX_INFLATED: u64 = 1 << 30;

/// The ip_ids in a format-3 blob with their row counts, in stored order; `None` if malformed.
pub fn whales(blob: &[u8]) -> Option<Vec<(u64, u64)>> {
    if columns::is_format4(blob) {
        return columns::whales(blob);
    }
    let (_, entries) = index(blob)?;
    Some(entries.iter().map(|e| (e.ip_id, e.rows)).collect())
}

/// Whale `ip_id`'s downloads from a format-3 blob, in stored order: `Some(None)` if the blob
/// has no such whale, `None` if it is malformed.
pub fn unpack_whale(blob: &[u8], ip_id: u64) -> Option<Option<Vec<Download>>> {
    if columns::is_format4(blob) {
        let (raw, whales, segments) = columns::open(blob, MAX_INFLATED)?;
        let Some(i) = whales.iter().position(|w| w.0 == ip_id) else {
            return Some(None);
        };
        return rows(&segments[i], whales[i].1, &read_dict(&raw)?).map(Some);
    }
    let (dict_at, entries) = index(blob)?;
    let Some(e) = entries.iter().find(|e| e.ip_id == ip_id) else {
        return Some(None);
    };
    let dict = read_dict(&inflate(dict_at, MAX_INFLATED)?)?;
    let raw = inflate(blob.get(e.at..e.at.checked_add(e.len)?)?, MAX_INFLATED)?;
    rows(&raw, e.rows, &dict).map(Some)
}

/// Every whale's downloads from a format-3 blob, (ip_id, rows) in stored order; `None` if it is
/// malformed. The dictionary is inflated once for all (`unpack_whale` inflates it per whale).
pub fn unpack_all(blob: &[u8]) -> Option<Vec<WhaleRows>> {
    if columns::is_format4(blob) {
        let (raw, whales, segments) = columns::open(blob, MAX_INFLATED)?;
        let dict = read_dict(&raw)?;
        return (whales.iter().zip(&segments))
            .map(|(&(ip, n), seg)| Some((ip, rows(seg, n, &dict)?)))
            .collect();
    }
    let (dict_at, entries) = index(blob)?;
    let dict = read_dict(&inflate(dict_at, MAX_INFLATED)?)?;
    (entries.iter())
        .map(|e| {
            let raw = inflate(blob.get(e.at..e.at.checked_add(e.len)?)?, MAX_INFLATED)?;
            Some((e.ip_id, rows(&raw, e.rows, &dict)?))
        })
        .collect()
}

/// The dictionary's deflated bytes and the whales' entries.
fn index(blob: &[u8]) -> Option<(&[u8], Vec<Entry>)> {
    if blob.get(..4)? != FORMAT3.to_le_bytes() {
        return None;
    }
    let mut c = Cursor { blob, at: 4 };
    let dlen = usize::try_from(c.varint()?).ok()?;
    let dict = c.take(dlen)?;
    let n = c.varint()?;
    let mut entries = Vec::with_capacity(n.min(1 << 12) as usize);
    for _ in 0..n {
        let (ip_id, rows) = (c.varint()?, c.varint()?);
        let len = usize::try_from(c.varint()?).ok()?;
        entries.push(Entry {
            ip_id,
            rows,
            at: 0,
            len,
        });
    }
    let mut at = c.at;
    for e in &mut entries {
        e.at = at;
        at = at.checked_add(e.len)?;
    }
    (at == blob.len()).then_some((dict, entries))
}

fn read_dict(raw: &[u8]) -> Option<Dict> {
    let mut c = Cursor { blob: raw, at: 0 };
    let count = |c: &mut Cursor<'_>| c.varint().map(|n| n.min(1 << 24) as usize);
    let n = count(&mut c)?;
    let packages = (0..n)
        .map(|_| get_str(&mut c, false)?)
        .collect::<Option<Vec<_>>>()?;
    let n = count(&mut c)?;
    let mut pkgvers = Vec::with_capacity(n);
    for _ in 0..n {
        let p = usize::try_from(c.varint()?).ok()?;
        packages.get(p)?;
        pkgvers.push((p, get_str(&mut c, true)?));
    }
    let n = count(&mut c)?;
    let mut envs = Vec::with_capacity(n);
    for _ in 0..n {
        envs.push([
            get_str(&mut c, true)?,
            get_str(&mut c, true)?,
            get_str(&mut c, true)?,
        ]);
    }
    let n = count(&mut c)?;
    let countries = (0..n)
        .map(|_| get_str(&mut c, true))
        .collect::<Option<Vec<_>>>()?;
    let mut sizes = Vec::with_capacity(pkgvers.len());
    for _ in 0..pkgvers.len() {
        let k = count(&mut c)?;
        let mut prev = 0u64;
        let list = (0..k)
            .map(|_| {
                prev = prev.checked_add(c.varint()?)?;
                Some(prev)
            })
            .collect::<Option<Vec<_>>>()?;
        sizes.push(list);
    }
    (c.at == raw.len()).then_some(Dict {
        packages,
        pkgvers,
        envs,
        countries,
        sizes,
    })
}

/// A `str` (`optional`: an `optstr`); the outer `None` is a malformed one.
fn get_str(c: &mut Cursor<'_>, optional: bool) -> Option<Option<String>> {
    let len = c.varint()?;
    if optional && len == 0 {
        return Some(None);
    }
    let len = usize::try_from(len - u64::from(optional)).ok()?;
    Some(Some(std::str::from_utf8(c.take(len)?).ok()?.to_owned()))
}

/// A segment's columns turned back into downloads.
fn rows(raw: &[u8], n: u64, d: &Dict) -> Option<Vec<Download>> {
    let n = usize::try_from(n).ok()?;
    let mut c = Cursor { blob: raw, at: 0 };
    let mut cols = [
        Vec::with_capacity(n.min(1 << 24)),
        Vec::new(),
        Vec::new(),
        Vec::new(),
        Vec::new(),
    ];
    for (k, col) in cols.iter_mut().enumerate() {
        let mut prev = 0i64;
        for _ in 0..n {
            let v = c.varint()?;
            col.push(if k < 2 {
                prev = prev.checked_add(unzigzag(v))?;
                u64::try_from(prev).ok()?
            } else {
                v
            });
        }
    }
    if c.at != raw.len() {
        return None;
    }
    let at = |v: u64| usize::try_from(v).ok();
    (0..n)
        .map(|i| {
            let pv = at(cols[1][i])?;
            let (p, version) = d.pkgvers.get(pv)?;
            let [r_version, r_arch, r_os] = d.envs.get(at(cols[2][i])?)?.clone();
            Some(Download {
                time: hms(u32::try_from(cols[0][i]).ok().filter(|&s| s < 86_400 + 1)?),
                package: d.packages[*p].clone(),
                version: version.clone(),
                size: *d.sizes[pv].get(at(cols[4][i])?)?,
                r_version,
                r_arch,
                r_os,
                country: d.countries.get(at(cols[3][i])?)?.clone(),
            })
        })
        .collect()
}

mod columns;

#[cfg(test)]
mod tests;
