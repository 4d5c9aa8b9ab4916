//! Preparing a run directory (created, or replaced with `--overwrite-output`; the recording and
//! its POST bodies copied in) and writing its files whole or not at all.

use crate::recording::Recording;
use std::path::Path;

/// A run directory that cannot be prepared; says which path and what was being done.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    /// It exists and `--overwrite-output` was not given.
    #[error("output directory {} already exists (use --overwrite-output)", .0.display())]
    Exists(std::path::PathBuf),
    /// A file operation failed.
    #[error("{doing} {}: {err}", path.display())]
    Io {
        /// `removing`, `creating`, `copying`.
        doing: &'static str,
        /// The path.
        path: std::path::PathBuf,
        /// What the OS said.
        err: std::io::Error,
    },
}

/// An I/O error while `doing` something to `path`.
fn io_err<'a>(doing: &'static str, path: &'a Path) -> impl Fn(std::io::Error) -> OutputError + 'a {
    move |err| OutputError::Io {
        doing,
        path: path.to_path_buf(),
        err,
    }
}

/// Creates the output directory; an existing one is an error unless `overwrite`.
pub fn prepare_dir(dir: &Path, overwrite: bool) -> Result<(), OutputError> {
    if dir.exists() {
        if !overwrite {
            return Err(OutputError::Exists(dir.to_path_buf()));
        }
        std::fs::remove_dir_all(dir).map_err(io_err("removing", dir))?;
    }
    std::fs::create_dir_all(dir.join("sessions")).map_err(io_err("creating", dir))
}

/// Copies recording.log and the POST body files it names into the run directory.
pub fn copy_recording(rec: &Recording, dir: &Path) -> Result<(), OutputError> {
    std::fs::copy(&rec.path, dir.join("recording.log")).map_err(io_err("copying", &rec.path))?;
    for ev in &rec.events {
        if let Some(src) = &ev.datafile {
            if let Some(name) = src.file_name() {
                std::fs::copy(src, dir.join(name)).map_err(io_err("copying", src))?;
            }
        }
    }
    Ok(())
}

/// Writes `bytes` to `path` whole or not at all: into a hidden temp file next to it, renamed
/// into place (the temp file is removed when the write fails).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.tmp"));
    let written = std::fs::write(&tmp, bytes).and_then(|()| std::fs::rename(&tmp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}
