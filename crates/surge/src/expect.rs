//! `--expect LINE~REGEX`: what a response must contain. LINE is a recording.log line number (the
//! CSVs' `input_line_number`; recordings have no labels) of an HTTP request or a received
//! WebSocket message; REGEX must match somewhere in that line's response body (its first MiB) or
//! in the message that answered it. A session whose response does not match fails there with
//! kind `content`, counted like every other failure (summary.json, the terminal, the report).

use crate::failure::Cause;
use std::fmt;
use std::str::FromStr;

/// Most bytes of a response body (or message) an `--expect` looks at.
pub const BODY_MAX: usize = 1024 * 1024;

/// One `--expect LINE~REGEX`.
#[derive(Debug, Clone)]
pub struct ContentCheck {
    /// The recording line whose response it checks.
    pub line: u32,
    regex: regex::Regex,
}

/// An `--expect` that cannot be used, and why.
#[derive(Debug, thiserror::Error)]
pub enum ExpectError {
    /// No `~` between the line and the regex.
    #[error("expected LINE~REGEX (a recording line number, then a regex)")]
    Form,
    /// LINE is not a line number.
    #[error("{0:?} is not a recording line number")]
    Line(String),
    /// The regex does not compile (regex's last line of explanation).
    #[error("bad regex {pattern:?}: {why}")]
    Regex {
        /// The pattern given.
        pattern: String,
        /// What the regex crate said, last line.
        why: String,
    },
}

impl FromStr for ContentCheck {
    type Err = ExpectError;

    fn from_str(s: &str) -> Result<ContentCheck, ExpectError> {
        let (line, pattern) = s.split_once('~').ok_or(ExpectError::Form)?;
        let line: u32 = (line.trim().parse().ok())
            .filter(|&l| l > 0)
            .ok_or_else(|| ExpectError::Line(crate::failure::clip(line, 40)))?;
        let regex = regex::Regex::new(pattern).map_err(|e| ExpectError::Regex {
            pattern: crate::failure::clip(pattern, 80),
            why: e.to_string().lines().last().unwrap_or_default().to_string(),
        })?;
        Ok(ContentCheck { line, regex })
    }
}

impl fmt::Display for ContentCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}~{}", self.line, self.regex.as_str())
    }
}

/// Checks `text`, the response or message of recording line `line`, against every `--expect`
/// of that line: the first that does not match is the session's failure.
///
/// # Errors
/// [`Cause::Content`] naming the check and quoting the start of what came (escaped, cut).
pub fn check(checks: &[ContentCheck], line: u32, text: &str) -> Result<(), Cause> {
    for c in checks.iter().filter(|c| c.line == line) {
        if !c.regex.is_match(text) {
            return Err(Cause::Content(format!(
                "--expect {c} did not match: got {}",
                crate::failure::clip(text, 120)
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_checks_and_names_the_failed_one() {
        let c: ContentCheck = "7~\"status\":\\s*\"ok\"".parse().unwrap();
        assert_eq!(c.line, 7);
        let checks = [c];
        assert!(check(&checks, 7, r#"{"status": "ok"}"#).is_ok());
        assert!(check(&checks, 8, "anything").is_ok());
        let e = check(&checks, 7, "{\"status\":\"down\"}\n").unwrap_err();
        assert_eq!(e.kind(), crate::failure::FailureKind::Content);
        assert!(e.to_string().contains("--expect 7~"), "{e}");
        assert!(!e.to_string().contains('\n'), "{e}");
        assert!(matches!(
            "7".parse::<ContentCheck>(),
            Err(ExpectError::Form)
        ));
        assert!(matches!(
            "x~a".parse::<ContentCheck>(),
            Err(ExpectError::Line(_))
        ));
        assert!(matches!(
            "0~a".parse::<ContentCheck>(),
            Err(ExpectError::Line(_))
        ));
        assert!(matches!(
            "3~(".parse::<ContentCheck>(),
            Err(ExpectError::Regex { .. })
        ));
    }
}
