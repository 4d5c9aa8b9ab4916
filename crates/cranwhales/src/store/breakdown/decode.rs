//! The stored forms read back: a day's `breakdown_keys` blob (`decode_keys`) and one
//! dimension of a package's part (`day_dim`), in every version's form (see the module above).

use std::sync::Arc;

use super::{DayEntry, DIMS};
use crate::day::breakdown::Counts;

/// A day's `breakdown_keys` blob read back.
#[derive(Debug, Default)]
pub(super) struct DayKeys {
    /// The key strings, index 0 being the missing field (shared: a packed month's days read
    /// one table, `month`).
    pub keys: Arc<Vec<Option<String>>>,
    /// The day's keys carry their small and repeated downloads (stored since version 7).
    pub filters: bool,
    /// The uniform whales: (rank, per `DIMS` entry its key number when uniform in it).
    pub uniform: Vec<(u32, [Option<u32>; 4])>,
    /// Version 9: the day's R builds (key numbers of OS, R version, arch); its packages' parts
    /// are in the version-9 form. `None`: a version 6 or 7 day.
    pub builds: Option<Arc<Vec<[u32; 3]>>>,
    /// Version 11: the day's chunks are keyed by their first package's `day_package` (else by
    /// runs of `CHUNK` ids).
    pub by_first: bool,
}

/// A reader of a blob; `None` at any malformed byte.
pub(super) struct Reader<'a> {
    pub b: &'a [u8],
    pub at: usize,
}

impl<'a> Reader<'a> {
    pub fn varint(&mut self) -> Option<u64> {
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

    pub fn text(&mut self) -> Option<Option<&'a str>> {
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

    /// A key table: varint n, then n texts; index 0 is the missing field.
    pub fn strings(&mut self) -> Option<Vec<Option<String>>> {
        let n = self.varint()? as usize;
        let mut keys = Vec::with_capacity(n.min(1 << 16) + 1);
        keys.push(None);
        for _ in 0..n {
            keys.push(self.text()?.map(str::to_owned));
        }
        Some(keys)
    }

    /// R builds: varint n, then n triples of key numbers (OS, R version, arch).
    pub fn builds(&mut self) -> Option<Vec<[u32; 3]>> {
        let n = self.varint()? as usize;
        let mut builds = Vec::with_capacity(n.min(1 << 16));
        for _ in 0..n {
            let mut b = [0u32; 3];
            for k in &mut b {
                *k = u32::try_from(self.varint()?).ok()?;
            }
            builds.push(b);
        }
        Some(builds)
    }

    pub fn counts(&mut self) -> Option<Counts> {
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
    let mut day = DayKeys {
        keys: Arc::new(r.strings()?),
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
        day.builds = Some(Arc::new(r.builds()?));
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

/// Package `at`'s part (its id less the chunk's first id) of a chunk decompressed: empty when it
/// has none.
pub(super) fn part(raw: Option<&[u8]>, at: i64) -> Option<Vec<u8>> {
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
