//! The byte-size grammar of every size flag (cranwhales' `--max-header-bytes`, manifold's
//! `--max-rss`, …): a bare integer is bytes; a number (fractions allowed) with a unit is that
//! many units: `B`; `KB`, `MB`, `GB`, `TB` (powers of 1000); `KiB`, `MiB`, `GiB`, `TiB` and the
//! short `K`, `M`, `G`, `T` (powers of 1024). Units are case-insensitive and may follow a space
//! (`64 KiB`). Sizes are whole bytes: a fraction of a byte is refused, as is anything over
//! `u64::MAX`.

/// Longest part of a refused argument quoted in the message, in characters.
const SHOWN: usize = 40;

/// A size flag's value that is not a size: the message quotes it and says what to write.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// No number, an unknown unit, or a fraction of a byte.
    #[error("\"{0}\": not a size; write e.g. 65536, 64KiB, 16MiB or 1GB")]
    Invalid(
        /// The argument as given (escaped, cut).
        String,
    ),
    /// More bytes than a `u64` holds.
    #[error("\"{0}\": too large a size")]
    TooLarge(
        /// The argument as given (escaped, cut).
        String,
    ),
}

/// Parses one size flag's value into bytes (see the module documentation for the forms).
///
/// # Errors
/// [`Error::Invalid`] for text that is not a size, [`Error::TooLarge`] beyond `u64::MAX` bytes.
pub fn parse(s: &str) -> Result<u64, Error> {
    let invalid = || Error::Invalid(crate::echo::echo(s.as_bytes(), SHOWN));
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let mult: u64 = match unit.trim_start().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "kb" => 1000,
        "mb" => 1000_u64.pow(2),
        "gb" => 1000_u64.pow(3),
        "tb" => 1000_u64.pow(4),
        "k" | "kib" => 1 << 10,
        "m" | "mib" => 1 << 20,
        "g" | "gib" => 1 << 30,
        "t" | "tib" => 1 << 40,
        _ => return Err(invalid()),
    };
    if num.is_empty() || num.starts_with('.') || num.ends_with('.') || num.matches('.').count() > 1
    {
        return Err(invalid());
    }
    let (whole, frac) = num.split_once('.').unwrap_or((num, ""));
    let too_large = || Error::TooLarge(crate::echo::echo(s.as_bytes(), SHOWN));
    let whole: u64 = whole.parse().map_err(|_| too_large())?;
    let mut bytes = whole.checked_mul(mult).ok_or_else(too_large)?;
    if !frac.is_empty() {
        // Exact decimal arithmetic: `frac` digits of `mult`, which must come out whole.
        let digits = u32::try_from(frac.len()).map_err(|_| invalid())?;
        let scale = 10_u128.checked_pow(digits).ok_or_else(invalid)?;
        let f: u128 = frac.parse().map_err(|_| invalid())?;
        let part = f * u128::from(mult);
        if part % scale != 0 {
            return Err(invalid());
        }
        let part = u64::try_from(part / scale).map_err(|_| too_large())?;
        bytes = bytes.checked_add(part).ok_or_else(too_large)?;
    }
    Ok(bytes)
}

/// `bytes` as this grammar writes it: the largest binary unit it is a whole number of
/// (`64KiB`, `16MiB`), else bytes; [`parse`] reads it back to the same value.
pub fn format(bytes: u64) -> String {
    for (unit, size) in [
        ("TiB", 1u64 << 40),
        ("GiB", 1 << 30),
        ("MiB", 1 << 20),
        ("KiB", 1 << 10),
    ] {
        if bytes >= size && bytes % size == 0 {
            return format!("{}{unit}", bytes / size);
        }
    }
    bytes.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_bytes_and_units() {
        for (s, want) in [
            ("0", 0),
            ("65536", 65_536),
            ("64KiB", 65_536),
            ("64 kib", 65_536),
            ("64K", 65_536),
            ("16MiB", 16 << 20),
            ("16M", 16 << 20),
            ("1GB", 1_000_000_000),
            ("1.5GiB", 3 << 29),
            ("2.5KB", 2500),
            ("1TiB", 1 << 40),
            ("100B", 100),
        ] {
            assert_eq!(parse(s), Ok(want), "{s}");
        }
    }

    #[test]
    fn refuses_what_is_not_a_whole_size() {
        for s in [
            "",
            "KiB",
            "12 parsecs",
            "-5",
            "1.5",
            "1..5K",
            ".5K",
            "5.K",
            "0.0001KiB",
        ] {
            assert_eq!(
                parse(s).unwrap_err().to_string(),
                format!("\"{s}\": not a size; write e.g. 65536, 64KiB, 16MiB or 1GB"),
                "{s}"
            );
        }
        assert_eq!(
            parse("99999999999TiB").unwrap_err().to_string(),
            "\"99999999999TiB\": too large a size"
        );
        assert!(parse("\x1b[2J")
            .unwrap_err()
            .to_string()
            .contains("\\x1b[2J"));
    }

    #[test]
    fn format_reads_back() {
        for b in [0, 1, 1000, 65_536, 16 << 20, 3 << 29, 5 << 40] {
            assert_eq!(parse(&format(b)), Ok(b), "{}", format(b));
        }
        assert_eq!(format(65_536), "64KiB");
        assert_eq!(format(1000), "1000");
    }
}
