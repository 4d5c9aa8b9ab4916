//! How long-running ingest work reports where it is, so the CLI can draw a bar and the server can
//! stream the same events to every browser waiting for that day.

use serde::Serialize;

/// One step of getting a day into the store.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "phase", rename_all = "snake_case")]
pub enum Event {
    /// Bytes of the `.csv.gz` received so far; `total` from Content-Length when known.
    Downloading {
        /// Bytes so far.
        done: u64,
        /// Content-Length, when the server sent one.
        total: Option<u64>,
    },
    /// Compressed bytes consumed and rows parsed so far.
    Parsing {
        /// Compressed bytes consumed.
        bytes: u64,
        /// The file's size, when known.
        total: Option<u64>,
        /// Rows parsed.
        rows: u64,
    },
    /// Writing the day's tables in one transaction.
    Storing,
    /// The day is committed and visible.
    Done {
        /// Rows the day holds.
        rows: u64,
    },
}

/// Receives progress events; called from the ingesting thread, so it must be cheap and thread-safe.
pub trait Progress: Send + Sync {
    /// Takes one event; must return quickly (it runs on the ingest thread).
    fn event(&self, event: Event);
}

/// Discards every event (tests, quiet runs).
pub struct Silent;

impl Progress for Silent {
    fn event(&self, _: Event) {}
}
