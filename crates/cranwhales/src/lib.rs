//! cranwhales: CRAN download logs → per-day summaries in SQLite → JSON API and web UI.
//! See ARCHITECTURE.md for the module map.

pub mod progress;
pub mod server;
pub mod summary;
