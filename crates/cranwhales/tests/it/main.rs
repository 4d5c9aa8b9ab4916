//! cranwhales's integration tests, one binary (issue 19: one link per crate instead of one per file
//! on 2 cores). Each module was a `tests/*.rs` file of its own; run one with
//! `cargo test -p cranwhales --test it MODULE::`.

mod api;
mod breakdown_packed;
mod breakdown_recount;
mod build_ui;
mod context_api;
mod engine_bad_input;
mod engine_correctness;
#[cfg(feature = "fault-injection")]
mod engine_crash;
mod engine_download;
mod engine_support;
mod faults;
mod filters_recount;
mod follow;
mod ingest_support;
mod insight_api;
mod insight_backfill;
mod insight_engine;
mod insight_support;
mod legacy_support;
mod lists_recount;
mod server_abuse;
mod server_drain;
mod server_support;
mod store_history;
mod store_migration;
mod store_months;
