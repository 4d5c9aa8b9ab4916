//! One worker process: spawn (with its own `TMPDIR`, see [`tmpdir`]), readiness probe, output
//! forwarding, exit watch, stop.
//!
//! A worker runs in its own process group so that stopping it also stops anything it started (R
//! often forks helpers). Its stdout and stderr are always drained, line by line, so a chatty worker
//! can never fill a pipe and stall; lines go to manifold's stderr with a `[worker N]` prefix, or are
//! counted as dropped when the log writer cannot keep up. Every child is reaped by its watch task.
//! With `--preload` a worker is a fork of its generation's parent process instead ([`preload`]).

use std::collections::VecDeque;
use std::process::{ExitStatus, Stdio};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::process::{Child, Command};
use tokio::sync::{mpsc, oneshot, watch};

/// Lines kept per worker to explain why it failed.
const TAIL_LINES: usize = 20;
/// Longest forwarded line; the rest of a longer line is cut.
const MAX_LINE: usize = 16 * 1024;
/// Lines buffered for the log writer before new ones are dropped.
const LOG_QUEUE: usize = 4096;

/// Why a worker did not start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    /// The command could not be executed at all (missing program, permissions).
    #[error("cannot start worker {id} ({program}): {source}")]
    Spawn {
        /// Worker number.
        id: u64,
        /// Program name from the command.
        program: String,
        /// OS error.
        source: std::io::Error,
    },
    /// Its temp directory could not be created (see [`tmpdir`]).
    #[error("no temp directory for worker {id}: {source}")]
    TempDir {
        /// Worker number (0: a `--preload` parent).
        id: u64,
        /// OS error.
        source: std::io::Error,
    },
    /// No free loopback port could be reserved.
    #[error("no free loopback port for worker {id}: {source}")]
    Port {
        /// Worker number.
        id: u64,
        /// OS error.
        source: std::io::Error,
    },
    /// The process exited before it was ready.
    #[error("worker {id} {status} before it was ready{}", tail_suffix(.tail))]
    ExitedEarly {
        /// Worker number.
        id: u64,
        /// "exited with code 1" / "killed by signal 9".
        status: String,
        /// Last output lines.
        tail: String,
    },
    /// The port did not accept (or the health path did not answer 2xx) in time.
    #[error("worker {id} not ready after {timeout:?}: {reason}{}", tail_suffix(.tail))]
    NotReady {
        /// Worker number.
        id: u64,
        /// --ready-timeout.
        timeout: Duration,
        /// What was still missing.
        reason: String,
        /// Last output lines.
        tail: String,
    },
}

/// Makes the worker get SIGKILL if manifold itself dies without stopping it (kill -9, OOM), so
/// no worker outlives its pool. The kernel ties this to the spawning thread: workers are spawned
/// from runtime worker threads, which live as long as manifold does.
fn die_with_parent(cmd: &mut Command) {
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: only async-signal-safe calls (prctl, getppid) between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // manifold died before prctl took effect: do not start an orphan.
            if libc::getppid() != parent {
                return Err(std::io::Error::other("manifold exited"));
            }
            Ok(())
        });
    }
}

fn tail_suffix(tail: &str) -> String {
    if tail.is_empty() {
        String::new()
    } else {
        format!("; last output: {tail}")
    }
}

/// Shared writer for forwarded worker output; cheap to clone.
///
/// Lines go through a bounded channel to one writer task so that a slow stderr never stalls the
/// tasks draining the workers' pipes.
#[derive(Clone)]
pub struct OutputSink {
    tx: mpsc::Sender<String>,
    dropped: Arc<AtomicU64>,
}

impl OutputSink {
    /// Starts the writer task (to manifold's stderr).
    pub fn start() -> OutputSink {
        let (tx, mut rx) = mpsc::channel::<String>(LOG_QUEUE);
        tokio::spawn(async move {
            let mut err = tokio::io::stderr();
            while let Some(line) = rx.recv().await {
                if err.write_all(line.as_bytes()).await.is_err() {
                    // stderr closed: keep draining so senders never block.
                    continue;
                }
            }
        });
        OutputSink {
            tx,
            dropped: Arc::new(AtomicU64::new(0)),
        }
    }

    /// Lines that could not be forwarded because the writer was behind.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    fn send(&self, line: String) {
        if self.tx.try_send(line).is_err() {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// How a worker process ended, as one phrase for logs and errors.
pub fn describe(status: &std::io::Result<ExitStatus>) -> String {
    use std::os::unix::process::ExitStatusExt;
    match status {
        Ok(s) => match (s.code(), s.signal()) {
            (Some(c), _) => format!("exited with code {c}"),
            (None, Some(sig)) => format!("killed by signal {sig}"),
            _ => "exited".to_string(),
        },
        Err(e) => format!("could not be waited for ({e})"),
    }
}

/// A running worker process as the pool holds it.
pub struct Worker {
    /// Pool-wide number, never reused (sticky cookies refer to it).
    pub id: u64,
    /// Loopback port it serves on.
    pub port: u16,
    /// Process id (also its process group id, except for a fork of a preload parent); 0 while
    /// a fork is asked for.
    pid: Arc<AtomicU32>,
    /// Last output lines, for error messages.
    pub tail: Arc<Mutex<VecDeque<String>>>,
    /// Set to the exit description once the process is reaped.
    pub exited: watch::Receiver<Option<String>>,
    stop: Option<oneshot::Sender<Option<Duration>>>,
}

impl Worker {
    /// Spawns `command` with `{port}` replaced, `PORT` set and `TMPDIR` its own directory, in a
    /// new process group; or, with a preload `parent`, asks it for a fork (see [`preload`]).
    /// `stop` is the grace time of a stop and the worker's directory.
    ///
    /// The returned worker's watch task reaps the child, then removes its directory, and
    /// reports the exit on `on_exit`.
    ///
    /// # Errors
    /// No free port or the program cannot be executed.
    pub fn spawn(
        id: u64,
        command: &[String],
        parent: Option<Arc<preload::Parent>>,
        stop: (Duration, tmpdir::WorkerDir),
        output: &OutputSink,
        on_exit: impl FnOnce(String) + Send + 'static,
    ) -> Result<Worker, WorkerError> {
        let (stop_timeout, dir) = stop;
        if let Some(parent) = parent {
            return Worker::fork(id, parent, (stop_timeout, dir), output, on_exit);
        }
        let port = free_port().map_err(|source| WorkerError::Port { id, source })?;
        let args: Vec<String> = command
            .iter()
            .map(|a| a.replace("{port}", &port.to_string()))
            .collect();
        let mut cmd = Command::new(&args[0]);
        cmd.args(&args[1..])
            .env("PORT", port.to_string())
            .env("TMPDIR", dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        die_with_parent(&mut cmd);
        let mut child = cmd.spawn().map_err(|source| WorkerError::Spawn {
            id,
            program: args[0].clone(),
            source,
        })?;
        let pid = child.id().expect("fresh child has a pid");
        let tail = Arc::new(Mutex::new(VecDeque::new()));
        let mut drains = Vec::new();
        if let Some(out) = child.stdout.take() {
            drains.push(tokio::spawn(drain(
                BufReader::new(out),
                format!("[worker {id}]"),
                output.clone(),
                tail.clone(),
                |_| false,
            )));
        }
        if let Some(err) = child.stderr.take() {
            drains.push(tokio::spawn(drain(
                BufReader::new(err),
                format!("[worker {id}]"),
                output.clone(),
                tail.clone(),
                |_| false,
            )));
        }
        let (stop_tx, stop_rx) = oneshot::channel();
        let (exit_tx, exit_rx) = watch::channel(None);
        tokio::spawn(async move {
            let status = watch_child(child, pid, stop_rx, stop_timeout).await;
            // Let the drains pick up the last lines (the pipes close with the group).
            for d in drains {
                let _ = tokio::time::timeout(Duration::from_secs(1), d).await;
            }
            // Reaped: nothing runs in its directory any more.
            drop(dir);
            let text = describe(&status);
            let _ = exit_tx.send(Some(text.clone()));
            on_exit(text);
        });
        Ok(Worker {
            id,
            port,
            pid: Arc::new(AtomicU32::new(pid)),
            tail,
            exited: exit_rx,
            stop: Some(stop_tx),
        })
    }

    /// Its process id (0 while a fork is still being asked for).
    pub fn pid(&self) -> u32 {
        self.pid.load(Ordering::Relaxed)
    }

    /// Asks the watch task to stop the process group (SIGTERM, then SIGKILL after the grace time).
    pub fn stop(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(None);
        }
    }

    /// Like [`Worker::stop`] with a shorter grace time, so a shutdown keeps its overall bound.
    pub fn stop_within(&mut self, grace: Duration) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(Some(grace));
        }
    }

    /// Waits until the process has been reaped.
    pub async fn wait(&self) {
        let mut rx = self.exited.clone();
        let _ = rx.wait_for(|s| s.is_some()).await;
    }

    /// Last output lines joined with " | ".
    pub fn tail_text(&self) -> String {
        let t = self.tail.lock().unwrap_or_else(PoisonError::into_inner);
        t.iter().cloned().collect::<Vec<_>>().join(" | ")
    }

    /// What a readiness check needs, detached from the worker so the pool lock is not held.
    pub fn probe(&self) -> Probe {
        Probe {
            id: self.id,
            port: self.port,
            exited: self.exited.clone(),
            tail: self.tail.clone(),
        }
    }
}

pub mod preload;
pub mod tmpdir;

/// A handle for checking one worker's readiness.
pub struct Probe {
    id: u64,
    port: u16,
    exited: watch::Receiver<Option<String>>,
    tail: Arc<Mutex<VecDeque<String>>>,
}

impl Probe {
    fn tail_text(&self) -> String {
        let t = self.tail.lock().unwrap_or_else(PoisonError::into_inner);
        t.iter().cloned().collect::<Vec<_>>().join(" | ")
    }

    /// Waits until the worker accepts connections (and `health_path` answers 2xx).
    ///
    /// # Errors
    /// The process exits first, or `timeout` passes.
    pub async fn wait_ready(
        &self,
        health_path: Option<&str>,
        timeout: Duration,
    ) -> Result<(), WorkerError> {
        let start = Instant::now();
        let mut exited = self.exited.clone();
        let reason = Mutex::new(format!("port {} does not accept connections", self.port));
        let set = |r: String| *reason.lock().unwrap_or_else(PoisonError::into_inner) = r;
        let probe = async {
            let mut delay = Duration::from_millis(2);
            loop {
                // Polling is the only portable readiness signal a plain command gives us. A
                // refused connect costs a few microseconds, so the port is tried every 5 ms at
                // most (a preloaded fork listens 20-100 ms after it is asked for: a 20 ms poll
                // added 10 ms to its start on average); the health path, a request to the app,
                // backs off to 100 ms.
                let mut cap = Duration::from_millis(5);
                if TcpStream::connect(("127.0.0.1", self.port)).await.is_ok() {
                    cap = Duration::from_millis(100);
                    match health_path {
                        None => return,
                        Some(p) => match crate::upstream::probe(self.port, p).await {
                            Ok(s) if s.is_success() => return,
                            Ok(s) => set(format!("{p} answered {s}")),
                            Err(e) => set(format!("{p} failed: {e}")),
                        },
                    }
                }
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(cap);
            }
        };
        tokio::select! {
            _ = probe => Ok(()),
            r = exited.wait_for(|s| s.is_some()) => {
                let status = r.map(|s| s.clone().unwrap_or_default()).unwrap_or_default();
                Err(WorkerError::ExitedEarly { id: self.id, status, tail: self.tail_text() })
            }
            _ = tokio::time::sleep(timeout.saturating_sub(start.elapsed())) => {
                let reason = reason.lock().unwrap_or_else(PoisonError::into_inner).clone();
                Err(WorkerError::NotReady { id: self.id, timeout, reason, tail: self.tail_text() })
            }
        }
    }
}

/// Reserves a free loopback port by binding :0 and releasing it (the worker binds it next).
fn free_port() -> std::io::Result<u16> {
    let l = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(l.local_addr()?.port())
}

fn signal_group(pid: u32, sig: libc::c_int) {
    // SAFETY: kill(2) with a negative pid signals the group; no memory is touched.
    unsafe {
        libc::kill(-(pid as libc::pid_t), sig);
    }
}

/// Owns the child until it is reaped; stops the whole group on request or after the leader exits.
async fn watch_child(
    mut child: Child,
    pid: u32,
    stop: oneshot::Receiver<Option<Duration>>,
    grace: Duration,
) -> std::io::Result<ExitStatus> {
    let status = tokio::select! {
        s = child.wait() => s,
        g = stop => {
            let grace = g.ok().flatten().map_or(grace, |g| g.min(grace));
            signal_group(pid, libc::SIGTERM);
            match tokio::time::timeout(grace, child.wait()).await {
                Ok(s) => s,
                Err(_) => {
                    signal_group(pid, libc::SIGKILL);
                    child.wait().await
                }
            }
        }
    };
    // Leftover group members (helpers the worker forked) go with the leader.
    signal_group(pid, libc::SIGKILL);
    status
}

/// Reads lines until EOF, forwarding each with `prefix` and keeping a short tail; a line
/// `protocol` takes (returns true for) is neither forwarded nor kept.
async fn drain(
    mut r: impl AsyncBufRead + Unpin,
    prefix: String,
    out: OutputSink,
    tail: Arc<Mutex<VecDeque<String>>>,
    mut protocol: impl FnMut(&str) -> bool,
) {
    let mut line: Vec<u8> = Vec::new();
    loop {
        let buf = match r.fill_buf().await {
            Ok([]) | Err(_) => break,
            Ok(b) => b,
        };
        let (take, complete) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (buf.len(), false),
        };
        let room = MAX_LINE.saturating_sub(line.len());
        line.extend_from_slice(&buf[..take.min(room)]);
        r.consume(take);
        if complete {
            emit(&mut line, &prefix, &out, &tail, &mut protocol);
        }
    }
    if !line.is_empty() {
        emit(&mut line, &prefix, &out, &tail, &mut protocol);
    }
}

fn emit(
    line: &mut Vec<u8>,
    prefix: &str,
    out: &OutputSink,
    tail: &Mutex<VecDeque<String>>,
    protocol: &mut impl FnMut(&str) -> bool,
) {
    let text = String::from_utf8_lossy(line);
    let text = text.trim_end_matches(['\n', '\r']);
    if protocol(text) {
        line.clear();
        return;
    }
    out.send(format!("{prefix} {text}\n"));
    let mut t = tail.lock().unwrap_or_else(PoisonError::into_inner);
    if t.len() == TAIL_LINES {
        t.pop_front();
    }
    t.push_back(text.chars().take(300).collect());
    line.clear();
}
