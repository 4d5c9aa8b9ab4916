//! `package_months` (since version 5): every package's downloads per calendar month, kept up to
//! date in each day's own transaction (a day stored, replaced or removed adds or takes back its
//! `packages` rows in its month's rows), so an answer over a range reads its whole months here
//! (a year: ~12 × 20k rows) and only its partial months' days from `packages` (a year of days
//! on the synthetic history: ~7M rows, 1.9 s). Since version 8 each row also sums what a
//! filtered count leaves out (`schema::PACKAGE_MONTHS`, read by `store::filtered`).

use std::collections::{BTreeMap, HashMap};

use rusqlite::{Connection, OptionalExtension};

use super::codec::{day_range, decode_ranks, month_package, Common, PACKAGE_IDS};
use crate::blob::daylog;
use crate::date::{Day, EPOCH};
use crate::day::filters::SMALL_BYTES;

/// The last day a stored `YYYY-MM-DD` date can name (9999-12-31), as a day number: where a
/// range open to the right ends.
pub const LAST_DAY: i64 = 2_932_896;

/// A span of days split for reading: its whole months (a `package_months` key range), and the
/// days outside them (at most two `packages` key ranges, each under a month).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Split {
    /// First and last whole month (months since 1970-01), when there is one.
    pub months: Option<(i64, i64)>,
    /// Runs of days (day numbers, inclusive) not in a whole month.
    pub days: Vec<(i64, i64)>,
}

/// Splits the day numbers `first..=last` into whole months and the days left over.
pub fn split(first: i64, last: i64) -> Split {
    if first > last {
        return Split::default();
    }
    let (a, b) = (EPOCH.plus(first), EPOCH.plus(last));
    let start = |m: i64| EPOCH.days_until(Day::month_start(m));
    let mf = a.month() + i64::from(start(a.month()) != first);
    let ml = b.month() - i64::from(start(b.month() + 1) != last + 1);
    if mf > ml {
        return Split {
            months: None,
            days: vec![(first, last)],
        };
    }
    let days = [(first, start(mf) - 1), (start(ml + 1), last)];
    Split {
        months: Some((mf, ml)),
        days: days.into_iter().filter(|(lo, hi)| lo <= hi).collect(),
    }
}

/// The month of day number `day` and its first `package_months` key.
fn month_key0(day: i64) -> i64 {
    month_package(EPOCH.plus(day).month(), 0)
}

/// Adds day `day`'s `packages` rows and whale log (already written) to its month's rows.
pub fn add_day(conn: &Connection, day: i64) -> rusqlite::Result<()> {
    let parts = whale_parts(conn, day)?;
    add_day_parts(conn, day, &parts)
}

/// [`add_day`] with the day's [`whale_parts`] given (the writer has them in memory: reading
/// them back unpacks the whole whale log, 0.5 s of a 10M-row day's 0.8 s write).
pub fn add_day_parts(
    conn: &Connection,
    day: i64,
    parts: &[(i64, WhaleParts)],
) -> rusqlite::Result<()> {
    let (lo, hi) = day_range(day);
    conn.prepare_cached(&format!(
        "INSERT INTO package_months (month_package, downloads, days, whale_downloads, small,
             repeats)
         SELECT ?3 + day_package % {PACKAGE_IDS}, downloads, 1, whale_downloads,
             coalesce(small, 0), coalesce(repeats, 0) FROM packages
         WHERE day_package BETWEEN ?1 AND ?2
         ON CONFLICT (month_package) DO UPDATE SET downloads = downloads + excluded.downloads,
             days = days + 1, whale_downloads = whale_downloads + excluded.whale_downloads,
             small = small + excluded.small, repeats = repeats + excluded.repeats"
    ))?
    .execute([lo, hi, month_key0(day)])?;
    add_whale_parts(conn, day, parts, 1)
}

/// Takes day `day`'s `packages` rows and whale log (before they are deleted) back out of its
/// month's rows. Returns how many month rows changed (none for a day not stored).
pub fn take_day(conn: &Connection, day: i64) -> rusqlite::Result<usize> {
    let (lo, hi) = day_range(day);
    let n = conn
        .prepare_cached(&format!(
            "UPDATE package_months SET downloads = package_months.downloads - p.downloads,
                 days = package_months.days - 1,
                 whale_downloads = package_months.whale_downloads - p.whale_downloads,
                 small = package_months.small - p.small,
                 repeats = package_months.repeats - p.repeats
             FROM (SELECT ?3 + day_package % {PACKAGE_IDS} AS k, downloads, whale_downloads,
                       coalesce(small, 0) AS small, coalesce(repeats, 0) AS repeats
                   FROM packages WHERE day_package BETWEEN ?1 AND ?2) AS p
             WHERE package_months.month_package = p.k"
        ))?
        .execute([lo, hi, month_key0(day)])?;
    add_whale_parts(conn, day, &whale_parts(conn, day)?, -1)?;
    Ok(n)
}

/// Adds `sign` × day `day`'s whales' small and filtered downloads per package (`parts`, as
/// [`whale_parts`] reads them) to its month's rows.
fn add_whale_parts(
    conn: &Connection,
    day: i64,
    parts: &[(i64, WhaleParts)],
    sign: i64,
) -> rusqlite::Result<()> {
    let k0 = month_key0(day);
    let mut st = conn.prepare_cached(
        "UPDATE package_months SET whale_filtered = whale_filtered + ?2,
             whale_small = whale_small + ?3 WHERE month_package = ?1",
    )?;
    for (id, p) in parts {
        st.execute([k0 + id, sign * p.filtered as i64, sign * p.small as i64])?;
    }
    Ok(())
}

/// A package's top-100 whales' downloads on a day that the filters also take out.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct WhaleParts {
    /// Small and repeated together (`whale_ranks`' third number, summed over the whales).
    pub filtered: u64,
    /// Small (under `SMALL_BYTES`), from the day's whale log.
    pub small: u64,
}

/// A stored row that cannot be read: the read (or the migration, rolled back) stops naming it.
pub(super) fn corrupt(what: String) -> rusqlite::Error {
    let code = rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CORRUPT);
    rusqlite::Error::SqliteFailure(code, Some(what))
}

/// Per package id, day `day`'s [`WhaleParts`] (packages with none left out); empty for a day not
/// stored or stored before small and repeats were counted.
pub fn whale_parts(conn: &Connection, day: i64) -> rusqlite::Result<Vec<(i64, WhaleParts)>> {
    let date = EPOCH.plus(day).to_string();
    let found: Option<(bool, Option<Vec<u8>>)> = conn
        .prepare_cached("SELECT small IS NOT NULL, common_whales FROM days WHERE date = ?1")?
        .query_row([&date], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?;
    let Some((true, common)) = found else {
        return Ok(Vec::new());
    };
    let common = Common::from_blob(common.as_deref());
    let mut out: BTreeMap<i64, WhaleParts> = BTreeMap::new();
    let (lo, hi) = day_range(day);
    let mut st = conn.prepare_cached(
        "SELECT day_package, whale_ranks FROM packages
         WHERE day_package BETWEEN ?1 AND ?2 AND whale_ranks IS NOT NULL",
    )?;
    let mut rows = st.query([lo, hi])?;
    while let Some(r) = rows.next()? {
        let f: u64 = (decode_ranks(&r.get::<_, Vec<u8>>(1)?, common).iter())
            .map(|c| c.2)
            .sum();
        if f > 0 {
            out.entry(r.get::<_, i64>(0)? % PACKAGE_IDS)
                .or_default()
                .filtered = f;
        }
    }
    let log: Option<Vec<u8>> = conn
        .prepare_cached("SELECT log FROM whale_log WHERE date = ?1")?
        .query_row([&date], |r| r.get(0))
        .optional()?;
    let whales = match log {
        Some(b) => daylog::unpack_all(&b)
            .ok_or_else(|| corrupt(format!("corrupt whale_log blob ({date})")))?,
        None => Vec::new(),
    };
    let mut small: HashMap<&str, u64> = HashMap::new();
    for d in whales.iter().flat_map(|w| &w.1) {
        if d.size < SMALL_BYTES {
            *small.entry(d.package.as_str()).or_default() += 1;
        }
    }
    let mut id_of = conn.prepare_cached("SELECT id FROM package_totals WHERE package = ?1")?;
    for (package, n) in small {
        let id: i64 = id_of.query_row([package], |r| r.get(0)).map_err(|_| {
            corrupt(format!(
                "{date}: whale log names '{package}', not a stored package"
            ))
        })?;
        out.entry(id).or_default().small = n;
    }
    Ok(out.into_iter().collect())
}

/// Deletes the rows of day `day`'s month that no stored day has any more.
pub fn prune(conn: &Connection, day: i64) -> rusqlite::Result<()> {
    let k0 = month_key0(day);
    conn.prepare_cached(
        "DELETE FROM package_months WHERE month_package BETWEEN ?1 AND ?2 AND days <= 0",
    )?
    .execute([k0, k0 + PACKAGE_IDS - 1])?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(s: &str) -> i64 {
        EPOCH.days_until(Day::parse(s).unwrap())
    }

    fn m(s: &str) -> i64 {
        Day::parse(s).unwrap().month()
    }

    #[test]
    fn the_last_day_is_9999_12_31() {
        assert_eq!(LAST_DAY, n("9999-12-31"));
    }

    #[test]
    fn ranges_split_into_whole_months_and_days() {
        let s = |a: &str, b: &str| split(n(a), n(b));
        // A year: twelve whole months, no days.
        assert_eq!(
            s("2024-01-01", "2024-12-31"),
            Split {
                months: Some((m("2024-01-01"), m("2024-12-01"))),
                days: vec![]
            }
        );
        // Not aligned at either end, across a year.
        assert_eq!(
            s("2023-11-15", "2024-02-10"),
            Split {
                months: Some((m("2023-12-01"), m("2024-01-01"))),
                days: vec![
                    (n("2023-11-15"), n("2023-11-30")),
                    (n("2024-02-01"), n("2024-02-10"))
                ]
            }
        );
        // Within a month, a single day, across two partial months: days only.
        for (a, b) in [
            ("2024-02-02", "2024-02-28"),
            ("2024-02-29", "2024-02-29"),
            ("2024-01-20", "2024-02-10"),
        ] {
            assert_eq!(
                s(a, b),
                Split {
                    months: None,
                    days: vec![(n(a), n(b))]
                },
                "{a}..{b}"
            );
        }
        // A whole leap February; empty.
        assert_eq!(
            s("2024-02-01", "2024-02-29").months,
            Some((m("2024-02-01"), m("2024-02-01")))
        );
        assert_eq!(split(n("2024-02-02"), n("2024-02-01")), Split::default());
        // Open ends as range_totals reads the days outside a range.
        let left = split(0, n("2015-01-07"));
        assert_eq!(left.months, Some((0, m("2014-12-01"))));
        assert_eq!(left.days, vec![(n("2015-01-01"), n("2015-01-07"))]);
        let right = split(n("2015-01-09"), LAST_DAY);
        assert_eq!(right.months, Some((m("2015-02-01"), m("9999-12-01"))));
    }
}
