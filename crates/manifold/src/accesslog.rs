//! `--access-log FILE|-`: one JSON line per request, written by one task so the request path only
//! formats a line and hands it over (a slow disk never stalls a request). Lines it cannot take
//! (the writer is behind) and lines whose write failed (a full disk) are counted as dropped, shown
//! in status (`access_log_lines_dropped`) and `/metrics`.
//!
//! SIGUSR1 reopens FILE (as nginx and gunicorn do), so logrotate can rename it and signal,
//! without copytruncate (which loses the lines written between its copy and its truncate).

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use serde::Serialize;
use tokio::io::AsyncWriteExt;
use tokio::sync::{mpsc, Notify};

/// Lines buffered for the writer before new ones are dropped.
const QUEUE: usize = 8192;
/// Longest path written; a longer one is cut (the line stays one sane line).
const MAX_PATH: usize = 2048;

/// Why the access log could not be opened.
#[derive(Debug, thiserror::Error)]
#[error("cannot open access log {path}: {source}")]
pub struct OpenError {
    /// The file given with --access-log.
    pub path: PathBuf,
    /// OS error.
    pub source: std::io::Error,
}

/// One request as the access log records it.
#[derive(Debug, Serialize)]
pub struct Entry<'a> {
    /// When the request arrived, RFC 3339 UTC with microseconds.
    pub time: String,
    /// The app (`[[app]]` name) that served it.
    pub app: &'a str,
    /// `X-Request-Id` as sent to the worker and returned to the client.
    pub request_id: &'a str,
    /// HTTP method.
    pub method: &'a str,
    /// Path and query as received (cut to 2 KiB).
    pub path: &'a str,
    /// Status sent to the client.
    pub status: u16,
    /// Response body bytes sent.
    pub bytes: u64,
    /// Seconds waited for a worker.
    pub queue_wait_s: f64,
    /// Seconds from sending to the worker until its response head (null if none was sent).
    pub upstream_s: Option<f64>,
    /// Seconds from arrival until the response body ended.
    pub duration_s: f64,
    /// Worker id that served it (null: answered by manifold itself).
    pub worker: Option<u64>,
    /// That worker's generation (see reload).
    pub generation: Option<u64>,
    /// The worker the client's sticky cookie named, if any.
    pub sticky: Option<u64>,
    /// The response streamed and held its worker until the client had read it (SSE, marked
    /// `X-Accel-Buffering: no`, or above --buffer-response); false: buffered, the worker was
    /// freed when it had written it.
    pub streamed: bool,
    /// The request was sent once more, instead of a 502 (see `proxy::retry`): to the same
    /// worker on a new connection, or to another worker.
    pub retried: bool,
}

/// The access log writer; cheap to clone.
#[derive(Clone)]
pub struct AccessLog {
    tx: mpsc::Sender<String>,
    dropped: Arc<AtomicU64>,
    reopen: Arc<Notify>,
}

type Out = Box<dyn tokio::io::AsyncWrite + Send + Unpin>;

/// Opens `target` for appending (`-` is stdout).
async fn open_target(target: &str) -> Result<Out, OpenError> {
    if target == "-" {
        return Ok(Box::new(tokio::io::stdout()));
    }
    let f = tokio::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(target)
        .await
        .map_err(|source| OpenError {
            path: target.into(),
            source,
        })?;
    Ok(Box::new(f))
}

impl AccessLog {
    /// Opens `target` for appending (`-` is stdout) and starts the writer task.
    ///
    /// # Errors
    /// The file cannot be opened for appending.
    pub async fn open(target: &str) -> Result<AccessLog, OpenError> {
        let out = open_target(target).await?;
        let (tx, rx) = mpsc::channel::<String>(QUEUE);
        let log = AccessLog {
            tx,
            dropped: Arc::new(AtomicU64::new(0)),
            reopen: Arc::new(Notify::new()),
        };
        tokio::spawn(write_loop(
            target.to_string(),
            out,
            rx,
            log.dropped.clone(),
            log.reopen.clone(),
        ));
        Ok(log)
    }

    /// Reopens FILE on each SIGUSR1 for as long as the process runs (a no-op for stdout).
    pub fn reopen_on_sigusr1(&self) {
        use tokio::signal::unix::{signal, SignalKind};
        let reopen = self.reopen.clone();
        match signal(SignalKind::user_defined1()) {
            Ok(mut usr1) => {
                tokio::spawn(async move {
                    while usr1.recv().await.is_some() {
                        reopen.notify_one();
                    }
                });
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot handle SIGUSR1; the access log cannot be reopened")
            }
        }
    }

    /// Asks the writer to reopen FILE (after what is queued now is written).
    pub fn reopen(&self) {
        self.reopen.notify_one();
    }

    /// Queues one entry as a JSON line.
    pub fn write(&self, e: &Entry<'_>) {
        let mut line = serde_json::to_string(e).expect("entry serialises");
        line.push('\n');
        if self.tx.try_send(line).is_err() {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Lines not written: the writer was behind, or the write failed (a full disk).
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

/// The writer task: batches queued lines into one write; a failed write counts its lines as
/// dropped (logged once per failing stretch); a reopen request opens `name` anew.
async fn write_loop(
    name: String,
    mut out: Out,
    mut rx: mpsc::Receiver<String>,
    dropped: Arc<AtomicU64>,
    reopen: Arc<Notify>,
) {
    let mut failed = false;
    loop {
        let first = tokio::select! {
            // Reopen first, so a steady stream of lines cannot put it off.
            biased;
            _ = reopen.notified() => {
                if name != "-" {
                    match open_target(&name).await {
                        Ok(o) => {
                            out = o;
                            failed = false;
                            tracing::info!(file = %name, "access log reopened");
                        }
                        Err(e) => tracing::error!(error = %e, "access log not reopened; writing to the old file"),
                    }
                }
                continue;
            }
            line = rx.recv() => match line {
                Some(l) => l,
                None => return,
            },
        };
        let mut buf = first;
        // Batch what is queued into one write.
        while let Ok(more) = rx.try_recv() {
            buf.push_str(&more);
        }
        let r = async {
            out.write_all(buf.as_bytes()).await?;
            out.flush().await
        }
        .await;
        match r {
            Ok(()) => failed = false,
            Err(e) => {
                // A partial write may have put some of them out; they are counted all the same.
                let lines = buf.matches('\n').count() as u64;
                dropped.fetch_add(lines, Ordering::Relaxed);
                if !failed {
                    tracing::error!(file = %name, error = %e, "access log write failed; lines dropped and counted");
                    failed = true;
                }
            }
        }
    }
}

/// `path` cut to [`MAX_PATH`] bytes at a character boundary.
pub fn cut_path(path: &str) -> &str {
    if path.len() <= MAX_PATH {
        return path;
    }
    let mut end = MAX_PATH;
    while !path.is_char_boundary(end) {
        end -= 1;
    }
    &path[..end]
}
