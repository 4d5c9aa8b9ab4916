//! Reads over a whole range of stored days for the answers in context: every package's downloads
//! over a range (one pass over the range's `packages` rows, which the key keeps together by day)
//! and the calendar (one row per stored day).

use super::codec::{day_range, PACKAGE_IDS};
use super::{sql, Result, Store};
use crate::context::{Calendar, CalendarDay, RangeTotals};
use crate::date::{Day, Range, EPOCH, FIRST_LOG};

impl Store {
    /// Every package's downloads over the stored days of `range`, and how many days those are:
    /// `package_totals` when the range holds every stored day, else the range's `packages` rows
    /// summed by package id (a vector index), then named once each.
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
            if days == all {
                // Every stored day: the totals kept per name (5,200 days: ~80M rows otherwise).
                let mut st = self
                    .conn
                    .prepare_cached("SELECT package, downloads FROM package_totals")?;
                let named = st
                    .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
                    .collect::<rusqlite::Result<_>>()?;
                return Ok(RangeTotals::new(named, days));
            }
            let mut st = self.conn.prepare_cached(
                "SELECT day_package, downloads FROM packages WHERE day_package BETWEEN ?1 AND ?2",
            )?;
            let mut rows = st.query([day_range(first).0, day_range(last).1])?;
            let mut sums: Vec<Option<u64>> = Vec::new();
            while let Some(r) = rows.next()? {
                let id = (r.get::<_, i64>(0)? % PACKAGE_IDS) as usize;
                if id >= sums.len() {
                    sums.resize(id + 1, None);
                }
                let n: u64 = r.get(1)?;
                sums[id] = Some(sums[id].unwrap_or(0) + n);
            }
            drop(rows);
            let mut names = self
                .conn
                .prepare_cached("SELECT id, package FROM package_totals")?;
            let mut named = Vec::new();
            let mut rows = names.query([])?;
            while let Some(r) = rows.next()? {
                let id = r.get::<_, i64>(0)? as usize;
                if let Some(&Some(n)) = sums.get(id) {
                    named.push((r.get::<_, String>(1)?, n));
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
