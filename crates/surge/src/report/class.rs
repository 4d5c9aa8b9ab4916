//! Event classes: what a step of a session is, from the user's point of view. The report colours
//! and aggregates by class (shinyloadtest's vocabulary: Homepage, JS/CSS, Start session,
//! Calculate), plus Other for instant steps (sends, close).

use crate::recording::Kind;
use serde::Serialize;

/// Class of a recorded event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[repr(u8)]
pub enum Class {
    /// The page itself (REQ_HOME).
    Homepage = 0,
    /// Static assets fetched for the page (REQ_GET of .js/.css/fonts/images).
    Assets = 1,
    /// Opening the live session: token, SockJS info, WebSocket open and its init message.
    StartSession = 2,
    /// Server work: WebSocket replies, POSTs, non-asset GETs (API calls), uploads.
    Calculate = 3,
    /// Instant or bookkeeping steps: WebSocket sends, close.
    Other = 4,
}

/// Display names, indexed by `Class as usize`; the report runtime uses the same order.
pub const CLASS_NAMES: [&str; 5] = ["Homepage", "JS/CSS", "Start session", "Calculate", "Other"];

const ASSET_EXT: &[&str] = &[
    "js", "mjs", "css", "map", "woff", "woff2", "ttf", "otf", "eot", "png", "jpg", "jpeg", "gif",
    "svg", "ico", "webp", "avif",
];

impl Class {
    /// Classifies a recording event from its type and URL/message.
    pub fn of(kind: Kind, url: &str, message: &str) -> Class {
        match kind {
            Kind::ReqHome => Class::Homepage,
            Kind::ReqGet if is_asset(url) => Class::Assets,
            Kind::ReqTok | Kind::ReqSinf | Kind::WsOpen | Kind::WsRecvInit => Class::StartSession,
            Kind::WsRecv if message == "o" => Class::StartSession,
            Kind::WsSend | Kind::WsClose => Class::Other,
            Kind::ReqGet | Kind::ReqPost | Kind::WsRecv | Kind::WsRecvBeginUpload => {
                Class::Calculate
            }
        }
    }

    /// Position in [`CLASS_NAMES`].
    pub fn index(self) -> usize {
        self as usize
    }
}

fn is_asset(url: &str) -> bool {
    let path = url.split(['?', '#']).next().unwrap_or("");
    let last = path.rsplit('/').next().unwrap_or("");
    match last.rsplit_once('.') {
        Some((_, ext)) => ASSET_EXT.contains(&ext.to_ascii_lowercase().as_str()),
        None => false,
    }
}
