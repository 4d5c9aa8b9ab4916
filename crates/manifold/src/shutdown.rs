//! Shutdown signals: the first SIGTERM or Ctrl-C (SIGINT) starts a graceful stop, a second one
//! stops the workers without waiting for in-flight requests. The futures are the workspace's one
//! signal helper (`grammar::signal`, shared with `cranwhales serve`); these names stay manifold's.

/// Resolves on the first SIGTERM or SIGINT.
pub async fn signal_once() {
    grammar::signal::once().await
}

/// Resolves on the second SIGTERM or SIGINT (counted from when this future is first polled).
pub async fn signal_twice() {
    grammar::signal::twice().await
}
