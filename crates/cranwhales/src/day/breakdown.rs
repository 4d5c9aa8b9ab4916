//! Each package's downloads broken down by version, country, R's OS, R version and arch, with
//! the top-100 whales' share of each key and the small and repeated downloads among them
//! (`day::filters`, each row's flag) (issue 34), counted once at ingest from the row log: the
//! raw rows are not kept after it, so a breakdown cannot be made later from the store.
//!
//! A whale whose clean downloads (neither small nor repeats) all had one country and one R
//! build (OS, R version, arch) over the whole day is **uniform** ([`Breakdowns::uniform`]):
//! mirrors that fetch every package once are. Its clean downloads are left out of the
//! packages' country, OS, R version and arch entries (not out of the versions): the store keeps
//! its keys once a day, and a package's part of them is its downloads in the package's
//! `whale_ranks` less their small and repeated ones — exact, and most keys of most packages on
//! a day with mirrors exist only for them (2015-01-08: 102,790 of 157,013).
//!
//! How: one pass over the log finds the uniform whales, one more counts each
//! (package+version, environment, country, uniform) with its whale, small and repeated rows in
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
    /// The uniform whales (module doc): (rank, its key per [`DIMS`] entry), ranks ascending.
    /// Their clean downloads are in the packages' versions only.
    pub uniform: Vec<(u32, [u32; 4])>,
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
    let uniform = uniform_whales(log, ranking, flags);
    // (pkgver, env, country, uniform whale's clean row) → counts.
    let mut quads: FastMap<(u32, u32, u32, bool), [u32; 6]> = FastMap::default();
    for (r, &flag) in log.iter().zip(flags) {
        let rank = ranking.of(r.ip);
        let whale = u32::from(rank != 0);
        let clean_uniform = flag == 0 && uniform[usize::from(rank)].is_some();
        let c = quads
            .entry((
                r.pkgver,
                r.env,
                r.time_country >> COUNTRY_SHIFT,
                clean_uniform,
            ))
            .or_default();
        let (small, repeat) = (u32::from(flag == SMALL), u32::from(flag == REPEAT));
        c[0] += 1;
        c[1] += whale;
        c[2] += small;
        c[3] += repeat;
        c[4] += small * whale;
        c[5] += repeat * whale;
    }
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
    let uniform: Vec<(u32, [u32; 4])> = (uniform.iter().enumerate())
        .filter_map(|(rank, u)| {
            let (e, c) = (*u)?;
            let [os, rv, arch] = env[e as usize];
            Some((rank as u32, [country[c as usize], os, rv, arch]))
        })
        .collect();
    // (package, dimension: 0 version else DIMS + 1, key, counts)
    let mut parts: Vec<(u32, u8, u32, Counts)> = Vec::with_capacity(quads.len() * 5);
    for ((pv, e, c, clean_uniform), n) in quads {
        let p = pkg_of[pv as usize];
        let [downloads, whales, small, repeats, whale_small, whale_repeats] = n.map(u64::from);
        let counts = Counts {
            downloads,
            whales,
            small,
            repeats,
            whale_small,
            whale_repeats,
        };
        parts.push((p, 0, pv, counts));
        if clean_uniform {
            continue;
        }
        let [os, rv, arch] = env[e as usize];
        for (dim, key) in [(1, country[c as usize]), (2, os), (3, rv), (4, arch)] {
            parts.push((p, dim, key, counts));
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

/// Per rank (index 0 unused): the (env, country) of every clean row of that whale when it had
/// one, else `None` (several, or no clean row).
fn uniform_whales(log: &[RowRec], ranking: &Ranking, flags: &[u8]) -> Vec<Option<(u32, u32)>> {
    // Per rank: no clean row yet, one (env, country), or several.
    #[derive(Clone, Copy)]
    enum Seen {
        Nothing,
        One(u32, u32),
        Several,
    }
    let mut seen = [Seen::Nothing; TOP + 1];
    for (r, _) in log.iter().zip(flags).filter(|(_, &f)| f == 0) {
        let rank = usize::from(ranking.of(r.ip));
        if rank == 0 || rank > TOP {
            continue;
        }
        let key = (r.env, r.time_country >> COUNTRY_SHIFT);
        seen[rank] = match seen[rank] {
            Seen::Nothing => Seen::One(key.0, key.1),
            Seen::One(e, c) if (e, c) == key => Seen::One(e, c),
            _ => Seen::Several,
        };
    }
    let mut out = vec![None; 256];
    for (rank, s) in seen.iter().enumerate() {
        if let Seen::One(e, c) = *s {
            out[rank] = Some((e, c));
        }
    }
    out
}
