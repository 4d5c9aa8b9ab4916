//! The secret values surge knows and the one masking step every text it prints or writes passes
//! through. A value is registered when it is read from the environment (sign-in user names and
//! passwords, API keys, `--header-env` values: `signin`); [`mask`] then replaces it by `***`
//! wherever it turns up: a server that echoes the credentials in its refusal
//! (`answered 401: … password=…`) cannot get them onto the terminal, into a log, a session CSV,
//! summary.json or a report. The sinks call [`mask`] (a failure's reason, the error line) or
//! write through [`Masked`] (the log lines on stderr and in debug.log).
//!
//! Why one process-wide registry: the secrets are read once, before any user starts, and the texts
//! that might carry them are made far away (a failed session's reason, a log line); handing the
//! values down to every sink would put them in many more places than this one.

use std::borrow::Cow;
use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{PoisonError, RwLock};

/// What a secret is replaced by.
pub const MASK: &str = "***";

/// Values shorter than this (in characters) are not masked: replacing one or two characters
/// wherever they occur would garble every line and, by where `***` appears, show the value
/// anyway.
pub const MIN_CHARS: usize = 3;

/// Every registered form of every secret, longest first (a secret containing another is masked
/// whole). Taken back when poisoned: each change is one push and sort of a valid list.
static SECRETS: RwLock<Vec<Box<str>>> = RwLock::new(Vec::new());

/// Whether anything was registered: [`mask`] costs one atomic load in a run without secrets.
static ANY: AtomicBool = AtomicBool::new(false);

/// Registers a secret value: from now on [`mask`] replaces it, and the forms a server may echo it
/// in (URL-encoded, JSON-escaped, escaped as surge quotes a server's answer), by [`MASK`].
pub fn register(value: &str) {
    if value.chars().count() < MIN_CHARS {
        return;
    }
    let mut all = SECRETS.write().unwrap_or_else(PoisonError::into_inner);
    for form in forms(value) {
        if !all.iter().any(|s| **s == *form) {
            all.push(form.into());
        }
    }
    all.sort_by_key(|s| std::cmp::Reverse(s.len()));
    ANY.store(true, Ordering::Release);
}

/// The forms of `value` a text may hold it in: as it is, form- and percent-encoded, escaped for
/// JSON and as Rust's `escape_debug` (how a refusal's first line is quoted).
fn forms(value: &str) -> Vec<String> {
    let form: String = form_urlencoded::byte_serialize(value.as_bytes()).collect();
    let json = serde_json::to_string(value).unwrap_or_default();
    let json = json.trim_matches('"').to_string();
    vec![
        value.to_string(),
        form.replace('+', "%20"),
        form,
        json,
        value.escape_debug().to_string(),
    ]
}

/// `text` with every registered secret replaced by [`MASK`] (borrowed when it holds none).
pub fn mask(text: &str) -> Cow<'_, str> {
    if !ANY.load(Ordering::Acquire) {
        return Cow::Borrowed(text);
    }
    let all = SECRETS.read().unwrap_or_else(PoisonError::into_inner);
    let mut out: Option<String> = None;
    for secret in all.iter() {
        let current = out.as_deref().unwrap_or(text);
        if current.contains(&**secret) {
            out = Some(current.replace(&**secret, MASK));
        }
    }
    out.map_or(Cow::Borrowed(text), Cow::Owned)
}

/// A writer whose every write goes out masked: the log's stderr and debug.log writers (the log
/// formatter hands it each line whole, in one write).
#[derive(Debug)]
pub struct Masked<W>(pub W);

impl<W: Write> Write for Masked<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match std::str::from_utf8(buf) {
            Ok(text) => self.0.write_all(mask(text).as_bytes())?,
            Err(_) => self.0.write_all(buf)?,
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registered_values_and_their_echoed_forms_are_masked() {
        assert_eq!(mask("nothing secret"), "nothing secret");
        register("s3cr-et pass\"word");
        register("ab"); // too short to mask
        let echoed = [
            "answered 401: bad password s3cr-et pass\"word!",
            "answered 401: {\"password\":\"s3cr-et pass\\\"word\"}",
            "answered 401: password=s3cr-et+pass%22word",
            "GET /x?p=s3cr-et%20pass%22word",
        ];
        for text in echoed {
            let m = mask(text);
            assert!(m.contains(MASK) && !m.contains("s3cr-et"), "{text} → {m}");
        }
        assert!(matches!(mask("about ab"), Cow::Borrowed("about ab")));
        let mut out = Masked(Vec::new());
        out.write_all(b"user s3cr-et pass\"word signed in\n")
            .unwrap();
        assert_eq!(out.0, b"user *** signed in\n");
    }
}
