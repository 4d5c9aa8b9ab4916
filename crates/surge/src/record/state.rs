//! What a recording session holds: recording.log (with events held back while a home page
//! streams), the placeholders learnt so far, and the requests whose responses still stream.

use crate::net::Connector;
use crate::recording::{EventLine, Kind, StreamEnd};
use crate::target::Target;
use crate::timefmt::{format_iso, now_ms};
use crate::tokens::Placeholders;
use bytes::Bytes;
use http_body_util::Full;
use hyper_util::client::legacy::Client;
use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use tokio::sync::watch;

/// recording.log and the events held back while a home page streams.
pub(super) struct Log {
    pub file: super::output::Output,
    pub homes_open: u32,
    pub held: Vec<EventLine>,
}

/// Shared by every connection of the proxy.
pub(super) struct State {
    pub target: Target,
    pub target_url: String,
    pub shiny: bool,
    pub output: PathBuf,
    pub file: Mutex<Log>,
    pub tokens: Mutex<Placeholders>,
    pub posts: AtomicU32,
    pub events: AtomicU32,
    pub next_req: AtomicU64,
    pub open: Mutex<HashMap<u64, OpenReq>>,
    pub client: Client<Connector, Full<Bytes>>,
    pub done: watch::Sender<bool>,
}

/// A request whose response is still streaming: the event minus its end (and the URL, which gets
/// placeholders applied when it is written, after tokens learnt meanwhile).
pub(super) struct OpenReq {
    pub ev: EventLine,
    pub pq: String,
}

/// The locks, per the workspace's poisoning policy (ARCHITECTURE.md): a panic mid-update of the
/// log or the placeholders could lose an event or leave the placeholders unsorted, so those panic;
/// the open requests change one insert or remove at a time, so that map is taken back.
impl State {
    /// recording.log, its held events and open pages (which must agree).
    pub fn log(&self) -> MutexGuard<'_, Log> {
        self.file.lock().expect("recording.log lock poisoned")
    }

    /// The requests whose responses still stream, by id.
    pub fn open_reqs(&self) -> MutexGuard<'_, HashMap<u64, OpenReq>> {
        self.open.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn tokens(&self) -> MutexGuard<'_, Placeholders> {
        self.tokens.lock().expect("placeholders lock poisoned")
    }
}

impl State {
    /// Appends an event, or holds it while a home page is still streaming: the page's event comes
    /// first (replay learns `${WORKER}` from it), though the browser fetched assets meanwhile.
    pub fn write(&self, ev: &EventLine) {
        let mut log = self.log();
        if log.homes_open > 0 {
            log.held.push(ev.clone());
        } else {
            self.append(&mut log, ev);
        }
    }

    fn append(&self, log: &mut Log, ev: &EventLine) {
        let line = serde_json::to_string(ev).expect("event serializes");
        let out = &mut log.file;
        if (out.place())
            .and_then(|()| writeln!(out.file, "{line}"))
            .and_then(|()| out.file.flush())
            .is_err()
        {
            eprintln!("surge record: cannot write {}", self.output.display());
        }
        self.events.fetch_add(1, Ordering::Relaxed);
    }

    /// Writes a home page's event, then what was held while it streamed (once no page is open).
    pub fn write_home(&self, ev: &EventLine) {
        let mut log = self.log();
        log.homes_open = log.homes_open.saturating_sub(1);
        self.append(&mut log, ev);
        if log.homes_open == 0 {
            for held in std::mem::take(&mut log.held) {
                self.append(&mut log, &held);
            }
        }
    }

    /// `s` with the live values learnt so far replaced by their placeholders.
    pub fn apply(&self, s: &str) -> String {
        self.tokens().apply(s)
    }

    /// Learns a live value to write back as `placeholder`.
    pub fn add_token(&self, value: &str, placeholder: &'static str) {
        self.tokens().add(value, placeholder);
    }
}

impl State {
    /// Writes the event of a finished request (once; later calls for the same id do nothing).
    pub fn close_req(&self, id: u64, head: &[u8], by_server: bool) {
        let Some(OpenReq { mut ev, pq }) = self.open_reqs().remove(&id) else {
            return;
        };
        if ev.kind == Kind::ReqTok {
            self.add_token(String::from_utf8_lossy(head).trim(), "${TOKEN}");
        }
        if ev.stream.is_some() {
            ev.stream = Some(if by_server {
                StreamEnd::Server
            } else {
                StreamEnd::Client
            });
        }
        ev.end = Some(format_iso(now_ms()));
        ev.url = Some(self.apply(&pq));
        if ev.kind == Kind::ReqHome {
            self.write_home(&ev);
        } else {
            self.write(&ev);
        }
    }

    /// Writes the events of requests still streaming when the recording stops (ended by the client).
    pub fn close_all(&self) {
        let ids: Vec<u64> = self.open_reqs().keys().copied().collect();
        for id in ids {
            self.close_req(id, &[], false);
        }
    }
}
