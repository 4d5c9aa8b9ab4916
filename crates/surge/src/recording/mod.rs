//! recording.log: shinyloadtest's format (comment header, then one JSON event per line), parsed once into
//! an immutable `Recording` that every simulated user shares through an `Arc`. The one parser of
//! the format: replay reads it strictly, reports leniently (see [`Mode`]); `record` and `har`
//! write it through [`EventLine`].

mod kind;

pub use kind::{Kind, StreamEnd};

use crate::shiny::{self, Expect};
use crate::timefmt;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::{Path, PathBuf};

/// One line of recording.log as JSON (field order as shinyloadtest writes it). `method` is surge's
/// extension for HTTP methods other than GET/POST in non-Shiny recordings; `stream` (also surge's,
/// ignored by shinyloadtest) marks a `text/event-stream` response and who ended it.
#[derive(Serialize, Deserialize, Debug, Clone)]
pub struct EventLine {
    /// `type`: what the line records.
    #[serde(rename = "type")]
    pub kind: Kind,
    /// When it began (ISO-8601, ms).
    pub begin: String,
    /// When its response ended (HTTP events).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end: Option<String>,
    /// Recorded status, which replay expects again.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// Path and query (placeholders in place of live values).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// A WebSocket message as sent or received (placeholders in place of live values).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// File beside the recording holding a POST body.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub datafile: Option<String>,
    /// HTTP method when it is neither GET nor POST.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// Who ended a `text/event-stream` response.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream: Option<StreamEnd>,
}

impl EventLine {
    /// An event of `kind` that began at `begin_ms` (Unix ms), every other field empty.
    pub fn new(kind: Kind, begin_ms: i64) -> EventLine {
        EventLine {
            kind,
            begin: timefmt::format_iso(begin_ms),
            end: None,
            status: None,
            url: None,
            message: None,
            datafile: None,
            method: None,
            stream: None,
        }
    }
}

/// A parsed event; `expect` is precomputed for received messages so replay does no per-user parsing.
#[derive(Debug)]
pub struct Event {
    /// What is played.
    pub kind: Kind,
    /// 1-based line number in recording.log (the CSV `input_line_number`).
    pub line: u32,
    /// Recorded start (Unix ms): think times are the gaps between these.
    pub begin_ms: i64,
    /// Recorded end (Unix ms), for how long a stream stays open.
    pub end_ms: Option<i64>,
    /// Status replay expects (0 when not an HTTP event, or lenient and missing).
    pub status: u16,
    /// URL template; placeholders filled per session.
    pub url: Box<str>,
    /// Message template for WS_SEND; the recorded text for received ones.
    pub message: Box<str>,
    /// POST body file, resolved against the recording's directory.
    pub datafile: Option<PathBuf>,
    /// HTTP method when neither GET nor POST.
    pub method: Option<Box<str>>,
    /// What a received message must look like.
    pub expect: Option<Expect>,
    /// Set for a streaming response (SSE): replay plays it in the background.
    pub stream: Option<StreamEnd>,
}

/// A whole recording: header values plus events (in play order), shared read-only by all users.
#[derive(Debug)]
pub struct Recording {
    /// Where it was read from (errors, and `datafile` paths are relative to it).
    pub path: PathBuf,
    /// `# version:` of the header.
    pub version: Option<String>,
    /// `# target_url:` the app as recorded; replay's default target.
    pub target_url: Option<String>,
    /// `# target_type:` (`R/Shiny`, `surge/http`, ...).
    pub target_type: Option<String>,
    /// In play order.
    pub events: Vec<Event>,
}

/// How strictly a recording is read. Both modes refuse what is not the format (a line that is not
/// JSON, an unknown event type, a bad timestamp or `stream` value, no events); they differ in the
/// fields only playing needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// For replay: every event has what playing it needs (HTTP: url and status; WS_OPEN: url;
    /// messages: message; `stream` only on HTTP events with an end).
    Strict,
    /// For reports, which only show a recording: those fields may be missing (read as empty).
    Lenient,
}

/// A bad recording: says which file, which line and what is wrong.
#[derive(Debug)]
pub struct RecordingError {
    /// The recording file.
    pub path: PathBuf,
    /// 1-based line (0: the file as a whole).
    pub line: u32,
    /// What is wrong there.
    pub msg: String,
}

impl fmt::Display for RecordingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Line 0 is the file as a whole (unreadable, no events): no `:0`, which reads as a line.
        match self.line {
            0 => write!(f, "{}: {}", self.path.display(), self.msg),
            n => write!(f, "{}:{n}: {}", self.path.display(), self.msg),
        }
    }
}

impl std::error::Error for RecordingError {}

/// Target type written for Shiny apps (as shinyloadtest does).
pub const TARGET_SHINY: &str = "R/Shiny";
/// Target type surge writes for plain HTTP / JSON / non-Shiny WebSocket apps.
pub const TARGET_HTTP: &str = "surge/http";

impl Recording {
    /// Reads and validates a recording file for replay; datafiles resolve relative to its directory.
    pub fn load(path: &Path) -> Result<Recording, RecordingError> {
        let text = std::fs::read_to_string(path).map_err(|e| RecordingError {
            path: path.to_owned(),
            line: 0,
            msg: format!("cannot read: {e}"),
        })?;
        Recording::parse(path, &text, Mode::Strict)
    }

    /// Parses recording text; `path` is used for messages and to resolve `datafile`s.
    pub fn parse(path: &Path, text: &str, mode: Mode) -> Result<Recording, RecordingError> {
        let err = |line: usize, msg: String| RecordingError {
            path: path.to_owned(),
            line: line as u32,
            msg,
        };
        let dir = path.parent().map(Path::to_owned).unwrap_or_default();
        let mut rec = Recording {
            path: path.to_owned(),
            version: None,
            target_url: None,
            target_type: None,
            events: Vec::new(),
        };
        for (i, raw) in text.lines().enumerate() {
            let line = raw.trim();
            if let Some(c) = line.strip_prefix('#') {
                rec.header_line(c);
            } else if !line.is_empty() {
                let ev = (event(line, i as u32 + 1, &dir, mode))
                    .map_err(|m| err(i + 1, m.to_string()))?;
                rec.events.push(ev);
            }
        }
        if rec.events.is_empty() {
            return Err(err(text.lines().count(), "recording has no events".into()));
        }
        place_streams(&mut rec.events);
        Ok(rec)
    }

    /// A `# key: value` header line (`target` is the old shinyloadtest spelling of `target_url`).
    fn header_line(&mut self, comment: &str) {
        if let Some((k, v)) = comment.split_once(':') {
            let v = v.trim().to_string();
            match k.trim() {
                "version" => self.version = Some(v),
                "target_url" | "target" => self.target_url = Some(v),
                "target_type" => self.target_type = Some(v),
                _ => {}
            }
        }
    }

    /// True when the recording is of a Shiny app (placeholders, SockJS, shinycannon sleep rules).
    pub fn is_shiny(&self) -> bool {
        match &self.target_type {
            Some(t) => t != TARGET_HTTP,
            None => true, // old shinyloadtest files have no target_type; they are all Shiny
        }
    }

    /// Wall-clock length of the recorded session (first begin to last begin), in ms.
    pub fn duration_ms(&self) -> i64 {
        match (self.events.first(), self.events.last()) {
            (Some(a), Some(b)) => (b.begin_ms - a.begin_ms).max(0),
            _ => 0,
        }
    }
}

/// What is wrong with one event line (the [`RecordingError`] says which file and line).
#[derive(Debug, thiserror::Error)]
enum EventError {
    /// Not JSON, or a field of the wrong type (serde's words, without its position).
    #[error("{0}")]
    Json(String),
    /// `begin` / `end` not an ISO-8601 time.
    #[error("field {field}: bad timestamp \"{text}\"")]
    Timestamp { field: &'static str, text: String },
    /// A field replay needs is missing (strict mode).
    #[error("{kind} event lacks field {field}")]
    Missing { kind: Kind, field: &'static str },
    /// `stream` on a non-HTTP event.
    #[error("field stream: not allowed on {0}")]
    StreamNotHttp(Kind),
    /// `stream` without `end`.
    #[error("field stream: the event needs an end")]
    StreamWithoutEnd,
}

/// One event line (1-based `n`) parsed and checked as `mode` asks.
fn event(line: &str, n: u32, dir: &Path, mode: Mode) -> Result<Event, EventError> {
    let ev: EventLine = serde_json::from_str(line).map_err(|e| EventError::Json(json_error(&e)))?;
    let time = |field: &'static str, s: &str| {
        timefmt::parse_iso(s).ok_or_else(|| EventError::Timestamp {
            field,
            text: s.to_string(),
        })
    };
    let begin_ms = time("begin", &ev.begin)?;
    let end_ms = ev.end.as_deref().map(|e| time("end", e)).transpose()?;
    let kind = ev.kind;
    let need = |f: Option<String>, field: &'static str| match (f, mode) {
        (Some(v), _) => Ok(v),
        (None, Mode::Lenient) => Ok(String::new()),
        (None, Mode::Strict) => Err(EventError::Missing { kind, field }),
    };
    let (mut url, mut message, mut status) = (String::new(), String::new(), 0u16);
    if kind.is_http() {
        url = need(ev.url, "url")?;
        status = match (ev.status, mode) {
            (Some(s), _) => s,
            (None, Mode::Lenient) => 0,
            (None, Mode::Strict) => {
                return Err(EventError::Missing {
                    kind,
                    field: "status",
                })
            }
        };
    } else if kind == Kind::WsOpen {
        url = need(ev.url, "url")?;
    } else if kind != Kind::WsClose {
        message = need(ev.message, "message")?;
    }
    if let (Some(_), Mode::Strict) = (ev.stream, mode) {
        if !kind.is_http() {
            return Err(EventError::StreamNotHttp(kind));
        }
        if end_ms.is_none() {
            return Err(EventError::StreamWithoutEnd);
        }
    }
    Ok(Event {
        kind,
        line: n,
        begin_ms,
        end_ms,
        status,
        expect: kind.is_recv().then(|| shiny::expectation(&message)),
        url: url.into(),
        message: message.into(),
        datafile: ev.datafile.map(|d| dir.join(d)),
        method: ev.method.map(Into::into),
        stream: ev.stream.filter(|_| kind.is_http() && end_ms.is_some()),
    })
}

/// A JSON error as one line: syntax errors say the line is not JSON; a wrong or missing field
/// says which (`unknown event type "REQ_PUT"`, `missing field \`begin\``), without serde's
/// position (the line is the position).
fn json_error(e: &serde_json::Error) -> String {
    let text = e.to_string();
    match e.classify() {
        serde_json::error::Category::Data => {
            let at = format!(" at line {} column {}", e.line(), e.column());
            text.strip_suffix(&at).unwrap_or(&text).to_string()
        }
        _ => format!("not a JSON event: {text}"),
    }
}

/// A streaming response is written when it ends, after the requests made meanwhile; it is played
/// where it began: before the first other event that began after it (line numbers unchanged).
fn place_streams(events: &mut Vec<Event>) {
    if events.iter().all(|e| e.stream.is_none()) {
        return;
    }
    let (mut streams, mut rest): (Vec<Event>, Vec<Event>) =
        events.drain(..).partition(|e| e.stream.is_some());
    streams.sort_by_key(|e| e.begin_ms);
    for s in streams {
        let at = rest
            .iter()
            .position(|e| e.begin_ms > s.begin_ms)
            .unwrap_or(rest.len());
        rest.insert(at, s);
    }
    *events = rest;
}

/// Writes the three header lines every recording starts with.
pub fn header(target_url: &str, target_type: &str) -> String {
    format!("# version: 1\n# target_url: {target_url}\n# target_type: {target_type}\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str =
        "# version: 1\n# target_url: http://127.0.0.1:1/\n# target_type: surge/http\n";

    fn parse(body: &str) -> Result<Recording, RecordingError> {
        parse_as(body, Mode::Strict)
    }

    fn parse_as(body: &str, mode: Mode) -> Result<Recording, RecordingError> {
        Recording::parse(
            Path::new("/r/recording.log"),
            &format!("{HEAD}{body}"),
            mode,
        )
    }

    const T0: &str = "2026-01-01T00:00:00.000Z";

    /// Fields only replay needs: strict refuses each with `file:line: what`, lenient reads them
    /// as empty (and drops a `stream` where replay would refuse it).
    #[test]
    fn lenient_reads_what_only_replay_needs() {
        let cases = [
            (
                r#""type":"REQ_GET","status":200"#,
                "REQ_GET event lacks field url",
            ),
            (
                r#""type":"REQ_POST","url":"/x""#,
                "REQ_POST event lacks field status",
            ),
            (r#""type":"WS_OPEN""#, "WS_OPEN event lacks field url"),
            (r#""type":"WS_SEND""#, "WS_SEND event lacks field message"),
            (
                r#""type":"WS_RECV","message":"a","stream":"client""#,
                "field stream: not allowed on WS_RECV",
            ),
            (
                r#""type":"REQ_GET","url":"/e","status":200,"stream":"server""#,
                "field stream: the event needs an end",
            ),
        ];
        let mut all = String::new();
        for (fields, want) in cases {
            let line = format!("{{{fields},\"begin\":\"{T0}\"}}\n");
            let e = parse(&line).unwrap_err();
            assert_eq!(e.to_string(), format!("/r/recording.log:4: {want}"));
            all.push_str(&line);
        }
        let rec = parse_as(&all, Mode::Lenient).unwrap();
        assert_eq!(rec.events.len(), cases.len());
        assert_eq!((&*rec.events[0].url, rec.events[1].status), ("", 0));
        assert!(rec.events.iter().all(|e| e.stream.is_none()));
        assert_eq!(rec.events[5].line, 9);
    }

    /// What is not the format is refused in both modes, with the same one-line error.
    #[test]
    fn both_modes_refuse_what_is_not_the_format() {
        let cases = [
            (
                "{\"type\":\"REQ_GET\",".to_string(),
                "4: not a JSON event: EOF while parsing",
            ),
            (
                format!(r#"{{"type":"REQ_PUT","begin":"{T0}"}}"#),
                r#"4: unknown event type "REQ_PUT""#,
            ),
            (
                r#"{"type":"WS_CLOSE"}"#.to_string(),
                "4: missing field `begin`",
            ),
            (
                r#"{"type":"WS_CLOSE","begin":"yesterday"}"#.to_string(),
                r#"4: field begin: bad timestamp "yesterday""#,
            ),
            (
                format!(
                    r#"{{"type":"REQ_GET","begin":"{T0}","end":"{T0}","url":"/","status":"200"}}"#
                ),
                r#"4: invalid type: string "200", expected u16"#,
            ),
            (
                format!(
                    r#"{{"type":"REQ_GET","begin":"{T0}","end":"{T0}","url":"/","status":200,"stream":"yes"}}"#
                ),
                r#"4: field stream: "yes" (expected "client" or "server")"#,
            ),
            (String::new(), "4: recording has no events"),
        ];
        for (line, want) in cases {
            for mode in [Mode::Strict, Mode::Lenient] {
                let e = parse_as(&format!("{line}\n"), mode)
                    .unwrap_err()
                    .to_string();
                assert!(
                    e.starts_with(&format!("/r/recording.log:{want}")),
                    "{mode:?}: {e}"
                );
                assert_eq!(e.lines().count(), 1, "{e}");
            }
        }
    }

    #[test]
    fn stream_is_played_where_it_began() {
        let rec = parse(concat!(
            r#"{"type":"REQ_HOME","begin":"2026-01-01T00:00:00.000Z","end":"2026-01-01T00:00:00.010Z","status":200,"url":"/"}"#,
            "\n",
            r#"{"type":"REQ_GET","begin":"2026-01-01T00:00:00.300Z","end":"2026-01-01T00:00:00.310Z","status":200,"url":"/api"}"#,
            "\n",
            r#"{"type":"REQ_GET","begin":"2026-01-01T00:00:00.100Z","end":"2026-01-01T00:00:02.000Z","status":200,"url":"/events","stream":"client"}"#,
            "\n",
        ))
        .unwrap();
        let order: Vec<(&str, u32)> = rec.events.iter().map(|e| (&*e.url, e.line)).collect();
        assert_eq!(order, [("/", 4), ("/events", 6), ("/api", 5)]);
        assert_eq!(rec.events[1].stream, Some(StreamEnd::Client));
    }

    #[test]
    fn bad_stream_fields_name_the_line() {
        let e = parse(r#"{"type":"REQ_GET","begin":"2026-01-01T00:00:00.000Z","end":"2026-01-01T00:00:01.000Z","status":200,"url":"/e","stream":"yes"}"#)
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            r#"/r/recording.log:4: field stream: "yes" (expected "client" or "server")"#
        );
        let e = parse(r#"{"type":"REQ_GET","begin":"2026-01-01T00:00:00.000Z","status":200,"url":"/e","stream":"client"}"#)
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "/r/recording.log:4: field stream: the event needs an end"
        );
        let e = parse(r#"{"type":"WS_SEND","begin":"2026-01-01T00:00:00.000Z","message":"x","stream":"server"}"#)
            .unwrap_err();
        assert!(e
            .to_string()
            .ends_with("field stream: not allowed on WS_SEND"));
    }
}
