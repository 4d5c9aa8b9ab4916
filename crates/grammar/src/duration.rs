//! The duration grammar of every duration flag of the three programs (`serve --drain-timeout`,
//! `surge replay --loaded-duration`, manifold's `--queue-timeout`, …).
//!
//! Accepted: humantime's forms, a number with a unit, fractions and sums allowed: `500ms`,
//! `1.5s`, `25s`, `5m`, `1h`, `1h 30m` (units `ns`, `us`, `ms`, `s`/`sec`, `m`/`min`, `h`/`hr`,
//! `d`, …). A bare `0` is zero: it needs no unit, as nothing else reads it differently.
//!
//! Refused: a bare number other than 0 (`25`): one program read it as seconds and another as
//! milliseconds, so none guesses; the message says how to write it. Anything else humantime
//! refuses (`3 fortnights`, `-1s`, ``) is refused with humantime's reason. Both errors quote the
//! input escaped and cut ([`crate::echo`]), so a hostile argument cannot reach a terminal raw.
//!
//! Flags whose documented unit is part of their meaning (shinycannon's `--start-interval`, in
//! milliseconds) are not this grammar: their program reads a bare number in that unit and says so
//! in the flag's help.

use std::time::Duration;

/// Longest part of a refused argument quoted in the message, in characters.
const SHOWN: usize = 40;

/// A duration flag's value that is not a duration: the message quotes it and says what to write.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// A bare number (`25`): which unit was meant cannot be known.
    #[error("\"{text}\": a duration needs a unit, e.g. {text}s or 500ms")]
    NoUnit {
        /// The number as given (escaped, cut).
        text: String,
    },
    /// Not a duration at all (`3 fortnights`, `-1s`, empty).
    #[error("\"{text}\": not a duration ({reason}); write e.g. 25s, 500ms, 1.5s or 5m")]
    Invalid {
        /// The argument as given (escaped, cut).
        text: String,
        /// humantime's reason.
        reason: String,
    },
    /// A duration outside the flag's bounds ([`parse_in`]).
    #[error("\"{text}\": must be between {} and {}", shown(.min), shown(.max))]
    OutOfRange {
        /// The argument as given (escaped, cut).
        text: String,
        /// The shortest accepted.
        min: Duration,
        /// The longest accepted.
        max: Duration,
    },
}

/// Parses one duration flag's value (see the module documentation for the forms).
///
/// # Errors
/// [`Error::NoUnit`] for a bare number other than 0, [`Error::Invalid`] for anything else that
/// is not a duration.
pub fn parse(s: &str) -> Result<Duration, Error> {
    let t = s.trim();
    if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        if t.bytes().all(|b| b == b'0') {
            return Ok(Duration::ZERO);
        }
        return Err(Error::NoUnit {
            text: crate::echo::echo(t.as_bytes(), SHOWN),
        });
    }
    humantime::parse_duration(t).map_err(|e| Error::Invalid {
        text: crate::echo::echo(s.as_bytes(), SHOWN),
        reason: e.to_string(),
    })
}

/// [`parse`], then bounded: for a flag where zero or a huge value makes no sense (a poll interval,
/// a stall timeout). Use it in clap as `value_parser = |s: &str| parse_in(s, MIN, MAX)`.
///
/// # Errors
/// [`parse`]'s, and [`Error::OutOfRange`] outside `min..=max`.
pub fn parse_in(s: &str, min: Duration, max: Duration) -> Result<Duration, Error> {
    let d = parse(s)?;
    if d < min || d > max {
        return Err(Error::OutOfRange {
            text: crate::echo::echo(s.as_bytes(), SHOWN),
            min,
            max,
        });
    }
    Ok(d)
}

/// [`format`] of a borrowed duration, for the error messages.
fn shown(d: &Duration) -> String {
    format(*d)
}

/// `d` as this grammar writes it (`25s`, `1m 30s`, `500ms`): what [`parse`] reads back to the
/// same value, for defaults shown in help and durations echoed in messages.
pub fn format(d: Duration) -> String {
    if d.is_zero() {
        return "0s".to_owned();
    }
    humantime::format_duration(d).to_string().replace(' ', "")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_humantime_forms() {
        for (s, want) in [
            ("500ms", Duration::from_millis(500)),
            ("1.5s", Duration::from_millis(1500)),
            ("25s", Duration::from_secs(25)),
            (" 25s ", Duration::from_secs(25)),
            ("5m", Duration::from_secs(300)),
            ("1h", Duration::from_secs(3600)),
            ("1h 30m", Duration::from_secs(5400)),
            ("2min", Duration::from_secs(120)),
            ("0", Duration::ZERO),
            ("000", Duration::ZERO),
            ("0s", Duration::ZERO),
        ] {
            assert_eq!(parse(s), Ok(want), "{s}");
        }
    }

    #[test]
    fn a_bare_number_is_refused_with_how_to_fix_it() {
        assert_eq!(
            parse("25").unwrap_err().to_string(),
            "\"25\": a duration needs a unit, e.g. 25s or 500ms"
        );
        assert_eq!(
            parse("1.5").unwrap_err().to_string(),
            "\"1.5\": a duration needs a unit, e.g. 1.5s or 500ms"
        );
        assert!(matches!(parse("5000"), Err(Error::NoUnit { .. })));
    }

    #[test]
    fn other_text_is_refused_with_humantime_reason_escaped() {
        for s in ["3 fortnights", "-1s", "", "s", "25 s x"] {
            let e = parse(s).unwrap_err();
            assert!(matches!(e, Error::Invalid { .. }), "{s}: {e:?}");
            let msg = e.to_string();
            assert!(
                msg.starts_with(&format!("\"{s}\": not a duration (")),
                "{msg}"
            );
            assert!(
                msg.ends_with("); write e.g. 25s, 500ms, 1.5s or 5m"),
                "{msg}"
            );
        }
        let msg = parse("\x1b[2J5x").unwrap_err().to_string();
        assert!(msg.starts_with("\"\\x1b[2J5x\": not a duration"), "{msg}");
        let long = "y".repeat(100);
        let msg = parse(&long).unwrap_err().to_string();
        assert!(msg.contains("…(100 bytes)"), "{msg}");
    }

    #[test]
    fn bounds_are_said_in_the_grammar() {
        let (min, max) = (Duration::from_millis(10), Duration::from_secs(60));
        assert_eq!(parse_in("50ms", min, max), Ok(Duration::from_millis(50)));
        assert_eq!(parse_in("1m", min, max), Ok(max));
        assert_eq!(
            parse_in("0", min, max).unwrap_err().to_string(),
            "\"0\": must be between 10ms and 1m"
        );
        assert_eq!(
            parse_in("2h", min, max).unwrap_err().to_string(),
            "\"2h\": must be between 10ms and 1m"
        );
        assert!(matches!(parse_in("5", min, max), Err(Error::NoUnit { .. })));
    }

    #[test]
    fn format_reads_back() {
        for d in [
            Duration::ZERO,
            Duration::from_millis(500),
            Duration::from_secs(25),
            Duration::from_secs(90),
            Duration::from_millis(1500),
        ] {
            assert_eq!(parse(&format(d)), Ok(d), "{}", format(d));
        }
        assert_eq!(format(Duration::from_secs(90)), "1m30s");
        assert_eq!(format(Duration::from_secs(25)), "25s");
    }
}
