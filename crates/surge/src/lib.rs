//! surge: record real web sessions (Shiny or not) and replay them with many users, shinycannon-
//! compatible; plus `bench`, a lean one-URL load generator. One module per concept; `main.rs` only
//! parses the command line and hands it to [`terminal::main`].

#[macro_use]
mod stdio;

pub mod bench;
pub mod capacity;
pub mod capfile;
pub mod capture;
pub mod checks;
pub mod compare;
pub mod dashboard;
pub mod data;
pub mod expect;
pub mod failure;
pub mod h1;
pub mod har;
pub mod health;
pub mod logging;
pub mod manifold_poll;
pub mod merge;
pub mod metrics;
pub mod net;
pub mod parametrize;
pub mod record;
pub mod recording;
pub mod replay;
pub mod report;
pub mod rundir;
pub mod secret;
pub mod segment;
pub mod shiny;
pub mod signin;
pub mod stats;
pub mod target;
pub mod terminal;
pub mod timefmt;
pub mod timing;
pub mod tokens;
pub mod verdict;

/// The tokio runtime every subcommand runs on (one worker per CPU this process may use).
pub fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    if threads == 1 {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads)
            .enable_all()
            .build()
    }
}
