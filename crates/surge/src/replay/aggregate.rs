//! Run-wide results, filled in as sessions end: latency histograms per event kind, overall and
//! per session, and failures grouped by kind and recording line.

use crate::failure::{Failure, FailureKind};
use crate::output::{RowEvent, SessionLog};
use crate::recording::Kind;
use crate::stats;
use hdrhistogram::Histogram;
use std::collections::BTreeMap;

/// Run-wide latency histograms (ms) and failures, filled as sessions end.
pub(crate) struct Aggregate {
    pub per_kind: BTreeMap<Kind, Histogram<u64>>,
    pub overall: Histogram<u64>,
    pub session: Histogram<u64>,
    /// Failures by (kind, recording line): the first one seen (its detail) and how many.
    pub failures: BTreeMap<(FailureKind, u32), (Failure, u64)>,
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
            overall: stats::new_histogram(),
            session: stats::new_histogram(),
            failures: BTreeMap::new(),
            write_errors: 0,
        }
    }

    /// Adds one finished session's durations and outcome to the run aggregate.
    pub(super) fn record(&mut self, log: &SessionLog, write_failed: bool) {
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
                    let d = (ts - start).max(0) as u64;
                    let _ = self.overall.record(d);
                    let _ = self
                        .per_kind
                        .entry(k)
                        .or_insert_with(stats::new_histogram)
                        .record(d);
                    open = None;
                }
                _ => {}
            }
        }
        if let (true, Some(a), Some(b)) = (completed, first, last) {
            let _ = self.session.record((b - a).max(0) as u64);
        }
    }
}
