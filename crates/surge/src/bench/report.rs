//! The result of a bench run (`--json` prints it) and joining the results of a plan's segments
//! into one: counts add up, and the latency histograms (carried in HdrHistogram's compressed form)
//! are added, so merged percentiles are those of one histogram of every request.

use super::BenchArgs;
use crate::segment::{self, Segment, SegmentError, Tag};
use crate::stats::{self, Summary};
use crate::timefmt;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Result of a bench run (printed as text or JSON).
#[derive(Serialize, Deserialize, Debug, Clone)]
pub struct BenchReport {
    /// The URL requested.
    pub url: String,
    /// `closed` (each connection sends when its previous answer arrived) or `open` (`--rate`: a
    /// fixed schedule; latency measured from each request's intended send time).
    pub model: String,
    /// Connections used (`-c`; merged: summed over the segments).
    pub connections: usize,
    /// Threads that ran the connections, each with its own event loop (merged: summed).
    #[serde(default)]
    pub threads: usize,
    /// `--rate` in requests per second (the open model); null for the closed model.
    pub rate: Option<f64>,
    /// The plan by time: `-d` in seconds; null with `-n`.
    pub planned_duration_s: Option<f64>,
    /// The plan by count: `-n`; null with `-d`.
    pub planned_requests: Option<u64>,
    /// `K/N` for one segment of the plan (`--segment`), else null.
    pub segment: Option<String>,
    /// `--start-at` (RFC 3339), else null.
    pub start_at: Option<String>,
    /// How long after `--start-at` the process got to start (0: on time).
    pub late_start_ms: u64,
    /// Unix ms of the plan's start.
    pub started_at_ms: i64,
    /// Seconds from the plan's start until every connection finished (merged: earliest start to
    /// latest end).
    pub duration_s: f64,
    /// `answered` plus every error: in the open model the plan's count unless interrupted.
    pub requests: u64,
    /// Requests answered, whatever the status; each one's latency is in the histogram.
    pub answered: u64,
    /// Requests answered with an ok status: 2xx or 3xx, or one of `expect_status` when given.
    pub ok: u64,
    /// `--expect-status`: the statuses that count as ok (empty: any 2xx or 3xx).
    pub expect_status: Vec<u16>,
    /// `--max-error-rate`: the share of requests that may be not ok before the run fails.
    pub max_error_rate: f64,
    /// Requests without an answer, by reason (`timeout`, a connection error, `not sent: …` for a
    /// generator behind schedule).
    pub errors: BTreeMap<String, u64>,
    /// Answered requests by HTTP status.
    pub status_codes: BTreeMap<u16, u64>,
    /// Answered requests per second: `ok / duration_s`.
    pub rps: f64,
    /// Latency in ms.
    pub latency_ms: Summary,
    /// Open model: requests that started more than 10 ms after their intended time.
    pub late_starts: u64,
    /// Response body bytes received.
    pub bytes_received: u64,
    /// For a result made by `surge merge`: how many segments it joins.
    pub merged_segments: Option<u32>,
    /// Every latency in µs: HdrHistogram V2 + deflate, base64 (`stats::encode`).
    pub histogram_us: String,
    /// surge's own CPU and event-loop lag during the run (absent from a merged result).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generator: Option<crate::health::Generator>,
}

/// Whether an answer's status counts as ok: one of `expect` when given, else 2xx or 3xx.
pub fn status_ok(status: u16, expect: &[u16]) -> bool {
    if expect.is_empty() {
        (200..400).contains(&status)
    } else {
        expect.contains(&status)
    }
}

/// Answers whose status is ok (`status_ok`).
pub fn ok_count(statuses: &BTreeMap<u16, u64>, expect: &[u16]) -> u64 {
    (statuses.iter())
        .filter(|(s, _)| status_ok(**s, expect))
        .map(|(_, n)| n)
        .sum()
}

impl BenchReport {
    /// The one line that fails the run (exit 1) when more requests than `--max-error-rate`
    /// were not ok; `None` when the run passes.
    pub fn verdict(&self) -> Option<String> {
        let bad = self.requests - self.ok;
        let rate = if self.requests == 0 {
            1.0
        } else {
            bad as f64 / self.requests as f64
        };
        if self.requests > 0 && rate <= self.max_error_rate {
            return None;
        }
        let mut why: Vec<String> = (self.status_codes.iter())
            .filter(|(s, _)| !status_ok(**s, &self.expect_status))
            .map(|(s, n)| format!("{s}: {n}"))
            .collect();
        let errors: u64 = self.errors.values().sum();
        if errors > 0 {
            why.push(format!("no answer: {errors}"));
        }
        let ok_is = if self.expect_status.is_empty() {
            "2xx/3xx".to_string()
        } else {
            (self.expect_status.iter())
                .map(u16::to_string)
                .collect::<Vec<_>>()
                .join(",")
        };
        Some(format!(
            "{bad} of {} requests ({:.1}%) were not ok ({}; ok is {ok_is}), more than --max-error-rate {}%",
            self.requests,
            rate * 100.0,
            if why.is_empty() { "none sent".into() } else { why.join(", ") },
            self.max_error_rate * 100.0
        ))
    }

    /// The segment tag of a segment's result: which segment, and its plan as comparable values.
    fn tag(&self, name: &str) -> Result<Tag, MergeError> {
        let seg =
            (self.segment.as_deref()).ok_or_else(|| MergeError::NotSegment(name.to_string()))?;
        let segment: Segment = seg.parse().map_err(|err| MergeError::Segment {
            name: name.to_string(),
            err,
        })?;
        let show = |v: Option<String>| v.unwrap_or_else(|| "none".into());
        Ok(Tag {
            segment,
            plan: vec![
                ("URL", self.url.clone()),
                ("--rate", show(self.rate.map(|r| r.to_string()))),
                ("-d", show(self.planned_duration_s.map(|d| format!("{d}s")))),
                ("-n", show(self.planned_requests.map(|n| n.to_string()))),
                ("--start-at", show(self.start_at.clone())),
                ("segment count", segment.count.to_string()),
            ],
        })
    }
}

/// Why segments' bench results cannot be merged; each names the file at fault.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    /// A result without a segment.
    #[error("{0}: not a segment's result (run surge bench with --segment K/N)")]
    NotSegment(String),
    /// A result whose segment is not K/N.
    #[error("{name}: {err}")]
    Segment {
        /// The file.
        name: String,
        /// What is wrong with its segment.
        err: SegmentError,
    },
    /// The results are not one plan's segments 1..=N.
    #[error(transparent)]
    Set(#[from] SegmentError),
    /// Its histogram is not one.
    #[error("{name}: histogram_us: {err}")]
    Histogram {
        /// The file.
        name: String,
        /// Why.
        err: stats::DecodeError,
    },
    /// Its histogram does not hold its answered requests.
    #[error("{name}: histogram_us holds {held} latencies but answered is {answered}")]
    Count {
        /// The file.
        name: String,
        /// Latencies in the histogram.
        held: u64,
        /// `answered`.
        answered: u64,
    },
    /// Its histogram does not add to the others (different precision).
    #[error("{name}: histogram_us: {err:?}")]
    Add {
        /// The file.
        name: String,
        /// hdrhistogram's reason.
        err: hdrhistogram::AdditionError,
    },
}

/// Joins the results of every segment of one plan (each once) into the result of the whole plan.
pub fn merge(parts: &[(String, BenchReport)]) -> Result<BenchReport, MergeError> {
    let tags = (parts.iter())
        .map(|(name, r)| Ok((name.clone(), r.tag(name)?)))
        .collect::<Result<Vec<_>, MergeError>>()?;
    segment::check_set(&tags)?;
    let first = &parts[0].1;
    let mut hist = stats::new_histogram();
    let mut out = BenchReport {
        segment: None,
        merged_segments: Some(parts.len() as u32),
        connections: 0,
        threads: 0,
        started_at_ms: i64::MAX,
        requests: 0,
        answered: 0,
        ok: 0,
        errors: BTreeMap::new(),
        status_codes: BTreeMap::new(),
        late_starts: 0,
        late_start_ms: 0,
        bytes_received: 0,
        generator: None,
        ..first.clone()
    };
    let mut end_ms = f64::MIN;
    for (name, r) in parts {
        let name = name.clone();
        let h = match stats::decode(&r.histogram_us) {
            Ok(h) => h,
            Err(err) => return Err(MergeError::Histogram { name, err }),
        };
        if h.len() != r.answered {
            let (held, answered) = (h.len(), r.answered);
            return Err(MergeError::Count {
                name,
                held,
                answered,
            });
        }
        if let Err(err) = hist.add(&h) {
            return Err(MergeError::Add { name, err });
        }
        out.connections += r.connections;
        out.threads += r.threads;
        out.started_at_ms = out.started_at_ms.min(r.started_at_ms);
        end_ms = end_ms.max(r.started_at_ms as f64 + r.duration_s * 1000.0);
        out.requests += r.requests;
        out.answered += r.answered;
        out.ok += r.ok;
        for (k, v) in &r.errors {
            *out.errors.entry(k.clone()).or_insert(0) += v;
        }
        for (k, v) in &r.status_codes {
            *out.status_codes.entry(*k).or_insert(0) += v;
        }
        out.late_starts += r.late_starts;
        out.late_start_ms = out.late_start_ms.max(r.late_start_ms);
        out.bytes_received += r.bytes_received;
    }
    out.duration_s = (end_ms - out.started_at_ms as f64) / 1000.0;
    out.rps = out.answered as f64 / out.duration_s.max(1e-9);
    out.latency_ms = stats::summarize(&hist, 1000.0);
    out.histogram_us = stats::encode(&hist);
    Ok(out)
}

/// The run's result from the connections' folded statistics.
pub(super) fn bench_report(
    args: &BenchArgs,
    plan: &super::Plan,
    mut all: super::conn::ConnStats,
) -> BenchReport {
    let elapsed = plan.t0.elapsed().as_secs_f64();
    let hist = all.hist.take().unwrap_or_else(stats::new_histogram);
    let answered = hist.len();
    let errs: u64 = all.errors.values().sum();
    BenchReport {
        url: args.url.clone(),
        model: if args.rate.is_some() {
            "open"
        } else {
            "closed"
        }
        .into(),
        connections: plan.conns,
        threads: plan.lanes,
        rate: args.rate,
        planned_duration_s: plan.deadline.map(|d| (d - plan.t0).as_secs_f64()),
        planned_requests: args.requests,
        segment: args.segment.as_ref().map(|_| plan.segment.to_string()),
        start_at: args
            .start_at
            .as_ref()
            .map(|_| timefmt::format_iso(plan.start.unix_ms)),
        late_start_ms: plan.start.late.as_millis() as u64,
        started_at_ms: plan.start.unix_ms,
        duration_s: elapsed,
        requests: answered + errs,
        answered,
        ok: ok_count(&all.statuses, &args.expect_status),
        expect_status: args.expect_status.clone(),
        max_error_rate: args.max_error_rate,
        errors: all.errors,
        status_codes: all.statuses,
        rps: answered as f64 / elapsed.max(1e-9),
        latency_ms: stats::summarize(&hist, 1000.0),
        late_starts: all.late,
        bytes_received: all.bytes,
        merged_segments: None,
        histogram_us: stats::encode(&hist),
        generator: None,
    }
}
