//! The crate's one date type: calendar days written strictly `YYYY-MM-DD` (log rows, ingest
//! arguments, file names, API paths), and the range CRAN has logs for (2012-10-01 up to
//! yesterday, UTC). Kept as a day number so comparisons are integer compares; the calendar
//! arithmetic is the workspace's one (`grammar::date`).

use std::fmt;

/// A valid calendar day (days since 1970-01-01).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Day(i64);

/// The first day of the CRAN logs.
pub const FIRST_LOG: Day = Day(15614); // 2012-10-01

/// 1970-01-01, the earliest day a log row or an ingest argument may carry.
pub const EPOCH: Day = Day(0);

/// True for a real calendar day written `YYYY-MM-DD`, no earlier than [`EPOCH`]: what a log
/// row, a log file's name or an ingest argument may carry.
pub fn is_log_date(s: &str) -> bool {
    Day::parse(s).is_some_and(|d| d >= EPOCH)
}

/// True for text shaped like a date (`YYYY-…`) whether or not it is a real one: an ingest
/// argument like this is a bad date, not a missing file.
pub fn looks_like_date(s: &str) -> bool {
    s.len() == 10 && s.as_bytes()[4] == b'-'
}

impl Day {
    /// Parses exactly `YYYY-MM-DD` with a real month and day; anything else is `None`.
    pub fn parse(s: &str) -> Option<Day> {
        grammar::date::parse_ymd(s).map(Day)
    }

    /// Today in UTC.
    pub fn today() -> Day {
        let secs = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs() as i64)
            .unwrap_or(0);
        Day(secs.div_euclid(86_400))
    }

    /// The day `n` days later (earlier for a negative `n`): ranges before and after a range.
    pub fn plus(self, n: i64) -> Day {
        Day(self.0 + n)
    }

    /// Days from `self` to `other` (negative when `other` is earlier).
    pub fn days_until(self, other: Day) -> i64 {
        other.0 - self.0
    }

    /// The Monday of this day's ISO week: where a `bin=week` bin starts.
    pub fn week_start(self) -> Day {
        // 1970-01-01 was a Thursday: Monday-based weekday = (n + 3) mod 7.
        Day(self.0 - (self.0 + 3).rem_euclid(7))
    }

    /// Months since 1970-01 of this day: how `package_months` keys a month (a range's whole
    /// months are one key range there).
    pub fn month(self) -> i64 {
        let (y, m, _) = grammar::date::civil_from_days(self.0);
        (y - 1970) * 12 + m - 1
    }

    /// The first day of month `n` (months since 1970-01, as [`Day::month`] counts them).
    pub fn month_start(n: i64) -> Day {
        Day(grammar::date::days_from_civil(
            1970 + n.div_euclid(12),
            n.rem_euclid(12) + 1,
            1,
        ))
    }

    /// Yesterday in UTC: the newest day CRAN can have a log for.
    pub fn yesterday() -> Day {
        Day(Day::today().0 - 1)
    }

    /// Whether CRAN can have a log for this day (first log ..= yesterday).
    pub fn in_log_range(self) -> bool {
        self >= FIRST_LOG && self < Day::today()
    }

    /// The one rule for every date a user gives (ingest arguments, ranges, API parameters): a log
    /// day, or one line saying it is outside the logs. Checked locally, before any download.
    /// `name` prefixes the message (`"from "`, or `""` for a lone date).
    pub fn check_log_range(self, name: &str) -> Result<Day, DateError> {
        if self.in_log_range() {
            Ok(self)
        } else {
            Err(DateError::OutsideLogs {
                name: name.to_owned(),
                day: self,
            })
        }
    }
}

/// A `from..=to` range of log days as a request gives it (either end may be missing).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Range {
    /// First day, included.
    pub from: Day,
    /// Last day, included.
    pub to: Day,
}

impl Range {
    /// Parses optional `from` and `to` (`YYYY-MM-DD`): each must be a log day (2012-10-01 ..
    /// yesterday) and `from` not after `to`. A missing end is the first log day / yesterday.
    /// The error is one line naming the parameter and echoing (at most 40 chars of) the input.
    pub fn parse(from: Option<&str>, to: Option<&str>) -> Result<Range, DateError> {
        let end = |name: &'static str, v: Option<&str>, default: Day| -> Result<Day, DateError> {
            let Some(v) = v else { return Ok(default) };
            let d = Day::parse(v).ok_or_else(|| DateError::NotADay {
                name,
                shown: grammar::echo::echo(v.as_bytes(), 40),
            })?;
            d.check_log_range(&format!("{name} "))
        };
        let from = end("from", from, FIRST_LOG)?;
        let to = end("to", to, Day(Day::today().0 - 1))?;
        if from > to {
            return Err(DateError::Reversed { from, to });
        }
        Ok(Range { from, to })
    }

    /// Every day of the range, in order.
    pub fn days(self) -> impl Iterator<Item = Day> {
        (self.from.0..=self.to.0).map(Day)
    }
}

/// A date or range a user gave that is refused: one line naming the parameter and the input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DateError {
    /// Not a real day written `YYYY-MM-DD`.
    #[error("{name} must be a real day as YYYY-MM-DD, got '{shown}'")]
    NotADay {
        /// The parameter (`from`, `to`).
        name: &'static str,
        /// The input, escaped and cut to 40 characters.
        shown: String,
    },
    /// A real day CRAN has no log for.
    #[error("{name}{day} is outside the CRAN logs ({FIRST_LOG} to yesterday)")]
    OutsideLogs {
        /// The parameter with its trailing space (`"from "`), or empty for a lone date.
        name: String,
        /// The day.
        day: Day,
    },
    /// A range that ends before it starts.
    #[error("from {from} is after to {to}")]
    Reversed {
        /// The first day asked.
        from: Day,
        /// The last day asked.
        to: Day,
    },
}

impl fmt::Display for Day {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (y, m, d) = grammar::date::civil_from_days(self.0);
        write!(f, "{y:04}-{m:02}-{d:02}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints_round_trip() {
        for s in ["2012-10-01", "2016-02-29", "1999-12-31", "2024-03-01"] {
            assert_eq!(Day::parse(s).unwrap().to_string(), s);
        }
        assert_eq!(Day::parse("2012-10-01"), Some(FIRST_LOG));
        assert_eq!(Day::parse("1970-01-01"), Some(Day(0)));
    }

    #[test]
    fn log_dates_start_at_the_epoch() {
        assert!(is_log_date("1970-01-01") && is_log_date("2012-02-29"));
        assert!(!is_log_date("1969-12-31") && !is_log_date("2013-02-29"));
        assert!(!is_log_date("2015-1-01") && !is_log_date(""));
    }

    #[test]
    fn ranges_are_checked() {
        let r = Range::parse(Some("2015-01-01"), Some("2015-01-03")).unwrap();
        assert_eq!(
            r.days().map(|d| d.to_string()).collect::<Vec<_>>(),
            ["2015-01-01", "2015-01-02", "2015-01-03"]
        );
        assert_eq!(Range::parse(None, None).unwrap().from, FIRST_LOG);
        for (f, t, msg) in [
            (
                Some("2015-01-03"),
                Some("2015-01-01"),
                "from 2015-01-03 is after to 2015-01-01",
            ),
            (
                Some("2011-01-01"),
                None,
                "from 2011-01-01 is outside the CRAN logs",
            ),
            (None, Some("2999-01-01"), "to 2999-01-01 is outside"),
            (
                Some("2015-02-30"),
                None,
                "from must be a real day as YYYY-MM-DD, got '2015-02-30'",
            ),
        ] {
            let e = Range::parse(f, t).unwrap_err().to_string();
            assert!(e.starts_with(msg), "{e}");
        }
    }

    #[test]
    fn weeks_start_on_monday() {
        let d = |s| Day::parse(s).unwrap();
        assert_eq!(d("2015-01-08").week_start(), d("2015-01-05"));
        assert_eq!(d("2015-01-05").week_start(), d("2015-01-05"));
        assert_eq!(d("2015-01-04").week_start(), d("2014-12-29"));
        assert_eq!(d("2015-01-04").plus(-3), d("2015-01-01"));
        assert_eq!(d("2015-01-01").days_until(d("2015-01-04")), 3);
    }

    #[test]
    fn months_count_from_1970() {
        let d = |s| Day::parse(s).unwrap();
        assert_eq!(d("1970-01-31").month(), 0);
        assert_eq!(d("2015-01-08").month(), 45 * 12);
        assert_eq!(d("2016-02-29").month(), 46 * 12 + 1);
        assert_eq!(Day::month_start(46 * 12 + 1), d("2016-02-01"));
        assert_eq!(Day::month_start(46 * 12 + 2).plus(-1), d("2016-02-29"));
        assert_eq!(Day::month_start(0), EPOCH);
        for s in ["2012-10-01", "2012-12-31", "2024-03-01", "9999-12-31"] {
            let m = d(s).month();
            assert!(
                Day::month_start(m) <= d(s) && d(s) < Day::month_start(m + 1),
                "{s}"
            );
        }
    }

    #[test]
    fn rejects_malformed_days() {
        for s in [
            "",
            "2015-02-29",
            "2015-13-01",
            "2015-00-10",
            "2015-1-01",
            "2015-01-1x",
            "+015-01-01",
            "2015/01/01",
            "2015-01-011",
        ] {
            assert_eq!(Day::parse(s), None, "{s}");
        }
    }
}
