//! Getting a day into the store: read (and inflate) the log on one thread, split and aggregate
//! rows on the calling thread, then write the day's tables in one transaction. One path for every
//! caller: a [`Source`] → [`read`] → [`store_day`] ([`ingest`] is the two in a row). A batch of
//! days (`cli::ingest`) reads several days at once, each on one thread (`Threads::One`: the
//! cores are taken by the other days), and writes them from one thread through one connection;
//! the server's fetches and sample days go through its one writing connection the same way.
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
use std::sync::mpsc::sync_channel;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::day::{DayTables, Threads};
use crate::inflate::Gunzip;
use crate::progress::{Event, Progress};
use crate::source::{Source, SourceConfig};
use crate::store::{PackedDay, Store};

pub use error::IngestError;
use parser::Parser;
use reader::{Batch, Batches, Counting, Pump, Received};

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

/// A day read, checked and packed, not yet in any store: what a batch's readers hand to its one
/// writer (`store_day`).
pub struct ReadDay {
    packed: PackedDay,
    file: PathBuf,
    started: Instant,
}

impl ReadDay {
    /// The day's date.
    pub fn date(&self) -> &str {
        &self.packed.day().date
    }
}

/// Ingests one day: reads `source` (downloading it into the cache if it is a date or URL not
/// there yet) and writes it into `store` in its one transaction. The one read → store path of
/// `cranwhales ingest`, the server's on-demand fetch and its sample days.
pub fn ingest(
    store: &mut Store,
    source: &Source,
    cfg: &SourceConfig,
    progress: &dyn Progress,
) -> Result<IngestReport, IngestError> {
    let day = read(source, cfg, Threads::Two, progress)?;
    store_day(store, &day, progress)
}

/// Reads a day as `ingest` does, without storing it (a batch's readers; the server's fetch
/// before it takes the writer). A download that proves broken (not gzip, truncated, empty) is
/// dropped from the cache so a retry downloads it again.
pub fn read(
    source: &Source,
    cfg: &SourceConfig,
    threads: Threads,
    progress: &dyn Progress,
) -> Result<ReadDay, IngestError> {
    let file = source.local(cfg, progress)?;
    let result = read_file(&file, source.date().as_deref(), threads, progress);
    if let Err(IngestError::Gzip { .. } | IngestError::NotGzip { .. } | IngestError::Empty { .. }) =
        &result
    {
        if source.is_download() {
            let _ = std::fs::remove_file(&file);
        }
    }
    result
}

fn read_file(
    file: &Path,
    date: Option<&str>,
    threads: Threads,
    progress: &dyn Progress,
) -> Result<ReadDay, IngestError> {
    let started = Instant::now();
    let day = read_day(file, date, threads, progress)?;
    Ok(ReadDay {
        packed: PackedDay::new(day, threads),
        file: file.to_owned(),
        started,
    })
}

/// Writes a read day into `store` in its one transaction. (Borrowed: a batch hands the day back
/// to the thread that read it to be freed there; glibc's free of another thread's memory and the
/// reader's next allocations fighting over that arena cost a backfill ~10% more CPU.)
pub fn store_day(
    store: &mut Store,
    day: &ReadDay,
    progress: &dyn Progress,
) -> Result<IngestReport, IngestError> {
    progress.event(Event::Storing);
    (store.replace_day(&day.packed, &day.file.display().to_string())).map_err(|source| {
        IngestError::Write {
            date: day.date().to_owned(),
            source,
        }
    })?;
    let d = day.packed.day();
    progress.event(Event::Done { rows: d.rows });
    Ok(IngestReport {
        date: d.date.clone(),
        rows: d.rows,
        downloads: d.totals.downloads,
        skipped_rows: d.totals.skipped_rows,
        blank_lines: d.blank_lines,
        whale_rows: d.whale_row_count(),
        seconds: day.started.elapsed().as_secs_f64(),
        file: day.file.clone(),
    })
}

/// Reads and aggregates one local log file without packing or storing it (ingest's first half:
/// what the benchmarks and tests measure); with `Threads::Two` the file is read and inflated on a
/// second thread. `date`, when given, is the day every row must carry.
pub fn read_day(
    file: &Path,
    date: Option<&str>,
    threads: Threads,
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
    let input: Box<dyn Read + Send> = if gzip {
        Box::new(Gunzip::new(counting))
    } else {
        Box::new(counting)
    };
    let mut parser = Parser::new(file, date);
    let mut feed =
        |batches: &mut dyn Batches| consume(&mut parser, batches, &consumed, total, progress);
    match threads {
        Threads::One => feed(&mut Pump::new(input))?,
        Threads::Two => {
            let (tx, rx) = sync_channel::<std::io::Result<Batch>>(4);
            let (free_tx, free_rx) = sync_channel::<Batch>(8);
            std::thread::scope(|s| {
                s.spawn(move || Pump::new(input).send_all(tx, free_rx));
                // `feed` owns the receiver: on error it is dropped on return, which stops the
                // reader.
                feed(&mut Received { rx, free_tx })
            })?
        }
    }
    parser.finish(threads)
}

fn consume(
    parser: &mut Parser<'_>,
    batches: &mut dyn Batches,
    consumed: &AtomicU64,
    total: u64,
    progress: &dyn Progress,
) -> Result<(), IngestError> {
    let mut last = Instant::now();
    while let Some(msg) = batches.next_batch() {
        let batch = msg.map_err(|e| IngestError::Gzip {
            path: parser.path.to_owned(),
            line: parser.line,
            reason: describe_inflate_error(&e),
        })?;
        parser.batch(&batch)?;
        batches.recycle(batch);
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
    Ok(())
}

fn describe_inflate_error(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::UnexpectedEof => "is truncated (unexpected end of file)".to_owned(),
        _ => format!("is corrupt: {e}"),
    }
}
