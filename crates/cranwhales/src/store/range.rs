//! Reads over a whole range of stored days for the answers in context: every package's downloads
//! over a range (a pass over the range's whole months in `package_months` and its other days'
//! `packages` rows, each a key range) and the calendar (one row per stored day).

use rusqlite::CachedStatement;

use super::codec::{day_range, month_package, PACKAGE_IDS};
use super::{months, sql, Result, Store};
use crate::context::{Calendar, CalendarDay, RangeTotals};
use crate::date::{Day, Range, EPOCH, FIRST_LOG};

impl Store {
    /// Every package's downloads over the stored days of `range`, and how many days those are:
    /// its whole months' `package_months` rows and its other days' `packages` rows summed by
    /// package id (a vector index), or, when the range holds most stored days, `package_totals`
    /// minus the days outside it (read the same way); named once each.
    pub fn range_totals(&self, range: Range) -> Result<RangeTotals> {
        let (from, to) = (range.from.to_string(), range.to.to_string());
        let first = EPOCH.days_until(range.from);
        let last = EPOCH.days_until(range.to);
        let q = || -> rusqlite::Result<RangeTotals> {
            let (days, all): (u32, u32) = self.conn.query_row(
                "SELECT count(*) FILTER (WHERE date BETWEEN ?1 AND ?2), count(*) FROM days",
                [&from, &to],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )?;
            let mut by_day = self.conn.prepare_cached(
                "SELECT day_package, downloads FROM packages WHERE day_package BETWEEN ?1 AND ?2",
            )?;
            let mut by_month = self.conn.prepare_cached(
                "SELECT month_package, downloads FROM package_months
                 WHERE month_package BETWEEN ?1 AND ?2",
            )?;
            // Sums by package id (every row has a download: a sum of 0 is no row).
            let mut sums: Vec<i64> = Vec::new();
            let mut add = |span: (i64, i64), sign: i64| -> rusqlite::Result<()> {
                let split = months::split(span.0, span.1);
                if let Some((a, b)) = split.months {
                    let keys = (month_package(a, 0), month_package(b, PACKAGE_IDS - 1));
                    sum_rows(&mut by_month, keys, sign, &mut sums)?;
                }
                for (a, b) in split.days {
                    sum_rows(
                        &mut by_day,
                        (day_range(a).0, day_range(b).1),
                        sign,
                        &mut sums,
                    )?;
                }
                Ok(())
            };
            let mut names = self
                .conn
                .prepare_cached("SELECT id, package, downloads FROM package_totals")?;
            // Most stored days in range (5,200 days: ~80M rows, ~3M month rows): the totals
            // kept per name minus the days outside it.
            let from_totals = 2 * u64::from(days) > u64::from(all);
            if from_totals {
                add((0, first - 1), -1)?;
                add((last + 1, months::LAST_DAY), -1)?;
            } else {
                add((first, last), 1)?;
            }
            let mut named = Vec::new();
            let mut rows = names.query([])?;
            while let Some(r) = rows.next()? {
                let id = r.get::<_, i64>(0)? as usize;
                let kept = if from_totals { r.get::<_, i64>(2)? } else { 0 };
                let n = kept + sums.get(id).copied().unwrap_or(0);
                if n > 0 {
                    named.push((r.get::<_, String>(1)?, n as u64));
                }
            }
            Ok(RangeTotals::new(named, days))
        };
        q().map_err(sql(&self.path))
    }

    /// The calendar: the logs' span and every stored day's downloads, oldest first.
    pub fn calendar(&self) -> Result<Calendar> {
        let q = || -> rusqlite::Result<Vec<CalendarDay>> {
            let mut st = self
                .conn
                .prepare_cached("SELECT date, downloads FROM days ORDER BY date")?;
            let rows = st.query_map([], |r| {
                Ok(CalendarDay {
                    date: r.get(0)?,
                    downloads: r.get(1)?,
                })
            })?;
            rows.collect()
        };
        Ok(Calendar {
            first: FIRST_LOG.to_string(),
            last: Day::yesterday().to_string(),
            days: q().map_err(sql(&self.path))?,
        })
    }
}

/// Adds `sign` × the downloads of every row `st` (keys between its two parameters, the package id
/// the key modulo `PACKAGE_IDS`) reads in `keys` to `sums`, by package id.
fn sum_rows(
    st: &mut CachedStatement<'_>,
    keys: (i64, i64),
    sign: i64,
    sums: &mut Vec<i64>,
) -> rusqlite::Result<()> {
    let mut rows = st.query([keys.0, keys.1])?;
    while let Some(r) = rows.next()? {
        let id = (r.get::<_, i64>(0)? % PACKAGE_IDS) as usize;
        if id >= sums.len() {
            sums.resize(id + 1, 0);
        }
        sums[id] += sign * r.get::<_, i64>(1)?;
    }
    Ok(())
}
