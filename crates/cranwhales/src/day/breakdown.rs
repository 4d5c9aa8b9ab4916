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
//! How: one pass over the log finds the uniform whales, one more counts each
//! (package+version, environment, country, fields left out) with its whale, small and repeated rows in
//! a hash map (a day has far fewer such keys than rows); these are then spread over the five
//! dimensions, sorted and merged per package. Keys other than versions are numbered once for
//! the day ([`Breakdowns::keys`]), so the store writes each string once a day.

use super::filters::{REPEAT, SMALL};
use super::rank::Ranking;
use super::{Dict, FastMap, RowRec, COUNTRY_SHIFT, TOP};

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

/// The dimensions keyed through [`Breakdowns::keys`], in this order in
/// [`PackageBreakdown::dims`] (versions are apart: they belong to one package).
pub const DIMS: [&str; 4] = ["country", "os", "r_version", "arch"];

/// One package's breakdowns on the day.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct PackageBreakdown {
    /// (version, counts); `None`: the version field was missing. By version text.
    pub versions: Vec<(Option<String>, Counts)>,
    /// Per [`DIMS`] entry: (key index into [`Breakdowns::keys`], counts), by key index.
    pub dims: [Vec<(u32, Counts)>; 4],
}

/// Every package's breakdowns on the day.
#[derive(Debug, Default)]
pub struct Breakdowns {
    /// The day's distinct keys of the [`DIMS`]; index 0 stands for a missing field (`None`).
    pub keys: Vec<Option<String>>,
    /// The uniform whales (module doc): (rank, per [`DIMS`] entry its one key, if it had one),
    /// ranks ascending. Their clean downloads are not in the packages' entries of those DIMS.
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
/// `filters::Filtered::flags` entry.
pub(super) fn count(
    log: &[RowRec],
    pkg_of: &[u32],
    ranking: &Ranking,
    dict: &Dict,
    flags: &[u8],
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
    let uniform = uniform_whales(log, ranking, flags, dims_of);
    // Per rank: bit d set when the whale is uniform in DIMS[d].
    let mut mask = [0u8; 256];
    for (rank, k) in &uniform {
        mask[*rank as usize] = (0..4).fold(0, |m, d| m | u8::from(k[d].is_some()) << d);
    }
    // (pkgver, env, country, DIMS its row is left out of) → counts.
    let mut quads: FastMap<(u32, u32, u32, u8), [u32; 6]> = FastMap::default();
    for (r, &flag) in log.iter().zip(flags) {
        let rank = ranking.of(r.ip);
        let whale = u32::from(rank != 0);
        let left_out = if flag == 0 {
            mask[usize::from(rank)]
        } else {
            0
        };
        let c = (quads.entry((r.pkgver, r.env, r.time_country >> COUNTRY_SHIFT, left_out)))
            .or_default();
        let (small, repeat) = (u32::from(flag == SMALL), u32::from(flag == REPEAT));
        c[0] += 1;
        c[1] += whale;
        c[2] += small;
        c[3] += repeat;
        c[4] += small * whale;
        c[5] += repeat * whale;
    }
    // (package, dimension: 0 version else DIMS + 1, key, counts)
    let mut parts: Vec<(u32, u8, u32, Counts)> = Vec::with_capacity(quads.len() * 5);
    for ((pv, e, c, left_out), n) in quads {
        let p = pkg_of[pv as usize];
        let counts = Counts::of(n);
        parts.push((p, 0, pv, counts));
        let [os, rv, arch] = env[e as usize];
        for (d, key) in [country[c as usize], os, rv, arch].into_iter().enumerate() {
            if left_out & (1 << d) == 0 {
                parts.push((p, d as u8 + 1, key, counts));
            }
        }
    }
    parts.sort_unstable_by_key(|&(p, dim, key, _)| (p, dim, key));
    let mut packages = vec![PackageBreakdown::default(); dict.packages.len()];
    for group in parts.chunk_by(|a, b| (a.0, a.1, a.2) == (b.0, b.1, b.2)) {
        let (p, dim, key, _) = group[0];
        let mut sum = Counts::default();
        group.iter().for_each(|g| sum.add(g.3));
        let b = &mut packages[p as usize];
        match dim {
            0 => b.versions.push((dict.pkgvers[key as usize].1.clone(), sum)),
            d => b.dims[usize::from(d) - 1].push((key, sum)),
        }
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
        uniform,
        packages,
    }
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
