//! Numbers the report states: per run, the run directory's one [`Outcome`] (counts, failures,
//! percentiles by its one definition, [`crate::stats::rank`]: nearest rank over all values) and
//! the report's own figures; run phases and per-line boxes.

use std::collections::HashMap;

use crate::failure::FailureKind;
use crate::rundir::{Aggregate, Ended, FailureCount, Outcome};

use super::{
    class::Class,
    lines::Lines,
    load::{Run, Session},
};

/// A latency distribution in ms; serialized as `[n, p50, p90, p99, max]` for the report page.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[cfg_attr(
    test,
    ts(type = "[n: number, p50: number, p90: number, p99: number, max: number]")
)]
pub struct Dist {
    /// How many values.
    pub n: usize,
    /// Median.
    pub p50: i64,
    /// 90th percentile.
    pub p90: i64,
    /// 99th percentile.
    pub p99: i64,
    /// Largest value.
    pub max: i64,
}

impl serde::Serialize for Dist {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.arr().serialize(s)
    }
}

impl Dist {
    /// `[n, p50, p90, p99, max]`, the order the report's tables use.
    pub fn arr(&self) -> [i64; 5] {
        [self.n as i64, self.p50, self.p90, self.p99, self.max]
    }

    /// Percentiles of `v` (sorted here) by the one definition, [`rank`].
    pub fn of(mut v: Vec<i64>) -> Dist {
        if v.is_empty() {
            return Dist::default();
        }
        v.sort_unstable();
        Dist {
            n: v.len(),
            p50: rank(&v, 50.0),
            p90: rank(&v, 90.0),
            p99: rank(&v, 99.0),
            max: v[v.len() - 1],
        }
    }
}

pub use crate::stats::rank;

/// Warm-up ends when the last simulated user has started; cool-down starts when the first user
/// has finished its last session. Between them every user is busy: the loaded phase.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Phases {
    /// ms since run start.
    pub warmup_end: i64,
    /// ms since run start.
    pub cooldown_start: i64,
}

/// What the report states of one run (the report page's `summary`; times and phases are sent
/// beside it): the run directory's one [`Outcome`], computed from the session rows by the same
/// function a replay uses for summary.json, and the figures only the report draws.
#[derive(Debug, Clone, serde::Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct RunFigures {
    /// Epoch ms of the first row of any session.
    #[serde(skip)]
    #[cfg_attr(test, ts(type = "number"))]
    pub start_ms: i64,
    /// First row to last row.
    #[serde(skip)]
    #[cfg_attr(test, ts(type = "number"))]
    pub duration_ms: i64,
    /// Sessions (started, completed, failed, unfinished), failures by kind and by (kind, line)
    /// with their reasons, latency percentiles: as summary.json states them.
    pub outcome: Outcome,
    /// Distinct worker ids (simulated users).
    pub workers: usize,
    /// Replayed events (START/END pairs, plus events cut short by a failure).
    pub events: usize,
    /// Events cut short by a failure.
    pub failed_events: usize,
    /// Page load (home + its assets), per session.
    pub page_load: Dist,
    /// Sessions whose page load exceeded the page-load limit.
    pub over_limit: usize,
    /// Event durations per class, indexed by `Class::index`.
    pub classes: Vec<Dist>,
    /// Warm-up / loaded / cool-down boundaries.
    #[serde(skip)]
    pub phases: Phases,
}

impl RunFigures {
    /// Sessions read (every session CSV).
    pub fn sessions(&self) -> usize {
        self.outcome.sessions.started as usize
    }

    /// The index in `outcome.failures` of the group session `s` failed in (None: it did not).
    pub fn failure_of(&self, s: &Session) -> Option<usize> {
        let (kind, line) = (s.fail_kind?, s.fail_line?);
        (self.outcome.failures.iter()).position(|f| f.kind == kind && f.line == line)
    }
}

/// Page load of a session: the time spent in the first Homepage event and the asset requests
/// that follow it, summed without the pauses between them. A Shiny replay fetches assets back to
/// back while a surge/http recording replays its recorded gaps (think time, e.g. 60 ms of gaps
/// around 1–3 ms requests); summing request times measures both kinds the same way. None when
/// the session has no homepage or failed while loading it.
pub fn page_load(s: &Session, rec: &Lines) -> Option<i64> {
    let class = |line| rec.get(line).map(|l| l.class);
    let first = s
        .events
        .iter()
        .position(|e| class(e.line) == Some(Class::Homepage))?;
    let mut total = 0;
    for e in &s.events[first..] {
        if e.failed {
            return None;
        }
        if e.line != s.events[first].line && class(e.line) != Some(Class::Assets) {
            break;
        }
        total += e.end - e.start;
    }
    Some(total)
}

/// Computes what the report states of a run: the [`Outcome`] through the run directory's one
/// [`Aggregate`] (durations of the events and completed sessions, each session counted by how it
/// ended, failures grouped by kind and line with the first to fail giving the reason, as a
/// replay's), then the report's own figures.
pub fn summarize(run: &Run, page_load_limit_ms: i64) -> RunFigures {
    let rec = &run.recording;
    let start_ms = run.sessions.iter().map(|s| s.start).min().unwrap_or(0);
    let end_ms = run.sessions.iter().map(|s| s.end).max().unwrap_or(start_ms);
    let mut class_durs: Vec<Vec<i64>> = vec![Vec::new(); 5];
    let mut loads = Vec::new();
    let mut agg = Aggregate::new();
    let (mut events, mut failed_events) = (0, 0);
    for s in &run.sessions {
        agg.ended(s.outcome);
        if s.outcome == Ended::Done {
            agg.add_session_length(s.end - s.start);
        }
        if let Some(p) = page_load(s, rec) {
            loads.push(p);
        }
        for e in &s.events {
            events += 1;
            if e.failed {
                failed_events += 1;
                continue;
            }
            if let Some(l) = rec.get(e.line) {
                class_durs[l.class.index()].push(e.end - e.start);
                agg.add_event(l.kind, e.end - e.start);
            }
        }
    }
    // In the order they failed (a replay counts a failure when its session ends).
    let mut failed: Vec<&Session> = (run.sessions.iter())
        .filter(|s| s.fail_kind.is_some())
        .collect();
    failed.sort_by_key(|s| (s.end, s.id));
    for s in failed {
        let line = s.fail_line.unwrap_or(0);
        agg.add_failure(FailureCount {
            kind: s.fail_kind.unwrap_or(FailureKind::Unknown),
            line,
            event: rec.get(line).map(|l| l.kind),
            url: None,
            reason: s.reason.clone().unwrap_or_default(),
            count: 1,
        });
    }
    let over_limit = loads.iter().filter(|&&l| l > page_load_limit_ms).count();
    let workers = {
        let mut w: Vec<u32> = run.sessions.iter().map(|s| s.worker).collect();
        w.sort_unstable();
        w.dedup();
        w.len()
    };
    RunFigures {
        start_ms,
        duration_ms: end_ms - start_ms,
        outcome: agg.outcome(),
        workers,
        events,
        failed_events,
        page_load: Dist::of(loads),
        over_limit,
        classes: class_durs.into_iter().map(Dist::of).collect(),
        phases: phases(run, start_ms, end_ms),
    }
}

fn phases(run: &Run, start_ms: i64, end_ms: i64) -> Phases {
    let mut per_worker: HashMap<u32, (i64, i64)> = HashMap::new();
    for s in &run.sessions {
        let e = per_worker.entry(s.worker).or_insert((s.start, s.end));
        e.0 = e.0.min(s.start);
        e.1 = e.1.max(s.end);
    }
    let warmup_end = per_worker.values().map(|w| w.0).max().unwrap_or(start_ms);
    let cooldown_start = per_worker.values().map(|w| w.1).min().unwrap_or(end_ms);
    Phases {
        warmup_end: warmup_end - start_ms,
        cooldown_start: cooldown_start - start_ms,
    }
}

/// Duration distribution of one recording line across a run's sessions (a box plot).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LineBox {
    /// recording.log line.
    pub line: u32,
    /// Completed events on that line.
    pub n: usize,
    /// Fastest (ms).
    pub min: i64,
    /// First quartile.
    pub q1: i64,
    /// Median.
    pub med: i64,
    /// Third quartile.
    pub q3: i64,
    /// Slowest.
    pub max: i64,
    /// 90th percentile (the sort key "slowest first").
    pub p90: i64,
}

/// Per-line boxes, in recording order.
pub fn line_boxes(run: &Run) -> Vec<LineBox> {
    let mut by_line: HashMap<u32, Vec<i64>> = HashMap::new();
    for s in &run.sessions {
        for e in s.events.iter().filter(|e| !e.failed) {
            by_line.entry(e.line).or_default().push(e.end - e.start);
        }
    }
    let mut out: Vec<LineBox> = by_line
        .into_iter()
        .map(|(line, mut v)| {
            v.sort_unstable();
            LineBox {
                line,
                n: v.len(),
                min: v[0],
                q1: rank(&v, 25.0),
                med: rank(&v, 50.0),
                q3: rank(&v, 75.0),
                max: v[v.len() - 1],
                p90: rank(&v, 90.0),
            }
        })
        .collect();
    out.sort_by_key(|b| b.line);
    out
}
