//! The recording as the report shows it: one entry per event line with its kind, class, a short
//! human label (URL or message gist) and the recording's own timing, the baseline every replayed
//! session is compared with. Read by the one recording parser (`crate::recording`) in lenient
//! mode: a report only shows a recording, so fields only replay needs may be missing. Line numbers
//! are physical 1-based lines, as in the CSVs' `input_line_number`.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{class::Class, ReportError};
use crate::recording::{Kind, Mode, Recording};

/// One event line of the recording.
#[derive(Debug, Clone)]
pub struct RecLine {
    /// Physical line number in recording.log (1-based, comment lines counted).
    pub line: u32,
    /// Event type.
    pub kind: Kind,
    /// What the report colours it as.
    pub class: Class,
    /// URL or message gist, shortened for axis labels and tooltips.
    pub label: String,
    /// Begin, relative to the recording's first event (ms).
    pub begin_ms: i64,
    /// Recorded duration (ms); 0 for events without an `end`.
    pub dur_ms: i64,
}

/// A recording.log as the report shows it.
#[derive(Debug, Clone)]
pub struct Lines {
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

impl Lines {
    /// The entry for a physical line number, if that line is an event.
    pub fn get(&self, line: u32) -> Option<&RecLine> {
        self.lines
            .binary_search_by_key(&line, |l| l.line)
            .ok()
            .map(|i| &self.lines[i])
    }
}

/// Reads a recording.log (leniently); errors name the file and line.
pub fn read(path: &Path) -> Result<Lines, ReportError> {
    let text = std::fs::read_to_string(path).map_err(|e| ReportError::io(path, e))?;
    let rec = Recording::parse(path, &text, Mode::Lenient).map_err(|e| ReportError::Input {
        at: format!("{}:{}", e.path.display(), e.line),
        msg: e.msg,
    })?;
    let t0 = rec.events.iter().map(|e| e.begin_ms).min().unwrap_or(0);
    let t1 = (rec.events.iter())
        .map(|e| e.end_ms.unwrap_or(e.begin_ms))
        .max()
        .unwrap_or(t0);
    let mut lines: Vec<RecLine> = (rec.events.iter())
        .map(|e| RecLine {
            line: e.line,
            kind: e.kind,
            class: Class::of(e.kind, &e.url, &e.message),
            label: label(e.kind, &e.url, &e.message),
            begin_ms: e.begin_ms - t0,
            dur_ms: e.end_ms.map(|end| (end - e.begin_ms).max(0)).unwrap_or(0),
        })
        .collect();
    // Replay plays event streams where they began; the report keys lines by their number.
    lines.sort_by_key(|l| l.line);
    Ok(Lines {
        path: path.to_path_buf(),
        target: rec.target_url,
        lines,
        duration_ms: t1 - t0,
        text,
    })
}

const MAX_LABEL: usize = 90;

/// A short label: the URL for HTTP, the gist of a Shiny/JSON message for WebSocket traffic.
fn label(kind: Kind, url: &str, message: &str) -> String {
    let s = match kind {
        Kind::WsClose => "close".to_string(),
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
