//! Worker temp directories: every worker process gets its own `TMPDIR` under one directory that
//! belongs to this manifold run, so nothing a worker leaves in its temp directory outlives it.
//!
//! R creates `$TMPDIR/RtmpXXXX` per process and removes it only at a clean exit; a worker that
//! manifold kills (hung, recycled, crashed, SIGKILLed at a stop) would leave it behind. The
//! layout is `$TMPDIR/manifold-<pid>-<run>/<name>` (`<name>`: `w<id>-<n>` for a worker,
//! `p<generation>-<n>` for a `--preload` parent). A worker's directory is removed once the
//! process is reaped, the run's directory when the run stops, and at start the directories of
//! manifold processes that no longer exist (a SIGKILLed manifold cleans up nothing itself),
//! like the `.part` files of gone processes in cranwhales.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Runs of this process so far (in-process runs, as the tests start, each get their own root).
static RUNS: AtomicU64 = AtomicU64::new(0);
/// The first part of a run directory's name.
const PREFIX: &str = "manifold-";

/// One run's directory; removed (with whatever is left in it) when the last holder drops it.
pub struct TempRoot {
    path: PathBuf,
    next: AtomicU64,
}

/// One worker's (or preload parent's) directory; removed when dropped, after its process was
/// reaped. Holds its root, so the root outlives every worker directory in it.
pub struct WorkerDir {
    path: PathBuf,
    _root: Arc<TempRoot>,
}

impl TempRoot {
    /// Removes the directories of manifold processes that are gone from the system temp
    /// directory (`$TMPDIR`, else `/tmp`), then creates this run's.
    ///
    /// # Errors
    /// The directory cannot be created.
    pub fn create() -> std::io::Result<Arc<TempRoot>> {
        let base = std::env::temp_dir();
        remove_stale(&base);
        let run = RUNS.fetch_add(1, Ordering::Relaxed);
        let path = base.join(format!("{PREFIX}{}-{run}", std::process::id()));
        std::fs::create_dir_all(&path)?;
        Ok(Arc::new(TempRoot {
            path,
            next: AtomicU64::new(1),
        }))
    }

    /// Where the run's directories are.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A new, empty directory named `<name>-<n>` for one process.
    ///
    /// # Errors
    /// It cannot be created (the disk is full, the root was removed from outside).
    pub fn dir(self: &Arc<Self>, name: &str) -> std::io::Result<WorkerDir> {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let path = self.path.join(format!("{name}-{n}"));
        std::fs::create_dir_all(&path)?;
        Ok(WorkerDir {
            path,
            _root: self.clone(),
        })
    }
}

/// Removes the run's directory when dropped, whoever still holds the root (a run's last step,
/// on every way out of it).
pub struct RootGuard(Arc<TempRoot>);

impl TempRoot {
    /// The guard that removes this directory at the end of the run.
    pub fn guard(self: &Arc<Self>) -> RootGuard {
        RootGuard(self.clone())
    }
}

impl Drop for RootGuard {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0.path);
    }
}

impl Drop for TempRoot {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

impl WorkerDir {
    /// The directory, for the process's `TMPDIR`.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for WorkerDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// Removes `manifold-<pid>-<run>` directories in `base` whose manifold process is gone.
fn remove_stale(base: &Path) {
    let Ok(entries) = std::fs::read_dir(base) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name.to_str().and_then(owner) else {
            continue;
        };
        if pid != std::process::id() && gone(pid) {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

/// The manifold pid in a run directory's name (`manifold-<pid>-<run>`).
fn owner(name: &str) -> Option<u32> {
    let (pid, run) = name.strip_prefix(PREFIX)?.split_once('-')?;
    run.parse::<u64>().ok()?;
    pid.parse().ok()
}

/// Whether no process has this pid (a process of another user counts as present).
fn gone(pid: u32) -> bool {
    // SAFETY: kill(2) with signal 0 only checks; no memory is touched.
    let r = unsafe { libc::kill(pid as libc::pid_t, 0) };
    r != 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
}

#[cfg(test)]
mod tests {
    use super::owner;

    #[test]
    fn run_directory_names() {
        assert_eq!(owner("manifold-4100-0"), Some(4100));
        assert_eq!(owner("manifold-4100-12"), Some(4100));
        assert_eq!(owner("manifold-4100"), None);
        assert_eq!(owner("manifold-x-1"), None);
        assert_eq!(owner("Rtmp4100-1"), None);
    }
}
