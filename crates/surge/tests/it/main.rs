//! surge's integration tests, one binary (issue 19: one link per crate instead of one per file
//! on 2 cores). Each module was a `tests/*.rs` file of its own; run one with
//! `cargo test -p surge --test it MODULE::`.

mod bad_flags;
mod bench;
mod capacity;
mod capacity_session_flags;
mod common;
mod compare;
mod cranwhales_e2e;
mod data_e2e;
mod expect;
mod explain;
mod explain_shiny;
mod faults;
mod health;
mod live;
mod mix_e2e;
mod r_explain;
mod recordings;
mod report_bad_input;
mod report_fixtures;
mod report_surge_run;
mod secrets;
mod segments;
mod segments_bad_input;
mod segments_bench;
mod segments_support;
mod server_timing;
mod shiny_e2e;
mod shinycannon_cli;
mod signin_e2e;
mod signin_support;
mod sigterm;
mod sockjs_e2e;
mod sse_e2e;
mod summary_json;
mod tcp_stall;
mod tls;
