//! cranwhales: CRAN download logs → per-day summaries in SQLite → JSON API and web UI.
//! See ARCHITECTURE.md for the module map.

pub mod bar;
pub mod blob;
pub mod cli;
pub mod context;
pub mod csv;
pub mod date;
pub mod day;
pub mod follow;
pub mod inflate;
pub mod ingest;
pub mod names;
pub mod numfmt;
pub mod parse;
pub mod partial;
pub mod profile;
pub mod progress;
pub mod server;
pub mod source;
pub mod store;
pub mod summary;
