//! The result of a bench run (`--json` prints it) and joining the results of a plan's segments
//! into one: counts add up, and the latency histograms (carried in HdrHistogram's compressed form)
//! are added, so merged percentiles are those of one histogram of every request.

use crate::segment::{self, Segment, Tag};
use crate::stats::{self, Summary};
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
    /// `ok` plus every error: in the open model the plan's count unless interrupted.
    pub requests: u64,
    /// Requests answered, whatever the status; each one's latency is in the histogram.
    pub ok: u64,
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
}

impl BenchReport {
    /// The segment tag of a segment's result: which segment, and its plan as comparable values.
    fn tag(&self, name: &str) -> Result<Tag, String> {
        let seg = self.segment.as_deref().ok_or_else(|| {
            format!("{name}: not a segment's result (run surge bench with --segment K/N)")
        })?;
        let segment: Segment = seg.parse().map_err(|e| format!("{name}: {e}"))?;
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

/// Joins the results of every segment of one plan (each once) into the result of the whole plan.
pub fn merge(parts: &[(String, BenchReport)]) -> Result<BenchReport, String> {
    let tags = (parts.iter())
        .map(|(name, r)| Ok((name.clone(), r.tag(name)?)))
        .collect::<Result<Vec<_>, String>>()?;
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
        ok: 0,
        errors: BTreeMap::new(),
        status_codes: BTreeMap::new(),
        late_starts: 0,
        late_start_ms: 0,
        bytes_received: 0,
        ..first.clone()
    };
    let mut end_ms = f64::MIN;
    for (name, r) in parts {
        let h = stats::decode(&r.histogram_us).map_err(|e| format!("{name}: histogram_us: {e}"))?;
        if h.len() != r.ok {
            return Err(format!(
                "{name}: histogram_us holds {} latencies but ok is {}",
                h.len(),
                r.ok
            ));
        }
        hist.add(&h)
            .map_err(|e| format!("{name}: histogram_us: {e:?}"))?;
        out.connections += r.connections;
        out.threads += r.threads;
        out.started_at_ms = out.started_at_ms.min(r.started_at_ms);
        end_ms = end_ms.max(r.started_at_ms as f64 + r.duration_s * 1000.0);
        out.requests += r.requests;
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
    out.rps = out.ok as f64 / out.duration_s.max(1e-9);
    out.latency_ms = stats::summarize(&hist, 1000.0);
    out.histogram_us = stats::encode(&hist);
    Ok(out)
}
