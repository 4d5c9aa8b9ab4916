//! recording.log: shinyloadtest's format (comment header, then one JSON event per line), parsed once into
//! an immutable `Recording` that every simulated user shares through an `Arc`.

use crate::shiny::{self, Expect};
use crate::timefmt;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::{Path, PathBuf};

/// The event types of shinyloadtest's recording format; `name()` is what the CSVs print.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    ReqHome,
    ReqGet,
    ReqPost,
    ReqTok,
    ReqSinf,
    WsOpen,
    WsSend,
    WsRecv,
    WsRecvInit,
    WsRecvBeginUpload,
    WsClose,
}

impl Kind {
    /// Every kind, in a stable order (summary tables use it).
    pub const ALL: [Kind; 11] = [
        Kind::ReqHome,
        Kind::ReqGet,
        Kind::ReqPost,
        Kind::ReqTok,
        Kind::ReqSinf,
        Kind::WsOpen,
        Kind::WsSend,
        Kind::WsRecv,
        Kind::WsRecvInit,
        Kind::WsRecvBeginUpload,
        Kind::WsClose,
    ];

    /// The name used in recording.log and (with _START/_END) in session CSVs.
    pub fn name(self) -> &'static str {
        match self {
            Kind::ReqHome => "REQ_HOME",
            Kind::ReqGet => "REQ_GET",
            Kind::ReqPost => "REQ_POST",
            Kind::ReqTok => "REQ_TOK",
            Kind::ReqSinf => "REQ_SINF",
            Kind::WsOpen => "WS_OPEN",
            Kind::WsSend => "WS_SEND",
            Kind::WsRecv => "WS_RECV",
            Kind::WsRecvInit => "WS_RECV_INIT",
            Kind::WsRecvBeginUpload => "WS_RECV_BEGIN_UPLOAD",
            Kind::WsClose => "WS_CLOSE",
        }
    }

    /// CSV event name for the start of this event.
    pub fn start_name(self) -> &'static str {
        match self {
            Kind::ReqHome => "REQ_HOME_START",
            Kind::ReqGet => "REQ_GET_START",
            Kind::ReqPost => "REQ_POST_START",
            Kind::ReqTok => "REQ_TOK_START",
            Kind::ReqSinf => "REQ_SINF_START",
            Kind::WsOpen => "WS_OPEN_START",
            Kind::WsSend => "WS_SEND_START",
            Kind::WsRecv => "WS_RECV_START",
            Kind::WsRecvInit => "WS_RECV_INIT_START",
            Kind::WsRecvBeginUpload => "WS_RECV_BEGIN_UPLOAD_START",
            Kind::WsClose => "WS_CLOSE_START",
        }
    }

    /// CSV event name for the end of this event.
    pub fn end_name(self) -> &'static str {
        match self {
            Kind::ReqHome => "REQ_HOME_END",
            Kind::ReqGet => "REQ_GET_END",
            Kind::ReqPost => "REQ_POST_END",
            Kind::ReqTok => "REQ_TOK_END",
            Kind::ReqSinf => "REQ_SINF_END",
            Kind::WsOpen => "WS_OPEN_END",
            Kind::WsSend => "WS_SEND_END",
            Kind::WsRecv => "WS_RECV_END",
            Kind::WsRecvInit => "WS_RECV_INIT_END",
            Kind::WsRecvBeginUpload => "WS_RECV_BEGIN_UPLOAD_END",
            Kind::WsClose => "WS_CLOSE_END",
        }
    }

    /// Parses an event type name; None for names shinyloadtest does not define.
    pub fn parse(s: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == s)
    }

    /// True for the HTTP request kinds.
    pub fn is_http(self) -> bool {
        matches!(
            self,
            Kind::ReqHome | Kind::ReqGet | Kind::ReqPost | Kind::ReqTok | Kind::ReqSinf
        )
    }
}

/// One line of recording.log as JSON (field order as shinyloadtest writes it). `method` is surge's
/// extension for HTTP methods other than GET/POST in non-Shiny recordings; `stream` (also surge's,
/// ignored by shinyloadtest) marks a `text/event-stream` response: "client" when the browser (or the
/// end of the recording) closed it, "server" when the server ended it.
#[derive(Serialize, Deserialize, Default, Debug, Clone)]
pub struct EventLine {
    #[serde(rename = "type")]
    pub kind: String,
    pub begin: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub datafile: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream: Option<String>,
}

/// `stream` value: the browser closed the stream (replay keeps it open for the recorded time).
pub const STREAM_CLIENT: &str = "client";
/// `stream` value: the server ended the stream (replay reads it to its end).
pub const STREAM_SERVER: &str = "server";

/// Who ended a recorded streaming response, which is what replay expects of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamEnd {
    Client,
    Server,
}

/// A parsed event; `expect` is precomputed for received messages so replay does no per-user parsing.
#[derive(Debug)]
pub struct Event {
    pub kind: Kind,
    /// 1-based line number in recording.log (the CSV `input_line_number`).
    pub line: u32,
    pub begin_ms: i64,
    pub end_ms: Option<i64>,
    pub status: u16,
    pub url: Box<str>,
    pub message: Box<str>,
    pub datafile: Option<PathBuf>,
    pub method: Option<Box<str>>,
    pub expect: Option<Expect>,
    /// Set for a streaming response (SSE): replay plays it in the background.
    pub stream: Option<StreamEnd>,
}

/// A whole recording: header values plus events, shared read-only by all users.
#[derive(Debug)]
pub struct Recording {
    pub path: PathBuf,
    pub version: Option<String>,
    pub target_url: Option<String>,
    pub target_type: Option<String>,
    pub events: Vec<Event>,
}

/// A bad recording: says which file, which line and what is wrong.
#[derive(Debug)]
pub struct RecordingError {
    pub path: PathBuf,
    pub line: u32,
    pub msg: String,
}

impl fmt::Display for RecordingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.path.display(), self.line, self.msg)
    }
}

impl std::error::Error for RecordingError {}

/// Target type written for Shiny apps (as shinyloadtest does).
pub const TARGET_SHINY: &str = "R/Shiny";
/// Target type surge writes for plain HTTP / JSON / non-Shiny WebSocket apps.
pub const TARGET_HTTP: &str = "surge/http";

impl Recording {
    /// Reads and validates a recording file; datafiles resolve relative to its directory.
    pub fn load(path: &Path) -> Result<Recording, RecordingError> {
        let text = std::fs::read_to_string(path).map_err(|e| RecordingError {
            path: path.to_owned(),
            line: 0,
            msg: format!("cannot read: {e}"),
        })?;
        Recording::parse(path, &text)
    }

    /// Parses recording text; `path` is used for messages and to resolve `datafile`s.
    pub fn parse(path: &Path, text: &str) -> Result<Recording, RecordingError> {
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
            let n = i + 1;
            let line = raw.trim_end_matches('\r');
            if let Some(c) = line.strip_prefix('#') {
                if let Some((k, v)) = c.split_once(':') {
                    let v = v.trim().to_string();
                    match k.trim() {
                        "version" => rec.version = Some(v),
                        "target_url" | "target" => rec.target_url = Some(v),
                        "target_type" => rec.target_type = Some(v),
                        _ => {}
                    }
                }
                continue;
            }
            if line.trim().is_empty() {
                continue;
            }
            let ev: EventLine =
                serde_json::from_str(line).map_err(|e| err(n, format!("not a JSON event: {e}")))?;
            let kind = Kind::parse(&ev.kind)
                .ok_or_else(|| err(n, format!("unknown event type \"{}\"", ev.kind)))?;
            let begin_ms = timefmt::parse_iso(&ev.begin)
                .ok_or_else(|| err(n, format!("field begin: bad timestamp \"{}\"", ev.begin)))?;
            let end_ms = match &ev.end {
                Some(e) => Some(
                    timefmt::parse_iso(e)
                        .ok_or_else(|| err(n, format!("field end: bad timestamp \"{e}\"")))?,
                ),
                None => None,
            };
            let need = |f: &Option<String>, name: &str| {
                f.clone()
                    .ok_or_else(|| err(n, format!("{} event lacks field {name}", ev.kind)))
            };
            let (mut url, mut message, mut status) = (String::new(), String::new(), 0u16);
            if kind.is_http() {
                url = need(&ev.url, "url")?;
                status = ev
                    .status
                    .ok_or_else(|| err(n, format!("{} event lacks field status", ev.kind)))?;
            } else if kind == Kind::WsOpen {
                url = need(&ev.url, "url")?;
            } else if kind != Kind::WsClose {
                message = need(&ev.message, "message")?;
            }
            let expect = matches!(
                kind,
                Kind::WsRecv | Kind::WsRecvInit | Kind::WsRecvBeginUpload
            )
            .then(|| shiny::expectation(&message));
            let stream = stream_end(kind, &ev, end_ms.is_some()).map_err(|m| err(n, m))?;
            rec.events.push(Event {
                kind,
                line: n as u32,
                begin_ms,
                end_ms,
                status,
                url: url.into(),
                message: message.into(),
                datafile: ev.datafile.map(|d| dir.join(d)),
                method: ev.method.map(Into::into),
                expect,
                stream,
            });
        }
        if rec.events.is_empty() {
            return Err(err(text.lines().count(), "recording has no events".into()));
        }
        place_streams(&mut rec.events);
        Ok(rec)
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

/// The `stream` field of an event: who ends the response (only HTTP events with an end have one).
fn stream_end(kind: Kind, ev: &EventLine, has_end: bool) -> Result<Option<StreamEnd>, String> {
    match ev.stream.as_deref() {
        None => Ok(None),
        Some(_) if !kind.is_http() => Err(format!("field stream: not allowed on {}", ev.kind)),
        Some(_) if !has_end => Err("field stream: the event needs an end".into()),
        Some(STREAM_CLIENT) => Ok(Some(StreamEnd::Client)),
        Some(STREAM_SERVER) => Ok(Some(StreamEnd::Server)),
        Some(s) => Err(format!(
            "field stream: \"{s}\" (expected \"client\" or \"server\")"
        )),
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
        Recording::parse(Path::new("/r/recording.log"), &format!("{HEAD}{body}"))
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
