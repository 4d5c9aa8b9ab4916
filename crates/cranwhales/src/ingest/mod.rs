//! Getting a day into the store: read (and inflate) the log on one thread, split and aggregate
//! rows on the calling thread, then write the day's tables in one transaction.
//!
//! One pass, bounded memory: the file is streamed in 512 KiB chunks through a channel of four;
//! the decompressed text is never held whole (see `day` for what memory grows with).
//! Nothing is written to the store until the whole file has been read and checked, so bad input
//! leaves the store as it was.

//!
//! Modules: `reader` (the reading thread), `parser` (the parsing thread), `error`.

mod error;
mod parser;
mod reader;

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::date;
use crate::day::DayTables;
use crate::inflate::Gunzip;
use crate::progress::{Event, Progress};
use crate::source::{self, SourceConfig};
use crate::store::Store;

pub use error::IngestError;
use parser::Parser;
use reader::{pump, Batch, Counting};

/// What an ingest did.
#[derive(Debug, Clone, serde::Serialize)]
pub struct IngestReport {
    /// The day stored, `YYYY-MM-DD`.
    pub date: String,
    /// The file read (the cache entry for a downloaded day).
    pub file: PathBuf,
    /// Data rows read (skipped ones included).
    pub rows: u64,
    /// Rows with a package: what the summary counts.
    pub downloads: u64,
    /// Rows without a package, tolerated and left out of the counts.
    pub skipped_rows: u64,
    /// Empty lines, tolerated.
    pub blank_lines: u64,
    /// Rows stored for the top-100 whales.
    pub whale_rows: u64,
    /// Wall time from opening the store to the day committed (reading, aggregating, writing).
    pub seconds: f64,
}

/// Longest line accepted (a row is ~100 bytes; this bounds memory on garbage input).
const MAX_LINE: usize = 1 << 20;

/// Ingests a local `.csv.gz` (or `.csv`) log into the store at `db`. If the file name starts with
/// a date, every row must carry it; otherwise the first row's date is the day.
pub fn ingest_path(
    db: &Path,
    file: &Path,
    progress: &dyn Progress,
) -> Result<IngestReport, IngestError> {
    let name_date = file
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.get(..10))
        .filter(|d| date::is_log_date(d))
        .map(str::to_owned);
    ingest_file(db, file, name_date.as_deref(), progress)
}

/// Ingests the day `date` (`YYYY-MM-DD`), downloading its log into the cache unless already there.
pub fn ingest_date(
    db: &Path,
    date: &str,
    source: &SourceConfig,
    progress: &dyn Progress,
) -> Result<IngestReport, IngestError> {
    if !date::is_log_date(date) {
        return Err(IngestError::BadDate(date.to_owned()));
    }
    let file = source::fetch(date, source, progress)?;
    let result = ingest_file(db, &file, Some(date), progress);
    if let Err(IngestError::Gzip { .. } | IngestError::NotGzip { .. } | IngestError::Empty { .. }) =
        &result
    {
        // A broken download must not be reused: drop it so a retry downloads again.
        let _ = std::fs::remove_file(&file);
    }
    result
}

fn ingest_file(
    db: &Path,
    file: &Path,
    date: Option<&str>,
    progress: &dyn Progress,
) -> Result<IngestReport, IngestError> {
    let started = Instant::now();
    let mut store = Store::open(db)?;
    let day = read_day(file, date, progress)?;
    progress.event(Event::Storing);
    store.replace_day(&day, &file.display().to_string())?;
    progress.event(Event::Done { rows: day.rows });
    Ok(IngestReport {
        date: day.date.clone(),
        file: file.to_owned(),
        rows: day.rows,
        downloads: day.totals.downloads,
        skipped_rows: day.totals.skipped_rows,
        blank_lines: day.blank_lines,
        whale_rows: day.whale_row_count(),
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// Reads and aggregates one log file without touching any store (ingest's first half; also
/// what the benchmark and tests measure).
pub fn read_day(
    file: &Path,
    date: Option<&str>,
    progress: &dyn Progress,
) -> Result<DayTables, IngestError> {
    let io_err = |e: std::io::Error| IngestError::Io {
        path: file.to_owned(),
        reason: e.to_string(),
    };
    let mut f = File::open(file).map_err(io_err)?;
    let total = f.metadata().map_err(io_err)?.len();
    if total == 0 {
        return Err(IngestError::Empty {
            path: file.to_owned(),
            reason: "the file has zero bytes",
        });
    }
    let mut magic = [0u8; 2];
    let got = f.read(&mut magic).map_err(io_err)?;
    let gzip = got == 2 && magic == [0x1f, 0x8b];
    let named_gz = file
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("gz"));
    if named_gz && !gzip {
        return Err(IngestError::NotGzip {
            path: file.to_owned(),
        });
    }
    let f = File::open(file).map_err(io_err)?;
    let consumed = Arc::new(AtomicU64::new(0));
    let counting = Counting {
        inner: f,
        n: consumed.clone(),
    };

    let (tx, rx) = sync_channel::<std::io::Result<Batch>>(4);
    let (free_tx, free_rx) = sync_channel::<Batch>(8);
    std::thread::scope(|s| {
        s.spawn(move || {
            if gzip {
                pump(Gunzip::new(counting), tx, free_rx);
            } else {
                pump(counting, tx, free_rx);
            }
        });
        // `consume` owns the receiver: on error it is dropped on return, which stops the reader.
        consume(file, date, rx, free_tx, &consumed, total, progress)
    })
}

fn consume(
    file: &Path,
    date: Option<&str>,
    rx: Receiver<std::io::Result<Batch>>,
    free_tx: SyncSender<Batch>,
    consumed: &AtomicU64,
    total: u64,
    progress: &dyn Progress,
) -> Result<DayTables, IngestError> {
    let mut parser = Parser::new(file, date);
    let mut last = Instant::now();
    for msg in rx {
        let batch = msg.map_err(|e| IngestError::Gzip {
            path: file.to_owned(),
            line: parser.line,
            reason: describe_inflate_error(&e),
        })?;
        parser.batch(&batch)?;
        let _ = free_tx.try_send(batch);
        if last.elapsed() >= Duration::from_millis(100) {
            last = Instant::now();
            let bytes = consumed.load(Ordering::Relaxed);
            progress.event(Event::Parsing {
                bytes,
                total: Some(total),
                rows: parser.builder.rows(),
            });
        }
    }
    progress.event(Event::Parsing {
        bytes: total,
        total: Some(total),
        rows: parser.builder.rows(),
    });
    parser.finish()
}

fn describe_inflate_error(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::UnexpectedEof => "is truncated (unexpected end of file)".to_owned(),
        _ => format!("is corrupt: {e}"),
    }
}
