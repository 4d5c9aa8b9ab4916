//! One day's aggregation: rows go in one at a time, the day's tables come out.
//!
//! Memory grows with distinct ips (16 B each + an index slot), distinct strings (packages,
//! versions, R builds, countries: interned once each) and rows (20 B each, kept so that the rows
//! of the top-100 whales can be listed at the end without a second pass over the input).

use std::collections::{BinaryHeap, HashMap};

use crate::names;
use crate::parse::{self, col, Fields};
use crate::summary::Totals;

/// How many downloaders are ranked and kept with all their rows.
pub const TOP: usize = 100;

/// A row that breaks the day's rules; the caller adds the file name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowError {
    pub line: u64,
    pub field: &'static str,
    pub problem: String,
}

fn row_err(line: u64, field: &'static str, problem: impl Into<String>) -> RowError {
    RowError {
        line,
        field,
        problem: problem.into(),
    }
}

type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

/// Interns raw field bytes to dense ids: an open-addressing table (linear probing, at most half
/// full) of cache-line slots with keys up to `INLINE` bytes inside the slot, so a lookup touches
/// one line whose address the hash alone gives: the parser prefetches it rows ahead
/// (`prefetch`). With hashbrown, half of this lookup's time was the cache miss on the slot
/// (perf: `Interner::get` 18% of all ingest CPU on the 10M-row bench day, ~46k package+version
/// keys); with this table and the prefetch, 6%.
struct Interner {
    slots: Vec<Slot>,
    mask: usize,
    /// Every key by id (for decoding, `is` checks and keys longer than `INLINE`).
    keys: Vec<Box<[u8]>>,
}

const INLINE: usize = 58;
const EMPTY: u16 = u16::MAX - 1;
const LONG: u16 = u16::MAX;

#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Slot {
    id: u32,
    /// Key length, `LONG` when the key is too long to be inline, `EMPTY` for a free slot.
    len: u16,
    key: [u8; INLINE],
}

const FREE: Slot = Slot {
    id: 0,
    len: EMPTY,
    key: [0; INLINE],
};

/// The hash interners use (also computed ahead on the reading thread).
#[inline]
pub fn key_hash(raw: &[u8]) -> u64 {
    use std::hash::BuildHasher;
    foldhash::fast::FixedState::with_seed(0x5eed_c0de).hash_one(raw)
}

impl Default for Interner {
    fn default() -> Self {
        Interner {
            slots: vec![FREE; 1024],
            mask: 1023,
            keys: Vec::new(),
        }
    }
}

impl Interner {
    #[inline]
    fn home(&self, hash: u64) -> usize {
        (hash >> 32) as usize & self.mask
    }

    /// The id of `raw`, or `Err(hash)` when it is new (the caller decodes it, then calls `add`).
    #[inline]
    fn get(&self, raw: &[u8]) -> Result<u32, u64> {
        let h = key_hash(raw);
        self.get_hashed(raw, h).ok_or(h)
    }

    /// The id of `raw` whose `key_hash` is `h`, if known.
    #[inline]
    fn get_hashed(&self, raw: &[u8], h: u64) -> Option<u32> {
        let mut i = self.home(h);
        loop {
            let s = &self.slots[i];
            if s.len == EMPTY {
                return None;
            }
            let hit = if raw.len() <= INLINE {
                usize::from(s.len) == raw.len() && same(&s.key[..raw.len()], raw)
            } else {
                s.len == LONG && same(&self.keys[s.id as usize], raw)
            };
            if hit {
                return Some(s.id);
            }
            i = (i + 1) & self.mask;
        }
    }

    /// Starts loading the slot where a key of hash `h` is looked up first.
    #[inline]
    fn prefetch(&self, h: u64) {
        prefetch_line(&self.slots[self.home(h)]);
    }

    /// True if `id` stands for exactly `raw` (a cache check, cheaper than `get`).
    #[inline]
    fn is(&self, id: u32, raw: &[u8]) -> bool {
        self.keys.get(id as usize).is_some_and(|k| same(k, raw))
    }

    fn add(&mut self, raw: &[u8], hash: u64) -> u32 {
        let id = self.keys.len() as u32;
        self.keys.push(raw.into());
        if self.keys.len() * 2 > self.slots.len() {
            self.slots = vec![FREE; self.slots.len() * 2];
            self.mask = self.slots.len() - 1;
            for k in 0..self.keys.len() {
                let h = key_hash(&self.keys[k]);
                self.place(k as u32, h);
            }
        } else {
            self.place(id, hash);
        }
        id
    }

    fn place(&mut self, id: u32, hash: u64) {
        let raw = &self.keys[id as usize];
        let mut slot = Slot {
            id,
            len: LONG,
            key: [0; INLINE],
        };
        if raw.len() <= INLINE {
            slot.len = raw.len() as u16;
            slot.key[..raw.len()].copy_from_slice(raw);
        }
        let mut i = self.home(hash);
        while self.slots[i].len != EMPTY {
            i = (i + 1) & self.mask;
        }
        self.slots[i] = slot;
    }
}

/// A hint to start loading the cache line of `x`.
#[inline(always)]
fn prefetch_line<T>(x: &T) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: a prefetch is only a hint and never faults; `x` is a live reference.
        unsafe { _mm_prefetch::<_MM_HINT_T0>((x as *const T).cast::<i8>()) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = x;
}

/// Byte equality for short keys, 8 bytes at a time, inlined (no libc call).
#[inline(always)]
fn same(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let (mut ca, mut cb) = (a.chunks_exact(8), b.chunks_exact(8));
    for (x, y) in (&mut ca).zip(&mut cb) {
        if u64::from_ne_bytes(x.try_into().expect("8"))
            != u64::from_ne_bytes(y.try_into().expect("8"))
        {
            return false;
        }
    }
    ca.remainder()
        .iter()
        .zip(cb.remainder())
        .all(|(x, y)| x == y)
}

/// One kept row, 20 bytes: everything a whale's download list needs, as dictionary ids.
#[derive(Clone, Copy)]
struct RowRec {
    ip: u32,
    pkgver: u32,
    env: u32,
    /// Size, or `u32::MAX` when it is in `DayBuilder::big_sizes`.
    size: u32,
    /// Seconds since midnight (17 bits) | country id << 17.
    time_country: u32,
}

const DENSE_IPS: u64 = 1 << 22;
const COUNTRY_SHIFT: u32 = 17;
const MAX_COUNTRIES: u32 = 1 << (32 - COUNTRY_SHIFT);

#[derive(Clone, Copy)]
struct IpAcc {
    bytes: u64,
    downloads: u32,
    /// The ip's last R build and country: one downloader's rows mostly repeat them, so checking
    /// these first skips two hash lookups per row.
    env: u32,
    country: u32,
}

const NONE: u32 = u32::MAX;

impl IpAcc {
    const EMPTY: IpAcc = IpAcc {
        bytes: 0,
        downloads: 0,
        env: NONE,
        country: NONE,
    };
}

/// Dictionaries of one day's distinct strings, indexed by the ids in kept rows.
#[derive(Default)]
struct Dict {
    packages: Vec<String>,
    /// pkgver id → (package id, version).
    pkgvers: Vec<(u32, Option<String>)>,
    /// env id → (r_version, r_arch, r_os).
    envs: Vec<[Option<String>; 3]>,
    countries: Vec<Option<String>>,
}

/// Accumulates one day from its rows in a single pass.
pub struct DayBuilder {
    date: Option<String>,
    date_raw: Vec<u8>,
    rows: u64,
    skipped: u64,
    blank: u64,
    downloads: u64,
    bytes: u64,
    hourly: [u64; 24],
    /// Per ip, indexed by ip_id itself for ids below `DENSE_IPS` (they are small and dense:
    /// renumbered daily from 1), which saves a lookup per row; unused slots have 0 downloads.
    ips: Vec<IpAcc>,
    /// Larger ids: ip index `DENSE_IPS + k` is `sparse[k]`.
    sparse: Vec<IpAcc>,
    sparse_ids: Vec<u64>,
    ip_sparse: FastMap<u64, u32>,
    pkgver_ix: Interner,
    pkgver_count: Vec<u64>,
    package_ix: FastMap<String, u32>,
    env_ix: Interner,
    country_ix: Interner,
    /// Two-letter quoted country codes (`"US"`) → id, indexed by the two letters.
    country_fast: Vec<u32>,
    dict: Dict,
    log: Vec<RowRec>,
    big_sizes: FastMap<u64, u64>,
}

fn utf8(line: u64, field: &'static str, b: &[u8]) -> Result<String, RowError> {
    String::from_utf8(b.to_vec()).map_err(|e| {
        row_err(
            line,
            field,
            format!(
                "not UTF-8 (byte {} of the field)",
                e.utf8_error().valid_up_to() + 1
            ),
        )
    })
}

fn opt_utf8(line: u64, field: &'static str, raw: &[u8]) -> Result<Option<String>, RowError> {
    parse::text(raw).map(|t| utf8(line, field, &t)).transpose()
}

/// `&line[a.start .. b.end]` for two fields of `line`, a before b.
#[inline]
fn span<'a>(line: &'a [u8], a: &[u8], b: &[u8]) -> &'a [u8] {
    let base = line.as_ptr() as usize;
    let start = a.as_ptr() as usize - base;
    let end = b.as_ptr() as usize - base + b.len();
    &line[start..end]
}

impl DayBuilder {
    /// `date`: the day the rows must belong to, if known (from a file name or the request);
    /// otherwise the first row decides.
    pub fn new(date: Option<&str>) -> Self {
        DayBuilder {
            date: date.map(str::to_owned),
            date_raw: date
                .map(|d| format!("\"{d}\"").into_bytes())
                .unwrap_or_default(),
            rows: 0,
            skipped: 0,
            blank: 0,
            downloads: 0,
            bytes: 0,
            hourly: [0; 24],
            ips: Vec::new(),
            sparse: Vec::new(),
            sparse_ids: Vec::new(),
            ip_sparse: FastMap::default(),
            pkgver_ix: Interner::default(),
            pkgver_count: Vec::new(),
            package_ix: FastMap::default(),
            env_ix: Interner::default(),
            country_ix: Interner::default(),
            country_fast: vec![NONE; 1 << 16],
            dict: Dict::default(),
            log: Vec::new(),
            big_sizes: FastMap::default(),
        }
    }

    /// Data rows seen so far (skipped ones included).
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// An empty line: tolerated and counted.
    pub fn blank_line(&mut self) {
        self.blank += 1;
    }

    #[cold]
    fn check_date(&mut self, line: u64, raw: &[u8]) -> Result<(), RowError> {
        let Some(d) = parse::date(raw) else {
            let shown = String::from_utf8_lossy(raw);
            return Err(row_err(
                line,
                "date",
                format!("{shown} is not a YYYY-MM-DD date"),
            ));
        };
        match &self.date {
            None => {
                self.date = Some(d.to_owned());
                self.date_raw = raw.to_vec();
                Ok(())
            }
            Some(day) if day == d => Ok(()),
            Some(day) => Err(row_err(
                line,
                "date",
                format!("row dated {d} in the log of {day}"),
            )),
        }
    }

    /// Adds one data row (already split into 10 raw fields of `line`).
    #[inline]
    pub fn push(&mut self, line_no: u64, line: &[u8], f: &Fields<'_>) -> Result<(), RowError> {
        if !self.admit(line_no, line, f)? {
            return Ok(());
        }
        let pkg = f[col::PACKAGE];
        let secs = parse::seconds(f[col::TIME])
            .ok_or_else(|| bad(line_no, "time", f[col::TIME], "a HH:MM:SS time"))?;
        let size = parse::uint(f[col::SIZE])
            .filter(|&v| v <= i64::MAX as u64)
            .ok_or_else(|| bad(line_no, "size", f[col::SIZE], "a number"))?;
        let ip_id = parse::uint(f[col::IP_ID])
            .filter(|&v| v <= i64::MAX as u64)
            .ok_or_else(|| bad(line_no, "ip_id", f[col::IP_ID], "a number"))?;
        let pv_hash = key_hash(span(line, pkg, f[col::VERSION]));
        self.add(line_no, line, f, secs, size, ip_id, pv_hash)
    }

    /// Starts loading what a row with this package+version hash (see `push_decoded`) and
    /// ip_id will touch, a few rows before it is pushed: its interner slot and its ip's
    /// accumulator. perf (10M-row bench day): the accumulator's cache miss was ~10% of the
    /// parsing thread's time (~750k ips x 24 B: beyond L2).
    #[inline]
    pub fn prefetch(&self, pv_hash: u64, ip_id: u64) {
        self.pkgver_ix.prefetch(pv_hash);
        if let Some(acc) = self.ips.get(ip_id as usize) {
            prefetch_line(acc);
        }
    }

    /// `push` of a row whose time and ip_id were already decoded (exactly as `push` would:
    /// `parse::seconds`, `parse::uint` ≤ `i64::MAX`) by the reading thread, which also computed
    /// `pv_hash`: the `key_hash` of the raw bytes from package's opening to version's closing.
    #[inline]
    #[allow(clippy::too_many_arguments)]
    pub fn push_decoded(
        &mut self,
        line_no: u64,
        line: &[u8],
        f: &Fields<'_>,
        secs: u32,
        ip_id: u64,
        pv_hash: u64,
    ) -> Result<(), RowError> {
        if !self.admit(line_no, line, f)? {
            return Ok(());
        }
        // Size is decoded here, on the parsing thread, which has room: the reading thread
        // (inflate + index) is the pipeline's longer half.
        // `f` lies inside `line`: the field's offsets let `uint_at` read it as one word.
        let at = (f[col::SIZE].as_ptr() as usize).wrapping_sub(line.as_ptr() as usize);
        let size = parse::uint_at(line, at, at.wrapping_add(f[col::SIZE].len()))
            .filter(|&v| v <= i64::MAX as u64)
            .ok_or_else(|| bad(line_no, "size", f[col::SIZE], "a number"))?;
        self.add(line_no, line, f, secs, size, ip_id, pv_hash)
    }

    /// What every row goes through first: counted, date checked, and skipped (counted) when its
    /// package is missing. `Ok(false)` means the row was skipped.
    #[inline(always)]
    fn admit(&mut self, line_no: u64, line: &[u8], f: &Fields<'_>) -> Result<bool, RowError> {
        self.rows += 1;
        if !same(f[col::DATE], &self.date_raw) {
            self.check_date(line_no, f[col::DATE])?;
        }
        let pkg = f[col::PACKAGE];
        if parse::is_missing(pkg) || pkg == b"\"\"" {
            self.skip(line_no, line)?;
            return Ok(false);
        }
        Ok(true)
    }

    /// The rest of `push` once the row's numbers are decoded.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn add(
        &mut self,
        line_no: u64,
        line: &[u8],
        f: &Fields<'_>,
        secs: u32,
        size: u64,
        ip_id: u64,
        pv_hash: u64,
    ) -> Result<(), RowError> {
        let pkg = f[col::PACKAGE];
        let ip = self.ip_index(ip_id);
        let pv_raw = span(line, pkg, f[col::VERSION]);
        let pkgver = match self.pkgver_ix.get_hashed(pv_raw, pv_hash) {
            Some(id) => id,
            None => self.new_pkgver(line_no, pv_raw, pv_hash, f)?,
        };
        let env_raw = span(line, f[col::R_VERSION], f[col::R_OS]);
        let mut env = self.acc(ip).env;
        if !self.env_ix.is(env, env_raw) {
            env = match self.env_ix.get(env_raw) {
                Ok(id) => id,
                Err(h) => self.new_env(line_no, env_raw, h, f)?,
            };
            self.acc(ip).env = env;
        }
        let c_raw = f[col::COUNTRY];
        let country = if let [b'"', a, b, b'"'] = *c_raw {
            match self.country_fast[usize::from(a) << 8 | usize::from(b)] {
                NONE => {
                    let id = self.country_id(line_no, c_raw)?;
                    self.country_fast[usize::from(a) << 8 | usize::from(b)] = id;
                    id
                }
                id => id,
            }
        } else {
            let cached = self.acc(ip).country;
            if self.country_ix.is(cached, c_raw) {
                cached
            } else {
                let id = self.country_id(line_no, c_raw)?;
                self.acc(ip).country = id;
                id
            }
        };

        let acc = &mut self.acc(ip);
        acc.downloads += 1;
        acc.bytes += size;
        self.pkgver_count[pkgver as usize] += 1;
        self.hourly[(secs / 3600) as usize] += 1;
        self.downloads += 1;
        self.bytes += size;
        let small = if size < u64::from(u32::MAX) {
            size as u32
        } else {
            self.big_sizes.insert(self.log.len() as u64, size);
            u32::MAX
        };
        self.log.push(RowRec {
            ip,
            pkgver,
            env,
            size: small,
            time_country: secs | (country << COUNTRY_SHIFT),
        });
        Ok(())
    }

    #[cold]
    fn skip(&mut self, line_no: u64, line: &[u8]) -> Result<(), RowError> {
        // Skipped rows are not decoded further, but must still be text.
        if let Err(e) = std::str::from_utf8(line) {
            return Err(row_err(
                line_no,
                "row",
                format!("not UTF-8 (byte {} of the line)", e.valid_up_to() + 1),
            ));
        }
        self.skipped += 1;
        Ok(())
    }

    /// The ip index of `ip_id` (see `ips`), creating its entry on first sight.
    #[inline]
    fn ip_index(&mut self, ip_id: u64) -> u32 {
        if ip_id < DENSE_IPS {
            let i = ip_id as usize;
            if i >= self.ips.len() {
                let new_len = (i + 1)
                    .next_power_of_two()
                    .max(1024)
                    .min(DENSE_IPS as usize);
                self.ips.resize(new_len, IpAcc::EMPTY);
            }
            i as u32
        } else if let Some(&k) = self.ip_sparse.get(&ip_id) {
            DENSE_IPS as u32 + k
        } else {
            let k = self.sparse.len() as u32;
            self.sparse.push(IpAcc::EMPTY);
            self.sparse_ids.push(ip_id);
            self.ip_sparse.insert(ip_id, k);
            DENSE_IPS as u32 + k
        }
    }

    #[inline]
    fn acc(&mut self, ip: u32) -> &mut IpAcc {
        if u64::from(ip) < DENSE_IPS {
            &mut self.ips[ip as usize]
        } else {
            &mut self.sparse[(u64::from(ip) - DENSE_IPS) as usize]
        }
    }

    #[cold]
    fn new_pkgver(
        &mut self,
        line: u64,
        raw: &[u8],
        hash: u64,
        f: &Fields<'_>,
    ) -> Result<u32, RowError> {
        let name = utf8(line, "package", &parse::unquote(f[col::PACKAGE]))?;
        let version = opt_utf8(line, "version", f[col::VERSION])?;
        let next = self.package_ix.len() as u32;
        let pkg = *self.package_ix.entry(name.clone()).or_insert(next);
        if pkg == next {
            self.dict.packages.push(name);
        }
        self.dict.pkgvers.push((pkg, version));
        self.pkgver_count.push(0);
        Ok(self.pkgver_ix.add(raw, hash))
    }

    #[cold]
    fn new_env(
        &mut self,
        line: u64,
        raw: &[u8],
        hash: u64,
        f: &Fields<'_>,
    ) -> Result<u32, RowError> {
        let env = [
            opt_utf8(line, "r_version", f[col::R_VERSION])?,
            opt_utf8(line, "r_arch", f[col::R_VERSION + 1])?,
            opt_utf8(line, "r_os", f[col::R_OS])?,
        ];
        self.dict.envs.push(env);
        Ok(self.env_ix.add(raw, hash))
    }

    /// The id of a country field (interned on first sight).
    #[cold]
    fn country_id(&mut self, line: u64, raw: &[u8]) -> Result<u32, RowError> {
        let hash = match self.country_ix.get(raw) {
            Ok(id) => return Ok(id),
            Err(h) => h,
        };
        if self.dict.countries.len() as u32 >= MAX_COUNTRIES {
            return Err(row_err(
                line,
                "country",
                format!("more than {MAX_COUNTRIES} distinct values"),
            ));
        }
        self.dict.countries.push(opt_utf8(line, "country", raw)?);
        Ok(self.country_ix.add(raw, hash))
    }

    /// Ranks the downloaders and builds the day's tables. `None` when no data row was seen.
    pub fn finish(self) -> Option<DayTables> {
        let date = self.date?;
        if self.rows == 0 {
            return None;
        }
        // Top 100 by downloads desc, ip_id asc, among ips with a download.
        let (ips, sparse, sparse_ids) = (&self.ips, &self.sparse, &self.sparse_ids);
        let get = |ix: u32| -> (IpAcc, u64) {
            if u64::from(ix) < DENSE_IPS {
                (ips[ix as usize], u64::from(ix))
            } else {
                let k = (u64::from(ix) - DENSE_IPS) as usize;
                (sparse[k], sparse_ids[k])
            }
        };
        // One sequential pass with the best `TOP` so far in a heap whose top is the worst kept:
        // collecting every downloader and selecting among them took ~35 ms (random reads).
        let mut best: BinaryHeap<(std::cmp::Reverse<u32>, u64, u32)> = BinaryHeap::new();
        let mut downloaders = sparse.len() as u64;
        let mut offer = |acc: &IpAcc, id: u64, ix: u32| {
            let cand = (std::cmp::Reverse(acc.downloads), id, ix);
            if best.len() < TOP {
                best.push(cand);
            } else if best.peek().is_some_and(|worst| cand < *worst) {
                best.pop();
                best.push(cand);
            }
        };
        for (i, acc) in ips.iter().enumerate() {
            if acc.downloads > 0 {
                downloaders += 1;
                offer(acc, i as u64, i as u32);
            }
        }
        for (k, acc) in sparse.iter().enumerate() {
            offer(acc, sparse_ids[k], DENSE_IPS as u32 + k as u32);
        }
        let order: Vec<u32> = best.into_sorted_vec().iter().map(|c| c.2).collect();

        // Rank of each ip index (0: not a whale).
        let mut rank_of = vec![0u8; ips.len()];
        let mut rank_sparse = vec![0u8; sparse.len()];
        for (r, &ip) in order.iter().enumerate() {
            if u64::from(ip) < DENSE_IPS {
                rank_of[ip as usize] = (r + 1) as u8;
            } else {
                rank_sparse[(u64::from(ip) - DENSE_IPS) as usize] = (r + 1) as u8;
            }
        }
        // The log scan is the largest part of `finish` and the reading thread is done by now:
        // each half of the log is scanned on its own core, and the halves joined in file order.
        let scan = |part: &[RowRec], first: usize| {
            let mut rows: Vec<Vec<WhaleRow>> = vec![Vec::new(); order.len()];
            let mut pkg_whale = vec![0u64; self.dict.packages.len()];
            for (i, r) in part.iter().enumerate() {
                let rank = match rank_of.get(r.ip as usize) {
                    Some(&rank) => rank,
                    None => rank_sparse[(u64::from(r.ip) - DENSE_IPS) as usize],
                };
                if rank == 0 {
                    continue;
                }
                let size = if r.size == u32::MAX {
                    self.big_sizes[&((first + i) as u64)]
                } else {
                    u64::from(r.size)
                };
                pkg_whale[self.dict.pkgvers[r.pkgver as usize].0 as usize] += 1;
                let list = &mut rows[rank as usize - 1];
                if list.capacity() == 0 {
                    // Sized once: a whale's row count is known, and growing a list of
                    // ~100k rows by doubling copied it over and over.
                    list.reserve_exact(get(order[rank as usize - 1]).0.downloads as usize);
                }
                list.push(WhaleRow {
                    secs: r.time_country & ((1 << COUNTRY_SHIFT) - 1),
                    country: r.time_country >> COUNTRY_SHIFT,
                    pkgver: r.pkgver,
                    env: r.env,
                    size,
                });
            }
            (rows, pkg_whale)
        };
        let half = self.log.len() / 2;
        let ((mut whale_rows, mut pkg_whale), (later, pkg_later)) = std::thread::scope(|s| {
            let second = s.spawn(|| scan(&self.log[half..], half));
            let first = scan(&self.log[..half], 0);
            (first, second.join().expect("log scan thread"))
        });
        for (rows, more) in whale_rows.iter_mut().zip(later) {
            rows.extend_from_slice(&more);
        }
        for (n, more) in pkg_whale.iter_mut().zip(pkg_later) {
            *n += more;
        }
        // Freeing ~200 MB of rows takes tens of ms of unmapping: done beside the rest.
        let log = self.log;
        std::thread::spawn(move || drop(log));

        let whale_ids: Vec<u64> = order.iter().map(|&i| get(i).1).collect();
        let names = names::assign(&date, &whale_ids);
        // Countries are counted by text (`"US"` and `US` are two raw values of one country):
        // `canon` maps a raw country id to its text's index in `texts` (sorted, so the lowest
        // index among equal counts is the alphabetically first).
        let mut texts: Vec<&str> = self
            .dict
            .countries
            .iter()
            .flatten()
            .map(|c| c.as_str())
            .collect();
        texts.sort_unstable();
        texts.dedup();
        let canon: Vec<Option<usize>> = (self.dict.countries.iter())
            .map(|c| {
                c.as_deref()
                    .map(|c| texts.binary_search(&c).unwrap_or_default())
            })
            .collect();
        // Each whale's table on one of two threads (odd and even ranks).
        let dict = &self.dict;
        let table = |r: usize, mut rows: Vec<WhaleRow>, name: String, seen: &mut [u32]| {
            // Chronological; the sort is stable so equal times keep file order.
            rows.sort_by_key(|w| w.secs);
            let mut hourly = [0u64; 24];
            let mut packages = 0u64;
            let mut by_country = vec![0u64; texts.len()];
            for w in &rows {
                hourly[(w.secs / 3600) as usize] += 1;
                if let Some(c) = canon[w.country as usize] {
                    by_country[c] += 1;
                }
                // `seen[p] == r + 1` once whale r has a download of package p.
                let p = dict.pkgvers[w.pkgver as usize].0 as usize;
                if seen[p] != r as u32 + 1 {
                    seen[p] = r as u32 + 1;
                    packages += 1;
                }
            }
            // Modal country; ties go to the alphabetically first code.
            let country = (by_country.iter().enumerate())
                .filter(|(_, &n)| n > 0)
                .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(&a.0)))
                .map(|(c, _)| texts[c].to_owned());
            let acc = get(order[r]).0;
            WhaleTable {
                rank: r as u32 + 1,
                ip_id: whale_ids[r],
                name,
                country,
                downloads: u64::from(acc.downloads),
                bytes: acc.bytes,
                packages,
                first: rows.first().map_or(0, |w| w.secs),
                last: rows.last().map_or(0, |w| w.secs),
                hourly,
                rows,
            }
        };
        let (even, odd): (Vec<_>, Vec<_>) = whale_rows
            .into_iter()
            .zip(names)
            .enumerate()
            .partition(|(r, _)| r % 2 == 0);
        let tables = |part: Vec<(usize, (Vec<WhaleRow>, String))>| {
            let mut seen = vec![0u32; dict.packages.len()];
            (part.into_iter())
                .map(|(r, (rows, name))| table(r, rows, name, &mut seen))
                .collect::<Vec<_>>()
        };
        let (even, odd) = std::thread::scope(|s| {
            let odd = s.spawn(|| tables(odd));
            (tables(even), odd.join().expect("whale tables thread"))
        });
        let mut whales = Vec::with_capacity(order.len());
        let mut odd = odd.into_iter();
        for w in even {
            whales.push(w);
            whales.extend(odd.next());
        }

        let mut pkg_downloads = vec![0u64; self.dict.packages.len()];
        for (pv, n) in self.pkgver_count.iter().enumerate() {
            pkg_downloads[self.dict.pkgvers[pv].0 as usize] += n;
        }
        let packages = self
            .dict
            .packages
            .iter()
            .enumerate()
            .map(|(i, p)| PackageCount {
                package: p.clone(),
                downloads: pkg_downloads[i],
                whale_downloads: pkg_whale[i],
            })
            .collect::<Vec<_>>();

        Some(DayTables {
            date,
            rows: self.rows,
            blank_lines: self.blank,
            totals: Totals {
                downloads: self.downloads,
                downloaders,
                bytes: self.bytes,
                packages: packages.len() as u64,
                skipped_rows: self.skipped,
            },
            hourly: self.hourly,
            whales,
            packages,
            dict: self.dict,
        })
    }
}

#[cold]
fn bad(line: u64, field: &'static str, raw: &[u8], what: &str) -> RowError {
    let shown = String::from_utf8_lossy(raw);
    let shown: String = shown.chars().take(40).collect();
    row_err(line, field, format!("{shown:?} is not {what}"))
}

/// One download of a whale, as dictionary ids.
#[derive(Clone, Copy)]
struct WhaleRow {
    secs: u32,
    country: u32,
    pkgver: u32,
    env: u32,
    size: u64,
}

/// A top downloader of the day with all its rows.
pub struct WhaleTable {
    pub rank: u32,
    pub ip_id: u64,
    pub name: String,
    pub country: Option<String>,
    pub downloads: u64,
    pub bytes: u64,
    pub packages: u64,
    /// Seconds since midnight of the first and last download.
    pub first: u32,
    pub last: u32,
    pub hourly: [u64; 24],
    rows: Vec<WhaleRow>,
}

/// Downloads of one package on the day, all and by the top-100 whales.
pub struct PackageCount {
    pub package: String,
    pub downloads: u64,
    pub whale_downloads: u64,
}

/// One whale download with its strings resolved (borrowed from the day's dictionaries).
#[derive(Clone, Copy)]
pub struct DownloadRef<'a> {
    pub secs: u32,
    pub package: &'a str,
    pub version: Option<&'a str>,
    pub size: u64,
    pub r_version: Option<&'a str>,
    pub r_arch: Option<&'a str>,
    pub r_os: Option<&'a str>,
    pub country: Option<&'a str>,
}

/// Everything stored for one day, computed in memory before the store's single transaction.
pub struct DayTables {
    pub date: String,
    /// Data rows read, skipped ones included.
    pub rows: u64,
    /// Empty lines, tolerated.
    pub blank_lines: u64,
    pub totals: Totals,
    pub hourly: [u64; 24],
    /// Ranked, at most [`TOP`].
    pub whales: Vec<WhaleTable>,
    pub packages: Vec<PackageCount>,
    dict: Dict,
}

impl DayTables {
    /// The downloads of whale `i` (index into `whales`), chronological, strings resolved: the
    /// plain reading that tests hold `pack_whale` to.
    pub fn whale_downloads(&self, i: usize) -> impl Iterator<Item = DownloadRef<'_>> + '_ {
        self.whales[i].rows.iter().map(move |w| {
            let (pkg, version) = &self.dict.pkgvers[w.pkgver as usize];
            let [rv, ra, ro] = &self.dict.envs[w.env as usize];
            DownloadRef {
                secs: w.secs,
                package: &self.dict.packages[*pkg as usize],
                version: version.as_deref(),
                size: w.size,
                r_version: rv.as_deref(),
                r_arch: ra.as_deref(),
                r_os: ro.as_deref(),
                country: self.dict.countries[w.country as usize].as_deref(),
            }
        })
    }

    /// Rows stored for all whales together.
    pub fn whale_row_count(&self) -> u64 {
        self.whales.iter().map(|w| w.rows.len() as u64).sum()
    }

    /// Whale `i`'s rows packed into one blob (see `blob`), its strings numbered through arrays
    /// indexed by dictionary id: `blob::pack` over `whale_downloads` resolved every field in
    /// the dictionaries and hashed its address, ~130 ns a row (190 ms for the bench day's 1.5M
    /// whale rows).
    pub fn pack_whale(&self, i: usize, sc: &mut PackScratch) -> (u64, Vec<u8>) {
        let d = &self.dict;
        sc.stamp += 1;
        let st = sc.stamp;
        sc.package.resize(d.packages.len(), (0, 0));
        sc.pkgver.resize(d.pkgvers.len(), (0, [0; 2]));
        sc.env.resize(d.envs.len(), (0, [0; 3]));
        sc.country.resize(d.countries.len(), (0, 0));
        let rows = &self.whales[i].rows;
        let mut w = crate::blob::Writer::new(rows.len());
        for r in rows {
            let pv = r.pkgver as usize;
            if sc.pkgver[pv].0 != st {
                let (pkg, version) = &d.pkgvers[pv];
                let p = *pkg as usize;
                if sc.package[p].0 != st {
                    sc.package[p] = (st, w.string(&d.packages[p]));
                }
                let v = version.as_deref().map_or(0, |v| w.string(v));
                sc.pkgver[pv] = (st, [sc.package[p].1, v]);
            }
            let env = r.env as usize;
            if sc.env[env].0 != st {
                let mut ids = [0; 3];
                for (id, s) in ids.iter_mut().zip(&d.envs[env]) {
                    *id = s.as_deref().map_or(0, |s| w.string(s));
                }
                sc.env[env] = (st, ids);
            }
            let c = r.country as usize;
            if sc.country[c].0 != st {
                sc.country[c] = (st, d.countries[c].as_deref().map_or(0, |s| w.string(s)));
            }
            let ([p, v], [rv, ra, ro]) = (sc.pkgver[pv].1, sc.env[env].1);
            w.row(r.secs, r.size, [p, v, rv, ra, ro, sc.country[c].1]);
        }
        w.finish()
    }
}

/// Reusable memory of `DayTables::pack_whale` (one per thread): blob string indexes by
/// dictionary id, valid where the entry's stamp is the current whale's.
#[derive(Default)]
pub struct PackScratch {
    stamp: u32,
    package: Vec<(u32, u32)>,
    /// Package and version indexes of a package+version.
    pkgver: Vec<(u32, [u32; 2])>,
    env: Vec<(u32, [u32; 3])>,
    country: Vec<(u32, u32)>,
}
