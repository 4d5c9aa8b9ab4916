//! `surge import-har`: turns a browser's HAR export (every browser has "Save all as HAR") into a
//! recording.log, keeping the entries of the page's own origin. Chrome's `_webSocketMessages` become
//! WS_OPEN / WS_SEND / WS_RECV / WS_CLOSE; Shiny session values become placeholders as in `record`;
//! `text/event-stream` entries get `"stream":"client"`, open until the page's last activity.

use crate::recording::{self, EventLine, Kind, StreamEnd, TARGET_HTTP, TARGET_SHINY};
use crate::shiny;
use crate::timefmt::{format_iso, parse_iso};
use crate::tokens::Placeholders;
use hyper::Uri;
use serde::Deserialize;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Command-line options of `surge import-har`.
#[derive(clap::Args, Debug, Clone)]
pub struct ImportArgs {
    /// HAR file exported by a browser
    pub har: PathBuf,
    /// Recording file to write
    #[arg(short = 'o', long, default_value = "recording.log")]
    pub output: PathBuf,
    /// Keep only this origin (default: the origin of the first HTML page)
    #[arg(long)]
    pub target: Option<String>,
}

/// Why a HAR cannot be imported: one line naming the flag, or the file (and entry) at fault.
#[derive(Debug, thiserror::Error)]
pub enum HarError {
    /// `--target` is not a URL.
    #[error("--target {0}: not a URL")]
    Target(String),
    /// A file could not be read or written.
    #[error("{}: {err}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What the OS said.
        err: std::io::Error,
    },
    /// The HAR's content is unusable (not JSON, a bad field, nothing of the origin).
    #[error("{}: {why}", path.display())]
    Content {
        /// The HAR file.
        path: PathBuf,
        /// What is wrong, and where in it.
        why: String,
    },
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> HarError + '_ {
    move |err| HarError::Io {
        path: path.to_path_buf(),
        err,
    }
}

#[derive(Deserialize)]
struct Har {
    log: Log,
}
#[derive(Deserialize)]
struct Log {
    entries: Vec<Entry>,
}
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Entry {
    started_date_time: String,
    #[serde(default)]
    time: f64,
    request: HarRequest,
    response: HarResponse,
    #[serde(rename = "_webSocketMessages", default)]
    ws_messages: Vec<WsMessage>,
    #[serde(rename = "_resourceType", default)]
    resource_type: String,
}
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct HarRequest {
    method: String,
    url: String,
    #[serde(default)]
    post_data: Option<PostData>,
}
#[derive(Deserialize)]
struct PostData {
    #[serde(default)]
    text: Option<String>,
}
#[derive(Deserialize)]
struct HarResponse {
    status: u16,
    #[serde(default)]
    content: Option<Content>,
}
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Content {
    #[serde(default)]
    mime_type: String,
}
#[derive(Deserialize)]
struct WsMessage {
    #[serde(rename = "type")]
    kind: String,
    time: f64,
    #[serde(default)]
    data: String,
}

fn origin_of(url: &str) -> Option<String> {
    let u: Uri = url.parse().ok()?;
    let scheme = match u.scheme_str()? {
        "ws" => "http",
        "wss" => "https",
        s => s,
    };
    Some(format!("{scheme}://{}", u.authority()?.as_str()))
}

/// What `surge import-har` wrote: the terminal layer says it.
#[derive(Debug, Clone, PartialEq)]
pub struct Imported {
    /// Events written.
    pub events: usize,
    /// The origin (scheme://host:port) whose requests were kept.
    pub origin: String,
    /// The recording written.
    pub output: std::path::PathBuf,
}

/// Converts the HAR into a recording (written whole: temp file, then rename); prints nothing.
/// Errors name the file and entry.
pub fn run(args: ImportArgs) -> Result<Imported, HarError> {
    let entries = read_entries(&args.har)?;
    let origin = match &args.target {
        Some(t) => origin_of(t).ok_or_else(|| HarError::Target(t.clone()))?,
        None => entries
            .iter()
            .find(|(_, e)| is_html(e))
            .or(entries.first())
            .and_then(|(_, e)| origin_of(&e.request.url))
            .ok_or_else(|| HarError::Content {
                path: args.har.clone(),
                why: "no entries".into(),
            })?,
    };
    let shiny = entries
        .iter()
        .any(|(_, e)| e.request.url.contains("shiny") || e.request.url.contains("__sockjs__"));
    let mut out = String::from(&recording::header(
        &format!("{origin}/"),
        if shiny { TARGET_SHINY } else { TARGET_HTTP },
    ));
    let mut tokens = Placeholders::default();
    let mut posts = 0;
    let mut count = 0;
    let mut lines: Vec<(i64, EventLine)> = Vec::new();
    for (t, e) in &entries {
        if origin_of(&e.request.url).as_deref() != Some(origin.as_str()) {
            continue;
        }
        let u: Uri = e.request.url.parse().map_err(|err| HarError::Content {
            path: args.har.clone(),
            why: format!("request URL {:?}: {err}", e.request.url),
        })?;
        let pq = u
            .path_and_query()
            .map(|p| p.as_str())
            .unwrap_or("/")
            .to_string();
        if u.path().ends_with("favicon.ico") {
            continue;
        }
        if !e.ws_messages.is_empty() || e.resource_type == "websocket" || e.response.status == 101 {
            lines.extend(ws_events(*t, e, pq, &mut tokens));
        } else {
            lines.push((*t, http_event(*t, e, pq, &args.output, &mut posts)?));
        }
    }
    lines.sort_by_key(|(t, _)| *t);
    let last = lines
        .iter()
        .filter_map(|(t, ev)| ev.end.as_deref().and_then(parse_iso).or(Some(*t)))
        .max()
        .unwrap_or(0);
    for (_, ev) in lines.iter_mut().filter(|(_, ev)| ev.stream.is_some()) {
        ev.end = Some(format_iso(last));
    }
    for (_, mut ev) in lines {
        ev.url = ev.url.map(|u| tokens.apply(&u));
        ev.message = ev.message.map(|m| tokens.apply(&m));
        out.push_str(&serde_json::to_string(&ev).expect("an event line serialises"));
        out.push('\n');
        count += 1;
    }
    if count == 0 {
        return Err(HarError::Content {
            path: args.har.clone(),
            why: format!("no entries for origin {origin}"),
        });
    }
    let tmp = args.output.with_extension("tmp-surge-har");
    let written = std::fs::File::create(&tmp)
        .and_then(|mut f| f.write_all(out.as_bytes()).and_then(|()| f.sync_all()))
        .and_then(|()| std::fs::rename(&tmp, &args.output));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(io_err(&args.output)(e));
    }
    Ok(Imported {
        events: count,
        origin,
        output: args.output,
    })
}

/// The HAR's entries with their start times (Unix ms), in time order.
fn read_entries(path: &Path) -> Result<Vec<(i64, Entry)>, HarError> {
    let text = std::fs::read_to_string(path).map_err(io_err(path))?;
    let har: Har = serde_json::from_str(&text).map_err(|e| HarError::Content {
        path: path.to_path_buf(),
        why: format!("not a HAR file: {e}"),
    })?;
    let mut entries = Vec::new();
    for (i, e) in har.log.entries.into_iter().enumerate() {
        let t = parse_iso(&e.started_date_time).ok_or_else(|| HarError::Content {
            path: path.to_path_buf(),
            why: format!(
                "entry {i}: field startedDateTime: bad timestamp \"{}\"",
                e.started_date_time
            ),
        })?;
        entries.push((t, e));
    }
    entries.sort_by_key(|(t, _)| *t);
    Ok(entries)
}

fn is_event_stream(e: &Entry) -> bool {
    e.response
        .content
        .as_ref()
        .is_some_and(|c| c.mime_type.starts_with("text/event-stream"))
}

fn is_html(e: &Entry) -> bool {
    e.response
        .content
        .as_ref()
        .is_some_and(|c| c.mime_type.starts_with("text/html"))
}

/// A WebSocket entry (started at `t`) as WS_OPEN, its messages, and WS_CLOSE; learns the
/// session id placeholder from the init message.
fn ws_events(t: i64, e: &Entry, pq: String, tokens: &mut Placeholders) -> Vec<(i64, EventLine)> {
    let mut lines = vec![(
        t,
        EventLine {
            url: Some(pq),
            ..EventLine::new(Kind::WsOpen, t)
        },
    )];
    let mut last = t;
    for m in &e.ws_messages {
        let at = (m.time * 1000.0) as i64;
        last = last.max(at);
        let kind = if m.kind == "send" {
            if shiny::ignorable_frame(&m.data) {
                continue;
            }
            Kind::WsSend
        } else {
            if m.data != "o" && shiny::ignorable_frame(&m.data) {
                continue;
            }
            let first = shiny::payloads(&m.data)
                .into_iter()
                .next()
                .unwrap_or_default();
            match shiny::parse_object(&first) {
                Some(o) if o.contains_key("config") => {
                    if let Some(s) = o["config"].get("sessionId").and_then(|v| v.as_str()) {
                        tokens.add(s, "${SESSION}");
                    }
                    Kind::WsRecvInit
                }
                _ => Kind::WsRecv,
            }
        };
        lines.push((
            at,
            EventLine {
                message: Some(m.data.clone()),
                ..EventLine::new(kind, at)
            },
        ));
    }
    lines.push((last + 1, EventLine::new(Kind::WsClose, last + 1)));
    lines
}

/// An HTTP entry (started at `t`) as one event; a POST body is saved next to `output` as
/// `<output>.post.N` (`posts` counts them).
fn http_event(
    t: i64,
    e: &Entry,
    pq: String,
    output: &Path,
    posts: &mut u32,
) -> Result<EventLine, HarError> {
    let end = t + e.time.max(0.0) as i64;
    let kind = match (e.request.method.as_str(), is_html(e)) {
        ("GET", true) => Kind::ReqHome,
        ("GET", false) => Kind::ReqGet,
        _ => Kind::ReqPost,
    };
    let mut ev = EventLine {
        end: Some(format_iso(end)),
        status: Some(e.response.status),
        url: Some(pq),
        ..EventLine::new(kind, t)
    };
    if is_event_stream(e) {
        // HAR times an EventSource only to its first bytes; it stays open while the page does,
        // so its end is set to the page's last activity (see `run`).
        ev.stream = Some(StreamEnd::Client);
    }
    if kind == Kind::ReqPost {
        if e.request.method != "POST" {
            ev.method = Some(e.request.method.clone());
        }
        if let Some(body) = e.request.post_data.as_ref().and_then(|p| p.text.as_ref()) {
            if !body.is_empty() {
                let file = PathBuf::from(format!("{}.post.{posts}", output.display()));
                *posts += 1;
                std::fs::write(&file, body).map_err(io_err(&file))?;
                ev.datafile = file.file_name().map(|f| f.to_string_lossy().into_owned());
            }
        }
    }
    Ok(ev)
}
