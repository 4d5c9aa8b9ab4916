//! Where a request's time went, as the server says: its `Server-Timing` header (W3C; manifold
//! sends `queue;dur=…, app;dur=…`, any server may send its own) read per request, written beside
//! the session CSVs (`timing/<session>_<worker>_<iteration>.csv`, so shinycannon's files stay as
//! they are), and each recording line's measured time split into queue / server / rest (network
//! and client), the three parts summing to the measured time.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

/// The run directory's folder of timing files (one per session that got any `Server-Timing`).
pub const TIMING_DIR: &str = "timing";

/// The header of a timing CSV.
pub const HEADER: &str = "input_line_number,start_ms,measured_ms,queue_ms,server_ms";

/// What one response's `Server-Timing` said, in milliseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ServerTiming {
    /// Waiting before the work began: metrics named `queue` or `wait` (or containing either),
    /// summed (a balancer's and a pool's waits follow each other).
    pub queue_ms: f64,
    /// The work: the largest `app` or `total` metric (manifold's `app` includes a worker's own
    /// `app`); a server naming neither: the sum of its other metrics.
    pub server_ms: f64,
}

impl ServerTiming {
    /// Reads the values of every `Server-Timing` header of a response; None when none has a
    /// metric with a `dur` (the server does not say).
    pub fn parse<'a>(values: impl IntoIterator<Item = &'a str>) -> Option<ServerTiming> {
        let (mut queue, mut main, mut other, mut any) = (0.0, None::<f64>, 0.0, false);
        for v in values {
            for (name, dur) in metrics(v) {
                any = true;
                let name = name.to_ascii_lowercase();
                if name.contains("queue") || name.contains("wait") {
                    queue += dur;
                } else if name == "app" || name == "total" {
                    main = Some(main.map_or(dur, |m: f64| m.max(dur)));
                } else {
                    other += dur;
                }
            }
        }
        any.then(|| ServerTiming {
            queue_ms: queue,
            server_ms: main.unwrap_or(other),
        })
    }
}

/// `(name, dur)` of each metric in one header value that has a finite, non-negative `dur`.
fn metrics(v: &str) -> Vec<(String, f64)> {
    let mut out = Vec::new();
    for metric in split_unquoted(v, ',') {
        let mut params = split_unquoted(&metric, ';').into_iter();
        let name = params.next().unwrap_or_default().trim().to_string();
        let dur = params.find_map(|p| {
            let (k, val) = p.split_once('=')?;
            (k.trim().eq_ignore_ascii_case("dur"))
                .then(|| val.trim().trim_matches('"').parse().ok())?
        });
        if let Some(d) = dur.filter(|d: &f64| d.is_finite() && *d >= 0.0) {
            if !name.is_empty() {
                out.push((name, d));
            }
        }
    }
    out
}

/// Splits on `sep` outside double-quoted strings (a `desc` may hold commas).
fn split_unquoted(s: &str, sep: char) -> Vec<String> {
    let (mut out, mut cur, mut quoted, mut escaped) = (Vec::new(), String::new(), false, false);
    for c in s.chars() {
        match c {
            _ if escaped => escaped = false,
            '\\' if quoted => escaped = true,
            '"' => quoted = !quoted,
            c if c == sep && !quoted => {
                out.push(std::mem::take(&mut cur));
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    out.push(cur);
    out
}

/// One request whose response carried `Server-Timing`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    /// recording.log line of the request.
    pub line: u32,
    /// Unix ms when it started (the START row's time).
    pub start_ms: i64,
    /// Its time as surge measured it, from sending to the end of the body.
    pub measured_ms: f64,
    /// What the server said.
    pub server: ServerTiming,
}

/// Renders a session's samples as its timing CSV.
pub fn render(samples: &[Sample]) -> String {
    let mut s = String::with_capacity(64 + samples.len() * 40);
    s.push_str(HEADER);
    s.push('\n');
    for x in samples {
        let _ = writeln!(
            s,
            "{},{},{:.3},{:.3},{:.3}",
            x.line, x.start_ms, x.measured_ms, x.server.queue_ms, x.server.server_ms
        );
    }
    s
}

/// Why a run's timing files could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// A file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file or folder.
        path: String,
        /// OS error.
        source: std::io::Error,
    },
    /// A row is not five numbers.
    #[error("{path}:{line}: not a timing row (want {HEADER})")]
    Row {
        /// The file.
        path: String,
        /// 1-based line in it.
        line: usize,
    },
}

/// Every sample of a run directory (none when it has no `timing/`: the server sent no
/// `Server-Timing`, or shinycannon made the run).
pub fn read_run(dir: &Path) -> Result<Vec<Sample>, ReadError> {
    let folder = dir.join(TIMING_DIR);
    let io = |p: &Path| {
        let path = p.display().to_string();
        move |source| ReadError::Io { path, source }
    };
    let entries = match std::fs::read_dir(&folder) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io(&folder)(e)),
    };
    let mut files: Vec<_> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "csv"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).map_err(io(&f))?;
        for (i, row) in text.lines().enumerate().skip(1) {
            let bad = || ReadError::Row {
                path: f.display().to_string(),
                line: i + 1,
            };
            let v: Vec<&str> = row.split(',').collect();
            if v.len() != 5 {
                return Err(bad());
            }
            let num = |k: usize| v[k].parse::<f64>().ok().filter(|x| x.is_finite());
            out.push(Sample {
                line: v[0].parse().map_err(|_| bad())?,
                start_ms: v[1].parse().map_err(|_| bad())?,
                measured_ms: num(2).ok_or_else(bad)?,
                server: ServerTiming {
                    queue_ms: num(3).ok_or_else(bad)?,
                    server_ms: num(4).ok_or_else(bad)?,
                },
            });
        }
    }
    Ok(out)
}

/// One recording line's mean time split three ways; `queue + server + rest == measured`.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Split {
    /// recording.log line.
    pub line: u32,
    /// Requests that said.
    #[cfg_attr(test, ts(type = "number"))]
    pub n: u64,
    /// Mean measured time, ms.
    pub measured_ms: f64,
    /// Mean of the server's queue wait, ms.
    pub queue_ms: f64,
    /// Mean of the server's work, ms.
    pub server_ms: f64,
    /// The rest (network, client, anything the server did not count), ms.
    pub rest_ms: f64,
}

/// Each line's split, by line. A server's figures above what surge measured (clocks disagree,
/// or it counted past its last byte) are cut so that the parts still sum to the measured time:
/// queue first, then server, the rest never negative.
pub fn split_by_line(samples: &[Sample]) -> Vec<Split> {
    let mut by: BTreeMap<u32, [f64; 4]> = BTreeMap::new();
    for s in samples {
        let m = s.measured_ms.max(0.0);
        let q = s.server.queue_ms.min(m);
        let sv = s.server.server_ms.min(m - q);
        let e = by.entry(s.line).or_default();
        e[0] += 1.0;
        e[1] += m;
        e[2] += q;
        e[3] += sv;
    }
    by.into_iter()
        .map(|(line, [n, m, q, sv])| Split {
            line,
            n: n as u64,
            measured_ms: m / n,
            queue_ms: q / n,
            server_ms: sv / n,
            rest_ms: (m - q - sv) / n,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_manifolds_header_and_others() {
        let st = ServerTiming::parse(["queue;dur=12.5, app;dur=100.25;desc=\"a,b;c\""]).unwrap();
        assert_eq!(st.queue_ms, 12.5);
        assert_eq!(st.server_ms, 100.25);
        // A worker's own app entry, then manifold's (which includes it): the larger counts.
        let st = ServerTiming::parse(["app;dur=90, db;dur=3", "queue;dur=1, app;dur=95"]).unwrap();
        assert_eq!((st.queue_ms, st.server_ms), (1.0, 95.0));
        // No app/total: the other metrics summed.
        let st = ServerTiming::parse(["db;dur=3, render;dur=4.5, cache;desc=hit"]).unwrap();
        assert_eq!((st.queue_ms, st.server_ms), (0.0, 7.5));
        assert_eq!(ServerTiming::parse(["miss, cpu;desc=x", ""]), None);
        assert_eq!(ServerTiming::parse(["app;dur=-1, x;dur=NaN"]), None);
    }

    #[test]
    fn parts_sum_to_the_measured_time() {
        let s = |m, q, sv| Sample {
            line: 3,
            start_ms: 0,
            measured_ms: m,
            server: ServerTiming {
                queue_ms: q,
                server_ms: sv,
            },
        };
        let split = split_by_line(&[s(110.0, 4.0, 100.0), s(50.0, 30.0, 40.0)]);
        assert_eq!(split.len(), 1);
        let x = split[0];
        assert_eq!((x.n, x.measured_ms, x.queue_ms), (2, 80.0, 17.0));
        assert_eq!((x.server_ms, x.rest_ms), (60.0, 3.0));
        assert_eq!(x.queue_ms + x.server_ms + x.rest_ms, x.measured_ms);
        let text = render(&[s(1.5, 0.25, 1.0)]);
        assert_eq!(text, format!("{HEADER}\n3,0,1.500,0.250,1.000\n"));
    }
}
