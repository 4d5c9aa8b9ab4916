//! Getting a day into the store: read (and inflate) the log on one thread, split and aggregate
//! rows on the calling thread, then write the day's tables in one transaction.
//!
//! One pass, bounded memory: the file is streamed in 512 KiB chunks through a channel of four;
//! the decompressed text is never held whole (see `day` for what memory grows with).
//! Nothing is written to the store until the whole file has been read and checked, so bad input
//! leaves the store as it was.

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::day::{DayBuilder, DayTables, RowError};
use crate::parse::{self, SplitError};
use crate::progress::{Event, Progress};
use crate::source::{self, SourceConfig};
use crate::store::{Store, StoreError};

/// Why a day could not be ingested. Every variant says what and where in its one-line message;
/// whichever it is, the store is unchanged.
#[derive(Debug, thiserror::Error)]
pub enum IngestError {
    /// The upstream server has no log for the date (HTTP 404).
    #[error("{url}: no log for this date upstream (HTTP 404)")]
    NotFound { url: String },
    /// The download could not start, failed, or stopped half way.
    #[error("{url}: download failed: {reason}")]
    Download { url: String, reason: String },
    /// The local file could not be opened or read.
    #[error("{}: {reason}", path.display())]
    Io { path: PathBuf, reason: String },
    /// The file is named `.gz` but does not start with the gzip magic bytes.
    #[error("{}: not a gzip file", path.display())]
    NotGzip { path: PathBuf },
    /// The gzip stream is truncated or corrupt.
    #[error("{}:{line}: gzip stream {reason}", path.display())]
    Gzip {
        path: PathBuf,
        line: u64,
        reason: String,
    },
    /// No data rows (zero bytes, or a header only).
    #[error("{}: empty log: {reason}", path.display())]
    Empty { path: PathBuf, reason: &'static str },
    /// The first line is not the expected header.
    #[error("{}:1: wrong header: expected {expected}, found {found}", path.display())]
    Header {
        path: PathBuf,
        expected: String,
        found: String,
    },
    /// A data row breaks the format (field count, number, time, date, UTF-8).
    #[error("{}:{line}: field {field}: {problem}", path.display())]
    Row {
        path: PathBuf,
        line: u64,
        field: String,
        problem: String,
    },
    /// A date argument that is not `YYYY-MM-DD`.
    #[error("{0:?} is not a date (expected YYYY-MM-DD)")]
    BadDate(String),
    /// The store could not be opened or written.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What an ingest did.
#[derive(Debug, Clone, serde::Serialize)]
pub struct IngestReport {
    pub date: String,
    /// The file read (the cache entry for a downloaded day).
    pub file: PathBuf,
    /// Data rows read (skipped ones included).
    pub rows: u64,
    pub downloads: u64,
    pub skipped_rows: u64,
    /// Empty lines, tolerated.
    pub blank_lines: u64,
    /// Rows stored for the top-100 whales.
    pub whale_rows: u64,
    pub seconds: f64,
}

const CHUNK: usize = 512 * 1024;
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
        .filter(|d| parse::valid_date(d))
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
    if !parse::valid_date(date) {
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

    let (tx, rx) = sync_channel::<std::io::Result<Vec<u8>>>(4);
    let (free_tx, free_rx) = sync_channel::<Vec<u8>>(8);
    std::thread::scope(|s| {
        s.spawn(move || {
            if gzip {
                let reader = BufReader::with_capacity(256 * 1024, counting);
                pump(flate2::bufread::MultiGzDecoder::new(reader), tx, free_rx);
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
    rx: Receiver<std::io::Result<Vec<u8>>>,
    free_tx: SyncSender<Vec<u8>>,
    consumed: &AtomicU64,
    total: u64,
    progress: &dyn Progress,
) -> Result<DayTables, IngestError> {
    let mut parser = Parser::new(file, date);
    let mut last = Instant::now();
    for msg in rx {
        let chunk = msg.map_err(|e| IngestError::Gzip {
            path: file.to_owned(),
            line: parser.line,
            reason: describe_inflate_error(&e),
        })?;
        parser.feed(&chunk)?;
        let _ = free_tx.try_send(chunk);
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

/// Reads `r` to the end in chunks, sending each (or the first error) down `tx`.
fn pump(mut r: impl Read, tx: SyncSender<std::io::Result<Vec<u8>>>, free: Receiver<Vec<u8>>) {
    loop {
        let mut buf = free.try_recv().unwrap_or_default();
        buf.resize(CHUNK, 0);
        let mut n = 0;
        while n < CHUNK {
            match r.read(&mut buf[n..]) {
                Ok(0) => break,
                Ok(k) => n += k,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    let _ = tx.send(Err(e));
                    return;
                }
            }
        }
        if n == 0 {
            return;
        }
        buf.truncate(n);
        if tx.send(Ok(buf)).is_err() {
            return;
        }
    }
}

/// Counts bytes read from the file, for the progress bar.
struct Counting {
    inner: File,
    n: Arc<AtomicU64>,
}

impl Read for Counting {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let k = self.inner.read(buf)?;
        self.n.fetch_add(k as u64, Ordering::Relaxed);
        Ok(k)
    }
}

/// Turns chunks of text into lines (carrying a partial line across chunks) and lines into rows.
struct Parser<'a> {
    path: &'a Path,
    line: u64,
    pending: Vec<u8>,
    builder: DayBuilder,
}

impl<'a> Parser<'a> {
    fn new(path: &'a Path, date: Option<&str>) -> Self {
        Parser {
            path,
            line: 0,
            pending: Vec::new(),
            builder: DayBuilder::new(date),
        }
    }

    fn feed(&mut self, chunk: &[u8]) -> Result<(), IngestError> {
        let mut start = 0;
        if !self.pending.is_empty() {
            match memchr::memchr(b'\n', chunk) {
                Some(nl) => {
                    let mut line = std::mem::take(&mut self.pending);
                    line.extend_from_slice(&chunk[..nl]);
                    self.line(&line)?;
                    line.clear();
                    self.pending = line;
                    start = nl + 1;
                }
                None => {
                    self.pending.extend_from_slice(chunk);
                    return self.check_pending();
                }
            }
        }
        // One SIMD scan for separators and newlines together; a line with exactly 9 commas takes
        // the fast path (cut at those commas), anything else goes through `parse::split`.
        let rest = &chunk[start..];
        let mut from = 0;
        let mut commas = [0usize; 9];
        let mut n = 0;
        for pos in memchr::memchr2_iter(b',', b'\n', rest) {
            if rest[pos] == b',' {
                if n < 9 {
                    commas[n] = pos - from;
                }
                n += 1;
                continue;
            }
            if n == 9 && self.line > 0 {
                self.row_at_commas(&rest[from..pos], &commas)?;
            } else {
                self.line(&rest[from..pos])?;
            }
            n = 0;
            from = pos + 1;
        }
        self.pending.extend_from_slice(&rest[from..]);
        self.check_pending()
    }

    fn check_pending(&self) -> Result<(), IngestError> {
        if self.pending.len() > MAX_LINE {
            return Err(self.row_error(RowError {
                line: self.line + 1,
                field: "row",
                problem: format!("line longer than {MAX_LINE} bytes"),
            }));
        }
        Ok(())
    }

    #[inline]
    fn line(&mut self, mut line: &[u8]) -> Result<(), IngestError> {
        self.line += 1;
        if let [rest @ .., b'\r'] = line {
            line = rest;
        }
        if self.line == 1 {
            return self.header(line);
        }
        if line.is_empty() {
            self.builder.blank_line();
            return Ok(());
        }
        let fields = parse::split(line).map_err(|e| self.split_error(e))?;
        self.builder
            .push(self.line, line, &fields)
            .map_err(|e| self.row_error(e))
    }

    /// A data line whose 9 commas are known (offsets into `line`).
    #[inline]
    fn row_at_commas(&mut self, line: &[u8], commas: &[usize; 9]) -> Result<(), IngestError> {
        self.line += 1;
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let mut f: parse::Fields<'_> = [&[]; 10];
        let mut prev = 0;
        for (i, &c) in commas.iter().enumerate() {
            f[i] = &line[prev..c];
            prev = c + 1;
        }
        f[9] = line.get(prev..).unwrap_or_default();
        let odd = |x: &&[u8]| x.first() == Some(&b'"') && (x.len() < 2 || x[x.len() - 1] != b'"');
        if f.iter().any(odd) {
            f = parse::split(line).map_err(|e| self.split_error(e))?;
        }
        self.builder
            .push(self.line, line, &f)
            .map_err(|e| self.row_error(e))
    }

    #[cold]
    fn header(&self, line: &[u8]) -> Result<(), IngestError> {
        let line = line.strip_prefix(b"\xef\xbb\xbf").unwrap_or(line);
        if parse::header_ok(line) {
            return Ok(());
        }
        let found = String::from_utf8_lossy(line);
        Err(IngestError::Header {
            path: self.path.to_owned(),
            expected: parse::HEADER.join(","),
            found: found.chars().take(120).collect(),
        })
    }

    #[cold]
    fn split_error(&self, e: SplitError) -> IngestError {
        let (field, problem) = match e {
            SplitError::FieldCount(n) => {
                ("row".to_owned(), format!("expected 10 fields, found {n}"))
            }
            SplitError::Quote(i) => (
                parse::HEADER[i.min(9)].to_owned(),
                "unbalanced quotes".to_owned(),
            ),
        };
        IngestError::Row {
            path: self.path.to_owned(),
            line: self.line,
            field,
            problem,
        }
    }

    #[cold]
    fn row_error(&self, e: RowError) -> IngestError {
        IngestError::Row {
            path: self.path.to_owned(),
            line: e.line,
            field: e.field.to_owned(),
            problem: e.problem,
        }
    }

    fn finish(mut self) -> Result<DayTables, IngestError> {
        if !self.pending.is_empty() {
            let line = std::mem::take(&mut self.pending);
            self.line(&line)?;
        }
        let path = self.path.to_owned();
        if self.line == 0 {
            return Err(IngestError::Empty {
                path,
                reason: "no header",
            });
        }
        self.builder.finish().ok_or(IngestError::Empty {
            path,
            reason: "no data rows after the header",
        })
    }
}
