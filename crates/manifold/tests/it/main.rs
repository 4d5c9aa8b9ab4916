//! manifold's integration tests, one binary (issue 19: one link per crate instead of one per file
//! on 2 cores). Each module was a `tests/*.rs` file of its own; run one with
//! `cargo test -p manifold --test it MODULE::`.

mod accounting;
mod apps;
mod balancer;
mod buffering;
mod common;
mod errors;
mod faults;
mod haproxy;
mod limits;
mod pool;
mod pool_clock;
mod preload;
mod r_apps;
mod r_chaos;
mod r_preload;
mod r_reload;
mod recycle;
mod reload;
mod spare;
mod tempdirs;
mod timeouts;
