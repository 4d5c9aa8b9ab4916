//! Partial downloads: the temporary files a download writes before it is renamed into the cache.
//!
//! They must not outlive the download. A failed download removes its own; `remove_on_signal`
//! makes SIGINT/SIGTERM remove those in flight before the process dies as it would have;
//! `remove_stale_in` removes, when `ingest` or `serve` starts, those left by a process that is
//! gone (kill -9, or `serve`'s drain timeout cutting a fetch), and `remove_stale` those of a day
//! at its next download.

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
    remove_where(dir, &format!(".{}.", file_name(dest)), stale)
}

/// Removes every partial file in the cache directory `dir` whose writer is gone (killed with
/// `kill -9`, or cut by `serve`'s drain timeout), whatever its day: `ingest` and `serve` call it
/// at start, so a day nobody asks for again does not keep one forever. Returns how many.
pub fn remove_stale_in(dir: &Path) -> usize {
    remove_where(dir, ".", stale)
}

/// Removes this process's own partial files in `dir`: `ingest --follow` stopping on a signal
/// while a download runs (the download is abandoned, not finished). Returns how many.
pub fn remove_own_in(dir: &Path) -> usize {
    remove_where(dir, ".", |pid, _| pid == std::process::id())
}

/// Whether a partial file written by `pid` is stale: its writer is another process, now gone.
fn stale(pid: u32, file: &Path) -> bool {
    pid != std::process::id() && writer_gone(pid, file)
}

/// [`remove_stale_in`] for a command starting (`ingest`, `serve`): a line on stderr says how many
/// were removed, when any were.
pub fn remove_stale_at_start(dir: &Path) {
    let n = remove_stale_in(dir);
    if n > 0 {
        eprintln!(
            "cranwhales: {}: removed {n} partial download{} left by a process that is gone",
            dir.display(),
            if n == 1 { "" } else { "s" }
        );
    }
}

/// Removes `{prefix}…{pid}.{n}.part` files of `dir` for which `remove(pid, path)` says so.
fn remove_where(dir: &Path, prefix: &str, remove: impl Fn(u32, &Path) -> bool) -> usize {
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
            .and_then(|n| n.strip_prefix(prefix))
            .and_then(|r| r.strip_suffix(".part"))
        else {
            continue;
        };
        // `{file}.{pid}.{n}`: the pid is the second field from the end.
        let mut fields = rest.rsplit('.');
        let (Some(_n), Some(pid)) = (fields.next(), fields.next()) else {
            continue;
        };
        let Ok(pid) = pid.parse::<u32>() else {
            continue;
        };
        if remove(pid, &e.path()) && std::fs::remove_file(e.path()).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// Whether the process that wrote `file` is gone: no process `pid`, or one that started after
/// the file was last written (the pid was reused by an unrelated process).
fn writer_gone(pid: u32, file: &Path) -> bool {
    let Some(started) = process_start(pid) else {
        return !Path::new("/proc").join(pid.to_string()).exists();
    };
    let written = std::fs::metadata(file).and_then(|m| m.modified());
    // Boot time is known to the second: a margin of 2 s keeps a live writer's file.
    written.is_ok_and(|w| w + std::time::Duration::from_secs(2) < started)
}

/// When process `pid` started (Linux: `/proc/PID/stat` field 22, clock ticks after boot), or
/// `None` if it does not exist or cannot be told.
fn process_start(pid: u32) -> Option<std::time::SystemTime> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name (which may hold spaces): state is field 3, starttime 22.
    let after = &stat[stat.rfind(')')? + 1..];
    let ticks: u64 = after.split_whitespace().nth(19)?.parse().ok()?;
    let boot: u64 = std::fs::read_to_string("/proc/stat")
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("btime "))?
        .trim()
        .parse()
        .ok()?;
    // SAFETY: sysconf has no preconditions.
    let hz = u64::try_from(unsafe { libc::sysconf(libc::_SC_CLK_TCK) })
        .ok()?
        .max(1);
    let since_epoch = std::time::Duration::from_secs(boot)
        + std::time::Duration::from_millis(ticks.saturating_mul(1000) / hz);
    Some(std::time::UNIX_EPOCH + since_epoch)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_started_before_now_and_after_boot() {
        let started = process_start(std::process::id()).expect("/proc/self/stat");
        let now = std::time::SystemTime::now();
        assert!(started <= now + std::time::Duration::from_secs(2));
        assert!(now.duration_since(started).unwrap() < std::time::Duration::from_secs(24 * 3600));
        assert!(process_start(u32::MAX).is_none());
    }
}
