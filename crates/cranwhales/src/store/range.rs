//! Reads over a whole range of stored days for the answers in context: every package's downloads
//! over a range (one pass over the range's `packages` rows, which the primary key keeps together
//! by date) and the calendar (one row per stored day).

use std::collections::HashMap;

use super::{sql, Result, Store};
use crate::context::{Calendar, CalendarDay, RangeTotals};
use crate::date::{Day, Range, FIRST_LOG};

impl Store {
    /// Every package's downloads over the stored days of `range`, and how many days those are.
    pub fn range_totals(&self, range: Range) -> Result<RangeTotals> {
        let (from, to) = (range.from.to_string(), range.to.to_string());
        let q = || -> rusqlite::Result<RangeTotals> {
            let days: u32 = self.conn.query_row(
                "SELECT count(*) FROM days WHERE date BETWEEN ?1 AND ?2",
                [&from, &to],
                |r| r.get(0),
            )?;
            let mut st = self.conn.prepare_cached(
                "SELECT package, downloads FROM packages WHERE date BETWEEN ?1 AND ?2",
            )?;
            let mut rows = st.query([&from, &to])?;
            let mut sums: HashMap<String, u64> = HashMap::new();
            while let Some(r) = rows.next()? {
                let n: u64 = r.get(1)?;
                let name = r.get_ref(0)?.as_str()?;
                match sums.get_mut(name) {
                    Some(s) => *s += n,
                    None => {
                        sums.insert(name.to_owned(), n);
                    }
                }
            }
            Ok(RangeTotals::new(sums.into_iter().collect(), days))
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
