//! Run-wide results, filled in as sessions end: every duration (ms) per event kind and per
//! completed session, kept exactly (4 bytes each) so percentiles are nearest rank over the real
//! values, and failures grouped by kind and recording line.

use super::session::{RowEvent, SessionLog};
use crate::failure::{Failure, FailureKind};
use crate::recording::Kind;
use std::collections::BTreeMap;

/// Run-wide durations (ms) and failures, filled as sessions end.
pub struct Aggregate {
    /// Event durations per event type.
    pub per_kind: BTreeMap<Kind, Vec<u32>>,
    /// Durations of completed sessions (first to last row).
    pub session: Vec<u32>,
    /// Failures by (kind, recording line): the first one seen (its detail) and how many.
    pub failures: BTreeMap<(FailureKind, u32), (Failure, u64)>,
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
            write_errors: 0,
        }
    }

    /// Adds one finished session's durations and outcome to the run aggregate.
    pub fn record(&mut self, log: &SessionLog, write_failed: bool) {
        if write_failed {
            self.write_errors += 1;
        }
        let rows = log.rows.iter().map(|r| (r.event, r.ts));
        self.add_session(rows, log.failure.is_none());
        if let Some(f) = &log.failure {
            self.failures
                .entry((f.cause.kind(), f.line()))
                .or_insert_with(|| (f.clone(), 0))
                .1 += 1
        }
    }

    /// Adds one session's durations given as its rows (event, Unix ms): `<TYPE>_START` ..
    /// `<TYPE>_END` pairs are event durations, a completed session's first to last row its
    /// length. `surge merge` feeds the rows it reads back from CSVs, so merged histograms are the
    /// ones one process would have built. Failures are counted by the caller.
    pub fn add_session(
        &mut self,
        rows: impl IntoIterator<Item = (RowEvent, i64)>,
        completed: bool,
    ) {
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
            self.session.push(ms(b - a));
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
}

/// A duration in ms as stored: negative (a clock step back) is 0, beyond u32 saturates.
fn ms(d: i64) -> u32 {
    d.clamp(0, i64::from(u32::MAX)) as u32
}
