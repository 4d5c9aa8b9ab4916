//! The reading thread: file → (inflate) → batches of whole lines with their commas found and,
//! where it can, their numbers decoded, sent to the parsing thread over a bounded channel.

use std::fs::File;
use std::io::Read;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender};
use std::sync::Arc;

use super::MAX_LINE;
use crate::day::key_hash;
use crate::{csv, parse};

/// Bytes read per batch (plus the carried partial line).
const CHUNK: usize = 512 * 1024;

/// A run of whole lines of text and where its lines and separators are.
///
/// The reader thread cuts the text at line ends and finds every line's commas, so the parsing
/// thread only decodes fields: splitting was a third of that thread's time, and the inflating
/// thread had room for it (2 cores: inflate ~1/3 of the work, parse+aggregate ~2/3).
#[derive(Default)]
pub(super) struct Batch {
    pub text: Vec<u8>,
    /// Bytes of `text` in use.
    pub len: usize,
    pub lines: Vec<LineIx>,
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
pub(super) struct LineIx {
    pv_hash: u64,
    ip_id: u64,
    pub start: u32,
    pub end: u32,
    secs: u32,
    pub commas: [u8; 9],
    pub fast: bool,
}

const _: () = assert!(std::mem::size_of::<LineIx>() == 40);

/// `LineIx::secs` when the numbers were not decoded.
const NO_NUMS: u32 = u32::MAX;

impl LineIx {
    /// The decoded numbers, if the reader could decode them.
    #[inline]
    pub fn nums(&self) -> Option<Numbers> {
        (self.secs != NO_NUMS).then_some(Numbers {
            secs: self.secs,
            ip_id: self.ip_id,
            pv_hash: self.pv_hash,
        })
    }
}

impl Batch {
    /// Indexes `text` (whole lines; the last one may lack its newline at end of file).
    fn index(&mut self) {
        let (text, lines) = (&self.text[..self.len], &mut self.lines);
        lines.clear();
        csv::index_lines(text, |start, end, commas, n| {
            push_line(lines, text, start, end, commas, n)
        });
    }
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
pub(super) struct Numbers {
    pub secs: u32,
    pub ip_id: u64,
    /// `day::key_hash` of package through version (the interner's key).
    pub pv_hash: u64,
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
        pv_hash: key_hash(field(c[5], c[7] as usize)),
    })
}

/// Where the parser takes its batches from: the reading thread's channel, or a `Pump` run on the
/// parser's own thread.
pub(super) trait Batches {
    /// The next batch of lines (or the read error that ends the input); `None` at the end.
    fn next_batch(&mut self) -> Option<std::io::Result<Batch>>;
    /// Hands a parsed batch back for its memory to be reused.
    fn recycle(&mut self, batch: Batch);
}

/// Cuts `r` into batches of whole, indexed lines. A partial last line is carried into the next
/// batch; a line is never longer than `MAX_LINE` plus one chunk here (the parser rejects it), so
/// memory stays bounded.
pub(super) struct Pump<R> {
    r: R,
    carry: Vec<u8>,
    eof: bool,
    spare: Option<Batch>,
}

impl<R: Read> Pump<R> {
    pub fn new(r: R) -> Self {
        Pump {
            r,
            carry: Vec::new(),
            eof: false,
            spare: None,
        }
    }

    /// The reading thread: every batch (or the first error) down `tx`, reusing the batches
    /// that come back on `free`.
    pub fn send_all(mut self, tx: SyncSender<std::io::Result<Batch>>, free: Receiver<Batch>) {
        loop {
            if let Ok(b) = free.try_recv() {
                self.spare = Some(b);
            }
            let Some(msg) = self.next_batch() else { return };
            let failed = msg.is_err();
            if tx.send(msg).is_err() || failed {
                return;
            }
        }
    }
}

impl<R: Read> Batches for Pump<R> {
    fn next_batch(&mut self) -> Option<std::io::Result<Batch>> {
        while !self.eof {
            let mut batch = self.spare.take().unwrap_or_default();
            // `text` keeps its length between uses (no re-zeroing); `len` is the part in use.
            let start = self.carry.len();
            if batch.text.len() < start + CHUNK {
                batch.text.resize(start + CHUNK, 0);
            }
            batch.text[..start].copy_from_slice(&self.carry);
            self.carry.clear();
            let mut n = start;
            let full = start + CHUNK;
            while n < full {
                match self.r.read(&mut batch.text[n..full]) {
                    Ok(0) => {
                        self.eof = true;
                        break;
                    }
                    Ok(k) => n += k,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => {
                        self.eof = true;
                        return Some(Err(e));
                    }
                }
            }
            batch.len = n;
            if !self.eof {
                match memchr::memrchr(b'\n', &batch.text[..n]) {
                    Some(nl) => {
                        self.carry.extend_from_slice(&batch.text[nl + 1..n]);
                        batch.len = nl + 1;
                    }
                    // No line end yet: read on, unless the line is already too long to be a row.
                    None if n <= MAX_LINE => {
                        self.carry.extend_from_slice(&batch.text[..n]);
                        self.spare = Some(batch);
                        continue;
                    }
                    None => {}
                }
            }
            if batch.len == 0 {
                self.spare = Some(batch);
                continue;
            }
            batch.index();
            return Some(Ok(batch));
        }
        None
    }

    fn recycle(&mut self, batch: Batch) {
        self.spare = Some(batch);
    }
}

/// The parser's end of the reading thread's channel.
pub(super) struct Received {
    pub rx: Receiver<std::io::Result<Batch>>,
    pub free_tx: SyncSender<Batch>,
}

impl Batches for Received {
    fn next_batch(&mut self) -> Option<std::io::Result<Batch>> {
        self.rx.recv().ok()
    }

    fn recycle(&mut self, batch: Batch) {
        let _ = self.free_tx.try_send(batch);
    }
}

/// Counts bytes read from the file, for the progress bar.
pub(super) struct Counting {
    pub inner: File,
    pub n: Arc<AtomicU64>,
}

impl Read for Counting {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let k = self.inner.read(buf)?;
        self.n.fetch_add(k as u64, Ordering::Relaxed);
        Ok(k)
    }
}
