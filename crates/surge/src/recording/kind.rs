//! The one event vocabulary of surge: shinyloadtest's event types (`Kind`) and who ends a streaming
//! response (`StreamEnd`). recording.log's `type`, the session CSVs' `<TYPE>_START/_END` rows,
//! summary.json's `events` keys, `--threshold` scopes and the report's classes all use these names;
//! serde reads and writes them, so no module spells them as strings.

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::{de, Deserialize, Deserializer, Serialize, Serializer};
use std::borrow::Cow;
use std::str::FromStr;

/// The event types of shinyloadtest's recording format; `name()` is what files print.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// `REQ_HOME`: the app's page, which starts a session (replay learns `${WORKER}` from it).
    ReqHome,
    /// `REQ_GET`: any other GET (assets, API calls).
    ReqGet,
    /// `REQ_POST`: a POST, its body in `datafile` (uploads).
    ReqPost,
    /// `REQ_TOK`: the GET of `__token__` whose answer becomes `${TOKEN}` (RStudio Connect).
    ReqTok,
    /// `REQ_SINF`: SockJS's `info` request before its WebSocket opens.
    ReqSinf,
    /// `WS_OPEN`: the app's WebSocket opens.
    WsOpen,
    /// `WS_SEND`: a message the browser sent.
    WsSend,
    /// `WS_RECV`: a message the server sent, expected again by its keys.
    WsRecv,
    /// `WS_RECV_INIT`: the server's first message, with the session id (`${SESSION}`).
    WsRecvInit,
    /// `WS_RECV_BEGIN_UPLOAD`: the answer to an upload request, with its job id (`${UPLOAD_JOB_ID}`).
    WsRecvBeginUpload,
    /// `WS_CLOSE`: the browser closed the WebSocket.
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

    /// True for the received-message kinds (replay waits for a matching message).
    pub fn is_recv(self) -> bool {
        matches!(
            self,
            Kind::WsRecv | Kind::WsRecvInit | Kind::WsRecvBeginUpload
        )
    }
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A name that is not an event type, or not a `stream` value.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum NameError {
    /// Not one of [`Kind::ALL`]'s names.
    #[error("unknown event type \"{0}\"")]
    Kind(String),
    /// Not `client` or `server`.
    #[error("field stream: \"{0}\" (expected \"client\" or \"server\")")]
    StreamEnd(String),
}

impl FromStr for Kind {
    type Err = NameError;
    fn from_str(s: &str) -> Result<Kind, NameError> {
        Kind::parse(s).ok_or_else(|| NameError::Kind(s.to_string()))
    }
}

impl Serialize for Kind {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for Kind {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Kind, D::Error> {
        String::deserialize(d)?.parse().map_err(de::Error::custom)
    }
}

/// The names, as a string enum (summary.json's schema).
impl JsonSchema for Kind {
    fn schema_name() -> Cow<'static, str> {
        "Kind".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        let names: Vec<&str> = Kind::ALL.iter().map(|k| k.name()).collect();
        json_schema!({
            "description": "A shinyloadtest event type.",
            "type": "string",
            "enum": names,
        })
    }
}

/// Who ended a recorded streaming response (the `stream` field), which is what replay expects of
/// it: `client` (the browser closed it: the server must keep it open for the recorded time) or
/// `server` (the server ended it: it must end within that time plus the message timeout).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamEnd {
    /// `client`: the browser closed it; the server must keep it open that long.
    Client,
    /// `server`: the server ended it; it must end within that time plus the message timeout.
    Server,
}

impl StreamEnd {
    /// The name in recording.log.
    pub fn name(self) -> &'static str {
        match self {
            StreamEnd::Client => "client",
            StreamEnd::Server => "server",
        }
    }
}

impl FromStr for StreamEnd {
    type Err = NameError;
    fn from_str(s: &str) -> Result<StreamEnd, NameError> {
        match s {
            "client" => Ok(StreamEnd::Client),
            "server" => Ok(StreamEnd::Server),
            _ => Err(NameError::StreamEnd(s.to_string())),
        }
    }
}

impl Serialize for StreamEnd {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for StreamEnd {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<StreamEnd, D::Error> {
        String::deserialize(d)?.parse().map_err(de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_round_trips() {
        for k in Kind::ALL {
            let json = serde_json::to_string(&k).unwrap();
            assert_eq!(json, format!("\"{}\"", k.name()));
            assert_eq!(serde_json::from_str::<Kind>(&json).unwrap(), k);
            assert_eq!(k.start_name(), format!("{}_START", k.name()));
            assert_eq!(k.end_name(), format!("{}_END", k.name()));
        }
        let e = serde_json::from_str::<Kind>("\"REQ_PUT\"").unwrap_err();
        assert!(
            e.to_string().starts_with("unknown event type \"REQ_PUT\""),
            "{e}"
        );
        for s in [StreamEnd::Client, StreamEnd::Server] {
            let json = serde_json::to_string(&s).unwrap();
            assert_eq!(serde_json::from_str::<StreamEnd>(&json).unwrap(), s);
        }
    }
}
