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
//! How: one pass over the log finds the uniform whales, one more counts each
//! (package+version, environment, country, fields left out) with its whale, small and repeated rows in
//! a hash map (a day has far fewer such keys than rows); these are then spread over the five
//! dimensions, sorted and merged per package. Keys other than versions are numbered once for
//! the day ([`Breakdowns::keys`]), so the store writes each string once a day.

use super::filters::{REPEAT, SMALL};
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

    /// From `[downloads, whales, small, repeats, whale_small, whale_repeats]`.
    fn of(n: [u32; 6]) -> Counts {
        let [downloads, whales, small, repeats, whale_small, whale_repeats] = n.map(u64::from);
        Counts {
            downloads,
            whales,
            small,
            repeats,
            whale_small,
            whale_repeats,
        }
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
/// package+version id; whales are the ips `ranking` ranks; `flags` is each row's
/// `filters::Filtered::flags` entry. On `Threads::Two` the packages are counted in two halves
/// at once (a hash map entry per row: a quarter of a 10M-row day's ingest on one thread).
pub(super) fn count(
    log: &[RowRec],
    pkg_of: &[u32],
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
    let mut uniform = uniform_whales(log, ranking, flags, dims_of);
    // A whale's rows are left out of the builds only when it is uniform in all three fields.
    for (_, k) in &mut uniform {
        if k[1..].iter().any(Option::is_none) {
            k[1..].iter_mut().for_each(|x| *x = None);
        }
    }
    uniform.retain(|(_, k)| k.iter().any(Option::is_some));
    // Per rank: bit 0 set when the whale is uniform in country, bit 1 in the build.
    let mut mask = [0u8; 256];
    for (rank, k) in &uniform {
        mask[*rank as usize] = u8::from(k[0].is_some()) | u8::from(k[1].is_some()) << 1;
    }
    let pass = Pass {
        log,
        flags,
        pkg_of,
        ranking,
        dict,
        mask,
        build_of: &build_of,
        country: &country,
    };
    // Each package's rows are counted whole by one of the two threads (its index's parity).
    let (even, odd) = threads.join(|| pass.count(0), || pass.count(1));
    let mut packages = vec![PackageBreakdown::default(); dict.packages.len()];
    for (p, b) in even.into_iter().chain(odd) {
        packages[p as usize] = b;
    }
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

/// One counting pass over the log (`count`'s second), for the packages of one parity.
struct Pass<'a> {
    log: &'a [RowRec],
    flags: &'a [u8],
    pkg_of: &'a [u32],
    ranking: &'a Ranking,
    dict: &'a Dict,
    /// Per rank: bit 0 set when the whale is uniform in country, bit 1 in the build.
    mask: [u8; 256],
    /// Per env: its build.
    build_of: &'a [u32],
    /// Per country id: its key.
    country: &'a [u32],
}

impl Pass<'_> {
    /// The breakdowns of the packages whose index is `half` modulo 2, by package index.
    fn count(&self, half: u32) -> Vec<(u32, PackageBreakdown)> {
        // (pkgver, build, country, dimensions its row is left out of) → counts, the key packed
        // into one integer (one hash write a row, not four).
        let mut quads: FastMap<u128, [u32; 6]> = FastMap::default();
        for (r, &flag) in self.log.iter().zip(self.flags) {
            if self.pkg_of[r.pkgver as usize] & 1 != half {
                continue;
            }
            let rank = self.ranking.of(r.ip);
            let whale = u32::from(rank != 0);
            let left_out = if flag == 0 {
                self.mask[usize::from(rank)]
            } else {
                0
            };
            let key = quad(
                r.pkgver,
                self.build_of[r.env as usize],
                r.time_country >> COUNTRY_SHIFT,
                left_out,
            );
            let c = quads.entry(key).or_default();
            let (small, repeat) = (u32::from(flag == SMALL), u32::from(flag == REPEAT));
            c[0] += 1;
            c[1] += whale;
            c[2] += small;
            c[3] += repeat;
            c[4] += small * whale;
            c[5] += repeat * whale;
        }
        // (package, dimension: 0 version, 1 country, 2 build, key, counts)
        let mut parts: Vec<(u32, u8, u32, Counts)> = Vec::with_capacity(quads.len() * 3);
        for (key, n) in quads {
            let (pv, build, c, left_out) = unquad(key);
            let p = self.pkg_of[pv as usize];
            let counts = Counts::of(n);
            parts.push((p, 0, pv, counts));
            let keys = [self.country[c as usize], build];
            for (d, key) in keys.into_iter().enumerate() {
                if left_out & (1 << d) == 0 {
                    parts.push((p, d as u8 + 1, key, counts));
                }
            }
        }
        parts.sort_unstable_by_key(|&(p, dim, key, _)| (p, dim, key));
        let mut out: Vec<(u32, PackageBreakdown)> = Vec::new();
        for group in parts.chunk_by(|a, b| (a.0, a.1, a.2) == (b.0, b.1, b.2)) {
            let (p, dim, key, _) = group[0];
            let mut sum = Counts::default();
            group.iter().for_each(|g| sum.add(g.3));
            if out.last().is_none_or(|l| l.0 != p) {
                out.push((p, PackageBreakdown::default()));
            }
            let b = &mut out.last_mut().expect("pushed above").1;
            match dim {
                0 => b
                    .versions
                    .push((self.dict.pkgvers[key as usize].1.clone(), sum)),
                1 => b.countries.push((key, sum)),
                _ => b.builds.push((key, sum)),
            }
        }
        out
    }
}

/// (package+version, build, country, left out) as one hash key.
fn quad(pkgver: u32, build: u32, country: u32, left_out: u8) -> u128 {
    u128::from(pkgver) << 96
        | u128::from(build) << 64
        | u128::from(country) << 8
        | u128::from(left_out)
}

/// [`quad`] undone.
fn unquad(k: u128) -> (u32, u32, u32, u8) {
    ((k >> 96) as u32, (k >> 64) as u32, (k >> 8) as u32, k as u8)
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
