//! Shutdown signals: the first SIGTERM or Ctrl-C (SIGINT) starts a graceful stop, a second one
//! stops the workers without waiting for in-flight requests. The futures are the workspace's one
//! signal helper (`grammar::signal`, shared with `cranwhales serve`), one counter for both.

pub use grammar::signal::stages;
