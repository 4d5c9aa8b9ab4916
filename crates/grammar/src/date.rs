//! The proleptic Gregorian calendar as day numbers (days since 1970-01-01, negative before):
//! cranwhales' log days and surge's ISO-8601 timestamps both count days this way, with Howard
//! Hinnant's civil-calendar algorithms, and read days in the one strict form `YYYY-MM-DD`.
//! Hand-written to avoid a date crate for four functions.

/// Whether `y` is a leap year.
pub fn is_leap(y: i64) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

/// Days in month `m` (1..=12) of year `y`.
pub fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if is_leap(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// The day number of year `y`, month `m` (1..=12), day `d` (not checked: 2015-02-31 is
/// 2015-03-03's number; [`parse_ymd`] checks).
pub fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// `(year, month, day)` of day number `z`: the inverse of [`days_from_civil`].
pub fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// The day number of exactly `YYYY-MM-DD` (four-digit year, real month and day); anything else,
/// including a sign, a short field or trailing text, is `None`.
pub fn parse_ymd(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let part = &s[r];
        part.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| part.parse().ok())?
    };
    let (y, m, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    if !(1..=12).contains(&m) || d < 1 || d > days_in_month(y, m) {
        return None;
    }
    Some(days_from_civil(y, m, d))
}

/// Day number `z` written `YYYY-MM-DD`: what [`parse_ymd`] reads back.
pub fn format_ymd(z: i64) -> String {
    let (y, m, d) = civil_from_days(z);
    format!("{y:04}-{m:02}-{d:02}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_days_round_trip() {
        for (s, n) in [
            ("1970-01-01", 0),
            ("2012-10-01", 15_614),
            ("2016-02-29", 16_860),
            ("1969-12-31", -1),
            ("2000-03-01", 11_017),
            ("9999-12-31", 2_932_896),
        ] {
            assert_eq!(parse_ymd(s), Some(n), "{s}");
            assert_eq!(format_ymd(n), s);
        }
        for z in -800_000..800_000 {
            let (y, m, d) = civil_from_days(z);
            assert_eq!(days_from_civil(y, m, d), z);
            assert!((1..=days_in_month(y, m)).contains(&d));
        }
    }

    #[test]
    fn only_strict_real_days_parse() {
        for s in [
            "",
            "2015-02-29",
            "2015-13-01",
            "2015-00-10",
            "2015-04-31",
            "2015-1-01",
            "2015-01-1x",
            "+015-01-01",
            "2015/01/01",
            "2015-01-011",
            " 2015-01-01",
        ] {
            assert_eq!(parse_ymd(s), None, "{s}");
        }
        assert!(is_leap(2000) && is_leap(2016) && !is_leap(1900) && !is_leap(2015));
    }
}
