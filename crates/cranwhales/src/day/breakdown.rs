//! Each package's downloads broken down by version, country, R's OS, R version and arch, with
//! the top-100 whales' share of each key and the small and repeated downloads among them
//! (`day::filters`, each row's flag) (issue 34), counted once at ingest from the row log: the
//! raw rows are not kept after it, so a breakdown cannot be made later from the store.
//!
//! A whale whose clean downloads (neither small nor repeats) all had one key of a field
//! (country, OS, R version or arch) over the whole day is **uniform** in that field
//! ([`Breakdowns::uniform`]): every whale is in its country (the country comes from the
//! address), and mirrors are in the R build they fetch with. Its clean downloads are left out
//! of the packages' entries of that field (never out of the versions): the store keeps its key
//! once a day, and a package's part of it is the whale's downloads in the package's
//! `whale_ranks` less their small and repeated ones — exact, and most keys of most packages on a
//! day with mirrors exist only for them (2015-01-08: 102,790 of 157,013).
//!
//! OS, R version and arch are kept together, as the package's R builds (the triple
//! (`r_os`, `r_version`, `r_arch`), [`Breakdowns::builds`]): one entry where the three fields
//! took three, and each field's count is the sum of its builds' (exact). Mirrors fetch every
//! package with ~50 R builds a day, so these entries were most of a package's (schema 9). A
//! whale is uniform in the build (left out of the builds' entries) only when it is uniform in all
//! three fields.
//!
//! How: one pass over the log finds the uniform whales; one more groups the rows by package (a
//! counting scatter, as `downloaders`; on two threads each takes half of the packages) while
//! tallying the versions, and then each package's countries and builds are tallied in dense
//! tables of the day's keys, one increment per row and field by its kind (whale or not, clean,
//! small or repeat). Keys other than versions are numbered once for the day
//! ([`Breakdowns::keys`]), so the store writes each string once a day.

use super::downloaders;
use super::rank::Ranking;
use super::{Dict, FastMap, RowRec, Threads, COUNTRY_SHIFT, TOP};

/// Downloads of one key of one package on the day.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Every download with this key.
    pub downloads: u64,
    /// Of which by the day's top-100 whales.
    pub whales: u64,
    /// Of which small (`day::filters`), whoever made them.
    pub small: u64,
    /// Of which repeats (`day::filters`), whoever made them.
    pub repeats: u64,
    /// Of `small`, by the whales.
    pub whale_small: u64,
    /// Of `repeats`, by the whales.
    pub whale_repeats: u64,
}

impl Counts {
    fn add(&mut self, other: Counts) {
        self.downloads += other.downloads;
        self.whales += other.whales;
        self.small += other.small;
        self.repeats += other.repeats;
        self.whale_small += other.whale_small;
        self.whale_repeats += other.whale_repeats;
    }

    /// The downloads left when the kinds `without` says are taken out (each download once).
    pub fn without(&self, without: Without) -> u64 {
        let on = |b: bool, n: u64| if b { n } else { 0 };
        let (w, s, r) = (without.whales, without.small, without.repeats);
        // Whales' small and repeated downloads are in both: taken out once.
        let out = on(w, self.whales) + on(s, self.small) + on(r, self.repeats)
            - on(w && s, self.whale_small)
            - on(w && r, self.whale_repeats);
        self.downloads.saturating_sub(out)
    }
}

/// Which kinds of downloads a count leaves out (`without=whales,small,repeats`, any of them).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Without {
    /// The day's top-100 downloaders.
    pub whales: bool,
    /// Downloads under `filters::SMALL_BYTES`.
    pub small: bool,
    /// Repeats (`filters::REPEAT_WINDOW_SECS`).
    pub repeats: bool,
}

impl Without {
    /// Parses `whales,small,repeats` (any of them, any order; empty: none); `None` at any other
    /// word.
    pub fn parse(s: &str) -> Option<Without> {
        let mut w = Without::default();
        for part in s.split(',').filter(|p| !p.is_empty()) {
            match part {
                "whales" => w.whales = true,
                "small" => w.small = true,
                "repeats" => w.repeats = true,
                _ => return None,
            }
        }
        Some(w)
    }

    /// The names taken out, in the order `whales`, `small`, `repeats`.
    pub fn names(self) -> Vec<&'static str> {
        [
            (self.whales, "whales"),
            (self.small, "small"),
            (self.repeats, "repeats"),
        ]
        .into_iter()
        .filter_map(|(on, name)| on.then_some(name))
        .collect()
    }

    /// True when small or repeated downloads are taken out (days stored before they were
    /// counted per key cannot say).
    pub fn filters(self) -> bool {
        self.small || self.repeats
    }
}

/// The dimensions keyed through [`Breakdowns::keys`] (versions are apart: they belong to one
/// package). The last three are counted together as R builds ([`Breakdowns::builds`]).
pub const DIMS: [&str; 4] = ["country", "os", "r_version", "arch"];

/// One package's breakdowns on the day.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct PackageBreakdown {
    /// (version, counts); `None`: the version field was missing. By version text.
    pub versions: Vec<(Option<String>, Counts)>,
    /// (key index into [`Breakdowns::keys`] of the country, counts), by key index.
    pub countries: Vec<(u32, Counts)>,
    /// (index into [`Breakdowns::builds`], counts), by index: OS, R version and arch at once.
    pub builds: Vec<(u32, Counts)>,
}

/// Every package's breakdowns on the day.
#[derive(Debug, Default)]
pub struct Breakdowns {
    /// The day's distinct keys of the [`DIMS`]; index 0 stands for a missing field (`None`).
    pub keys: Vec<Option<String>>,
    /// The day's distinct R builds: the key indexes of their OS, R version and arch (`DIMS[1..]`).
    pub builds: Vec<[u32; 3]>,
    /// The uniform whales (module doc): (rank, per [`DIMS`] entry its one key, if it had one;
    /// OS, R version and arch all three or none), ranks ascending. Their clean downloads are not in the packages' entries of those DIMS.
    pub uniform: Vec<(u32, [Option<u32>; 4])>,
    /// By package index (the order of `DayTables::packages`).
    pub packages: Vec<PackageBreakdown>,
}

/// Numbers distinct key strings, 0 being the missing field.
struct KeyIndex<'a> {
    keys: Vec<Option<&'a str>>,
    ix: FastMap<Option<&'a str>, u32>,
}

impl<'a> KeyIndex<'a> {
    fn new() -> Self {
        let mut ix = FastMap::default();
        ix.insert(None, 0);
        KeyIndex {
            keys: vec![None],
            ix,
        }
    }

    fn id(&mut self, key: Option<&'a str>) -> u32 {
        let next = self.keys.len() as u32;
        *self.ix.entry(key).or_insert_with(|| {
            self.keys.push(key);
            next
        })
    }
}

/// Counts every package's breakdowns in `log`. `pkg_of[pkgver]` is the package of a
/// package+version id and `downloads[p]` the rows of package `p`; whales are the ips `ranking`
/// ranks; `flags` is each row's `filters::Filtered::flags` entry. On `Threads::Two` the packages
/// are counted in two halves of about equal rows at once.
pub(super) fn count(
    log: &[RowRec],
    pkg_of: &[u32],
    downloads: &[u64],
    ranking: &Ranking,
    dict: &Dict,
    flags: &[u8],
    threads: Threads,
) -> Breakdowns {
    let mut keys = KeyIndex::new();
    let country: Vec<u32> = (dict.countries.iter())
        .map(|c| keys.id(c.as_deref()))
        .collect();
    // env = (r_version, r_arch, r_os) → the key ids of os, r_version, arch (DIMS' order).
    let env: Vec<[u32; 3]> = (dict.envs.iter())
        .map(|[v, a, o]| {
            [
                keys.id(o.as_deref()),
                keys.id(v.as_deref()),
                keys.id(a.as_deref()),
            ]
        })
        .collect();
    let dims_of = |r: &RowRec| {
        let [os, rv, arch] = env[r.env as usize];
        [
            country[(r.time_country >> COUNTRY_SHIFT) as usize],
            os,
            rv,
            arch,
        ]
    };
    // env → its build: two spellings of an R build are one build.
    let mut build_ix: FastMap<[u32; 3], u32> = FastMap::default();
    let mut builds = Vec::new();
    let build_of: Vec<u32> = (env.iter())
        .map(|&e| {
            *build_ix.entry(e).or_insert_with(|| {
                builds.push(e);
                builds.len() as u32 - 1
            })
        })
        .collect();
    let (uniform, mask) = left_out(uniform_whales(log, ranking, flags, dims_of));
    let mut pkgvers = vec![Vec::new(); dict.packages.len()];
    for (pv, &p) in pkg_of.iter().enumerate() {
        pkgvers[p as usize].push(pv as u32);
    }
    let pass = Pass {
        log,
        flags,
        pkg_of,
        downloads,
        pkgvers: &pkgvers,
        ranking,
        dict,
        mask,
        build_of: &build_of,
        country: &country,
        keys: keys.keys.len(),
        builds: builds.len(),
    };
    let n = dict.packages.len();
    let mut packages = match threads {
        Threads::One => pass.count(0..n),
        Threads::Two => {
            // Two halves of about equal rows, each thread scanning the whole log for its own.
            let cut = downloaders::half_cut(downloads);
            let (mut first, second) = threads.join(|| pass.count(0..cut), || pass.count(cut..n));
            first.extend(second);
            first
        }
    };
    // Two spellings of a version (quoted or not) are two package+version ids: merged by text.
    for b in &mut packages {
        b.versions.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        b.versions.dedup_by(|later, kept| {
            let same = later.0 == kept.0;
            if same {
                kept.1.add(later.1);
            }
            same
        });
    }
    Breakdowns {
        keys: keys.keys.iter().map(|k| k.map(str::to_owned)).collect(),
        builds,
        uniform,
        packages,
    }
}

/// A uniform whale: (rank, per [`DIMS`] entry its one key, if it had one).
type Uniform = (u32, [Option<u32>; 4]);

/// One counting pass over the log (`count`'s second), for a range of packages.
struct Pass<'a> {
    log: &'a [RowRec],
    flags: &'a [u8],
    pkg_of: &'a [u32],
    /// Per package: its rows in the log.
    downloads: &'a [u64],
    /// Per package: its package+version ids, ascending.
    pkgvers: &'a [Vec<u32>],
    ranking: &'a Ranking,
    dict: &'a Dict,
    /// Per rank: bit 0 set when the whale is uniform in country, bit 1 in the build.
    mask: [u8; 256],
    /// Per env: its build.
    build_of: &'a [u32],
    /// Per country id: its key.
    country: &'a [u32],
    /// How many keys and builds the day has.
    keys: usize,
    builds: usize,
}

/// A row's tallies by kind (`2 * flag + whale`): clean, clean by a whale, small, small by a
/// whale, repeat, repeat by a whale. One increment a row; [`Counts`] are sums of them.
type Tally = [u32; 6];

fn counts_of(t: Tally) -> Counts {
    let [clean, clean_w, small, small_w, repeat, repeat_w] = t.map(u64::from);
    Counts {
        downloads: clean + clean_w + small + small_w + repeat + repeat_w,
        whales: clean_w + small_w + repeat_w,
        small: small + small_w,
        repeats: repeat + repeat_w,
        whale_small: small_w,
        whale_repeats: repeat_w,
    }
}

/// One row of a package's group: env << 32 | country << 8 | kind << 2 | fields left out.
/// (A country id has at most 15 bits: `RowRec::time_country`.)
fn entry(env: u32, country: u32, kind: u8, left_out: u8) -> u64 {
    u64::from(env) << 32 | u64::from(country) << 8 | u64::from(kind) << 2 | u64::from(left_out)
}

impl Pass<'_> {
    /// The breakdowns of the packages in `range`, in order.
    ///
    /// perf (10M-row bench day, 2.4M distinct (package+version, build, country, left out)): a
    /// hash-map entry per row and the sort of their parts took 0.93 s of a 3.7 s ingest, and
    /// 2 x ~300 MB. Here the rows are grouped by package (a counting scatter, as `downloaders`:
    /// one pass over the log, each row as 8 bytes) and each package's countries and builds are
    /// tallied in small dense tables that stay in cache; the versions are tallied during the
    /// scatter, by package+version id.
    fn count(&self, range: std::ops::Range<usize>) -> Vec<PackageBreakdown> {
        let n = range.len();
        // `next[k]`: where package range.start + k's next row goes in `grouped`; `next[n]` is
        // the scratch slot at the end, where every other package's rows land (and stay).
        let mut next: Vec<u32> = Vec::with_capacity(n + 1);
        let mut at = 0u32;
        for &d in &self.downloads[range.clone()] {
            next.push(at);
            at += d as u32;
        }
        next.push(at);
        let starts = next.clone();
        // Package+version id → index into `next` (n: not one of ours).
        let local: Vec<u32> = (self.pkg_of.iter())
            .map(|&p| match (p as usize).checked_sub(range.start) {
                Some(k) if k < n => k as u32,
                _ => n as u32,
            })
            .collect();
        // Per package+version id, the last one a scratch row for other packages' rows.
        let scratch = self.pkg_of.len();
        let mut versions: Vec<Tally> = vec![[0; 6]; scratch + 1];
        let mut grouped = vec![0u64; at as usize + 1];
        for (r, &flag) in self.log.iter().zip(self.flags) {
            let k = local[r.pkgver as usize] as usize;
            let rank = self.ranking.of(r.ip);
            let kind = 2 * flag + u8::from(rank != 0);
            let left_out = if flag == 0 {
                self.mask[usize::from(rank)]
            } else {
                0
            };
            let slot = next[k];
            grouped[slot as usize] = entry(r.env, r.time_country >> COUNTRY_SHIFT, kind, left_out);
            next[k] = slot + u32::from(k != n);
            let pv = if k != n { r.pkgver as usize } else { scratch };
            versions[pv][usize::from(kind)] += 1;
        }
        let mut by_country = Dense::new(self.keys);
        let mut by_build = Dense::new(self.builds);
        (0..n)
            .map(|k| {
                for &e in &grouped[starts[k] as usize..next[k] as usize] {
                    let kind = (e >> 2 & 7) as usize;
                    if e & 1 == 0 {
                        let c = self.country[(e >> 8 & 0x7fff) as usize];
                        by_country.add(c, kind);
                    }
                    if e & 2 == 0 {
                        by_build.add(self.build_of[(e >> 32) as usize], kind);
                    }
                }
                let p = range.start + k;
                PackageBreakdown {
                    versions: (self.pkgvers[p].iter())
                        .filter(|&&pv| versions[pv as usize] != [0; 6])
                        .map(|&pv| {
                            let counts = counts_of(versions[pv as usize]);
                            (self.dict.pkgvers[pv as usize].1.clone(), counts)
                        })
                        .collect(),
                    countries: by_country.take(),
                    builds: by_build.take(),
                }
            })
            .collect()
    }
}

/// Tallies by key for one package at a time: a slot per key of the day, and the keys touched.
struct Dense {
    tallies: Vec<Tally>,
    touched: Vec<u32>,
}

impl Dense {
    fn new(keys: usize) -> Self {
        Dense {
            tallies: vec![[0; 6]; keys],
            touched: Vec::new(),
        }
    }

    #[inline]
    fn add(&mut self, key: u32, kind: usize) {
        let t = &mut self.tallies[key as usize];
        if *t == [0; 6] {
            self.touched.push(key);
        }
        t[kind] += 1;
    }

    /// The package's (key, counts), by key, and every slot cleared for the next package.
    fn take(&mut self) -> Vec<(u32, Counts)> {
        self.touched.sort_unstable();
        (self.touched.drain(..))
            .map(|key| {
                let t = std::mem::take(&mut self.tallies[key as usize]);
                (key, counts_of(t))
            })
            .collect()
    }
}

/// The uniform whales as [`Breakdowns::uniform`] keeps them (uniform in the build only when in
/// all three of its fields), and per rank which entries leave out its clean rows: bit 0 set
/// when the whale is uniform in country, bit 1 in the build.
fn left_out(mut uniform: Vec<Uniform>) -> (Vec<Uniform>, [u8; 256]) {
    for (_, k) in &mut uniform {
        if k[1..].iter().any(Option::is_none) {
            k[1..].iter_mut().for_each(|x| *x = None);
        }
    }
    uniform.retain(|(_, k)| k.iter().any(Option::is_some));
    let mut mask = [0u8; 256];
    for (rank, k) in &uniform {
        mask[*rank as usize] = u8::from(k[0].is_some()) | u8::from(k[1].is_some()) << 1;
    }
    (uniform, mask)
}

/// The whales uniform in some of the [`DIMS`]: (rank, per DIMS entry the key of every clean row
/// of that whale when it had one key), ranks ascending, only whales uniform in some.
fn uniform_whales(
    log: &[RowRec],
    ranking: &Ranking,
    flags: &[u8],
    dims_of: impl Fn(&RowRec) -> [u32; 4],
) -> Vec<(u32, [Option<u32>; 4])> {
    // Per rank and DIMS entry: no clean row yet (NOTHING), one key, or several (SEVERAL).
    const NOTHING: u32 = u32::MAX;
    const SEVERAL: u32 = u32::MAX - 1;
    let mut seen = [[NOTHING; 4]; TOP + 1];
    for (r, _) in log.iter().zip(flags).filter(|(_, &f)| f == 0) {
        let rank = usize::from(ranking.of(r.ip));
        if rank == 0 || rank > TOP {
            continue;
        }
        for (s, k) in seen[rank].iter_mut().zip(dims_of(r)) {
            if *s == NOTHING {
                *s = k;
            } else if *s != k {
                *s = SEVERAL;
            }
        }
    }
    (seen.iter().enumerate().skip(1))
        .map(|(rank, s)| (rank as u32, s.map(|k| (k < SEVERAL).then_some(k))))
        .filter(|(_, k)| k.iter().any(Option::is_some))
        .collect()
}
