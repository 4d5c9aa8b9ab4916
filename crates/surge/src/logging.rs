//! Replay's log lines, shinycannon's way: `--log-level` (debug, info, warn, error; default warn)
//! filters what reaches stderr, and `--debug-log` also writes every line down to DEBUG into
//! `debug.log` in the run directory. Only surge's own events are logged (no HTTP-library noise).
//! The progress line and the final summary are not log lines: they always print.

use crate::secret::Masked;
use std::path::Path;
use std::sync::Mutex;
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::prelude::*;

/// `--log-level`: the least severe level printed on stderr.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LogLevel {
    /// Every event played, with its time.
    Debug,
    /// Users starting and stopping, sessions ending.
    Info,
    #[default]
    /// Failed sessions and why (the default).
    Warn,
    /// Errors only: the quietest.
    Error,
}

impl LogLevel {
    fn filter(self) -> LevelFilter {
        match self {
            LogLevel::Debug => LevelFilter::DEBUG,
            LogLevel::Info => LevelFilter::INFO,
            LogLevel::Warn => LevelFilter::WARN,
            LogLevel::Error => LevelFilter::ERROR,
        }
    }

    /// The name shinycannon's config JSON uses (`logLevel`).
    pub fn name(self) -> &'static str {
        match self {
            LogLevel::Debug => "DEBUG",
            LogLevel::Info => "INFO",
            LogLevel::Warn => "WARN",
            LogLevel::Error => "ERROR",
        }
    }
}

/// File name of `--debug-log`'s output inside the run directory (shinycannon's).
pub const DEBUG_LOG: &str = "debug.log";

/// `--debug-log`'s file cannot be created.
#[derive(Debug, thiserror::Error)]
#[error("{}: {err}", path.display())]
pub struct LogError {
    /// The file.
    pub path: std::path::PathBuf,
    /// What the OS said.
    pub err: std::io::Error,
}

/// Installs the process-wide log subscriber: stderr at `level`, plus every surge line down to
/// DEBUG into `debug_file` when given. The first call in a process wins (a library caller may
/// already have installed one); the file is created either way, so `--debug-log` always leaves it.
///
/// # Errors
/// The debug log file cannot be created.
pub fn init(level: LogLevel, debug_file: Option<&Path>) -> Result<(), LogError> {
    let stderr = tracing_subscriber::fmt::layer()
        .with_writer(|| Masked(std::io::stderr()))
        // A line stderr cannot take is dropped: tracing's own complaint about it is an
        // eprintln! of std's, which panics there (see `stdio`).
        .log_internal_errors(false)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_target(false)
        .with_filter(Targets::new().with_target("surge", level.filter()));
    let file = match debug_file {
        None => None,
        Some(p) => {
            let f = std::fs::File::create(p).map_err(|err| LogError {
                path: p.to_path_buf(),
                err,
            })?;
            Some(
                tracing_subscriber::fmt::layer()
                    .with_writer(Mutex::new(Masked(f)))
                    .with_ansi(false)
                    .with_target(false)
                    .with_filter(Targets::new().with_target("surge", LevelFilter::DEBUG)),
            )
        }
    };
    let _ = tracing_subscriber::registry()
        .with(stderr)
        .with(file)
        .try_init();
    Ok(())
}
