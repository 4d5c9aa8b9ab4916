//! Run-wide results, filled in as sessions end: every duration (ms) per event kind and per
//! completed session, kept exactly (4 bytes each) so percentiles are nearest rank over the real
//! values, sessions counted by how they ended, and failures grouped by kind and recording line.
//! [`Aggregate::outcome`] turns it into the one [`Outcome`]: the only place its figures are
//! computed.

use super::outcome::{Ended, FailureCount, Outcome, Percentiles, SessionCounts};
use super::session::{RowEvent, SessionLog};
use crate::failure::FailureKind;
use crate::recording::Kind;
use crate::stats;
use std::collections::BTreeMap;

/// Run-wide durations (ms), session counts and failures, filled as sessions end (a replay), from
/// CSV rows (`surge merge`) or from the report's reading of them.
pub struct Aggregate {
    /// Event durations per event type.
    pub per_kind: BTreeMap<Kind, Vec<u32>>,
    /// Durations of completed sessions (first to last row).
    pub session: Vec<u32>,
    /// Failures by (kind, recording line): the first one seen (its detail) and how many.
    pub failures: BTreeMap<(FailureKind, u32), FailureCount>,
    /// Sessions that ended with PLAYBACK_DONE.
    pub completed: u64,
    /// Sessions that ended with PLAYBACK_FAIL.
    pub failed: u64,
    /// Sessions that ended with neither.
    pub unfinished: u64,
    /// Sessions whose CSV could not be written.
    pub write_errors: u64,
}

impl Default for Aggregate {
    fn default() -> Self {
        Aggregate::new()
    }
}

impl Aggregate {
    /// An empty aggregate.
    pub fn new() -> Self {
        Aggregate {
            per_kind: BTreeMap::new(),
            session: Vec::new(),
            failures: BTreeMap::new(),
            completed: 0,
            failed: 0,
            unfinished: 0,
            write_errors: 0,
        }
    }

    /// Adds one finished session's durations and outcome to the run aggregate.
    pub fn record(&mut self, log: &SessionLog, write_failed: bool) {
        if write_failed {
            self.write_errors += 1;
        }
        let rows = log.rows.iter().map(|r| (r.event, r.ts));
        let ended = match log.failure {
            None => Ended::Done,
            Some(_) => Ended::Failed,
        };
        self.add_session(rows, ended);
        if let Some(f) = &log.failure {
            self.add_failure(FailureCount::of(f));
        }
    }

    /// Counts failures: added to the group of their kind and line (which keeps the first detail
    /// seen), or a new group.
    pub fn add_failure(&mut self, f: FailureCount) {
        match self.failures.get_mut(&(f.kind, f.line)) {
            Some(g) => g.count += f.count,
            None => {
                self.failures.insert((f.kind, f.line), f);
            }
        }
    }

    /// Counts one session by how it ended.
    pub fn ended(&mut self, how: Ended) {
        *match how {
            Ended::Done => &mut self.completed,
            Ended::Failed => &mut self.failed,
            Ended::Unfinished => &mut self.unfinished,
        } += 1;
    }

    /// Adds a completed session's length (first to last row, ms).
    pub fn add_session_length(&mut self, ms_: i64) {
        self.session.push(ms(ms_));
    }

    /// Adds one session given as its rows (event, Unix ms) and how it ended: `<TYPE>_START` ..
    /// `<TYPE>_END` pairs are event durations, a completed session's first to last row its
    /// length. `surge merge` feeds the rows it reads back from CSVs, so merged histograms are the
    /// ones one process would have built. Failures are counted by the caller.
    pub fn add_session(&mut self, rows: impl IntoIterator<Item = (RowEvent, i64)>, how: Ended) {
        self.ended(how);
        let completed = how == Ended::Done;
        let mut open: Option<(Kind, i64)> = None;
        let (mut first, mut last) = (None, None);
        for (event, ts) in rows {
            first.get_or_insert(ts);
            last = Some(ts);
            match (event, open) {
                (RowEvent::Start(k), _) => open = Some((k, ts)),
                (RowEvent::End(k), Some((o, start))) if k == o => {
                    self.add_event(k, ts - start);
                    open = None;
                }
                _ => {}
            }
        }
        if let (true, Some(a), Some(b)) = (completed, first, last) {
            self.add_session_length(b - a);
        }
    }

    /// Adds one event's duration (ms).
    pub fn add_event(&mut self, kind: Kind, ms_: i64) {
        self.per_kind.entry(kind).or_default().push(ms(ms_));
    }

    /// Every event's duration, all types together ("all events").
    pub fn overall(&self) -> Vec<u32> {
        self.per_kind.values().flatten().copied().collect()
    }

    /// What the sessions gathered so far say: the one computation behind summary.json's figures
    /// (a replay's, a merge's, a journey's) and the report's.
    pub fn outcome(&self) -> Outcome {
        let started = self.completed + self.failed + self.unfinished;
        let failure_rate = if started == 0 {
            0.0
        } else {
            self.failed as f64 / started as f64
        };
        let mut failures: Vec<FailureCount> = self.failures.values().cloned().collect();
        failures.sort_by_key(|f| std::cmp::Reverse(f.count));
        let mut failures_by_kind = BTreeMap::new();
        for f in &failures {
            *failures_by_kind.entry(f.kind).or_insert(0) += f.count;
        }
        Outcome {
            sessions: SessionCounts {
                started,
                completed: self.completed,
                failed: self.failed,
                unfinished: self.unfinished,
                unwritten: self.write_errors,
            },
            failure_rate,
            failures_by_kind,
            failures,
            percentiles: self.percentiles(),
        }
    }

    /// The percentiles of every duration gathered so far.
    pub fn percentiles(&self) -> Percentiles {
        Percentiles {
            events: (self.per_kind.iter())
                .map(|(k, v)| (*k, stats::exact(v)))
                .collect(),
            overall: stats::exact(&self.overall()),
            session_duration: stats::exact(&self.session),
        }
    }
}

/// A duration in ms as stored: negative (a clock step back) is 0, beyond u32 saturates.
fn ms(d: i64) -> u32 {
    d.clamp(0, i64::from(u32::MAX)) as u32
}
