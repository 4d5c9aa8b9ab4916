//! First use vs reuse of each session's input. A session replays either a `--data` row (its CSV
//! says `data=<row>`) or the recorded input; the first session of the run to use an input meets
//! the app's caches cold (a miss), later ones reuse it (hits). A run whose every session replays
//! the same input has one first use: its figures are nearly all hits, and the misses it hides
//! show in the first-use column of a `--data` run beside it. `html` renders the split as the
//! report's Inputs section.

use std::collections::{BTreeMap, HashSet};

use serde::Serialize;

use super::load::Run;
use super::stats::Dist;

/// How a run's sessions used their inputs, and each recording line's durations split by it.
#[derive(Debug, Serialize, Default, Clone, PartialEq)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct InputUse {
    /// Sessions that named a `--data` row (0: every session replayed the recorded input).
    pub with_data: usize,
    /// Distinct inputs the sessions used (`--data` rows, the recorded input counting as one).
    pub distinct: usize,
    /// Sessions that were the first of the run to use their input.
    pub first: usize,
    /// Sessions that used an input an earlier session had used.
    pub again: usize,
    /// Per recording line (in recording order), its events' durations in first-use sessions
    /// and in reusing ones (events cut short by a failure left out).
    pub lines: Vec<InputLine>,
}

/// One recording line's durations, first use vs reuse.
#[derive(Debug, Serialize, Default, Clone, PartialEq)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct InputLine {
    /// recording.log line.
    pub line: u32,
    /// In sessions that were first to use their input.
    pub first: Dist,
    /// In sessions that reused an input.
    pub again: Dist,
}

/// The split of `run` (its sessions are in start order: the earliest with an input is its
/// first use).
pub fn input_use(run: &Run) -> InputUse {
    let mut seen = HashSet::new();
    let mut durs: BTreeMap<u32, (Vec<i64>, Vec<i64>)> = BTreeMap::new();
    let (mut first, mut again, mut with_data) = (0, 0, 0);
    for s in &run.sessions {
        let is_first = seen.insert(s.input);
        if is_first {
            first += 1;
        } else {
            again += 1;
        }
        with_data += usize::from(s.input.is_some());
        for e in s.events.iter().filter(|e| !e.failed) {
            let d = durs.entry(e.line).or_default();
            (if is_first { &mut d.0 } else { &mut d.1 }).push(e.end - e.start);
        }
    }
    let lines = (run.recording.lines.iter())
        .map(|l| {
            let (f, a) = durs.remove(&l.line).unwrap_or_default();
            InputLine {
                line: l.line,
                first: Dist::of(f),
                again: Dist::of(a),
            }
        })
        .collect();
    InputUse {
        with_data,
        distinct: seen.len(),
        first,
        again,
        lines,
    }
}
