//! Shiny's WebSocket protocol as shinycannon sees it: SockJS framing (`o`, `h`, `a[...]`, `c[...]`),
//! the `N#0|m|` reconnect prefix, which messages are noise (ACK, heartbeats, busy/progress/recalculating,
//! reactlog, empty updates), and how received messages are matched (by top-level key set).

use serde_json::{Map, Value};
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

/// What a recorded WS_RECV* expects; computed once per recording line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expect {
    /// Non-JSON payload (e.g. SockJS `o`): compared as a string after placeholder substitution.
    Raw(Box<str>),
    /// JSON object: matched by the hash of its sorted top-level keys; `keys` is for error messages.
    Keys {
        /// Hash of the sorted keys, compared with [`Received::keys_hash`].
        hash: u64,
        /// The keys as text, for the failure message.
        keys: Box<str>,
    },
}

/// One received, non-ignorable message reduced to what replay needs (no payload kept: memory).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Received {
    /// Hash of the sorted top-level keys of a JSON message, compared with [`Expect::Keys`].
    pub keys_hash: u64,
    /// The payload when it is not JSON (SockJS frames), compared with [`Expect::Raw`].
    pub raw: Option<Box<str>>,
    /// `config.sessionId` of an init message.
    pub session_id: Option<Box<str>>,
    /// `response.value.jobId` of an upload reply.
    pub job_id: Option<Box<str>>,
    /// The whole frame, kept only when an `--expect` may look at it.
    pub text: Option<Box<str>>,
}

fn keys_of(obj: &Map<String, Value>) -> (u64, String) {
    let mut keys: Vec<&str> = obj.keys().map(String::as_str).collect();
    keys.sort_unstable();
    let joined = keys.join(",");
    let mut h = DefaultHasher::new();
    joined.hash(&mut h);
    (h.finish(), joined)
}

/// Strips the `[0-9A-F*]+#` message id and `0|m|` subapp prefix Shiny Server adds.
fn strip_prefix(payload: &str) -> &str {
    let rest = match payload.find('#') {
        Some(i)
            if i > 0
                && payload[..i]
                    .bytes()
                    .all(|b| b.is_ascii_hexdigit() || b == b'*') =>
        {
            &payload[i + 1..]
        }
        _ => payload,
    };
    rest.strip_prefix("0|m|").unwrap_or(rest)
}

/// Splits a frame into payload strings: SockJS `a[..]` / client `[..]` arrays give one per element,
/// anything else is one payload. `h`, `c[..]` give none.
pub fn payloads(frame: &str) -> Vec<String> {
    if frame == "h" || frame.starts_with("c[") {
        return Vec::new();
    }
    let arr = frame.strip_prefix('a').unwrap_or(frame);
    if arr.starts_with("[\"") {
        if let Ok(items) = serde_json::from_str::<Vec<String>>(arr) {
            return items;
        }
    }
    vec![frame.to_string()]
}

/// Parses one payload into its JSON object (after stripping SockJS prefixes), if it is one.
pub fn parse_object(payload: &str) -> Option<Map<String, Value>> {
    match serde_json::from_str::<Value>(strip_prefix(payload)) {
        Ok(Value::Object(m)) => Some(m),
        _ => None,
    }
}

fn is_empty_container(v: Option<&Value>) -> bool {
    match v {
        Some(Value::Object(m)) => m.is_empty(),
        Some(Value::Array(a)) => a.is_empty(),
        _ => false,
    }
}

/// True for messages shinyloadtest neither records nor waits for.
pub fn ignorable_payload(payload: &str) -> bool {
    if payload.starts_with("ACK") || payload == "h" {
        return true;
    }
    let Some(obj) = parse_object(payload) else {
        return false;
    };
    if ["busy", "progress", "recalculating"]
        .iter()
        .any(|k| obj.contains_key(*k))
    {
        return true;
    }
    if obj.len() == 1 {
        if let Some(Value::Object(c)) = obj.get("custom") {
            if c.len() == 1 && c.contains_key("reactlog") {
                return true;
            }
        }
    }
    obj.len() == 3
        && is_empty_container(obj.get("errors"))
        && is_empty_container(obj.get("values"))
        && is_empty_container(obj.get("inputMessages"))
}

/// True when every payload of a frame is ignorable (the recorder relays such frames unrecorded).
pub fn ignorable_frame(frame: &str) -> bool {
    if frame == "h" || frame.starts_with("a[\"ACK") || frame.starts_with("[\"ACK") {
        return true;
    }
    let p = payloads(frame);
    !p.is_empty() && p.iter().all(|m| ignorable_payload(m))
}

/// The expectation for a recorded WS_RECV message (first payload of its frame).
pub fn expectation(message: &str) -> Expect {
    let first = payloads(message).into_iter().next().unwrap_or_default();
    match parse_object(&first) {
        Some(obj) => {
            let (hash, keys) = keys_of(&obj);
            Expect::Keys {
                hash,
                keys: keys.into(),
            }
        }
        None => Expect::Raw(message.into()),
    }
}

/// Reduces a received frame to its non-ignorable messages.
pub fn receive(frame: &str) -> Vec<Received> {
    let mut out = Vec::new();
    if frame == "o" {
        out.push(Received {
            keys_hash: 0,
            raw: Some("o".into()),
            session_id: None,
            job_id: None,
            text: None,
        });
        return out;
    }
    for p in payloads(frame) {
        if ignorable_payload(&p) {
            continue;
        }
        match parse_object(&p) {
            Some(obj) => {
                let (keys_hash, _) = keys_of(&obj);
                let session_id = obj
                    .get("config")
                    .and_then(|c| c.get("sessionId"))
                    .and_then(Value::as_str)
                    .map(Into::into);
                let job_id = obj
                    .get("response")
                    .and_then(|r| r.get("value"))
                    .and_then(|v| v.get("jobId"))
                    .and_then(Value::as_str)
                    .map(Into::into);
                out.push(Received {
                    keys_hash,
                    raw: None,
                    session_id,
                    job_id,
                    text: None,
                });
            }
            None => out.push(Received {
                keys_hash: 0,
                raw: Some(frame.into()),
                session_id: None,
                job_id: None,
                text: None,
            }),
        }
    }
    out
}

/// True when a received message satisfies an expectation (`raw_expected` is the substituted Raw).
pub fn matches(expect: &Expect, got: &Received, raw_expected: Option<&str>) -> bool {
    match expect {
        Expect::Keys { hash, .. } => got.raw.is_none() && got.keys_hash == *hash,
        Expect::Raw(_) => got.raw.as_deref() == raw_expected,
    }
}

/// The worker id in a Shiny Server home page's `<base href="_w_ID/">`, which later URLs carry and
/// recordings write as `${WORKER}`.
pub fn worker_id(page: &[u8]) -> Option<String> {
    let needle = b"<base href=\"_w_";
    let i = page.windows(needle.len()).position(|w| w == needle)? + needle.len();
    let id: String = page[i..]
        .iter()
        .take_while(|b| b.is_ascii_digit() || b.is_ascii_lowercase())
        .map(|b| *b as char)
        .collect();
    (!id.is_empty()).then_some(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sockjs_frames_split_and_prefixes_strip() {
        let frame = r#"a["1#0|m|{\"busy\":\"busy\"}","2#0|m|{\"values\":{\"x\":1},\"errors\":{},\"inputMessages\":[]}"]"#;
        let got = receive(frame);
        assert_eq!(got.len(), 1, "busy dropped, update kept");
        let exp =
            expectation(r#"a["9#0|m|{\"errors\":[],\"values\":{\"y\":2},\"inputMessages\":[]}"]"#);
        assert!(matches(&exp, &got[0], None));
        let other = expectation(r#"{"custom":{"x":1}}"#);
        assert!(!matches(&other, &got[0], None));
    }

    #[test]
    fn noise_is_ignorable() {
        assert!(ignorable_frame("h"));
        assert!(ignorable_frame(r#"a["ACK 3"]"#));
        assert!(ignorable_frame(r#"{"progress":{"type":"binding"}}"#));
        assert!(ignorable_frame(r#"{"custom":{"reactlog":{}}}"#));
        assert!(ignorable_frame(
            r#"{"errors":{},"values":{},"inputMessages":[]}"#
        ));
        assert!(!ignorable_frame(
            r#"{"errors":{},"values":{"a":1},"inputMessages":[]}"#
        ));
        assert!(!ignorable_frame("o"));
    }

    #[test]
    fn init_and_upload_values_extracted() {
        let init = receive(
            r#"a["0#0|m|{\"config\":{\"workerId\":\"w1\",\"sessionId\":\"abc\",\"user\":null}}"]"#,
        );
        assert_eq!(init[0].session_id.as_deref(), Some("abc"));
        let up = receive(
            r#"{"response":{"tag":0,"value":{"jobId":"j7","uploadUrl":"session/abc/upload/j7?w="}}}"#,
        );
        assert_eq!(up[0].job_id.as_deref(), Some("j7"));
    }
}
