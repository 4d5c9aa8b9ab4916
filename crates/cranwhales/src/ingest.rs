//! Getting a day into the store: read (and inflate) the log on one thread, split and aggregate
//! rows on the calling thread, then write the day's tables in one transaction.
//!
//! One pass, bounded memory: the file is streamed in 512 KiB chunks through a channel of four;
//! the decompressed text is never held whole (see `day` for what memory grows with).
//! Nothing is written to the store until the whole file has been read and checked, so bad input
//! leaves the store as it was.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::day::{DayBuilder, DayTables, RowError};
use crate::inflate::Gunzip;
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
/// How many lines ahead the parser prefetches a row's interner slot and ip accumulator.
const PREFETCH_AHEAD: usize = 4;
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

/// A run of whole lines of text and where its lines and separators are.
///
/// The reader thread cuts the text at line ends and finds every line's commas, so the parsing
/// thread only decodes fields: splitting was a third of that thread's time, and the inflating
/// thread had room for it (2 cores: inflate ~1/3 of the work, parse+aggregate ~2/3).
#[derive(Default)]
struct Batch {
    text: Vec<u8>,
    /// Bytes of `text` in use.
    len: usize,
    lines: Vec<LineIx>,
}

/// One line of a batch: `[start, end)` without the newline. When the line has exactly 9 commas,
/// all within 255 bytes of its start, `commas` holds their offsets from `start` and `fast` is
/// set; otherwise the parser splits the line carefully. When the reader thread could also decode
/// the line's numbers (moving that work off the busier parsing thread), `secs != NO_NUMS`.
///
/// Kept to 40 bytes: at 88 bytes (absolute u32 offsets, `Option<Numbers>`) the index was larger
/// than the text it describes, and every byte of it crosses from the reading core to the parsing
/// one.
#[derive(Clone, Copy)]
struct LineIx {
    pv_hash: u64,
    ip_id: u64,
    start: u32,
    end: u32,
    secs: u32,
    commas: [u8; 9],
    fast: bool,
}

const _: () = assert!(std::mem::size_of::<LineIx>() == 40);

/// `LineIx::secs` when the numbers were not decoded.
const NO_NUMS: u32 = u32::MAX;

impl LineIx {
    /// The decoded numbers, if the reader could decode them.
    #[inline]
    fn nums(&self) -> Option<Numbers> {
        (self.secs != NO_NUMS).then_some(Numbers {
            secs: self.secs,
            ip_id: self.ip_id,
            pv_hash: self.pv_hash,
        })
    }
}

impl Batch {
    /// Indexes `text` (whole lines; the last one may lack its newline at end of file).
    ///
    /// Scans 64 bytes at a time into bit masks of commas and newlines, then walks the set bits:
    /// a comma every ~8 bytes made `memchr2_iter` stop and restart its SIMD loop at every hit
    /// (18% of all ingest CPU on the 10M-row bench day; this loop: see `masks64`).
    fn index(&mut self) {
        let (text, lines) = (&self.text[..self.len], &mut self.lines);
        lines.clear();
        let mut from = 0usize;
        let mut commas = [0u32; 9];
        let mut n = 0usize;
        let mut base = 0usize;
        let mut blocks = text.chunks_exact(64);
        for block in &mut blocks {
            let (mc, mn) = masks64(block.try_into().expect("64 bytes"));
            let mut m = mc | mn;
            while m != 0 {
                let bit = m.trailing_zeros();
                m &= m - 1;
                let pos = base + bit as usize;
                if mn >> bit & 1 == 0 {
                    if n < 9 {
                        commas[n] = pos as u32;
                    }
                    n += 1;
                } else {
                    push_line(lines, text, from, pos, &commas, n);
                    n = 0;
                    from = pos + 1;
                }
            }
            base += 64;
        }
        for (i, &b) in blocks.remainder().iter().enumerate() {
            let pos = base + i;
            if b == b',' {
                if n < 9 {
                    commas[n] = pos as u32;
                }
                n += 1;
            } else if b == b'\n' {
                push_line(lines, text, from, pos, &commas, n);
                n = 0;
                from = pos + 1;
            }
        }
        if from < text.len() {
            push_line(lines, text, from, text.len(), &commas, n);
        }
    }
}

/// Bit masks (bit i = byte i) of the commas and of the newlines in a 64-byte block.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn masks64(block: &[u8; 64]) -> (u64, u64) {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_set1_epi8,
    };
    let (mut mc, mut mn) = (0u64, 0u64);
    // SAFETY: SSE2 is part of the x86_64 baseline; each load reads 16 bytes inside `block`.
    unsafe {
        let (comma, nl) = (_mm_set1_epi8(b',' as i8), _mm_set1_epi8(b'\n' as i8));
        for i in 0..4 {
            let v = _mm_loadu_si128(block.as_ptr().add(i * 16).cast::<__m128i>());
            let c = _mm_movemask_epi8(_mm_cmpeq_epi8(v, comma)) as u32 & 0xffff;
            let l = _mm_movemask_epi8(_mm_cmpeq_epi8(v, nl)) as u32 & 0xffff;
            mc |= u64::from(c) << (i * 16);
            mn |= u64::from(l) << (i * 16);
        }
    }
    (mc, mn)
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn masks64(block: &[u8; 64]) -> (u64, u64) {
    let (mut mc, mut mn) = (0u64, 0u64);
    for (i, &b) in block.iter().enumerate() {
        mc |= u64::from(b == b',') << i;
        mn |= u64::from(b == b'\n') << i;
    }
    (mc, mn)
}

#[inline]
fn push_line(
    lines: &mut Vec<LineIx>,
    text: &[u8],
    start: usize,
    end: usize,
    commas: &[u32; 9],
    n: usize,
) {
    let mut ix = LineIx {
        pv_hash: 0,
        ip_id: 0,
        start: start as u32,
        end: end as u32,
        secs: NO_NUMS,
        commas: [0; 9],
        fast: false,
    };
    if n == 9 && (commas[8] as usize) - start <= usize::from(u8::MAX) {
        ix.fast = true;
        for (o, &c) in ix.commas.iter_mut().zip(commas) {
            *o = (c as usize - start) as u8;
        }
        if let Some(nums) = numbers(text, end, commas) {
            ix.secs = nums.secs;
            ix.ip_id = nums.ip_id;
            ix.pv_hash = nums.pv_hash;
        }
    }
    lines.push(ix);
}

/// The decoded time and ip_id of a line with 9 commas (size is decoded by the parser).
#[derive(Clone, Copy)]
struct Numbers {
    secs: u32,
    ip_id: u64,
    /// `day::key_hash` of package through version (the interner's key).
    pv_hash: u64,
}

/// Decodes the numbers of a line whose commas are known; `None` when any is malformed (the
/// parsing thread then decodes the line itself, which finds and reports the error in order).
/// Measured (perf, 10M-row bench day): this moved the parsing thread from 62% to 52% of all
/// ingest CPU (reader 38% -> 48%), wall ~8% lower.
#[inline]
fn numbers(text: &[u8], end: usize, c: &[u32; 9]) -> Option<Numbers> {
    let field = |a: u32, b: usize| text.get(a as usize + 1..b).unwrap_or_default();
    let end = if text.get(end.wrapping_sub(1)) == Some(&b'\r') {
        end - 1
    } else {
        end
    };
    Some(Numbers {
        secs: parse::seconds(field(c[0], c[1] as usize))?,
        ip_id: parse::uint_at(text, c[8] as usize + 1, end).filter(|&v| v <= i64::MAX as u64)?,
        pv_hash: crate::day::key_hash(field(c[5], c[7] as usize)),
    })
}

/// Reads `r` to the end, sending batches of whole, indexed lines (or the first error) down `tx`.
/// A partial last line is carried into the next batch; a line is never longer than `MAX_LINE`
/// plus one chunk here (the parser rejects it), so memory stays bounded.
fn pump(mut r: impl Read, tx: SyncSender<std::io::Result<Batch>>, free: Receiver<Batch>) {
    let mut carry: Vec<u8> = Vec::new();
    let mut eof = false;
    while !eof {
        let mut batch = free.try_recv().unwrap_or_default();
        // `text` keeps its length between uses (no re-zeroing); `len` is the part in use.
        let start = carry.len();
        if batch.text.len() < start + CHUNK {
            batch.text.resize(start + CHUNK, 0);
        }
        batch.text[..start].copy_from_slice(&carry);
        carry.clear();
        let mut n = start;
        let full = start + CHUNK;
        while n < full {
            match r.read(&mut batch.text[n..full]) {
                Ok(0) => {
                    eof = true;
                    break;
                }
                Ok(k) => n += k,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    let _ = tx.send(Err(e));
                    return;
                }
            }
        }
        batch.len = n;
        if !eof {
            match memchr::memrchr(b'\n', &batch.text[..n]) {
                Some(nl) => {
                    carry.extend_from_slice(&batch.text[nl + 1..n]);
                    batch.len = nl + 1;
                }
                // No line end yet: read on, unless the line is already too long to be a row.
                None if n <= MAX_LINE => {
                    carry.extend_from_slice(&batch.text[..n]);
                    continue;
                }
                None => {}
            }
        }
        if batch.len == 0 {
            continue;
        }
        batch.index();
        if tx.send(Ok(batch)).is_err() {
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

/// Turns indexed lines into rows of the day.
struct Parser<'a> {
    path: &'a Path,
    line: u64,
    builder: DayBuilder,
}

impl<'a> Parser<'a> {
    fn new(path: &'a Path, date: Option<&str>) -> Self {
        Parser {
            path,
            line: 0,
            builder: DayBuilder::new(date),
        }
    }

    fn batch(&mut self, b: &Batch) -> Result<(), IngestError> {
        for (k, ix) in b.lines.iter().enumerate() {
            if let Some(n) = b.lines.get(k + PREFETCH_AHEAD).and_then(LineIx::nums) {
                self.builder.prefetch(n.pv_hash, n.ip_id);
            }
            let line = &b.text[ix.start as usize..ix.end as usize];
            if ix.fast && self.line > 0 {
                self.row_at_commas(line, &ix.commas, ix.nums())?;
            } else {
                self.line(line)?;
            }
        }
        Ok(())
    }

    /// Any line, split carefully (header, blank, unusual or bad lines).
    #[cold]
    fn line(&mut self, mut line: &[u8]) -> Result<(), IngestError> {
        self.line += 1;
        if line.len() > MAX_LINE {
            return Err(self.row_error(RowError {
                line: self.line,
                field: "row",
                problem: format!("line longer than {MAX_LINE} bytes"),
            }));
        }
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

    /// A data line whose 9 commas are known (offsets from the line's start).
    #[inline]
    fn row_at_commas(
        &mut self,
        line: &[u8],
        commas: &[u8; 9],
        nums: Option<Numbers>,
    ) -> Result<(), IngestError> {
        self.line += 1;
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let mut f: parse::Fields<'_> = [&[]; 10];
        let mut prev = 0;
        for (i, &c) in commas.iter().enumerate() {
            let c = usize::from(c);
            f[i] = line.get(prev..c).unwrap_or_default();
            prev = c + 1;
        }
        f[9] = line.get(prev..).unwrap_or_default();
        let odd = |x: &&[u8]| x.first() == Some(&b'"') && (x.len() < 2 || x[x.len() - 1] != b'"');
        if f.iter().any(odd) {
            f = parse::split(line).map_err(|e| self.split_error(e))?;
        } else if let Some(n) = nums {
            return self
                .builder
                .push_decoded(self.line, line, &f, n.secs, n.ip_id, n.pv_hash)
                .map_err(|e| self.row_error(e));
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

    fn finish(self) -> Result<DayTables, IngestError> {
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
