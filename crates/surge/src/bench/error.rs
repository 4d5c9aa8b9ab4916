//! Why a bench cannot start: the flags checked into a plan, the target's TLS probe.

use crate::net;

/// Why a bench cannot start: one line naming the flag or file.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// A flag's value or a combination of flags is wrong.
    #[error("{0}")]
    Usage(String),
    /// The URL's scheme, a TLS flag, or the TLS probe of an https:// target failed.
    #[error(transparent)]
    Setup(#[from] net::SetupError),
    /// `--segment` / `--start-at` wrong.
    #[error(transparent)]
    Segment(#[from] crate::segment::SegmentError),
    /// `--body`'s file cannot be read.
    #[error("--body {}: {err}", path.display())]
    Body {
        /// The file.
        path: std::path::PathBuf,
        /// What the OS said.
        err: std::io::Error,
    },
}
