//! A body held between a client and a worker: in memory up to a per-body limit (and while the
//! app's memory budget lasts), in an unnamed temporary file beyond it, read back in order.
//!
//! Why a budget shared by all bodies: a per-body limit alone multiplies by the number of
//! clients; with the shared `--buffer-memory` the memory of all buffered bodies together is
//! bounded whatever the clients do, and a body that finds the budget spent goes to disk at once.
//! The file is opened `O_TMPFILE` (no name, gone when closed), so nothing is left behind however
//! manifold stops.

use std::collections::VecDeque;
use std::fs::File;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::Bytes;

/// Largest piece read back from the file at once.
const READ_PIECE: u64 = 64 * 1024;

/// The memory all buffered bodies of one app may hold together (`--buffer-memory`).
#[derive(Debug)]
pub struct Budget {
    left: AtomicU64,
}

impl Budget {
    /// A budget of `bytes`.
    pub fn new(bytes: u64) -> Budget {
        Budget {
            left: AtomicU64::new(bytes),
        }
    }

    /// Takes `n` bytes if that many are left.
    fn take(&self, n: u64) -> bool {
        self.left
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |l| l.checked_sub(n))
            .is_ok()
    }

    fn give(&self, n: u64) {
        self.left.fetch_add(n, Ordering::AcqRel);
    }

    /// Bytes not held by any body now.
    #[cfg(test)]
    pub fn left(&self) -> u64 {
        self.left.load(Ordering::Acquire)
    }
}

/// One buffered body: pieces in memory first, then a temporary file; read in the order written.
pub(super) struct Spool {
    mem: VecDeque<Bytes>,
    mem_len: u64,
    mem_limit: u64,
    budget: Arc<Budget>,
    file: Option<File>,
    written: u64,
    read: u64,
}

impl Spool {
    /// An empty spool keeping at most `mem_limit` bytes in memory.
    pub(super) fn new(budget: Arc<Budget>, mem_limit: u64) -> Spool {
        Spool {
            mem: VecDeque::new(),
            mem_len: 0,
            mem_limit,
            budget,
            file: None,
            written: 0,
            read: 0,
        }
    }

    /// Bytes written and not read yet.
    pub(super) fn unread(&self) -> u64 {
        self.mem_len + (self.written - self.read)
    }

    /// Whether every byte is in memory (no file was needed).
    pub(super) fn in_memory(&self) -> bool {
        self.file.is_none()
    }

    /// Adds a piece at the end: to memory while the file holds nothing unread and both limits
    /// allow it, else to the file.
    pub(super) fn push(&mut self, b: Bytes) -> std::io::Result<()> {
        let n = b.len() as u64;
        if n == 0 {
            return Ok(());
        }
        let file_empty = self.written == self.read;
        if file_empty && self.mem_len + n <= self.mem_limit && self.budget.take(n) {
            self.mem_len += n;
            self.mem.push_back(b);
            return Ok(());
        }
        let file = match &mut self.file {
            Some(f) => f,
            None => self.file.insert(temp_file()?),
        };
        file.write_all_at(&b, self.written)?;
        self.written += n;
        Ok(())
    }

    /// The next piece, in order; `None` when everything written has been read.
    pub(super) fn pop(&mut self) -> std::io::Result<Option<Bytes>> {
        if let Some(b) = self.mem.pop_front() {
            let n = b.len() as u64;
            self.mem_len -= n;
            self.budget.give(n);
            return Ok(Some(b));
        }
        let Some(file) = &self.file else {
            return Ok(None);
        };
        if self.read == self.written {
            return Ok(None);
        }
        let n = (self.written - self.read).min(READ_PIECE);
        let mut buf = vec![0u8; n as usize];
        file.read_exact_at(&mut buf, self.read)?;
        self.read += n;
        if self.read == self.written {
            // All read: the file's space is given back and it is written from its start again.
            file.set_len(0)?;
            self.read = 0;
            self.written = 0;
        }
        Ok(Some(Bytes::from(buf)))
    }

    /// Everything left, as one piece (for a body that stayed in memory).
    pub(super) fn take_all(&mut self) -> std::io::Result<Bytes> {
        if self.mem.len() == 1 && self.in_memory() {
            let b = self.mem.pop_front().expect("one piece");
            self.budget.give(self.mem_len);
            self.mem_len = 0;
            return Ok(b);
        }
        let mut out = Vec::with_capacity(self.unread() as usize);
        while let Some(b) = self.pop()? {
            out.extend_from_slice(&b);
        }
        Ok(Bytes::from(out))
    }
}

impl Drop for Spool {
    fn drop(&mut self) {
        self.budget.give(self.mem_len);
    }
}

/// An unnamed file in the temporary directory (`$TMPDIR`, else /tmp), readable only by us.
fn temp_file() -> std::io::Result<File> {
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .mode(0o600)
        .custom_flags(libc::O_TMPFILE)
        .open(std::env::temp_dir())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pieces come back in order across memory and file, the budget is given back, and the
    /// memory limit holds.
    #[test]
    fn in_order_across_memory_and_file() {
        let budget = Arc::new(Budget::new(10));
        let mut s = Spool::new(budget.clone(), 8);
        for p in ["abcd", "efgh", "ijkl", "mn"] {
            s.push(Bytes::from(p)).unwrap();
        }
        assert!(!s.in_memory());
        assert_eq!(budget.left(), 2);
        assert_eq!(s.pop().unwrap().unwrap(), "abcd");
        // The file holds unread bytes: a new piece goes after them, not to memory.
        s.push(Bytes::from("op")).unwrap();
        let mut rest = Vec::new();
        while let Some(b) = s.pop().unwrap() {
            rest.extend_from_slice(&b);
        }
        assert_eq!(rest, b"efghijklmnop");
        assert_eq!(budget.left(), 10);
        s.push(Bytes::from("q")).unwrap();
        drop(s);
        assert_eq!(budget.left(), 10);
    }
}
