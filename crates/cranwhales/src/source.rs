//! Where a day's log comes from: a [`Source`] (a local file, a date of the configured mirror
//! `{base}/{YYYY}/{YYYY-MM-DD}.csv.gz`, or a URL), and the download of the last two once into a
//! cache directory. Every way a day enters the store (`cranwhales ingest`, the server's on-demand
//! fetch, the sample days) names it as a `Source`; `ingest::read` reads each the same way.
//!
//! Invariant: a file in the cache is a complete download. Bytes go to a temporary file in the
//! same directory, which is renamed into place only after the whole body (all of
//! `Content-Length`) arrived; a failed or interrupted download leaves no cache entry.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::sync::mpsc::{sync_channel, RecvTimeoutError};
use std::time::Duration;

use crate::date::{self, Day};
use crate::partial;
use crate::progress::{Event, Progress};

/// Where one day's log comes from: the one description of an ingest's input, whoever asks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// A local `.csv.gz` (or `.csv`); if its name starts with a date, every row must carry it,
    /// otherwise the first row's date is the day.
    File(PathBuf),
    /// A day of the configured mirror (`{base}/{YYYY}/{date}.csv.gz`), downloaded into the cache
    /// unless already there.
    Date(Day),
    /// A day's log at an `http://` or `https://` URL whose file name starts with its date
    /// (`…/2012-10-16.csv.gz`), downloaded into the cache as that date's entry.
    Url {
        /// The URL as given.
        url: String,
        /// The day its file name names.
        day: Day,
    },
}

impl Source {
    /// A URL source; refused (one line naming the URL) unless its file name starts with a date.
    pub fn url(url: &str) -> Result<Source, SourceError> {
        let name = url.rsplit('/').next().unwrap_or_default();
        match name.get(..10).filter(|d| date::is_log_date(d)) {
            Some(d) => Ok(Source::Url {
                url: url.to_owned(),
                day: Day::parse(d).expect("checked"),
            }),
            None => Err(SourceError::BadUrl {
                url: url.to_owned(),
            }),
        }
    }

    /// True for text that names a URL source (`http://…`, `https://…`).
    pub fn is_url(s: &str) -> bool {
        s.starts_with("http://") || s.starts_with("https://")
    }

    /// The day every row must carry, when the source names one (a file name starting with a
    /// date, a date, a URL).
    pub fn date(&self) -> Option<String> {
        match self {
            Source::File(p) => (p.file_name().and_then(|n| n.to_str()))
                .and_then(|n| n.get(..10))
                .filter(|d| date::is_log_date(d))
                .map(str::to_owned),
            Source::Date(d) | Source::Url { day: d, .. } => Some(d.to_string()),
        }
    }

    /// How progress and result lines name it: the path, the date or the URL as given.
    pub fn label(&self) -> String {
        match self {
            Source::File(p) => p.display().to_string(),
            Source::Date(d) => d.to_string(),
            Source::Url { url, .. } => url.clone(),
        }
    }

    /// A download (its cache entry is dropped when it proves broken, so a retry downloads again).
    pub fn is_download(&self) -> bool {
        !matches!(self, Source::File(_))
    }

    /// The local file to read: the file itself, or the cache entry, downloaded first if missing.
    pub fn local(
        &self,
        cfg: &SourceConfig,
        progress: &dyn Progress,
    ) -> Result<PathBuf, SourceError> {
        match self {
            Source::File(p) => Ok(p.clone()),
            Source::Date(d) => {
                let date = d.to_string();
                fetch_url(&cfg.url(&date), &cfg.cached(&date), cfg, progress)
            }
            Source::Url { url, day } => {
                fetch_url(url, &cfg.cached(&day.to_string()), cfg, progress)
            }
        }
    }
}

/// Why a day's log could not be had; ingest passes it on as `IngestError::Source`.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// A URL source whose file name does not start with the day it holds.
    #[error("{url}: the file name must start with the day it holds (YYYY-MM-DD…)")]
    BadUrl {
        /// The URL as given.
        url: String,
    },
    /// The upstream server has no log for the date (HTTP 404).
    #[error("{url}: no log for this date upstream (HTTP 404)")]
    NotFound {
        /// The URL asked for.
        url: String,
    },
    /// The source answered, but its body did not arrive whole (shorter than its Content-Length,
    /// cut, stalled or empty): a file still being written, or a broken link. Retried later.
    #[error("{url}: download failed: {reason}")]
    Incomplete {
        /// The URL asked for.
        url: String,
        /// How far it got.
        reason: String,
    },
    /// The download could not start or failed (status, connection, file system).
    #[error("{url}: download failed: {reason}")]
    Download {
        /// The URL asked for.
        url: String,
        /// What went wrong, as the HTTP client or the file system said it.
        reason: String,
    },
}

/// The public mirror of CRAN's package-download logs.
pub const DEFAULT_BASE_URL: &str = "http://cran-logs.rstudio.com";
/// Downloads are kept here unless told otherwise (relative to the working directory); every
/// command's default.
pub const DEFAULT_CACHE_DIR: &str = "data/cache";
/// Time without a byte from the source after which a download is given up (serve's and
/// ingest's `--stall-timeout` default, in the duration grammar).
pub const DEFAULT_STALL: &str = "30s";

/// `--stall-timeout` (serve's and ingest's): the duration grammar, 1s to 1h.
pub fn parse_stall(s: &str) -> Result<Duration, grammar::duration::Error> {
    grammar::duration::parse_in(s, Duration::from_secs(1), Duration::from_secs(3600))
}

/// Where to download days from and where to keep them.
#[derive(Debug, Clone)]
pub struct SourceConfig {
    /// Base URL, without the trailing `/{YYYY}/{date}.csv.gz`.
    pub base_url: String,
    /// Where downloads are kept, one `{date}.csv.gz` each; a file here is always complete.
    pub cache_dir: PathBuf,
    /// A source that sends nothing (no answer, or no body byte) this long fails the download.
    pub stall: Duration,
}

impl Default for SourceConfig {
    fn default() -> Self {
        SourceConfig {
            base_url: DEFAULT_BASE_URL.to_owned(),
            cache_dir: PathBuf::from(DEFAULT_CACHE_DIR),
            stall: Duration::from_secs(30),
        }
    }
}

impl SourceConfig {
    /// The URL of one day's log.
    pub fn url(&self, date: &str) -> String {
        format!(
            "{}/{}/{}.csv.gz",
            self.base_url.trim_end_matches('/'),
            &date[..4],
            date
        )
    }

    /// Where the day's log is (or will be) cached.
    pub fn cached(&self, date: &str) -> PathBuf {
        self.cache_dir.join(format!("{date}.csv.gz"))
    }
}

/// `dest` (a cache entry), downloading it from `url` first if it is not in the cache yet.
fn fetch_url(
    url: &str,
    dest: &std::path::Path,
    cfg: &SourceConfig,
    progress: &dyn Progress,
) -> Result<PathBuf, SourceError> {
    let dest = dest.to_owned();
    if dest.is_file() {
        return Ok(dest);
    }
    let url = url.to_owned();
    let fail = |reason: String| SourceError::Download {
        url: url.clone(),
        reason,
    };
    std::fs::create_dir_all(&cfg.cache_dir).map_err(|e| {
        fail(format!(
            "cannot create cache dir {}: {e}",
            cfg.cache_dir.display()
        ))
    })?;
    partial::remove_stale(&dest);

    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_connect(Some(Duration::from_secs(15).min(cfg.stall)))
        .timeout_recv_response(Some(cfg.stall))
        // A source that stalls mid-body must not hold an ingest slot forever; a whole day of
        // today's size (~150 MB) arrives well within this on any working link.
        .timeout_recv_body(Some(Duration::from_secs(600)))
        .build()
        .into();
    let resp = match agent.get(&url).call() {
        Ok(r) => r,
        Err(ureq::Error::StatusCode(404)) => return Err(SourceError::NotFound { url }),
        Err(ureq::Error::StatusCode(code)) => return Err(fail(format!("HTTP status {code}"))),
        Err(e) => return Err(fail(e.to_string())),
    };
    let total = resp.body().content_length();
    progress.event(Event::Downloading { done: 0, total });

    let tmp = partial::temp_name(&dest);
    let _registered = partial::Guard::new(&tmp);
    let chunks = read_body(resp);
    let result = (|| -> Result<u64, Broken> {
        let write = |e: std::io::Error| Broken::Write {
            path: tmp.clone(),
            err: e,
        };
        let mut out = std::fs::File::create(&tmp).map_err(write)?;
        let mut done = 0u64;
        let mut reported = 0u64;
        loop {
            let chunk = match chunks.recv_timeout(cfg.stall) {
                Ok(Ok(c)) => c,
                Ok(Err(err)) => return Err(Broken::Stopped { done, err }),
                Err(RecvTimeoutError::Disconnected) => break,
                Err(RecvTimeoutError::Timeout) => {
                    return Err(Broken::Stalled {
                        stall: grammar::duration::format(cfg.stall),
                        done,
                    })
                }
            };
            out.write_all(&chunk).map_err(write)?;
            done += chunk.len() as u64;
            if done - reported >= 1 << 18 {
                // Every 256 KiB: browsers following an on-demand fetch see a smooth bar.
                reported = done;
                progress.event(Event::Downloading { done, total });
            }
        }
        if let Some(total) = total {
            if done != total {
                return Err(Broken::Short { done, total });
            }
        }
        if done == 0 {
            return Err(Broken::Empty);
        }
        out.sync_all().map_err(write)?;
        Ok(done)
    })();
    match result {
        Ok(done) => {
            progress.event(Event::Downloading {
                done,
                total: Some(done),
            });
            std::fs::rename(&tmp, &dest).map_err(|e| {
                let _ = std::fs::remove_file(&tmp);
                fail(format!("cannot move download into the cache: {e}"))
            })?;
            Ok(dest)
        }
        Err(broken) => {
            let _ = std::fs::remove_file(&tmp);
            Err(broken.into_error(url))
        }
    }
}

/// Why a download's body did not arrive whole (the reason of [`SourceError::Download`]).
#[derive(Debug, thiserror::Error)]
enum Broken {
    /// The partial file could not be written.
    #[error("cannot write {}: {err}", path.display())]
    Write { path: PathBuf, err: std::io::Error },
    /// The connection failed mid-body.
    #[error("stopped after {done} bytes: {err}")]
    Stopped { done: u64, err: std::io::Error },
    /// Nothing arrived for `--stall-timeout`.
    #[error("stalled: no data for {stall} after {done} bytes (--stall-timeout)")]
    Stalled { stall: String, done: u64 },
    /// The body ended before its `Content-Length`.
    #[error("stopped after {done} of {total} bytes")]
    Short { done: u64, total: u64 },
    /// A 200 with no body.
    #[error("empty response body")]
    Empty,
}

impl Broken {
    /// The download's error: a body that did not arrive whole is [`SourceError::Incomplete`].
    fn into_error(self, url: String) -> SourceError {
        let reason = self.to_string();
        match self {
            Broken::Write { .. } => SourceError::Download { url, reason },
            _ => SourceError::Incomplete { url, reason },
        }
    }
}

/// The body in chunks from a reading thread, so a source that stops sending is noticed after
/// `stall` (ureq bounds only the whole body's time). On a stall the thread is left blocked until
/// ureq's body timeout or the connection ends; it holds no file.
fn read_body(
    mut resp: ureq::http::Response<ureq::Body>,
) -> std::sync::mpsc::Receiver<std::io::Result<Vec<u8>>> {
    let (tx, rx) = sync_channel(4);
    std::thread::spawn(move || {
        let mut body = resp.body_mut().as_reader();
        loop {
            let mut buf = vec![0u8; 256 * 1024];
            match body.read(&mut buf) {
                Ok(0) => return,
                Ok(n) => {
                    buf.truncate(n);
                    if tx.send(Ok(buf)).is_err() {
                        return;
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    let _ = tx.send(Err(e));
                    return;
                }
            }
        }
    });
    rx
}
