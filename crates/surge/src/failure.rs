//! Why a replayed session failed, as a typed value: the cause (what summary.json counts by kind),
//! the recording event it happened at and the request it made. One readable line of it goes into
//! the CSV's PLAYBACK_FAIL comment, where shinycannon writes its reason.

use crate::recording::Kind;
use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::borrow::Cow;
use std::fmt;
use std::time::Duration;

/// What went wrong. The text a variant carries is the readable detail (with the bound or the
/// error the OS or peer gave); the variant is the kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cause {
    /// Nothing came within the bound (`--message-timeout`): a response head, a piece of a body,
    /// an expected message, or the end of an event stream the server should have ended.
    Timeout(String),
    /// The response status differs from the recorded one (200 and 304 count as one; a WebSocket
    /// upgrade expects 101).
    WrongStatus {
        /// As recorded.
        expected: u16,
        /// As answered now.
        got: u16,
    },
    /// The server closed or broke the connection, the WebSocket or the SockJS session.
    Closed(String),
    /// An event stream the browser closed when recorded was ended by the server sooner.
    StreamEndedEarly {
        /// How long the stream stayed open when recorded.
        recorded: Duration,
    },
    /// TCP connect or the HTTP / WebSocket handshake failed.
    ConnectError(String),
    /// A message arrived but lacks what the recording needs next (session id, upload job id).
    UnexpectedMessage(String),
    /// A `${PLACEHOLDER}` of the recording has no value in this session.
    Placeholder(crate::tokens::TokenError),
    /// The recording cannot be played as written (WS_SEND with no WebSocket open, a bad URL).
    Recording(String),
    /// The session's sign-in was refused (the request, status and first line of the answer).
    SignIn(String),
    /// A `--capture NAME@LINE` found nothing in the response of its line.
    Capture(String),
    /// An `--expect LINE~REGEX` did not match the response or message of its line.
    Content(String),
    /// The run was stopped (Ctrl-C) while the session was playing.
    Interrupted,
    /// A bug in surge (a background task panicked).
    Internal(String),
}

/// The kind of a [`Cause`]: the key summary.json counts failures by (`"timeout"`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FailureKind {
    /// [`Cause::Timeout`] (`"timeout"`).
    Timeout,
    /// [`Cause::WrongStatus`] (`"wrong_status"`).
    WrongStatus,
    /// [`Cause::Closed`] (`"closed"`).
    Closed,
    /// [`Cause::StreamEndedEarly`] (`"stream_ended_early"`).
    StreamEndedEarly,
    /// [`Cause::ConnectError`] (`"connect_error"`).
    ConnectError,
    /// [`Cause::UnexpectedMessage`] (`"unexpected_message"`).
    UnexpectedMessage,
    /// [`Cause::Placeholder`] (`"placeholder"`).
    Placeholder,
    /// [`Cause::Recording`] (`"recording"`).
    Recording,
    /// [`Cause::SignIn`] (`"sign_in"`).
    SignIn,
    /// [`Cause::Capture`] (`"capture"`).
    Capture,
    /// [`Cause::Content`] (`"content"`).
    Content,
    /// [`Cause::Interrupted`] (`"interrupted"`).
    Interrupted,
    /// [`Cause::Internal`] (`"internal"`).
    Internal,
    /// A PLAYBACK_FAIL row that does not say its kind (`"unknown"`): shinycannon's CSVs, read by
    /// `surge report`; a replay never produces it.
    Unknown,
}

impl FailureKind {
    /// Every kind, in a stable order.
    pub const ALL: [FailureKind; 14] = [
        FailureKind::Timeout,
        FailureKind::WrongStatus,
        FailureKind::Closed,
        FailureKind::StreamEndedEarly,
        FailureKind::ConnectError,
        FailureKind::UnexpectedMessage,
        FailureKind::Placeholder,
        FailureKind::Recording,
        FailureKind::SignIn,
        FailureKind::Capture,
        FailureKind::Content,
        FailureKind::Interrupted,
        FailureKind::Internal,
        FailureKind::Unknown,
    ];

    /// The name in summary.json and the text summary.
    pub fn name(self) -> &'static str {
        match self {
            FailureKind::Timeout => "timeout",
            FailureKind::WrongStatus => "wrong_status",
            FailureKind::Closed => "closed",
            FailureKind::StreamEndedEarly => "stream_ended_early",
            FailureKind::ConnectError => "connect_error",
            FailureKind::UnexpectedMessage => "unexpected_message",
            FailureKind::Placeholder => "placeholder",
            FailureKind::Recording => "recording",
            FailureKind::SignIn => "sign_in",
            FailureKind::Capture => "capture",
            FailureKind::Content => "content",
            FailureKind::Interrupted => "interrupted",
            FailureKind::Internal => "internal",
            FailureKind::Unknown => "unknown",
        }
    }

    /// The kind named `name` (as [`FailureKind::name`] spells it).
    pub fn from_name(name: &str) -> Option<FailureKind> {
        (FailureKind::ALL.into_iter()).find(|k| k.name() == name)
    }
}

impl Serialize for FailureKind {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

/// Read back by name (`surge merge` reads the segments' summary.json).
impl<'de> Deserialize<'de> for FailureKind {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        FailureKind::from_name(&name)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown failure kind {name:?}")))
    }
}

/// The names, as a string enum (summary.json's schema).
impl JsonSchema for FailureKind {
    fn schema_name() -> Cow<'static, str> {
        "FailureKind".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        let names: Vec<&str> = FailureKind::ALL.iter().map(|k| k.name()).collect();
        json_schema!({
            "description": "Why a session failed.",
            "type": "string",
            "enum": names,
        })
    }
}

impl Cause {
    /// Its kind.
    pub fn kind(&self) -> FailureKind {
        match self {
            Cause::Timeout(_) => FailureKind::Timeout,
            Cause::WrongStatus { .. } => FailureKind::WrongStatus,
            Cause::Closed(_) => FailureKind::Closed,
            Cause::StreamEndedEarly { .. } => FailureKind::StreamEndedEarly,
            Cause::ConnectError(_) => FailureKind::ConnectError,
            Cause::UnexpectedMessage(_) => FailureKind::UnexpectedMessage,
            Cause::Placeholder(_) => FailureKind::Placeholder,
            Cause::Recording(_) => FailureKind::Recording,
            Cause::SignIn(_) => FailureKind::SignIn,
            Cause::Capture(_) => FailureKind::Capture,
            Cause::Content(_) => FailureKind::Content,
            Cause::Interrupted => FailureKind::Interrupted,
            Cause::Internal(_) => FailureKind::Internal,
        }
    }
}

impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Cause::Timeout(s)
            | Cause::Closed(s)
            | Cause::ConnectError(s)
            | Cause::UnexpectedMessage(s)
            | Cause::Recording(s)
            | Cause::Capture(s)
            | Cause::Content(s)
            | Cause::Internal(s) => f.write_str(s),
            Cause::SignIn(s) => write!(f, "sign-in failed: {s}"),
            Cause::WrongStatus { expected, got } => write!(f, "status {got}, expected {expected}"),
            Cause::StreamEndedEarly { recorded } => write!(
                f,
                "event stream ended by the server before the recorded {recorded:?}"
            ),
            Cause::Placeholder(e) => write!(f, "{e}"),
            Cause::Interrupted => f.write_str("interrupted (SIGINT or SIGTERM)"),
        }
    }
}

/// The recording event being played.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct At {
    /// Its type, so failures can be told apart by what was being played.
    pub kind: Kind,
    /// recording.log line (the CSV's `input_line_number`).
    pub line: u32,
}

/// A failed session: the cause, where in the recording, and the request (method and URL as
/// sent; WebSocket opens have a URL only).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// What went wrong (its kind is what summary.json counts).
    pub cause: Cause,
    /// The event being played; none when the session failed before its first.
    pub at: Option<At>,
    /// HTTP method of the request that failed, when it was one.
    pub method: Option<String>,
    /// URL as sent (placeholders filled), the detail kept beside the kind.
    pub url: Option<String>,
}

impl From<Cause> for Failure {
    fn from(cause: Cause) -> Failure {
        Failure {
            cause,
            at: None,
            method: None,
            url: None,
        }
    }
}

impl Failure {
    /// The failure with the event it happened at (kept if already set: a background stream's).
    pub fn at(mut self, at: At) -> Failure {
        self.at.get_or_insert(at);
        self
    }

    /// The failure with the request it happened in.
    pub fn request(mut self, method: Option<&str>, url: &str) -> Failure {
        self.method = method.map(str::to_string);
        self.url = Some(url.to_string());
        self
    }

    /// The recording line, 0 when the session failed before its first event.
    pub fn line(&self) -> u32 {
        self.at.map_or(0, |a| a.line)
    }
}

/// `REQ_GET line 8: status 500, expected 200: GET /events`: where, what, which request.
impl fmt::Display for Failure {
    /// One line, at most [`MAX_REASON`] characters: the reason goes to stderr, the session CSV
    /// and summary.json, and a recording line of 10 MB must not be copied into each of them.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use fmt::Write as _;
        let mut s = String::new();
        if let Some(at) = self.at {
            write!(s, "{} line {}: ", at.kind, at.line)?;
        }
        write!(s, "{}", self.cause)?;
        match (&self.method, &self.url) {
            (Some(m), Some(u)) => write!(s, ": {m} {u}")?,
            (None, Some(u)) => write!(s, ": {u}")?,
            _ => {}
        }
        let s = crate::secret::mask(&s);
        f.write_str(&clip(&s, MAX_REASON))
    }
}

/// Longest failure reason shown, in characters (the rest is counted: `…(N bytes)`).
pub const MAX_REASON: usize = 500;

/// `s` with control characters escaped (`\x1b`, `\n`) and cut after `max` characters with
/// `…(N bytes)` giving the whole text's size: text from a recording or a server fit for a
/// terminal, a CSV cell and a JSON key. The workspace's one escaper (`grammar::echo`), so surge
/// and cranwhales write an escape the same way.
pub fn clip(s: &str, max: usize) -> String {
    grammar::echo::echo(s.as_bytes(), max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_huge_reason_is_cut_and_escaped() {
        let url = format!("/\x1b[2J{}", "a".repeat(10 << 20));
        let f = Failure::from(Cause::WrongStatus {
            expected: 200,
            got: 500,
        })
        .request(Some("GET"), &url);
        let s = f.to_string();
        assert!(s.chars().count() < MAX_REASON + 30, "{} chars", s.len());
        assert!(
            s.contains("/\\x1b[2Jaaa") && !s.contains('\x1b'),
            "{}",
            &s[..80]
        );
        let size = s
            .rsplit_once("…(")
            .and_then(|(_, n)| n.strip_suffix(" bytes)"));
        let size: usize = size.and_then(|n| n.parse().ok()).unwrap_or(0);
        assert!(size > url.len(), "{s}");
    }

    #[test]
    fn reads_as_one_line_with_where_and_what() {
        let f = Failure::from(Cause::WrongStatus {
            expected: 200,
            got: 500,
        })
        .request(Some("GET"), "/events")
        .at(At {
            kind: Kind::ReqGet,
            line: 8,
        });
        assert_eq!(
            f.to_string(),
            "REQ_GET line 8: status 500, expected 200: GET /events"
        );
        assert_eq!((f.cause.kind(), f.line()), (FailureKind::WrongStatus, 8));
        // A stream's own line is kept when the session adds the event it was at.
        let g = f.clone().at(At {
            kind: Kind::WsSend,
            line: 12,
        });
        assert_eq!(g.line(), 8);
        let i = Failure::from(Cause::Interrupted);
        assert_eq!(
            (i.to_string().as_str(), i.line()),
            ("interrupted (SIGINT or SIGTERM)", 0)
        );
        assert_eq!(
            serde_json::to_string(&FailureKind::StreamEndedEarly).unwrap(),
            "\"stream_ended_early\""
        );
    }
}
