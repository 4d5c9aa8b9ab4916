//! cranwhales: CRAN download logs → per-day summaries in SQLite → JSON API and web UI.
//! See ARCHITECTURE.md for the module map.

pub mod bar;
pub mod blob;
#[allow(missing_docs)] // TEMPORARY (issue 14): until its public items are documented
pub mod cli;
pub mod csv;
pub mod date;
#[allow(missing_docs)] // TEMPORARY (issue 14): until its public items are documented
pub mod day;
pub mod inflate;
#[allow(missing_docs)] // TEMPORARY (issue 14): until its public items are documented
pub mod ingest;
pub mod names;
pub mod parse;
pub mod profile;
pub mod progress;
#[allow(missing_docs)] // TEMPORARY (issue 14): until its public items are documented
pub mod server;
pub mod source;
#[allow(missing_docs)] // TEMPORARY (issue 14): until its public items are documented
pub mod store;
#[allow(missing_docs)] // TEMPORARY (issue 14): until its public items are documented
pub mod summary;
