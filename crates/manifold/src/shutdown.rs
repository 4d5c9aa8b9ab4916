//! Shutdown signals: the first SIGTERM or Ctrl-C (SIGINT) starts a graceful stop, a second one
//! stops the workers without waiting for in-flight requests.

use tokio::signal::unix::{signal, SignalKind};

/// Resolves on the first SIGTERM or SIGINT.
pub async fn signal_once() {
    nth(1).await
}

/// Resolves on the second SIGTERM or SIGINT (counted from when this future is first polled).
pub async fn signal_twice() {
    nth(2).await
}

async fn nth(n: usize) {
    let mut term = signal(SignalKind::terminate()).expect("install SIGTERM handler");
    let mut int = signal(SignalKind::interrupt()).expect("install SIGINT handler");
    for _ in 0..n {
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
    }
}
