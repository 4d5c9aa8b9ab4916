//! manifold's pool over a run (`--manifold URL`): its `/__manifold__/status` polled every
//! second into the run directory's manifold.csv (workers ready, busy, starting; queue;
//! saturation), so the report can chart the processes beside the latency they gave and the
//! capacity search can say how many users one ready worker holds.

use crate::metrics::{LiveMetrics, PoolSample};
use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// The file in the run directory.
pub const MANIFOLD_CSV: &str = "manifold.csv";
/// Its header line.
const HEADER: &str = "timestamp,ready,busy,starting,queue,saturation";
/// manifold's status path.
const STATUS: &str = "__manifold__/status";

/// One poll: Unix ms and the pool.
pub type Point = (i64, PoolSample);

/// What can go wrong with `--manifold`: its URL, a status read, the wait for workers, or a
/// run directory's manifold.csv.
#[derive(Debug, thiserror::Error)]
pub enum PollError {
    /// `--manifold` is not manifold's `http://host:port`.
    #[error("--manifold {given:?}: {why}")]
    Url {
        /// The URL as given.
        given: String,
        /// Why it is refused.
        why: String,
    },
    /// The answer is JSON but not manifold's status document.
    #[error("no \"workers\" list: not manifold's status document")]
    NotStatus,
    /// The status could not be read (connection, body, JSON or the 2 s bound).
    #[error("{url}: {why}")]
    Read {
        /// The status URL.
        url: String,
        /// What failed.
        why: String,
    },
    /// Fewer workers than asked were ready in time.
    #[error("manifold not ready after {limit:?}: {last}")]
    NotReady {
        /// The wait's bound.
        limit: Duration,
        /// The last poll: how many were ready, or why it failed.
        last: String,
    },
    /// A manifold.csv line that is not `HEADER`'s six numbers.
    #[error("{at}: expected {HEADER}")]
    Csv {
        /// `path:line`.
        at: String,
    },
}

/// `--manifold`'s URL checked: `http://host:port` (a path is ignored); returns the status URL.
pub fn status_url(base: &str) -> Result<String, PollError> {
    let refused = |why: String| PollError::Url {
        given: base.to_string(),
        why,
    };
    let u: hyper::Uri = base.parse().map_err(|e| refused(format!("{e}")))?;
    match (u.scheme_str(), u.authority()) {
        (Some("http"), Some(a)) => Ok(format!("http://{a}/{STATUS}")),
        _ => Err(refused(
            "expected http://host:port (manifold's address)".into(),
        )),
    }
}

/// The pool in a status document: one app's workers, or every app's summed (`apps`).
pub fn parse_status(doc: &serde_json::Value) -> Result<PoolSample, PollError> {
    if let Some(apps) = doc.get("apps").and_then(|a| a.as_object()) {
        let mut sum = PoolSample::default();
        for app in apps.values() {
            let s = parse_status(app)?;
            sum.ready += s.ready;
            sum.busy += s.busy;
            sum.starting += s.starting;
            sum.queue += s.queue;
            sum.saturation = sum.saturation.max(s.saturation);
        }
        return Ok(sum);
    }
    let workers = (doc.get("workers").and_then(|w| w.as_array())).ok_or(PollError::NotStatus)?;
    let mut s = PoolSample {
        queue: doc.get("queue").and_then(|q| q.as_u64()).unwrap_or(0) as u32,
        saturation: (doc.get("saturation").and_then(|q| q.as_f64())).unwrap_or(0.0),
        ..Default::default()
    };
    for w in workers {
        match w.get("state").and_then(|s| s.as_str()) {
            Some("ready") => {
                s.ready += 1;
                if w.get("busy").and_then(|b| b.as_u64()).unwrap_or(0) > 0 {
                    s.busy += 1;
                }
            }
            Some("starting") => s.starting += 1,
            _ => {}
        }
    }
    Ok(s)
}

/// Polls a status URL; reuses its connection from poll to poll.
#[derive(Clone)]
pub struct Poller {
    url: hyper::Uri,
    client: Client<hyper_util::client::legacy::connect::HttpConnector, Empty<Bytes>>,
}

impl Poller {
    /// A poller of `status_url` (from [`status_url`]).
    pub fn new(status_url: &str) -> Result<Poller, PollError> {
        Ok(Poller {
            url: status_url.parse().map_err(|e| PollError::Url {
                given: status_url.to_string(),
                why: format!("{e}"),
            })?,
            client: Client::builder(TokioExecutor::new()).build_http(),
        })
    }

    /// One status read (bounded by 2 s). A draining manifold answers 404 with the document.
    pub async fn sample(&self) -> Result<PoolSample, PollError> {
        let read = |why: String| PollError::Read {
            url: self.url.to_string(),
            why,
        };
        let get = async {
            let resp =
                (self.client.get(self.url.clone()).await).map_err(|e| read(e.to_string()))?;
            let body = resp
                .into_body()
                .collect()
                .await
                .map_err(|e| read(e.to_string()))?;
            let doc: serde_json::Value =
                serde_json::from_slice(&body.to_bytes()).map_err(|e| read(e.to_string()))?;
            parse_status(&doc).map_err(|e| read(e.to_string()))
        };
        match tokio::time::timeout(Duration::from_secs(2), get).await {
            Ok(r) => r,
            Err(_) => Err(read("no answer within 2 s".into())),
        }
    }

    /// Waits until `ready` workers are ready (a pool just started), up to `limit`.
    pub async fn wait_ready(&self, ready: u32, limit: Duration) -> Result<PoolSample, PollError> {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let last = self.sample().await;
            if let Ok(s) = &last {
                if s.ready >= ready {
                    return Ok(*s);
                }
            }
            if tokio::time::Instant::now() >= deadline {
                let last = match last {
                    Ok(s) => format!("{} of {ready} workers ready", s.ready),
                    Err(e) => e.to_string(),
                };
                return Err(PollError::NotReady { limit, last });
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    /// Polls every second until aborted, rewriting `dir/manifold.csv` (temp + rename) after each
    /// poll, appending to `points` (the caller's copy, no file read back) and feeding `live`; an
    /// unreachable status is said once on stderr and skipped.
    pub async fn run(
        self,
        dir: PathBuf,
        live: Option<Arc<LiveMetrics>>,
        points: Arc<std::sync::Mutex<Vec<Point>>>,
    ) {
        let mut text = format!("{HEADER}\n");
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        let mut warned = false;
        loop {
            tick.tick().await;
            match self.sample().await {
                Ok(s) => {
                    let now = crate::timefmt::now_ms();
                    text.push_str(&row(now, &s));
                    // One push per poll: a poisoned lock is taken back (the list stays valid).
                    (points.lock())
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .push((now, s));
                    if let Some(l) = &live {
                        l.set_pool(s);
                    }
                    let path = dir.join(MANIFOLD_CSV);
                    if let Err(e) = crate::rundir::write_atomic(&path, text.as_bytes()) {
                        if !std::mem::replace(&mut warned, true) {
                            eprintln!("surge: {}: {e}", path.display());
                        }
                    }
                }
                Err(e) if !std::mem::replace(&mut warned, true) => {
                    eprintln!("surge: --manifold: {e} (polls go on; failed ones are skipped)");
                }
                Err(_) => {}
            }
        }
    }
}

fn row(ms: i64, s: &PoolSample) -> String {
    format!(
        "{ms},{},{},{},{},{:.3}\n",
        s.ready, s.busy, s.starting, s.queue, s.saturation
    )
}

/// Reads `dir/manifold.csv`; None when the run did not poll manifold.
pub fn read(dir: &Path) -> Option<Result<Vec<Point>, PollError>> {
    let path = dir.join(MANIFOLD_CSV);
    let text = std::fs::read_to_string(&path).ok()?;
    let at = |n: usize| format!("{}:{}", path.display(), n + 1);
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        let num = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok());
        let vals: Option<Vec<f64>> = (0..6).map(num).collect();
        let Some(v) = vals else {
            return Some(Err(PollError::Csv { at: at(n) }));
        };
        out.push((
            v[0] as i64,
            PoolSample {
                ready: v[1] as u32,
                busy: v[2] as u32,
                starting: v[3] as u32,
                queue: v[4] as u32,
                saturation: v[5],
            },
        ));
    }
    Some(Ok(out))
}

/// The median of ready workers between `from` and `to` (Unix ms), for "users per ready worker".
pub fn median_ready(points: &[Point], from: i64, to: i64) -> Option<u32> {
    let mut r: Vec<u32> = (points.iter())
        .filter(|(t, _)| (from..=to).contains(t))
        .map(|(_, s)| s.ready)
        .collect();
    r.sort_unstable();
    r.get(r.len() / 2).copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A status document as manifold serves it: ready/busy/starting counted, queue and
    /// saturation read; a multi-app document summed.
    #[test]
    fn status_documents() {
        let one = serde_json::json!({"workers": [
            {"state": "ready", "busy": 1}, {"state": "ready", "busy": 0},
            {"state": "starting", "busy": 0}, {"state": "draining", "busy": 1}],
            "queue": 3, "saturation": 1.0});
        let s = parse_status(&one).unwrap();
        assert_eq!((s.ready, s.busy, s.starting, s.queue), (2, 1, 1, 3));
        let two = serde_json::json!({"apps": {"a": one.clone(), "b": one}});
        assert_eq!(parse_status(&two).unwrap().ready, 4);
        assert!(parse_status(&serde_json::json!({"x": 1})).is_err());
        assert!(status_url("ftp://x").is_err());
        assert_eq!(
            status_url("http://127.0.0.1:9/").unwrap(),
            "http://127.0.0.1:9/__manifold__/status"
        );
    }
}
