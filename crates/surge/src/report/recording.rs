//! recording.log as the report needs it: one entry per event line with its kind, class, a short
//! human label (URL or message gist) and the recording's own timing, the baseline every replayed
//! session is compared with. Line numbers are physical 1-based lines, as in the CSVs'
//! `input_line_number`.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{class::Class, ReportError};

/// One event line of the recording.
#[derive(Debug, Clone)]
pub struct RecLine {
    /// Physical line number in recording.log (1-based, comment lines counted).
    pub line: u32,
    /// Event type as written (`REQ_GET`, `WS_RECV`, ...).
    pub kind: String,
    /// What the report colours it as.
    pub class: Class,
    /// URL or message gist, shortened for axis labels and tooltips.
    pub label: String,
    /// Begin, relative to the recording's first event (ms).
    pub begin_ms: i64,
    /// Recorded duration (ms); 0 for events without an `end`.
    pub dur_ms: i64,
}

/// A parsed recording.log.
#[derive(Debug, Clone)]
pub struct Recording {
    /// Where it was read from, for messages.
    pub path: PathBuf,
    /// `# target_url:` / `# target:` header, when present.
    pub target: Option<String>,
    /// Event lines in file order.
    pub lines: Vec<RecLine>,
    /// First begin to last end: how long the scripted session takes unloaded.
    pub duration_ms: i64,
    /// The file's text, to tell whether two runs replayed the same recording.
    pub text: String,
}

impl Recording {
    /// The entry for a physical line number, if that line is an event.
    pub fn get(&self, line: u32) -> Option<&RecLine> {
        self.lines
            .binary_search_by_key(&line, |l| l.line)
            .ok()
            .map(|i| &self.lines[i])
    }
}

/// Reads and parses a recording.log; errors name the file and line.
pub fn read(path: &Path) -> Result<Recording, ReportError> {
    let text = std::fs::read_to_string(path).map_err(|e| ReportError::io(path, e))?;
    parse(path, text)
}

fn parse(path: &Path, text: String) -> Result<Recording, ReportError> {
    let bad = |line: usize, msg: String| ReportError::Input {
        at: format!("{}:{}", path.display(), line),
        msg,
    };
    let mut target = None;
    let mut raw: Vec<(u32, String, Class, String, i64, Option<i64>)> = Vec::new();
    for (i, l) in text.lines().enumerate() {
        let n = i + 1;
        let l = l.trim();
        if l.is_empty() {
            continue;
        }
        if let Some(h) = l.strip_prefix('#') {
            let h = h.trim();
            for key in ["target_url:", "target:"] {
                if let Some(v) = h.strip_prefix(key) {
                    target = Some(v.trim().to_string());
                }
            }
            continue;
        }
        let v: Value =
            serde_json::from_str(l).map_err(|e| bad(n, format!("not a JSON event: {e}")))?;
        let kind = v["type"]
            .as_str()
            .ok_or_else(|| bad(n, "event has no \"type\" field".into()))?
            .to_string();
        let time = |field: &str| -> Result<Option<i64>, ReportError> {
            match v.get(field).and_then(Value::as_str) {
                None => Ok(None),
                Some(s) => humantime::parse_rfc3339_weak(s)
                    .map(|t| {
                        Some(
                            t.duration_since(std::time::UNIX_EPOCH)
                                .map(|d| d.as_millis() as i64)
                                .unwrap_or(0),
                        )
                    })
                    .map_err(|e| bad(n, format!("field \"{field}\": bad time {s:?}: {e}"))),
            }
        };
        let begin = time("begin")?.ok_or_else(|| bad(n, "event has no \"begin\" time".into()))?;
        let end = time("end")?;
        let url = v["url"].as_str().unwrap_or("");
        let message = v["message"].as_str().unwrap_or("");
        let class = Class::of(&kind, url, message);
        let label = label(&kind, url, message);
        raw.push((n as u32, kind, class, label, begin, end));
    }
    if raw.is_empty() {
        return Err(ReportError::Input {
            at: path.display().to_string(),
            msg: "recording has no events".into(),
        });
    }
    let t0 = raw.iter().map(|r| r.4).min().unwrap_or(0);
    let t1 = raw.iter().map(|r| r.5.unwrap_or(r.4)).max().unwrap_or(t0);
    let lines = raw
        .into_iter()
        .map(|(line, kind, class, label, begin, end)| RecLine {
            line,
            kind,
            class,
            label,
            begin_ms: begin - t0,
            dur_ms: end.map(|e| (e - begin).max(0)).unwrap_or(0),
        })
        .collect();
    Ok(Recording {
        path: path.to_path_buf(),
        target,
        lines,
        duration_ms: t1 - t0,
        text,
    })
}

const MAX_LABEL: usize = 90;

/// A short label: the URL for HTTP, the gist of a Shiny/JSON message for WebSocket traffic.
fn label(kind: &str, url: &str, message: &str) -> String {
    let s = match kind {
        "WS_CLOSE" => "close".to_string(),
        _ if !url.is_empty() => url.to_string(),
        _ if !message.is_empty() => message_gist(message),
        _ => String::new(),
    };
    shorten(&s)
}

fn shorten(s: &str) -> String {
    if s.chars().count() <= MAX_LABEL {
        return s.to_string();
    }
    let mut out: String = s.chars().take(MAX_LABEL - 1).collect();
    out.push('…');
    out
}

/// Unwraps SockJS framing (`a["…"]`, `["…"]`, `n#n|m|`) and names what the message carries.
fn message_gist(message: &str) -> String {
    if message == "o" {
        return "SockJS open".into();
    }
    let mut inner = message.to_string();
    let framed = inner.strip_prefix('a').unwrap_or(&inner).to_string();
    if framed.starts_with('[') {
        if let Ok(Value::Array(items)) = serde_json::from_str::<Value>(&framed) {
            if let Some(Value::String(s)) = items.first() {
                inner = s.clone();
            }
        }
    }
    // SockJS multiplexing prefix: "<id>#<n>|m|" or "<id>|m|"; "|o|" is the channel open.
    if let Some(pos) = inner.find("|m|") {
        if inner[..pos]
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '#')
        {
            inner = inner[pos + 3..].to_string();
        }
    } else if inner.contains("|o|") {
        return "SockJS channel open".into();
    }
    let Ok(Value::Object(obj)) = serde_json::from_str::<Value>(&inner) else {
        return inner;
    };
    let keys = |v: Option<&Value>| -> Vec<String> {
        match v {
            Some(Value::Object(m)) => m.keys().filter(|k| !k.starts_with('.')).cloned().collect(),
            _ => Vec::new(),
        }
    };
    if let Some(method) = obj.get("method").and_then(Value::as_str) {
        let k = keys(obj.get("data"));
        return if method == "init" {
            format!("init ({} inputs)", k.len())
        } else if k.is_empty() {
            method.to_string()
        } else {
            format!("{method}: {}", k.join(", "))
        };
    }
    if obj.contains_key("config") {
        return "session config".into();
    }
    let mut parts = Vec::new();
    for field in ["values", "errors", "inputMessages"] {
        let k = keys(obj.get(field));
        if !k.is_empty() {
            parts.push(format!("{field}: {}", k.join(", ")));
        }
    }
    if parts.is_empty() {
        let k: Vec<&str> = obj.keys().map(String::as_str).collect();
        k.join(", ")
    } else {
        parts.join("; ")
    }
}
