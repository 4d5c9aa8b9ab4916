//! Each package's downloads broken down by version, country, R's OS, R version and arch, with
//! the top-100 whales' share of each key (issue 34), counted once at ingest from the row log:
//! the raw rows are not kept after it, so a breakdown cannot be made later from the store.
//!
//! How: one pass over the log counts each (package+version, environment, country) with its
//! whale rows in a hash map (a day has far fewer such triples than rows); the triples are then
//! spread over the five dimensions, sorted and merged per package. Keys other than versions are
//! numbered once for the day ([`Breakdowns::keys`]), so the store writes each string once a day.

use super::rank::Ranking;
use super::{Dict, FastMap, RowRec, COUNTRY_SHIFT};

/// Downloads of one key of one package on the day.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Every download with this key.
    pub downloads: u64,
    /// Of which by the day's top-100 whales.
    pub whales: u64,
}

impl Counts {
    fn add(&mut self, other: Counts) {
        self.downloads += other.downloads;
        self.whales += other.whales;
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
/// package+version id; whales are the ips `ranking` ranks.
pub(super) fn count(log: &[RowRec], pkg_of: &[u32], ranking: &Ranking, dict: &Dict) -> Breakdowns {
    let mut triples: FastMap<(u32, u32, u32), [u32; 2]> = FastMap::default();
    for r in log {
        let whale = u32::from(ranking.of(r.ip) != 0);
        let c = triples
            .entry((r.pkgver, r.env, r.time_country >> COUNTRY_SHIFT))
            .or_default();
        c[0] += 1;
        c[1] += whale;
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
    // (package, dimension: 0 version else DIMS + 1, key, downloads, whales)
    let mut parts: Vec<(u32, u8, u32, Counts)> = Vec::with_capacity(triples.len() * 5);
    for ((pv, e, c), [n, w]) in triples {
        let p = pkg_of[pv as usize];
        let counts = Counts {
            downloads: u64::from(n),
            whales: u64::from(w),
        };
        let [os, rv, arch] = env[e as usize];
        for (dim, key) in [
            (0, pv),
            (1, country[c as usize]),
            (2, os),
            (3, rv),
            (4, arch),
        ] {
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
        packages,
    }
}
