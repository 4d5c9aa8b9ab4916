//! Reading across days: one package over a date range (with each day's whales taken out), the
//! stored package names, and the trends of every stored day. Each is a range scan of a
//! precomputed table: a package's packed months (`store::history`, a few adjacent rows) and
//! one `packages` rowid seek per stored day of the months not packed, a range of `days` for
//! trends.

use std::collections::BTreeMap;

use rusqlite::{params, OptionalExtension};

use super::codec::{day_package, decode_ranks, Common, WhaleCount};
use super::history::{self, month_of, DayValues};
use super::{sql, Result, Store};
use crate::date::Range;
use crate::numfmt::thousands;
use crate::summary::{
    Behaviour, Bin, Distribution, PackageDay, PackageName, PackageReport, PackageTotals, TrendDay,
    Trends,
};

/// A package on one stored day, as stored: downloads, unique downloaders, its whales' downloads
/// by rank, and the day's baseline.
struct Stored {
    downloads: u64,
    downloaders: Option<u64>,
    ranks: Vec<WhaleCount>,
    /// (small, repeats); `None` for a day stored before they were counted.
    filtered: Option<(u64, u64)>,
}

impl Store {
    /// `package` over the stored days of `range` without each day's top `whales` whales, with
    /// totals and the comparison note; `None` if no stored day has a download of it.
    pub fn package_report(
        &self,
        package: &str,
        range: Range,
        whales: u32,
    ) -> Result<Option<PackageReport>> {
        if !self.has_package(package)? {
            return Ok(None);
        }
        let (from, to) = (range.from.to_string(), range.to.to_string());
        let days = self.package_days(package, &from, &to, whales)?;
        let totals = PackageTotals::sum(&days);
        let note = note(package, whales, &days, &totals);
        let filters_note = filters_note(package, &totals);
        Ok(Some(PackageReport {
            package: package.to_owned(),
            from,
            to,
            whales,
            days,
            totals,
            note,
            bin: Bin::Day,
            cumulative: false,
            rank: None,
            distribution: Distribution::default(),
            filters_note,
        }))
    }

    /// A stored package whose name equals `package` ignoring case (for "did you mean").
    pub fn package_like(&self, package: &str) -> Result<Option<String>> {
        let found = self
            .conn
            .query_row(
                "SELECT package FROM package_totals WHERE package = ?1 COLLATE NOCASE LIMIT 1",
                [package],
                |r| r.get(0),
            )
            .optional();
        found.map_err(sql(&self.path))
    }

    /// Trends of the stored days in `range`.
    pub fn trends(&self, range: Range) -> Result<Trends> {
        let (from, to) = (range.from.to_string(), range.to.to_string());
        let days = self.trend_days(&from, &to)?;
        Ok(Trends { from, to, days })
    }

    /// True if `package` was downloaded on any stored day (one primary-key seek).
    pub fn has_package(&self, package: &str) -> Result<bool> {
        let found = self
            .conn
            .prepare_cached("SELECT 1 FROM package_totals WHERE package = ?1")
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
            // 0 is no package's id: a name never stored matches no row.
            let id: i64 = (self.conn)
                .prepare_cached("SELECT id FROM package_totals WHERE package = ?1")?
                .query_row([package], |r| r.get(0))
                .optional()?
                .unwrap_or(0);
            let mut st = self.conn.prepare_cached(
                "SELECT date, baseline, small, common_whales, unixepoch(date) / 86400 FROM days
                 WHERE date BETWEEN ?1 AND ?2 ORDER BY date",
            )?;
            let days = st
                .query_map(params![from, to], |r| {
                    let common: Option<Vec<u8>> = r.get(3)?;
                    // Counted on this day (schema 3): a package it did not download has 0 of each.
                    let counted = r.get::<_, Option<u64>>(2)?.is_some();
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get(1)?,
                        counted,
                        common,
                        r.get(4)?,
                    ))
                })?
                .collect::<rusqlite::Result<Vec<(String, Option<u64>, bool, _, i64)>>>()?;
            let (Some(first), Some(last)) = (days.first(), days.last()) else {
                return Ok(Vec::new());
            };
            // Packed months first (a few rows of `package_history`), then one `packages` rowid
            // seek per day of the months not packed (the open month, or one changed since).
            let (packed, mut values) =
                history::read(&self.conn, id, month_of(first.4), month_of(last.4))?;
            let mut seek = self.conn.prepare_cached(
                "SELECT downloads, downloaders, whale_ranks, small, repeats FROM packages
                 WHERE day_package = ?1",
            )?;
            let mut out = Vec::with_capacity(days.len());
            for (date, baseline, counted, common, day) in days {
                let v = if packed.contains(&month_of(day)) {
                    values.remove(&day)
                } else {
                    seek.query_row([day_package(day, id)], |r| {
                        Ok(DayValues {
                            downloads: r.get(0)?,
                            downloaders: r.get(1)?,
                            ranks: r.get(2)?,
                            small: r.get(3)?,
                            repeats: r.get(4)?,
                        })
                    })
                    .optional()?
                };
                let stored = v.map(|v| Stored {
                    downloads: v.downloads,
                    downloaders: v.downloaders,
                    ranks: v.ranks.map_or_else(Vec::new, |b| {
                        decode_ranks(&b, Common::from_blob(common.as_deref()))
                    }),
                    filtered: v.small.zip(v.repeats),
                });
                out.push(package_day(date, stored, baseline, whales, counted));
            }
            Ok(out)
        };
        q().map_err(sql(&self.path))
    }

    /// Every package name of the stored days with its downloads over them and on how many days.
    pub fn package_names(&self) -> Result<Vec<PackageName>> {
        let q = || -> rusqlite::Result<Vec<PackageName>> {
            let mut st = self
                .conn
                .prepare("SELECT package, downloads, days FROM package_totals")?;
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

/// What the direct count shows next to the aggregate-only correction, in words.
fn note(package: &str, whales: u32, days: &[PackageDay], t: &PackageTotals) -> String {
    let share = |part: u64| {
        if t.downloads == 0 {
            0.0
        } else {
            100.0 * part as f64 / t.downloads as f64
        }
    };
    let n = days.len();
    let mut s = format!(
        "On {n} stored day{} {package} had {} downloads; {} ({:.1}%) came from each day's top {whales} \
         whale{}, leaving {}.",
        if n == 1 { "" } else { "s" },
        thousands(t.downloads),
        thousands(t.whale_downloads),
        share(t.whale_downloads),
        if whales == 1 { "" } else { "s" },
        thousands(t.without_whales)
    );
    let Some(adjusted) = t.adjusted else {
        s += " Some of these days were stored before the aggregate baseline was kept; re-ingest them \
              (--force) to compare with the aggregate-only correction.";
        return s;
    };
    let removed = t.downloads - adjusted;
    s += &format!(
        " The aggregate-only correction (as in adjustedcranlogs: subtract each day's 5% quantile of \
         per-package downloads, the same for every package) would remove {} ({:.1}%) instead",
        thousands(removed),
        share(removed)
    );
    s += if t.whale_downloads > removed {
        ": it cannot see that whales fetched more of this package than of a typical one."
    } else if t.whale_downloads < removed {
        ": it assumes more automated downloads than this package's whales made."
    } else {
        "."
    };
    s
}

/// One day of a package: the whales of rank ≤ `whales` taken out, and the filters (`counted`:
/// the day has them).
fn package_day(
    date: String,
    s: Option<Stored>,
    baseline: Option<u64>,
    whales: u32,
    counted: bool,
) -> PackageDay {
    let s = s.unwrap_or(Stored {
        downloads: 0,
        downloaders: Some(0),
        ranks: Vec::new(),
        filtered: counted.then_some((0, 0)),
    });
    let top = || s.ranks.iter().take_while(|(rank, _, _)| *rank <= whales);
    let whale_downloads: u64 = top().map(|(_, n, _)| n).sum();
    let whale_filtered: u64 = top().map(|(_, _, f)| f).sum();
    // Saturating: a store written by other hands must not panic the server.
    let without_whales = s.downloads.saturating_sub(whale_downloads);
    PackageDay {
        date,
        days: 1,
        downloaders: s.downloaders,
        baseline,
        counts: PackageTotals {
            downloads: s.downloads,
            whale_downloads,
            without_whales,
            adjusted: baseline.map(|b| s.downloads.saturating_sub(b)),
            small: s.filtered.map(|f| f.0),
            repeats: s.filtered.map(|f| f.1),
            without_inflated: (s.filtered).map(|(sm, rep)| s.downloads.saturating_sub(sm + rep)),
            without_whales_inflated: (s.filtered).map(|(sm, rep)| {
                without_whales.saturating_sub((sm + rep).saturating_sub(whale_filtered))
            }),
        },
    }
}

/// The filters, a sentence each with its threshold, and what they leave out of `package`.
fn filters_note(package: &str, t: &PackageTotals) -> String {
    let (Some(small), Some(repeats)) = (t.small, t.repeats) else {
        return "Small and repeated downloads were not counted on some of these days (stored by an \
                older version); re-ingest them (--force) to filter them."
            .to_owned();
    };
    format!(
        "Small downloads are those under {} bytes: no package file is that small, so they are \
         failed or partial transfers ({} of {package} here). Repeats are downloads of a package by \
         one downloader within {} seconds after its previous download of it (small ones aside): one \
         install retried or looped ({} here). Leaving both out keeps {} downloads; leaving out the \
         whales too keeps {}.",
        thousands(crate::day::filters::SMALL_BYTES),
        thousands(small),
        crate::day::filters::REPEAT_WINDOW_SECS,
        thousands(repeats),
        thousands(t.without_inflated.unwrap_or(0)),
        thousands(t.without_whales_inflated.unwrap_or(0)),
    )
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
