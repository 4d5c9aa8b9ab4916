//! Run-wide results, filled in as sessions end: latency histograms per event kind, overall and
//! per session, and failures grouped by kind and recording line.

use crate::failure::{Failure, FailureKind};
use crate::output::{RowEvent, SessionLog};
use crate::recording::Kind;
use crate::stats;
use hdrhistogram::Histogram;
use std::collections::BTreeMap;

/// Run-wide latency histograms (ms) and failures, filled as sessions end.
pub(super) struct Aggregate {
    pub per_kind: BTreeMap<Kind, Histogram<u64>>,
    pub overall: Histogram<u64>,
    pub session: Histogram<u64>,
    /// Failures by (kind, recording line): the first one seen (its detail) and how many.
    pub failures: BTreeMap<(FailureKind, u32), (Failure, u64)>,
    pub write_errors: u64,
}

impl Aggregate {
    pub(super) fn new() -> Self {
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
        let agg = self;
        if write_failed {
            agg.write_errors += 1;
        }
        let mut open: Option<(Kind, i64)> = None;
        for r in &log.rows {
            match (r.event, open) {
                (RowEvent::Start(k), _) => open = Some((k, r.ts)),
                (RowEvent::End(k), Some((o, ts))) if k == o => {
                    let d = (r.ts - ts).max(0) as u64;
                    let _ = agg.overall.record(d);
                    let _ = agg
                        .per_kind
                        .entry(k)
                        .or_insert_with(stats::new_histogram)
                        .record(d);
                    open = None;
                }
                _ => {}
            }
        }
        match &log.failure {
            None => {
                if let (Some(a), Some(b)) = (log.rows.first(), log.rows.last()) {
                    let _ = agg.session.record((b.ts - a.ts).max(0) as u64);
                }
            }
            Some(f) => {
                agg.failures
                    .entry((f.cause.kind(), f.line()))
                    .or_insert_with(|| (f.clone(), 0))
                    .1 += 1
            }
        }
    }
}
