//! `IngestError`: why a day could not be ingested, as a typed value with a one-line message.

use std::path::PathBuf;

use crate::source::SourceError;
use crate::store::StoreError;

/// Why a day could not be ingested. Every variant says what and where in its one-line message;
/// whichever it is, the store is unchanged.
#[derive(Debug, thiserror::Error)]
pub enum IngestError {
    /// The log could not be had from the source: none upstream (404), or the download failed.
    #[error(transparent)]
    Source(#[from] SourceError),
    /// The local file could not be opened or read.
    #[error("{}: {reason}", path.display())]
    Io {
        /// The local file.
        path: PathBuf,
        /// The OS error.
        reason: String,
    },
    /// The file is named `.gz` but does not start with the gzip magic bytes.
    #[error("{}: not a gzip file", path.display())]
    NotGzip {
        /// The local file.
        path: PathBuf,
    },
    /// The gzip stream is truncated or corrupt.
    #[error("{}:{line}: gzip stream {reason}", path.display())]
    Gzip {
        /// The local file.
        path: PathBuf,
        /// The line being read when the stream broke, to show how far it got.
        line: u64,
        /// `is truncated (…)` or `is corrupt: …`.
        reason: String,
    },
    /// No data rows (zero bytes, or a header only).
    #[error("{}: empty log: {reason}", path.display())]
    Empty {
        /// The local file.
        path: PathBuf,
        /// Zero bytes, or no data rows after the header.
        reason: &'static str,
    },
    /// The first line is not the expected header.
    #[error("{}:1: wrong header: expected {expected}, found {found}", path.display())]
    Header {
        /// The local file.
        path: PathBuf,
        /// The cranlogs header, `date,time,…`.
        expected: String,
        /// The file's first line, escaped and cut to 120 characters (`grammar::echo::echo`).
        found: String,
    },
    /// A data row breaks the format (field count, number, time, date, UTF-8).
    #[error("{}:{line}: field {field}: {problem}", path.display())]
    Row {
        /// The local file.
        path: PathBuf,
        /// Line number in the file (the header is line 1).
        line: u64,
        /// The column at fault (`row` for the line as a whole).
        field: String,
        /// What is wrong, in words.
        problem: String,
    },
    /// A date argument that is not `YYYY-MM-DD`.
    #[error("{0:?} is not a date (expected YYYY-MM-DD)")]
    BadDate(String),
    /// The store could not be opened.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A day read whole could not be written; its transaction was rolled back.
    #[error("{date}: not stored: {source}")]
    Write {
        /// The day that was not stored.
        date: String,
        /// Why SQLite refused it.
        source: StoreError,
    },
}
