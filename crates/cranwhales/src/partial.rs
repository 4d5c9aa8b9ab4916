//! Partial downloads: the temporary files a download writes before it is renamed into the cache.
//!
//! They must not outlive the download. A failed download removes its own; `remove_on_signal`
//! makes SIGINT/SIGTERM remove those in flight before the process dies as it would have; and
//! `remove_stale` removes, at the next download, those left by a process killed outright (kill -9).

use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, Ordering};

/// Downloads in flight at once that a signal can clean up (more still work; their file is then
/// left for `remove_stale`).
const SLOTS: usize = 32;

static IN_FLIGHT: [AtomicPtr<libc::c_char>; SLOTS] =
    [const { AtomicPtr::new(std::ptr::null_mut()) }; SLOTS];

/// Whether `remove_on_signal` ran: only then are partial files registered.
static INSTALLED: AtomicBool = AtomicBool::new(false);

/// A temporary name next to `dest`, unique per process and call, never matching a cache entry:
/// `.{file}.{pid}.{n}.part`.
pub fn temp_name(dest: &Path) -> PathBuf {
    static N: AtomicU64 = AtomicU64::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    dest.with_file_name(format!(
        ".{}.{}.{n}.part",
        file_name(dest),
        std::process::id()
    ))
}

fn file_name(p: &Path) -> &str {
    p.file_name().and_then(|n| n.to_str()).unwrap_or("download")
}

/// A partial file registered for removal on SIGINT/SIGTERM while it lives; dropping it
/// unregisters it (and the caller removes or renames the file).
pub struct Guard {
    slot: Option<usize>,
}

impl Guard {
    /// Registers `path` when the signal handler is installed (the CLI); a no-op otherwise.
    pub fn new(path: &Path) -> Guard {
        if !INSTALLED.load(Ordering::Acquire) {
            return Guard { slot: None };
        }
        let Ok(c) = CString::new(path.as_os_str().as_encoded_bytes()) else {
            return Guard { slot: None };
        };
        let ptr = c.into_raw();
        for (i, s) in IN_FLIGHT.iter().enumerate() {
            if s.compare_exchange(
                std::ptr::null_mut(),
                ptr,
                Ordering::AcqRel,
                Ordering::Relaxed,
            )
            .is_ok()
            {
                return Guard { slot: Some(i) };
            }
        }
        // SAFETY: `ptr` came from `into_raw` above and was never shared.
        drop(unsafe { CString::from_raw(ptr) });
        Guard { slot: None }
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if let Some(i) = self.slot {
            // The path's bytes are deliberately leaked (~100 B a download, CLI only): a handler
            // running on another thread may still be reading them, and must never see freed memory.
            IN_FLIGHT[i].store(std::ptr::null_mut(), Ordering::Release);
        }
    }
}

/// Installs SIGINT and SIGTERM handlers that unlink the registered partial files, then let the
/// signal kill the process as it would have (exit status unchanged). For the CLI only: `serve`
/// handles its signals itself (drain) and relies on `remove_stale`.
pub fn remove_on_signal() {
    extern "C" fn handler(sig: libc::c_int) {
        for s in &IN_FLIGHT {
            let p = s.load(Ordering::Acquire);
            if !p.is_null() {
                // SAFETY: unlink is async-signal-safe; `p` is a NUL-terminated path that is never
                // freed (see `Guard::drop`).
                unsafe { libc::unlink(p) };
            }
        }
        // SAFETY: restoring the default action and re-raising is async-signal-safe.
        unsafe {
            libc::signal(sig, libc::SIG_DFL);
            libc::raise(sig);
        }
    }
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: installing a handler that only calls async-signal-safe functions.
        unsafe { libc::signal(sig, handler as *const () as libc::sighandler_t) };
    }
    INSTALLED.store(true, Ordering::Release);
}

/// Removes partial files of `dest` (`.{file}.{pid}.{n}.part`) whose process is gone; returns how
/// many. A live process's partial file (another ingest downloading the same day) is kept.
pub fn remove_stale(dest: &Path) -> usize {
    let Some(dir) = dest.parent() else { return 0 };
    let prefix = format!(".{}.", file_name(dest));
    let Ok(entries) = std::fs::read_dir(if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    }) else {
        return 0;
    };
    let mut removed = 0;
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(rest) = name
            .to_str()
            .and_then(|n| n.strip_prefix(&prefix))
            .and_then(|r| r.strip_suffix(".part"))
        else {
            continue;
        };
        let Some(pid) = rest.split('.').next().and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        if pid != std::process::id()
            && !process_alive(pid)
            && std::fs::remove_file(e.path()).is_ok()
        {
            removed += 1;
        }
    }
    removed
}

fn process_alive(pid: u32) -> bool {
    Path::new("/proc").join(pid.to_string()).exists()
}
