//! Reading breakdowns over a range (`Store::breakdown`), the releases inferred from them
//! (`Store::releases`) and where a package's count comes from (`Store::kinds`).

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use super::{corrupt, day_blobs, day_dim, package_id};
use crate::date::{Day, Range};
use crate::day::breakdown::{Without, DIMS};
use crate::store::{sql, Result, Store};

/// What a breakdown is by: `version`, or one of `day::breakdown::DIMS`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct By(usize);

impl By {
    /// By version.
    pub const VERSION: By = By(0);

    /// `version`, `country`, `os`, `r_version` or `arch`; `None` for anything else.
    pub fn parse(s: &str) -> Option<By> {
        if s == "version" {
            return Some(By::VERSION);
        }
        DIMS.iter().position(|d| *d == s).map(|i| By(i + 1))
    }

    /// The name `parse` takes.
    pub fn name(self) -> &'static str {
        match self.0 {
            0 => "version",
            i => DIMS[i - 1],
        }
    }
}

/// One key of a breakdown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KeyRow {
    /// The field's text as logged; `null` when it was missing (`NA`).
    pub key: Option<String>,
    /// Its downloads over the range (without the whales when asked).
    pub downloads: u64,
}

/// `GET /api/packages/{pkg}/breakdown`: a package's downloads over a range by one field.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BreakdownReport {
    /// The package.
    pub package: String,
    /// `version`, `country`, `os`, `r_version` or `arch`.
    pub by: &'static str,
    /// First day of the range.
    pub from: String,
    /// Last day of the range.
    pub to: String,
    /// What was taken out, of `whales` (each day's top-100 downloaders), `small` and
    /// `repeats` (`day::filters`).
    pub without: Vec<&'static str>,
    /// Stored days of the range counted (with breakdowns).
    pub days: u64,
    /// Stored days of the range without breakdowns (stored before schema 6, not counted: ingest
    /// them again with `--force` to count them).
    pub days_without_breakdowns: Vec<String>,
    /// Stored days of the range whose breakdowns do not split off small and repeated downloads
    /// (stored with schema 6): not counted when `without` has `small` or `repeats` (ingest them
    /// again with `--force` to count them).
    pub days_without_filters: Vec<String>,
    /// The sum of `rows`.
    pub total: u64,
    /// Every key with downloads, most first (ties: by key).
    pub rows: Vec<KeyRow>,
}

/// A version's share of its package's downloads over the first days after its first day.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Share {
    /// The window: stored days after the first day, up to this many days after it.
    pub days: u32,
    /// Stored days with breakdowns in the window (0: no share).
    pub stored_days: u32,
    /// The version's downloads in the window.
    pub version_downloads: u64,
    /// The package's downloads in the window.
    pub package_downloads: u64,
    /// `version_downloads / package_downloads`; `null` when the window has no downloads.
    pub share: Option<f64>,
}

/// One version of a package as the logs show it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Release {
    /// The version; `null` for downloads whose version was missing.
    pub version: Option<String>,
    /// The first stored day with a download of it: its apparent release.
    pub first_day: String,
    /// The last stored day before `first_day` on which the package was downloaded (without this
    /// version): the version came out after it, on or before `first_day`. `null` when there is
    /// none (then `before_first_stored`).
    pub after: Option<String>,
    /// True when `first_day` is the package's first stored day with a download: the version
    /// may have come out long before.
    pub before_first_stored: bool,
    /// Its downloads over all stored days.
    pub downloads: u64,
    /// Its share after 1, 7 and 30 days.
    pub shares: Vec<Share>,
}

/// `GET /api/packages/{pkg}/releases`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Releases {
    /// The package.
    pub package: String,
    /// Stored days with breakdowns (all of them are read).
    pub days: u64,
    /// Stored days without breakdowns (not read).
    pub days_without_breakdowns: Vec<String>,
    /// Every version, by first day (ties: by version).
    pub versions: Vec<Release>,
}

/// `GET /api/packages/{pkg}/kinds`: where a package's raw count comes from, in parts that add up
/// to it, each download in the first part whose rule it meets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Kinds {
    /// The package.
    pub package: String,
    /// First day of the range.
    pub from: String,
    /// Last day of the range.
    pub to: String,
    /// The top N downloaders of each day counted as whales.
    pub whales: u32,
    /// Stored days counted.
    pub days: u64,
    /// Stored days stored before small and repeats were counted (schema 3): not counted.
    pub days_without_filters: Vec<String>,
    /// Every download on the days counted.
    pub raw: u64,
    /// Under 1,000 bytes (`day::filters`), whoever made them.
    pub small: u64,
    /// Repeats within 5 minutes by the same downloader (`day::filters`), whoever made them.
    pub repeats: u64,
    /// The top-N whales' other downloads (neither small nor repeats).
    pub whale_downloads: u64,
    /// The rest: `without=whales,small,repeats`.
    pub rest: u64,
}

/// The windows of `Release::shares`, in days.
pub const SHARE_WINDOWS: [u32; 3] = [1, 7, 30];

impl Store {
    /// `package`'s downloads over the stored days of `range` by `by`, without the kinds
    /// `without` names; `None` if the package was never stored.
    pub fn breakdown(
        &self,
        package: &str,
        range: Range,
        by: By,
        without: Without,
    ) -> Result<Option<BreakdownReport>> {
        let (from, to) = (range.from.to_string(), range.to.to_string());
        let q = || -> rusqlite::Result<Option<BreakdownReport>> {
            let id = package_id(&self.conn, package)?;
            if id == 0 {
                return Ok(None);
            }
            let mut sums: HashMap<Option<String>, u64> = HashMap::new();
            let (mut days, mut missing, mut unfiltered) = (0, Vec::new(), Vec::new());
            for (date, entry) in day_blobs(&self.conn, id, &from, &to)? {
                let Some(e) = entry else {
                    missing.push(date);
                    continue;
                };
                if without.filters() && !e.keys.filters {
                    unfiltered.push(date);
                    continue;
                }
                days += 1;
                day_dim(&e, by.0, |k, c| {
                    *sums.entry(k.map(str::to_owned)).or_default() += c.without(without);
                })
                .ok_or_else(|| corrupt(&date))?;
            }
            let mut rows: Vec<KeyRow> = (sums.into_iter())
                .filter(|&(_, n)| n > 0)
                .map(|(key, downloads)| KeyRow { key, downloads })
                .collect();
            rows.sort_by(|a, b| b.downloads.cmp(&a.downloads).then(a.key.cmp(&b.key)));
            Ok(Some(BreakdownReport {
                package: package.to_owned(),
                by: by.name(),
                from: from.clone(),
                to: to.clone(),
                without: without.names(),
                days,
                days_without_breakdowns: missing,
                days_without_filters: unfiltered,
                total: rows.iter().map(|r| r.downloads).sum(),
                rows,
            }))
        };
        q().map_err(sql(&self.path))
    }

    /// Each version of `package` seen on the stored days with breakdowns, with its first day and
    /// its shares after [`SHARE_WINDOWS`] days; `None` if the package was never stored.
    pub fn releases(&self, package: &str) -> Result<Option<Releases>> {
        let q = || -> rusqlite::Result<Option<Releases>> {
            let id = package_id(&self.conn, package)?;
            if id == 0 {
                return Ok(None);
            }
            // Per stored day with breakdowns: (day, version → downloads).
            let mut per_day: Vec<(Day, BTreeMap<Option<String>, u64>)> = Vec::new();
            let mut missing = Vec::new();
            for (date, entry) in day_blobs(&self.conn, id, "0000-01-01", "9999-12-31")? {
                let Some(e) = entry else {
                    missing.push(date);
                    continue;
                };
                let day = Day::parse(&date).ok_or_else(|| corrupt(&date))?;
                let mut versions = BTreeMap::new();
                day_dim(&e, 0, |k, c| {
                    *versions.entry(k.map(str::to_owned)).or_default() += c.downloads;
                })
                .ok_or_else(|| corrupt(&date))?;
                per_day.push((day, versions));
            }
            let versions = releases_of(&per_day);
            Ok(Some(Releases {
                package: package.to_owned(),
                days: per_day.len() as u64,
                days_without_breakdowns: missing,
                versions,
            }))
        };
        q().map_err(sql(&self.path))
    }

    /// `package`'s raw count over the stored days of `range` in parts that add up to it (see
    /// [`Kinds`]), with the top `whales` downloaders of each day as whales; `None` if the package
    /// was never stored.
    pub fn kinds(&self, package: &str, range: Range, whales: u32) -> Result<Option<Kinds>> {
        if !self.has_package(package)? {
            return Ok(None);
        }
        let (from, to) = (range.from.to_string(), range.to.to_string());
        let mut k = Kinds {
            package: package.to_owned(),
            from: from.clone(),
            to: to.clone(),
            whales,
            days: 0,
            days_without_filters: Vec::new(),
            raw: 0,
            small: 0,
            repeats: 0,
            whale_downloads: 0,
            rest: 0,
        };
        for d in self.package_days(package, &from, &to, whales)? {
            let c = &d.counts;
            let (Some(s), Some(r), Some(rest)) = (c.small, c.repeats, c.without_whales_inflated)
            else {
                k.days_without_filters.push(d.date);
                continue;
            };
            k.days += 1;
            k.raw += c.downloads;
            k.small += s;
            k.repeats += r;
            k.rest += rest;
            // Whales' downloads less their small and repeats: the raw count less the rest.
            k.whale_downloads += c.downloads - s - r - rest;
        }
        Ok(Some(k))
    }
}

/// Each version's first day and shares, from the per-day version counts in date order.
fn releases_of(per_day: &[(Day, BTreeMap<Option<String>, u64>)]) -> Vec<Release> {
    let mut first: BTreeMap<&Option<String>, (usize, u64)> = BTreeMap::new();
    for (i, (_, versions)) in per_day.iter().enumerate() {
        for (v, &n) in versions.iter().filter(|(_, &n)| n > 0) {
            first.entry(v).or_insert((i, 0)).1 += n;
        }
    }
    let fetched = |d: &(Day, BTreeMap<Option<String>, u64>)| d.1.values().any(|&n| n > 0);
    let mut out: Vec<Release> = (first.into_iter())
        .map(|(v, (i, downloads))| {
            let day = per_day[i].0;
            let after = per_day[..i].iter().rev().find(|d| fetched(d)).map(|d| d.0);
            Release {
                version: v.clone(),
                first_day: day.to_string(),
                after: after.map(|d| d.to_string()),
                before_first_stored: after.is_none(),
                downloads,
                shares: (SHARE_WINDOWS.iter())
                    .map(|&w| share(per_day, v, day, w))
                    .collect(),
            }
        })
        .collect();
    out.sort_by(|a, b| {
        a.first_day
            .cmp(&b.first_day)
            .then(a.version.cmp(&b.version))
    });
    out
}

/// `version`'s share over the stored days in `(first, first + window]`.
fn share(
    per_day: &[(Day, BTreeMap<Option<String>, u64>)],
    version: &Option<String>,
    first: Day,
    window: u32,
) -> Share {
    let last = first.plus(i64::from(window));
    let (mut stored_days, mut v, mut all) = (0, 0, 0);
    for (_, versions) in per_day.iter().filter(|(d, _)| *d > first && *d <= last) {
        stored_days += 1;
        v += versions.get(version).copied().unwrap_or(0);
        all += versions.values().sum::<u64>();
    }
    Share {
        days: window,
        stored_days,
        version_downloads: v,
        package_downloads: all,
        share: (all > 0).then(|| v as f64 / all as f64),
    }
}
