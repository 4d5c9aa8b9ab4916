//! Shutdown signals: the first SIGTERM or Ctrl-C (SIGINT) starts a drain, a second one stops at
//! once without waiting for requests in flight.

use tokio::signal::unix::{signal, SignalKind};

/// Resolves on the `n`th SIGTERM or SIGINT counted from its first poll.
///
/// # Panics
/// If the signal handlers cannot be installed (no signal driver: not on a tokio runtime).
pub async fn nth(n: usize) {
    let mut term = signal(SignalKind::terminate()).expect("install SIGTERM handler");
    let mut int = signal(SignalKind::interrupt()).expect("install SIGINT handler");
    for _ in 0..n {
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
    }
}
