//! `--capture`: values the server makes (CSRF tokens, ids) taken from live responses and sent
//! back as `${NAME}` later in the same session. `NAME=REGEX` looks at every HTTP response body and
//! WebSocket message (the latest match wins); `NAME@LINE=REGEX` only at the response of that
//! recording line, and a response that does not match fails the session. `json:/pointer` in place
//! of the regex takes a JSON value by its RFC 6901 pointer instead.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

/// How a value is found in a response.
#[derive(Debug, Clone)]
enum How {
    /// The first match's group 1, or the whole match when the regex has no group.
    Regex(regex::Regex),
    /// The JSON value at this pointer (strings as they are, other values as JSON text).
    Pointer(String),
}

/// One `--capture`.
#[derive(Debug, Clone)]
pub struct Capture {
    /// The placeholder it fills: `${NAME}`.
    pub name: Arc<str>,
    /// Only the response of this recording line (an HTTP event); None: every response.
    pub line: Option<u32>,
    how: How,
}

/// A `--capture` value that cannot be used, and why.
#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    /// No `=` between the name and the pattern.
    #[error("expected NAME=REGEX, NAME@LINE=REGEX or NAME=json:/pointer")]
    Form,
    /// `@LINE` is not a number.
    #[error("{0:?} is not a recording line number")]
    Line(String),
    /// The name is not letters, digits and `_`.
    #[error("{0:?} is not a placeholder name (letters, digits, _)")]
    Name(String),
    /// The name is one surge fills itself.
    #[error("{0} is a built-in placeholder")]
    BuiltIn(String),
    /// `json:` without a pointer starting with `/`.
    #[error("json:{0}: a JSON pointer starts with /")]
    Pointer(String),
    /// The regex does not compile (regex's last line of explanation).
    #[error("bad regex {pattern:?}: {why}")]
    Regex {
        /// The pattern given.
        pattern: String,
        /// What the regex crate said, last line.
        why: String,
    },
}

impl FromStr for Capture {
    type Err = CaptureError;

    /// `NAME[@LINE]=REGEX` or `NAME[@LINE]=json:/pointer`.
    fn from_str(s: &str) -> Result<Capture, CaptureError> {
        let (left, pattern) = s.split_once('=').ok_or(CaptureError::Form)?;
        let (name, line) = match left.split_once('@') {
            Some((n, l)) => {
                let l: u32 = l.parse().map_err(|_| CaptureError::Line(l.into()))?;
                (n, Some(l))
            }
            None => (left, None),
        };
        if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            return Err(CaptureError::Name(name.into()));
        }
        if crate::tokens::NAMES.contains(&name) {
            return Err(CaptureError::BuiltIn(name.into()));
        }
        let how = match pattern.strip_prefix("json:") {
            Some(p) if p.is_empty() || p.starts_with('/') => How::Pointer(p.to_string()),
            Some(p) => return Err(CaptureError::Pointer(p.into())),
            None => How::Regex(regex::Regex::new(pattern).map_err(|e| {
                let first = e.to_string();
                CaptureError::Regex {
                    pattern: pattern.into(),
                    why: first.lines().last().unwrap_or_default().to_string(),
                }
            })?),
        };
        Ok(Capture {
            name: name.into(),
            line,
            how,
        })
    }
}

impl fmt::Display for Capture {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.how {
            How::Regex(r) => write!(f, "{}", r.as_str()),
            How::Pointer(p) => write!(f, "json:{p}"),
        }
    }
}

impl Capture {
    /// Whether it looks at the response of recording line `line`.
    pub fn applies_to(&self, line: u32) -> bool {
        self.line.is_none_or(|l| l == line)
    }

    /// The value in `text`, if it is there.
    pub fn find(&self, text: &str) -> Option<String> {
        match &self.how {
            How::Regex(r) => {
                let c = r.captures(text)?;
                let m = c.get(1).or_else(|| c.get(0))?;
                Some(m.as_str().to_string())
            }
            How::Pointer(p) => {
                let v: serde_json::Value = serde_json::from_str(text.trim()).ok()?;
                match v.pointer(p)? {
                    serde_json::Value::String(s) => Some(s.clone()),
                    serde_json::Value::Null => None,
                    other => Some(other.to_string()),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regex_and_pointer_captures() {
        let c: Capture = r#"CSRF@4=name="csrf" value="([^"]+)""#.parse().unwrap();
        assert_eq!(c.line, Some(4));
        assert!(c.applies_to(4) && !c.applies_to(5));
        assert_eq!(
            c.find(r#"<input name="csrf" value="t0k"/>"#).as_deref(),
            Some("t0k")
        );
        assert_eq!(c.find("nothing"), None);
        let j: Capture = "ID=json:/items/0/id".parse().unwrap();
        assert_eq!(j.find(r#"{"items":[{"id":42}]}"#).as_deref(), Some("42"));
        assert_eq!(j.find(r#"{"items":[]}"#), None);
        let w: Capture = "W=ab+".parse().unwrap();
        assert_eq!(w.find("xabbby").as_deref(), Some("abbb"));
        assert!("TOKEN=x"
            .parse::<Capture>()
            .unwrap_err()
            .to_string()
            .contains("built-in"));
        assert!("A@x=y".parse::<Capture>().is_err());
        assert!("A=("
            .parse::<Capture>()
            .unwrap_err()
            .to_string()
            .starts_with("bad regex"));
        assert!("A=json:x".parse::<Capture>().is_err());
    }
}
