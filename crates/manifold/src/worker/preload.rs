//! `--preload`: one parent process per app and generation loads the runtime, the packages and the
//! app once; each worker is then forked from it on request, so a new worker is ready in the time
//! a fork and a listen take, and the forks share the parent's memory copy-on-write.
//!
//! The protocol (docs/manifold.md, "Preloaded workers"): manifold writes `fork PORT` lines to the
//! parent's stdin; the parent forks, the fork serves HTTP on 127.0.0.1:PORT, and the parent
//! answers `manifold-preload forked PORT PID` on its stdout (every other line is the app's output
//! and is forwarded). EOF on stdin ends the parent; a fork ends itself when its parent is gone.
//!
//! A fork is not manifold's child: it is watched through a pidfd (`pidfd_open`) and signalled
//! through it (`pidfd_send_signal`), so a recycled pid is never hit. The parent runs in its own
//! process group with `PR_SET_PDEATHSIG` (like every worker), and the forks stay in that group:
//! stopping a parent signals the whole group, so no fork outlives it.

use std::collections::{HashMap, VecDeque};
use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::unix::AsyncFd;
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::unix::pipe;
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::{mpsc, oneshot, watch};

use super::tmpdir::WorkerDir;
use super::{describe, die_with_parent, drain, signal_group, OutputSink, Worker, WorkerError};

/// The answer line's first words.
const FORKED: &str = "manifold-preload forked ";
/// The line a parent may print once it has loaded everything (logged with the time it took).
const READY: &str = "manifold-preload ready";
/// The FIFO in a fork's directory that its output may go to.
const OUTPUT: &str = "output";
/// How long a gone fork's last output lines are waited for.
const LAST_LINES: Duration = Duration::from_millis(100);

/// A fork asked of the parent: its port, its directory and where the pid goes.
struct Request {
    port: u16,
    dir: String,
    reply: oneshot::Sender<u32>,
}

/// One running preload parent; workers of its generation hold it, and it is stopped (its whole
/// process group) once the pool and every fork of it have let it go.
pub struct Parent {
    requests: mpsc::UnboundedSender<Request>,
    handle: ParentHandle,
}

/// What the pool keeps of every parent it started, to stop it and wait for it at shutdown.
#[derive(Clone)]
pub struct ParentHandle {
    /// Its process id (and process group).
    pub pid: u32,
    /// The generation it forks workers for.
    pub generation: u64,
    stop: Arc<watch::Sender<Option<Duration>>>,
    exited: watch::Receiver<Option<String>>,
}

impl ParentHandle {
    /// Whether the parent process is still running (a dead one is replaced by the next fork).
    pub fn is_alive(&self) -> bool {
        self.exited.borrow().is_none()
    }

    /// Stops the parent and its whole group: SIGTERM, then SIGKILL after `grace`; waits until
    /// it is reaped.
    pub async fn stop_within(&self, grace: Duration) {
        self.stop.send_replace(Some(grace));
        let mut rx = self.exited.clone();
        let _ = rx.wait_for(|s| s.is_some()).await;
    }
}

/// glibc's tunable for the size from which `malloc` maps a block of its own (see
/// [`Parent::start`]).
const MMAP_THRESHOLD: &str = "MALLOC_MMAP_THRESHOLD_";

impl Parent {
    /// Starts the preload `command` of `generation` in a new process group, with its stdin and
    /// stdout as the protocol's pipes; `stop` is its stop grace time and its own directory (its
    /// `TMPDIR`, removed once it is reaped).
    ///
    /// # Errors
    /// The program cannot be executed.
    pub fn start(
        generation: u64,
        command: &[String],
        stop: (Duration, WorkerDir),
        output: &OutputSink,
    ) -> Result<Parent, WorkerError> {
        let (stop_timeout, dir) = stop;
        let mut cmd = Command::new(&command[0]);
        cmd.args(&command[1..])
            .env_remove("PORT")
            .env("TMPDIR", dir.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        // glibc raises its mmap threshold as large blocks are freed (up to 32 MB), so a parent
        // that loaded a big app serves its forks' large blocks from its own freed heap chunks,
        // and each first write copies a shared page. Kept at glibc's initial 128 KiB, large
        // blocks are mapped afresh and returned when freed: 8 forks of the Shiny app took 277 MB
        // of PSS instead of 289 (bench/manifold_preload.py's memory row, 3 rounds, quiet box).
        // A value the user set is kept.
        if std::env::var_os(MMAP_THRESHOLD).is_none() {
            cmd.env(MMAP_THRESHOLD, "131072");
        }
        die_with_parent(&mut cmd);
        let mut child = cmd.spawn().map_err(|source| WorkerError::Spawn {
            id: 0,
            program: command[0].clone(),
            source,
        })?;
        let pid = child.id().expect("fresh child has a pid");
        tracing::info!(generation, pid, "preload parent starting");
        let tail = Arc::new(Mutex::new(VecDeque::new()));
        let prefix = format!("[preload {generation}]");
        let (forked_tx, forked_rx) = mpsc::unbounded_channel();
        let mut drains = Vec::new();
        if let Some(out) = child.stdout.take() {
            let began = std::time::Instant::now();
            let on_line = move |line: &str| match parse_forked(line) {
                Some(f) => forked_tx.send(f).is_ok(),
                None if line.trim_end() == READY => {
                    let ms = began.elapsed().as_millis() as u64;
                    tracing::info!(generation, pid, load_ms = ms, "preload parent loaded");
                    true
                }
                None => false,
            };
            let (o, t, p) = (output.clone(), tail.clone(), prefix.clone());
            drains.push(tokio::spawn(drain(BufReader::new(out), p, o, t, on_line)));
        }
        if let Some(err) = child.stderr.take() {
            let (o, t) = (output.clone(), tail.clone());
            drains.push(tokio::spawn(drain(
                BufReader::new(err),
                prefix,
                o,
                t,
                |_| false,
            )));
        }
        let stdin = child.stdin.take().expect("piped stdin");
        let (requests, requests_rx) = mpsc::unbounded_channel();
        let (stop, stop_rx) = watch::channel(None);
        let (exit_tx, exited) = watch::channel(None);
        let grace = stop_timeout;
        tokio::spawn(async move {
            let parts = (child, stdin, requests_rx, forked_rx, stop_rx);
            let status = control(parts, pid, grace).await;
            for d in drains {
                let _ = tokio::time::timeout(Duration::from_secs(1), d).await;
            }
            drop(dir);
            tracing::info!(generation, pid, status = %status, "preload parent stopped");
            let _ = exit_tx.send(Some(status));
        });
        let handle = ParentHandle {
            pid,
            generation,
            stop: Arc::new(stop),
            exited,
        };
        Ok(Parent { requests, handle })
    }

    /// The handle the pool keeps.
    pub fn handle(&self) -> ParentHandle {
        self.handle.clone()
    }

    /// Asks for a fork serving `port` with `dir` as its own directory; its pid once the parent
    /// has answered.
    async fn fork(&self, port: u16, dir: String) -> Result<u32, String> {
        let (reply, rx) = oneshot::channel();
        let gone = || {
            let status = self.handle.exited.borrow().clone();
            format!(
                "preload parent {}",
                status.unwrap_or_else(|| "stopped".into())
            )
        };
        self.requests
            .send(Request { port, dir, reply })
            .map_err(|_| gone())?;
        rx.await.map_err(|_| gone())
    }
}

impl Drop for Parent {
    fn drop(&mut self) {
        // Nobody can ask it for a fork any more and every fork of it is gone: stop it with its
        // full grace time (unless a shutdown already asked with a shorter one).
        self.handle.stop.send_if_modified(|s| {
            let first = s.is_none();
            if first {
                *s = Some(Duration::MAX);
            }
            first
        });
    }
}

/// `manifold-preload forked PORT PID` → (port, pid).
fn parse_forked(line: &str) -> Option<(u16, u32)> {
    let mut words = line.trim_end().strip_prefix(FORKED)?.split(' ');
    let port = words.next()?.parse().ok()?;
    let pid = words.next()?.parse().ok()?;
    Some((port, pid))
}

type Parts = (
    Child,
    ChildStdin,
    mpsc::UnboundedReceiver<Request>,
    mpsc::UnboundedReceiver<(u16, u32)>,
    watch::Receiver<Option<Duration>>,
);

/// Owns the parent until it is reaped: passes fork requests and answers, then stops its group.
async fn control(parts: Parts, pid: u32, grace: Duration) -> String {
    let (mut child, mut stdin, mut requests, mut forked, mut stop) = parts;
    let mut pending: HashMap<u16, oneshot::Sender<u32>> = HashMap::new();
    let status = loop {
        tokio::select! {
            s = child.wait() => break Some(s),
            r = requests.recv() => {
                let Some(r) = r else { break None };
                let line = format!("fork {} {}\n", r.port, r.dir);
                if stdin.write_all(line.as_bytes()).await.is_err() {
                    break Some(child.wait().await);
                }
                pending.insert(r.port, r.reply);
            }
            Some((port, fork)) = forked.recv() => {
                let asked = pending.remove(&port);
                if asked.is_none_or(|tx| tx.send(fork).is_err()) {
                    // Its worker gave up waiting (or nobody asked): never leave it serving.
                    // SAFETY: kill(2) touches no memory; the pid is the parent's own child.
                    unsafe { libc::kill(fork as libc::pid_t, libc::SIGKILL) };
                }
            }
            _ = async { drop(stop.wait_for(|s| s.is_some()).await) } => break None,
        }
    };
    drop(stdin);
    let status = match status {
        Some(s) => s,
        None => {
            let g = stop.borrow().unwrap_or(grace).min(grace);
            signal_group(pid, libc::SIGTERM);
            match tokio::time::timeout(g, child.wait()).await {
                Ok(s) => s,
                Err(_) => {
                    signal_group(pid, libc::SIGKILL);
                    child.wait().await
                }
            }
        }
    };
    // Its forks go with it (they are in its group).
    signal_group(pid, libc::SIGKILL);
    describe(&status)
}

/// A pidfd: readable once the process has exited.
struct PidFd(AsyncFd<OwnedFd>);

impl PidFd {
    fn open(pid: u32) -> std::io::Result<PidFd> {
        // SAFETY: pidfd_open(2) returns a new fd or -1; no memory is passed.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: the fd is fresh and owned by nobody else.
        let owned = unsafe { OwnedFd::from_raw_fd(fd as i32) };
        // SAFETY: the OwnedFd stays open, and the same fd, for as long as the AsyncFd owns it.
        let fd = unsafe { AsyncFd::register_with_interest(owned, tokio::io::Interest::READABLE) };
        Ok(PidFd(fd.map_err(std::io::Error::from)?))
    }

    fn signal(&self, sig: libc::c_int) {
        // SAFETY: pidfd_send_signal(2) with no siginfo; the fd is ours.
        unsafe {
            libc::syscall(
                libc::SYS_pidfd_send_signal,
                self.0.as_raw_fd(),
                sig,
                std::ptr::null::<libc::siginfo_t>(),
                0,
            );
        }
    }

    async fn exited(&self) {
        let _ = self.0.readable().await;
    }
}

/// The fork's life as its watch task sees it: asked for, then watched until it exits.
async fn watch_fork(
    parent: &Parent,
    (port, dir): (u16, String),
    pid: &AtomicU32,
    mut stop: oneshot::Receiver<Option<Duration>>,
    grace: Duration,
) -> String {
    let forked = tokio::select! {
        f = parent.fork(port, dir) => f,
        _ = &mut stop => return "stopped before it was forked".into(),
    };
    let fork = match forked {
        Ok(p) => p,
        Err(e) => return format!("could not be forked ({e})"),
    };
    pid.store(fork, Ordering::Relaxed);
    tracing::info!(port, pid = fork, "worker forked");
    let fd = match PidFd::open(fork) {
        Ok(fd) => fd,
        // Gone already (its parent reaped it).
        Err(_) => return "exited".into(),
    };
    tokio::select! {
        _ = fd.exited() => return "exited".into(),
        g = stop => {
            let grace = g.ok().flatten().map_or(grace, |g| g.min(grace));
            fd.signal(libc::SIGTERM);
            if tokio::time::timeout(grace, fd.exited()).await.is_err() {
                fd.signal(libc::SIGKILL);
                fd.exited().await;
            }
        }
    }
    "stopped".into()
}

/// Makes the FIFO `dir/output` and opens it for reading (and writing: see [`Worker::fork`]).
fn output_fifo(dir: &Path) -> Option<pipe::Receiver> {
    let path = dir.join(OUTPUT);
    let c = CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: mkfifo(3) only reads the NUL-terminated path.
    if unsafe { libc::mkfifo(c.as_ptr(), 0o600) } != 0 {
        return None;
    }
    pipe::OpenOptions::new()
        .read_write(true)
        .open_receiver(&path)
        .ok()
}

impl Worker {
    /// A worker forked from `parent` on a free port: returned at once (pid 0 until the parent
    /// answers); its watch task asks for the fork, then reports its exit on `on_exit`. What the
    /// fork writes to `DIR/output` (a FIFO made here) is logged as `[worker N]`, like the
    /// output of any worker.
    pub(super) fn fork(
        id: u64,
        parent: Arc<Parent>,
        (stop_timeout, dir): (Duration, WorkerDir),
        output: &OutputSink,
        on_exit: impl FnOnce(String) + Send + 'static,
    ) -> Result<Worker, WorkerError> {
        let port = super::free_port().map_err(|source| WorkerError::Port { id, source })?;
        let pid = Arc::new(AtomicU32::new(0));
        let (stop_tx, stop_rx) = oneshot::channel();
        let (exit_tx, exit_rx) = watch::channel(None);
        let tail = Arc::new(Mutex::new(VecDeque::new()));
        let (o, t) = (output.clone(), tail.clone());
        let lines = output_fifo(dir.path()).map(|rx| {
            let prefix = format!("[worker {id}]");
            tokio::spawn(drain(BufReader::new(rx), prefix, o, t, |_| false))
        });
        // The rest of the protocol line: a path with a line break in it is not sent.
        let path = dir.path().display().to_string();
        let where_ = if path.contains('\n') {
            String::new()
        } else {
            path
        };
        let task_pid = pid.clone();
        tokio::spawn(async move {
            let text = watch_fork(&parent, (port, where_), &task_pid, stop_rx, stop_timeout).await;
            let _ = exit_tx.send(Some(text.clone()));
            // The parent may stop once its last fork is gone.
            drop(parent);
            on_exit(text);
            if let Some(mut lines) = lines {
                // manifold holds the FIFO open for writing too (else a fork that has not opened
                // it yet would look like one that closed it), so it never reports EOF: what the
                // fork wrote before it exited is read within this bound, then the reader stops.
                let _ = tokio::time::timeout(LAST_LINES, &mut lines).await;
                lines.abort();
            }
            drop(dir);
        });
        Ok(Worker {
            id,
            port,
            pid,
            tail,
            exited: exit_rx,
            stop: Some(stop_tx),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::parse_forked;

    #[test]
    fn answer_lines() {
        assert_eq!(
            parse_forked("manifold-preload forked 4100 321\n"),
            Some((4100, 321))
        );
        assert_eq!(parse_forked("manifold-preload ready"), None);
        assert_eq!(parse_forked("forked 4100 321"), None);
    }
}
