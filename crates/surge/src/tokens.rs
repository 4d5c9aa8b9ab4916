//! shinyloadtest placeholders: `${WORKER}`, `${TOKEN}`, `${ROBUST_ID}`, `${SOCKJSID}`, `${SESSION}`,
//! `${UPLOAD_URL}`, `${UPLOAD_JOB_ID}`. Replay fills them from live responses; record puts them back
//! in place of the live values. A run may declare more names (`--data` columns, `--capture`s),
//! whose values each session sets; other lowercase `${…}` stay as written.

use std::borrow::Cow;
use std::sync::Arc;

/// Placeholder names shinycannon accepts.
pub const NAMES: [&str; 7] = [
    "WORKER",
    "TOKEN",
    "ROBUST_ID",
    "SOCKJSID",
    "SESSION",
    "UPLOAD_URL",
    "UPLOAD_JOB_ID",
];

/// Live values of one simulated session (small: a few short strings).
#[derive(Default, Debug, Clone)]
pub struct Tokens {
    values: [Option<Box<str>>; 7],
    /// The run's declared names (shared) and this session's values of them.
    vars: Vec<(Arc<str>, Option<Box<str>>)>,
}

fn index(name: &str) -> Option<usize> {
    NAMES.iter().position(|n| *n == name)
}

impl Tokens {
    /// Fresh values for a new session: random ROBUST_ID and SOCKJSID, like shinycannon.
    pub fn new_session(rng: &mut u64) -> Tokens {
        let mut t = Tokens::default();
        t.set("ROBUST_ID", &random_hex(rng, 18));
        t.set("SOCKJSID", &format!("000/{}", random_hex(rng, 8)));
        t
    }

    /// Declares the run's own names (data columns, captures): `${name}` then needs a value.
    pub fn declare(&mut self, names: &[Arc<str>]) {
        self.vars = names.iter().map(|n| (n.clone(), None)).collect();
    }

    /// Sets a placeholder's value (names neither built in nor declared are ignored).
    pub fn set(&mut self, name: &str, value: &str) {
        if let Some(i) = index(name) {
            self.values[i] = Some(value.into());
        } else if let Some(v) = self.vars.iter_mut().find(|(n, _)| &**n == name) {
            v.1 = Some(value.into());
        }
    }

    /// Current value of a placeholder.
    pub fn get(&self, name: &str) -> Option<&str> {
        match index(name) {
            Some(i) => self.values[i].as_deref(),
            None => self.var(name)?.as_deref(),
        }
    }

    /// A declared name's value slot.
    fn var(&self, name: &str) -> Option<&Option<Box<str>>> {
        self.vars.iter().find(|(n, _)| &**n == name).map(|(_, v)| v)
    }

    /// Replaces every `${NAME}` in `s`; errors name the placeholder that is unknown or has no value yet.
    pub fn substitute<'a>(&self, s: &'a str) -> Result<Cow<'a, str>, TokenError> {
        if !s.contains("${") {
            return Ok(Cow::Borrowed(s));
        }
        let mut out = String::with_capacity(s.len() + 32);
        let mut rest = s;
        while let Some(i) = rest.find("${") {
            out.push_str(&rest[..i]);
            let after = &rest[i + 2..];
            let Some(j) = after.find('}') else {
                out.push_str(&rest[i..]);
                rest = "";
                break;
            };
            let name = &after[..j];
            let upper = |b: u8| b.is_ascii_uppercase() || b == b'_';
            let slot = match index(name) {
                Some(k) => Some(&self.values[k]),
                None => self.var(name),
            };
            match slot {
                Some(Some(v)) => out.push_str(v),
                Some(None) => return Err(TokenError::NoValue(name.to_string())),
                None if !name.is_empty() && name.bytes().all(upper) => {
                    return Err(TokenError::Unknown(name.to_string()))
                }
                None => {
                    out.push_str("${");
                    rest = after;
                    continue;
                }
            }
            rest = &after[j + 1..];
        }
        out.push_str(rest);
        Ok(Cow::Owned(out))
    }
}

/// The names of the `${NAME}` placeholders in `s`, in order: letters, digits and `_`, not all
/// digits (`${5}` is text, not a placeholder). What replay would fill or refuse to send as it is.
pub fn placeholders(s: &str) -> impl Iterator<Item = &str> {
    s.match_indices("${").filter_map(move |(i, _)| {
        let after = &s[i + 2..];
        let name = &after[..after.find('}')?];
        let word = name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
        let number = name.bytes().all(|b| b.is_ascii_digit());
        (!name.is_empty() && word && !number).then_some(name)
    })
}

/// Whether `name` is one of the placeholders replay fills itself from live responses
/// ([`NAMES`]: `${WORKER}`, `${SESSION}`, …), not from `--data` or `--capture`.
pub fn is_builtin(name: &str) -> bool {
    index(name).is_some()
}

/// xorshift64*: enough randomness for ids, no crate needed.
pub fn next_random(state: &mut u64) -> u64 {
    let mut x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    x.wrapping_mul(0x2545_F491_4F6C_DD1D)
}

/// `n` random lowercase hex characters.
pub fn random_hex(state: &mut u64, n: usize) -> String {
    let mut s = String::with_capacity(n);
    while s.len() < n {
        s.push_str(&format!("{:016x}", next_random(state)));
    }
    s.truncate(n);
    s
}

/// Live value -> placeholder table used while recording (longest values replaced first).
#[derive(Default, Debug)]
pub struct Placeholders {
    pairs: Vec<(String, &'static str)>,
}

impl Placeholders {
    /// Remembers that `value` is the live form of `placeholder` (e.g. "${SESSION}").
    pub fn add(&mut self, value: &str, placeholder: &'static str) {
        if value.is_empty() || self.pairs.iter().any(|(v, _)| v == value) {
            return;
        }
        self.pairs.push((value.to_string(), placeholder));
        self.pairs.sort_by_key(|p| std::cmp::Reverse(p.0.len()));
    }

    /// Replaces live values by placeholders.
    pub fn apply(&self, s: &str) -> String {
        let mut out = s.to_string();
        for (v, p) in &self.pairs {
            if out.contains(v.as_str()) {
                out = out.replace(v.as_str(), p);
            }
        }
        out
    }
}

/// A `${NAME}` that cannot be substituted (a session fails with it, kind `placeholder`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    /// Not a placeholder surge knows.
    #[error("unknown placeholder ${{{0}}}")]
    Unknown(String),
    /// Known, but no message of this session has given it a value yet.
    #[error("placeholder ${{{0}}} has no value yet")]
    NoValue(String),
    /// A header's value, once its placeholders are filled, is not a valid header value.
    #[error("header value {0:?} is not valid once filled")]
    BadHeader(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn substitutes_and_reports_missing() {
        let mut rng = 42;
        let mut t = Tokens::new_session(&mut rng);
        assert_eq!(t.get("ROBUST_ID").unwrap().len(), 18);
        assert!(t.get("SOCKJSID").unwrap().starts_with("000/"));
        t.set("WORKER", "w9");
        assert_eq!(t.substitute("/_w_${WORKER}/x").unwrap(), "/_w_w9/x");
        assert_eq!(
            t.substitute("/s/${SESSION}").unwrap_err().to_string(),
            "placeholder ${SESSION} has no value yet"
        );
        assert_eq!(
            t.substitute("${NOPE}").unwrap_err().to_string(),
            "unknown placeholder ${NOPE}"
        );
        assert_eq!(t.substitute("price ${5}").unwrap(), "price ${5}");
        assert_eq!(t.substitute("${date}").unwrap(), "${date}");
        t.declare(&["date".into(), "CSRF".into()]);
        assert_eq!(
            t.substitute("${CSRF}").unwrap_err().to_string(),
            "placeholder ${CSRF} has no value yet"
        );
        t.set("date", "2015-01-13");
        assert_eq!(
            t.substitute("/d/${date}/${WORKER}").unwrap(),
            "/d/2015-01-13/w9"
        );
    }

    #[test]
    fn finds_placeholder_names() {
        let found: Vec<&str> =
            placeholders("/d/${date}/${WORKER}?p=${5}&q=${}&r=${a-b}&s=${x").collect();
        assert_eq!(found, ["date", "WORKER"]);
        assert!(is_builtin("SOCKJSID") && !is_builtin("date"));
    }

    #[test]
    fn placeholders_replace_live_values() {
        let mut p = Placeholders::default();
        p.add("abc123", "${SESSION}");
        p.add("w1", "${WORKER}");
        assert_eq!(
            p.apply("session/abc123/upload?w=w1"),
            "session/${SESSION}/upload?w=${WORKER}"
        );
    }
}
