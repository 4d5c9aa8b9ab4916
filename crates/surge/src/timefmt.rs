//! ISO-8601 UTC timestamps (`2024-08-21T16:20:29.838Z`) <-> Unix milliseconds, as recording.log uses them.
//! The calendar arithmetic is the workspace's one (`grammar::date`); the duration grammar of
//! every flag is `grammar::duration`'s.

use std::time::{SystemTime, UNIX_EPOCH};

use grammar::date::{civil_from_days, days_from_civil};

/// Milliseconds since the Unix epoch now; the timestamp unit of session CSVs.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// Formats Unix milliseconds as `YYYY-MM-DDTHH:MM:SS.mmmZ` (what shinyloadtest writes).
pub fn format_iso(ms: i64) -> String {
    let days = ms.div_euclid(86_400_000);
    let rem = ms.rem_euclid(86_400_000);
    let (y, mo, d) = civil_from_days(days);
    let (h, mi, s, milli) = (
        rem / 3_600_000,
        rem / 60_000 % 60,
        rem / 1000 % 60,
        rem % 1000,
    );
    format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{milli:03}Z")
}

/// Parses `YYYY-MM-DDTHH:MM:SS[.fff]Z` (or `+00:00`) into Unix milliseconds; None if malformed.
pub fn parse_iso(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() < 20
        || b[4] != b'-'
        || b[7] != b'-'
        || b[10] != b'T'
        || b[13] != b':'
        || b[16] != b':'
    {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> { s.get(r)?.parse::<i64>().ok() };
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, sec) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    let mut rest = &s[19..];
    let mut milli = 0i64;
    if let Some(frac) = rest.strip_prefix('.') {
        let digits = frac.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        let f = &frac[..digits];
        let padded: String = f.chars().chain("000".chars()).take(3).collect();
        milli = padded.parse().ok()?;
        rest = &frac[digits..];
    }
    let offset_min = match rest {
        "Z" | "z" => 0,
        _ => {
            let ob = rest.as_bytes();
            if ob.len() != 6 || !(ob[0] == b'+' || ob[0] == b'-') || ob[3] != b':' {
                return None;
            }
            let m = rest[1..3].parse::<i64>().ok()? * 60 + rest[4..6].parse::<i64>().ok()?;
            if ob[0] == b'-' {
                -m
            } else {
                m
            }
        }
    };
    Some(
        ((days_from_civil(y, mo, d) * 24 + h) * 60 + mi - offset_min) * 60_000 + sec * 1000 + milli,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_known_instant() {
        // 2024-08-21T16:20:29.838Z == 1724257229838 (date -d ... +%s%3N)
        assert_eq!(
            parse_iso("2024-08-21T16:20:29.838Z"),
            Some(1_724_257_229_838)
        );
        assert_eq!(format_iso(1_724_257_229_838), "2024-08-21T16:20:29.838Z");
        assert_eq!(parse_iso("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(parse_iso("1970-01-01T01:00:00.5+01:00"), Some(500));
        assert_eq!(parse_iso("2024-13-01T00:00:00Z"), None);
        assert_eq!(parse_iso("yesterday"), None);
    }
}

/// The one duration grammar of every surge flag (and `--threshold` limits): the workspace's
/// (`grammar::duration`, shared with cranwhales and manifold) — a number with a unit, fractions
/// and sums allowed (`500ms`, `1.5s`, `5m`, `1h 30m`); `0` needs none. A bare number is refused
/// with how to write it (`"30": a duration needs a unit, e.g. 30s or 500ms`): shinycannon's
/// plain-number flags say their unit in their name and help ([`parse_interval`], [`parse_minutes`]).
pub fn parse_duration(s: &str) -> Result<std::time::Duration, DurationError> {
    Ok(grammar::duration::parse(s)?)
}

/// A duration flag that is not one; the message quotes the text.
#[derive(Debug, thiserror::Error)]
pub enum DurationError {
    /// Not in the workspace's duration grammar (`500ms`, `1.5s`, `5m`).
    #[error(transparent)]
    Duration(#[from] grammar::duration::Error),
    /// `--start-interval` in ms beyond u64.
    #[error("interval \"{0}\": too large")]
    TooLarge(String),
    /// `--loaded-duration-minutes` not a number.
    #[error("minutes \"{0}\": expected a number such as 2 or 0.5")]
    NotMinutes(String),
    /// `--loaded-duration-minutes` negative or absurd.
    #[error("minutes \"{0}\": must be between 0 and 1000000")]
    MinutesRange(String),
}

/// `--start-interval`: a plain number is milliseconds (shinycannon's unit); with a unit suffix it
/// is a duration as in [`parse_duration`] (`2s`, `500ms`).
pub fn parse_interval(s: &str) -> Result<std::time::Duration, DurationError> {
    let t = s.trim();
    if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
        let ms: u64 = t
            .parse()
            .map_err(|_| DurationError::TooLarge(s.to_string()))?;
        return Ok(std::time::Duration::from_millis(ms));
    }
    parse_duration(t)
}

/// `--loaded-duration-minutes`: shinycannon's unit, minutes, possibly fractional (`0.5`).
pub fn parse_minutes(s: &str) -> Result<std::time::Duration, DurationError> {
    let m: f64 = s
        .trim()
        .parse()
        .map_err(|_| DurationError::NotMinutes(s.to_string()))?;
    if !(0.0..=1e6).contains(&m) {
        return Err(DurationError::MinutesRange(s.to_string()));
    }
    Ok(std::time::Duration::from_secs_f64(m * 60.0))
}

#[cfg(test)]
mod duration_tests {
    #[test]
    fn durations() {
        use super::parse_duration;
        use std::time::Duration;
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_duration("1h 30m").unwrap(), Duration::from_secs(5400));
        assert_eq!(parse_duration("0").unwrap(), Duration::ZERO);
        let e = parse_duration("30").unwrap_err().to_string();
        assert_eq!(e, "\"30\": a duration needs a unit, e.g. 30s or 500ms");
        assert!(parse_duration("3 fortnights").is_err());
        assert!(parse_duration("-1s").is_err());
    }

    #[test]
    fn shinycannon_units() {
        use super::{parse_interval, parse_minutes};
        use std::time::Duration;
        assert_eq!(parse_interval("250").unwrap(), Duration::from_millis(250));
        assert_eq!(parse_interval("0").unwrap(), Duration::ZERO);
        assert_eq!(parse_interval("2s").unwrap(), Duration::from_secs(2));
        assert_eq!(parse_interval("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_interval("1.5s").unwrap(), Duration::from_millis(1500));
        assert!(parse_interval("2x").is_err());
        assert!(parse_interval("").is_err());
        assert_eq!(parse_minutes("2").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_minutes("0.05").unwrap(), Duration::from_secs(3));
        assert!(parse_minutes("-1").is_err());
        assert!(parse_minutes("5m").is_err());
        assert!(parse_minutes("NaN").is_err());
    }
}
