//! Every package's downloads over a range without whales, small or repeated downloads (any of
//! them, `without=`): what the top and trending lists and a package's rank count when the page's
//! filters are on (as packageRank ranks on filtered counts). A range's whole months are read from
//! `package_months` (version 8 keeps there the sums each filter takes out), its other days from
//! `packages` (and, for the whales' own small and repeated downloads, each day's `whale_ranks`
//! and whale log, `months::whale_parts`). Days stored before small and repeats were counted (schema 3)
//! cannot be filtered: with `small` or `repeats` asked they are left out and named
//! (`RangeTotals::days_without_filters`), and their months are read day by day.
//!
//! Each download is taken out once, as `day::breakdown::Counts::without` does: the left count is
//! `downloads − whales − small − repeats + whales' small + whales' repeats` for the kinds asked.

use std::collections::{BTreeSet, HashMap};

use rusqlite::params;

use super::codec::{day_number, day_range, month_package, PACKAGE_IDS};
use super::months::{self, corrupt, whale_parts, WhaleParts};
use super::{sql, Result, Store};
use crate::context::RangeTotals;
use crate::date::{Range, EPOCH};
use crate::day::breakdown::Without;

/// The downloads left of one count (`[downloads, whales, small, repeats, whales' filtered,
/// whales' small]`) without the kinds `w` names, each download taken out once.
fn left(w: Without, c: [i64; 6]) -> i64 {
    let [downloads, whales, small, repeats, whale_filtered, whale_small] = c;
    let on = |b: bool, n: i64| if b { n } else { 0 };
    downloads - on(w.whales, whales) - on(w.small, small) - on(w.repeats, repeats)
        + on(w.whales && w.small, whale_small)
        + on(w.whales && w.repeats, whale_filtered - whale_small)
}

/// Adds `n` to package `id`'s sum.
fn add(sums: &mut Vec<i64>, id: i64, n: i64) {
    let id = id as usize;
    if id >= sums.len() {
        sums.resize(id + 1, 0);
    }
    sums[id] += n;
}

impl Store {
    /// Every package's downloads over the stored days of `range` without the kinds `without`
    /// names (see the module doc); with none, [`Store::range_totals`]. Its `days` are the days
    /// counted, its `days_without_filters` the stored days left out.
    pub fn filtered_totals(&self, range: Range, without: Without) -> Result<RangeTotals> {
        if without == Without::default() {
            return self.range_totals(range);
        }
        let q = || -> rusqlite::Result<RangeTotals> {
            // Every stored day of the range: (day number, date, counted).
            let mut stored: Vec<(i64, String, bool)> = Vec::new();
            let mut st = self.conn.prepare_cached(
                "SELECT date, small IS NOT NULL FROM days WHERE date BETWEEN ?1 AND ?2
                 ORDER BY date",
            )?;
            let mut rows = st.query(params![range.from.to_string(), range.to.to_string()])?;
            while let Some(r) = rows.next()? {
                let date: String = r.get(0)?;
                let n = day_number(&date)
                    .ok_or_else(|| corrupt(format!("days holds '{date}', not a date")))?;
                stored.push((n, date, r.get::<_, bool>(1)? || !without.filters()));
            }
            let split = months::split(EPOCH.days_until(range.from), EPOCH.days_until(range.to));
            let month_of = |n: i64| EPOCH.plus(n).month();
            // Months holding a day left out are read day by day.
            let unclean: BTreeSet<i64> = (stored.iter())
                .filter(|d| !d.2)
                .map(|d| month_of(d.0))
                .collect();
            let in_months = |n: i64| {
                split
                    .months
                    .is_some_and(|(a, b)| (a..=b).contains(&month_of(n)))
                    && !unclean.contains(&month_of(n))
            };
            let mut sums: Vec<i64> = Vec::new();
            if let Some((a, b)) = split.months {
                let mut start = a;
                for &m in unclean.range(a..=b).chain([&(b + 1)]) {
                    if start < m {
                        self.month_rows(without, (start, m - 1), &mut sums)?;
                    }
                    start = m + 1;
                }
            }
            for (n, _, counted) in &stored {
                if *counted && !in_months(*n) {
                    self.day_rows(without, *n, &mut sums)?;
                }
            }
            let mut named = Vec::new();
            let mut names = self
                .conn
                .prepare_cached("SELECT id, package FROM package_totals")?;
            let mut rows = names.query([])?;
            while let Some(r) = rows.next()? {
                let n = sums.get(r.get::<_, i64>(0)? as usize).copied().unwrap_or(0);
                if n > 0 {
                    named.push((r.get::<_, String>(1)?, n as u64));
                }
            }
            let counted = stored.iter().filter(|d| d.2).count() as u32;
            let mut t = RangeTotals::new(named, counted);
            t.without = without.names();
            t.days_without_filters = (stored.into_iter()).filter(|d| !d.2).map(|d| d.1).collect();
            Ok(t)
        };
        q().map_err(sql(&self.path))
    }

    /// Adds the filtered count of every `package_months` row of months `a..=b` to `sums`.
    fn month_rows(
        &self,
        w: Without,
        (a, b): (i64, i64),
        sums: &mut Vec<i64>,
    ) -> rusqlite::Result<()> {
        let mut st = self.conn.prepare_cached(
            "SELECT month_package, downloads, whale_downloads, small, repeats, whale_filtered,
                 whale_small FROM package_months WHERE month_package BETWEEN ?1 AND ?2",
        )?;
        let mut rows = st.query([month_package(a, 0), month_package(b, PACKAGE_IDS - 1)])?;
        while let Some(r) = rows.next()? {
            let c = [
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
                r.get(6)?,
            ];
            add(sums, r.get::<_, i64>(0)? % PACKAGE_IDS, left(w, c));
        }
        Ok(())
    }

    /// Adds the filtered count of every `packages` row of day `day` to `sums`.
    fn day_rows(&self, w: Without, day: i64, sums: &mut Vec<i64>) -> rusqlite::Result<()> {
        let parts: HashMap<i64, WhaleParts> = if w.whales && w.filters() {
            whale_parts(&self.conn, day)?.into_iter().collect()
        } else {
            HashMap::new()
        };
        let (lo, hi) = day_range(day);
        let mut st = self.conn.prepare_cached(
            "SELECT day_package, downloads, whale_downloads, coalesce(small, 0),
                 coalesce(repeats, 0) FROM packages WHERE day_package BETWEEN ?1 AND ?2",
        )?;
        let mut rows = st.query([lo, hi])?;
        while let Some(r) = rows.next()? {
            let id = r.get::<_, i64>(0)? % PACKAGE_IDS;
            let p = parts.get(&id).copied().unwrap_or_default();
            let c = [
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                p.filtered as i64,
                p.small as i64,
            ];
            add(sums, id, left(w, c));
        }
        Ok(())
    }
}
