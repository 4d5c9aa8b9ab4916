//! `--access-log FILE|-`: one JSON line per request, written by one task so the request path only
//! formats a line and hands it over (a slow disk never stalls a request; lines it cannot take are
//! counted as dropped, as worker output is).

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use serde::Serialize;
use tokio::io::AsyncWriteExt;
use tokio::sync::mpsc;

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
}

/// The access log writer; cheap to clone.
#[derive(Clone)]
pub struct AccessLog {
    tx: mpsc::Sender<String>,
    dropped: Arc<AtomicU64>,
}

impl AccessLog {
    /// Opens `target` for appending (`-` is stdout) and starts the writer task.
    ///
    /// # Errors
    /// The file cannot be opened for appending.
    pub async fn open(target: &str) -> Result<AccessLog, OpenError> {
        let mut out: Box<dyn tokio::io::AsyncWrite + Send + Unpin> = if target == "-" {
            Box::new(tokio::io::stdout())
        } else {
            let f = tokio::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(target)
                .await
                .map_err(|source| OpenError {
                    path: target.into(),
                    source,
                })?;
            Box::new(f)
        };
        let (tx, mut rx) = mpsc::channel::<String>(QUEUE);
        let name = target.to_string();
        tokio::spawn(async move {
            let mut failed = false;
            while let Some(first) = rx.recv().await {
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
                if let Err(e) = r {
                    if !failed {
                        tracing::error!(file = %name, error = %e, "access log write failed");
                        failed = true;
                    }
                }
            }
        });
        Ok(AccessLog {
            tx,
            dropped: Arc::new(AtomicU64::new(0)),
        })
    }

    /// Queues one entry as a JSON line.
    pub fn write(&self, e: &Entry<'_>) {
        let mut line = serde_json::to_string(e).expect("entry serialises");
        line.push('\n');
        if self.tx.try_send(line).is_err() {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Lines not written because the writer was behind.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
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
