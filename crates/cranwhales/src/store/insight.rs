//! Reading across days: one package over a date range (with each day's whales taken out), the
//! stored package names, and the trends of every stored day. Each is a range scan of a
//! precomputed table: `packages_by_name` for a package, `days` for trends.

use std::collections::BTreeMap;

use rusqlite::params;

use super::{sql, Result, Store};
use crate::summary::{Behaviour, PackageDay, PackageName, TrendDay};

/// A package on one stored day, as stored: downloads, unique downloaders, its whales' downloads
/// by rank, and the day's baseline.
struct Stored {
    downloads: u64,
    downloaders: Option<u64>,
    ranks: Vec<(u32, u64)>,
}

impl Store {
    /// True if `package` was downloaded on any stored day.
    pub fn has_package(&self, package: &str) -> Result<bool> {
        let found = self
            .conn
            .prepare_cached("SELECT 1 FROM packages WHERE package = ?1 LIMIT 1")
            .and_then(|mut st| st.exists([package]));
        found.map_err(sql(&self.path))
    }

    /// Every stored day in `from..=to` with `package`'s downloads, unique downloaders and the
    /// downloads by the day's top `whales` whales (0 on days it was not downloaded).
    pub fn package_days(
        &self,
        package: &str,
        from: &str,
        to: &str,
        whales: u32,
    ) -> Result<Vec<PackageDay>> {
        let q = || -> rusqlite::Result<Vec<PackageDay>> {
            let tx = self.conn.unchecked_transaction()?;
            let mut by_date: BTreeMap<String, Stored> = BTreeMap::new();
            let mut st = tx.prepare_cached(
                "SELECT date, downloads, downloaders, whale_ranks FROM packages
                 WHERE package = ?1 AND date BETWEEN ?2 AND ?3",
            )?;
            let rows = st.query_map(params![package, from, to], |r| {
                let ranks = r.get::<_, Option<Vec<u8>>>(3)?;
                Ok((
                    r.get::<_, String>(0)?,
                    Stored {
                        downloads: r.get(1)?,
                        downloaders: r.get(2)?,
                        ranks: ranks.as_deref().map(decode_ranks).unwrap_or_default(),
                    },
                ))
            })?;
            for row in rows {
                let (date, s) = row?;
                by_date.insert(date, s);
            }
            let mut st = tx.prepare_cached(
                "SELECT date, baseline FROM days WHERE date BETWEEN ?1 AND ?2 ORDER BY date",
            )?;
            let days = st.query_map(params![from, to], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, Option<u64>>(1)?))
            })?;
            let mut out = Vec::new();
            for day in days {
                let (date, baseline) = day?;
                let s = by_date.remove(&date);
                out.push(package_day(date, s, baseline, whales));
            }
            Ok(out)
        };
        q().map_err(sql(&self.path))
    }

    /// Every package name of the stored days with its downloads over them and on how many days.
    pub fn package_names(&self) -> Result<Vec<PackageName>> {
        let q = || -> rusqlite::Result<Vec<PackageName>> {
            let mut st = self.conn.prepare(
                "SELECT package, sum(downloads), count(*) FROM packages GROUP BY package",
            )?;
            let rows = st.query_map([], |r| {
                Ok(PackageName {
                    package: r.get(0)?,
                    downloads: r.get(1)?,
                    days: r.get(2)?,
                })
            })?;
            rows.collect()
        };
        q().map_err(sql(&self.path))
    }

    /// The trend numbers of every stored day in `from..=to`, oldest first.
    pub fn trend_days(&self, from: &str, to: &str) -> Result<Vec<TrendDay>> {
        let q = || -> rusqlite::Result<Vec<TrendDay>> {
            let mut st = self.conn.prepare_cached(
                "SELECT date, downloads, downloaders, top1, top6, top25, behaviours FROM days
                 WHERE date BETWEEN ?1 AND ?2 ORDER BY date",
            )?;
            let rows = st.query_map(params![from, to], |r| {
                let behaviours = r.get::<_, Option<String>>(6)?.map(|j| parse_behaviours(&j));
                Ok(TrendDay {
                    date: r.get(0)?,
                    downloads: r.get(1)?,
                    downloaders: r.get(2)?,
                    top1: r.get::<_, Option<u64>>(3)?.unwrap_or(0),
                    top6: r.get::<_, Option<u64>>(4)?.unwrap_or(0),
                    top25: r.get::<_, Option<u64>>(5)?.unwrap_or(0),
                    behaviours: behaviours.transpose().map_err(|e| {
                        rusqlite::Error::FromSqlConversionFailure(6, rusqlite::types::Type::Text, e)
                    })?,
                })
            })?;
            rows.collect()
        };
        q().map_err(sql(&self.path))
    }
}

/// One day of a package: the whales of rank ≤ `whales` taken out.
fn package_day(date: String, s: Option<Stored>, baseline: Option<u64>, whales: u32) -> PackageDay {
    let s = s.unwrap_or(Stored {
        downloads: 0,
        downloaders: Some(0),
        ranks: Vec::new(),
    });
    let whale_downloads: u64 = (s.ranks.iter())
        .take_while(|(rank, _)| *rank <= whales)
        .map(|(_, n)| n)
        .sum();
    PackageDay {
        date,
        downloads: s.downloads,
        downloaders: s.downloaders,
        whale_downloads,
        without_whales: s.downloads - whale_downloads,
        baseline,
        adjusted: baseline.map(|b| s.downloads.saturating_sub(b)),
    }
}

/// Decodes `write::encode_ranks`; a malformed tail is dropped (the blob is ours).
fn decode_ranks(b: &[u8]) -> Vec<(u32, u64)> {
    let mut vals = Vec::new();
    let (mut v, mut shift) = (0u64, 0u32);
    for &byte in b {
        v |= u64::from(byte & 0x7f) << shift.min(63);
        shift += 7;
        if byte & 0x80 == 0 {
            vals.push(v);
            (v, shift) = (0, 0);
        }
    }
    vals.chunks_exact(2).map(|c| (c[0] as u32, c[1])).collect()
}

/// `{"mirror": 3, …}` with every behaviour present (missing ones are 0).
fn parse_behaviours(
    json: &str,
) -> std::result::Result<BTreeMap<Behaviour, u32>, Box<dyn std::error::Error + Send + Sync>> {
    let stored: BTreeMap<String, u32> = serde_json::from_str(json)?;
    let mut out: BTreeMap<Behaviour, u32> = Behaviour::ALL.iter().map(|&b| (b, 0)).collect();
    for (k, n) in stored {
        let b = Behaviour::from_key(&k).ok_or_else(|| format!("unknown behaviour {k:?}"))?;
        out.insert(b, n);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_round_trip() {
        let ranks = vec![(1, 5), (2, 300), (100, 1 << 40)];
        assert_eq!(
            decode_ranks(&super::super::write::encode_ranks(&ranks)),
            ranks
        );
        assert!(decode_ranks(&[]).is_empty());
    }
}
