//! A whale's rows packed into its stored blob straight from dictionary ids.

use super::DayTables;
use crate::blob;

impl DayTables {
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
        let mut w = blob::Writer::new(rows.len());
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
