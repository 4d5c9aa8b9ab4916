//! Where recording.log is written, so that a session that records nothing cannot replace a good
//! recording. The file is made as `<output>.partial` with its header when the recorder starts (a
//! place it cannot write is refused before the proxy listens) and renamed onto the output just
//! before its first event is written; from then on each event is flushed into the output as
//! before, so Ctrl-C or a crash mid-session still leaves a valid recording. A recorder stopped
//! before any event (Ctrl-C before the browser came, the browser pointed at the wrong address)
//! removes the partial file: an existing recording.log stays as it was, instead of becoming a
//! header that `surge replay` refuses ("recording has no events").

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The recording file, and until its first event the partial name it still has.
pub(super) struct Output {
    /// Open for writing, at `pending` until placed, then at the output path.
    pub file: File,
    path: PathBuf,
    pending: Option<PathBuf>,
}

impl Output {
    /// `<path>.partial`, created (replacing a stale one) with `header` written and flushed.
    pub fn create(path: &Path, header: &str) -> std::io::Result<Output> {
        let mut name = path.as_os_str().to_owned();
        name.push(".partial");
        let pending = PathBuf::from(name);
        let mut file = File::create(&pending)?;
        if let Err(e) = file
            .write_all(header.as_bytes())
            .and_then(|()| file.flush())
        {
            let _ = std::fs::remove_file(&pending);
            return Err(e);
        }
        Ok(Output {
            file,
            path: path.to_owned(),
            pending: Some(pending),
        })
    }

    /// Moves the file onto the output path (once; the open file follows it).
    pub fn place(&mut self) -> std::io::Result<()> {
        if let Some(pending) = &self.pending {
            std::fs::rename(pending, &self.path)?;
            self.pending = None;
        }
        Ok(())
    }

    /// A recording that got no event: its partial file goes, the output is left alone.
    pub fn discard(&mut self) {
        if let Some(pending) = self.pending.take() {
            let _ = std::fs::remove_file(pending);
        }
    }
}
