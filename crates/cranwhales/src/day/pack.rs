//! The whales' rows packed into the day's stored blob (`blob::daylog`) straight from dictionary
//! ids: each distinct value the whales used is numbered once for the whole day.

use super::{DayTables, Dict, FastMap, WhaleTable};
use crate::blob::daylog::{self, LogDict, LogRow};

/// Not yet numbered in the day log's dictionary.
const UNSET: u32 = u32::MAX;

impl DayTables {
    /// Every whale's rows (by rank) as one format-3 blob; also the rows in it. Values are
    /// numbered through arrays indexed by dictionary id, in order of first use.
    pub fn pack_log(&self) -> (u64, Vec<u8>) {
        pack_log(&self.dict, &self.whales)
    }

    /// [`DayTables::pack_log`], done already when the day was finished beside its other work
    /// (`Threads::Two`); `None` after the first call.
    pub fn take_packed_log(&mut self) -> Option<(u64, Vec<u8>)> {
        self.packed_log.take()
    }
}

/// [`DayTables::pack_log`] of a day's dictionaries and whales.
pub(super) fn pack_log(d: &Dict, whales: &[WhaleTable]) -> (u64, Vec<u8>) {
    let mut dict = LogDict::default();
    let mut package = vec![UNSET; d.packages.len()];
    let mut pkgver = vec![UNSET; d.pkgvers.len()];
    let mut env = vec![UNSET; d.envs.len()];
    let mut country = vec![UNSET; d.countries.len()];
    let mut size_ix: FastMap<(u32, u64), u32> = FastMap::default();
    let mut lists: Vec<Vec<LogRow>> = Vec::with_capacity(whales.len());
    for w in whales {
        let mut list = Vec::with_capacity(w.rows.len());
        for r in &w.rows {
            let pv = &mut pkgver[r.pkgver as usize];
            if *pv == UNSET {
                let (p, version) = &d.pkgvers[r.pkgver as usize];
                let pk = &mut package[*p as usize];
                if *pk == UNSET {
                    *pk = dict.packages.len() as u32;
                    dict.packages.push(&d.packages[*p as usize]);
                }
                *pv = dict.pkgvers.len() as u32;
                dict.pkgvers.push((*pk, version.as_deref()));
                dict.sizes.push(Vec::new());
            }
            let e = &mut env[r.env as usize];
            if *e == UNSET {
                *e = dict.envs.len() as u32;
                let [v, a, o] = &d.envs[r.env as usize];
                dict.envs.push([v.as_deref(), a.as_deref(), o.as_deref()]);
            }
            let c = &mut country[r.country as usize];
            if *c == UNSET {
                *c = dict.countries.len() as u32;
                dict.countries
                    .push(d.countries[r.country as usize].as_deref());
            }
            let sizes = &mut dict.sizes[*pv as usize];
            let size = *size_ix.entry((*pv, r.size)).or_insert_with(|| {
                sizes.push(r.size);
                sizes.len() as u32 - 1
            });
            list.push(LogRow {
                secs: r.secs,
                pkgver: *pv,
                env: *e,
                country: *c,
                size,
            });
        }
        lists.push(list);
    }
    let rows = whales.iter().map(|w| w.rows.len() as u64).sum();
    let whales: Vec<(u64, &[LogRow])> = (whales.iter().zip(&lists))
        .map(|(w, l)| (w.ip_id, l.as_slice()))
        .collect();
    (rows, daylog::encode(&dict, &whales))
}
