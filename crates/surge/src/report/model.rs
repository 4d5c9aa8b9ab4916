//! The report's data model: everything the charts draw, as compact column arrays (numbers,
//! strings interned once per recording/run) so 1,000 sessions × 100 events stay a few MB.
//! The same JSON is embedded in the HTML and printed by `surge report --json`.
//!
//! Times are integer ms. Session `start` is relative to the run start; an event's start is its
//! `gap` after the previous event's end in the same session (the first: after session start),
//! which keeps the numbers short. Events are grouped by session, `sessions.n[i]` of them each.

use crate::recording::Kind;
use crate::stats::Summary;
use serde::Serialize;

use super::{
    class::CLASS_NAMES,
    lines::Lines,
    load::Run,
    stats::{self, RunFigures},
};

/// Root of the model.
#[derive(Debug, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Model {
    /// Model format version.
    pub version: u32,
    /// When the report was made (RFC 3339, UTC).
    pub generated: String,
    /// Page-load limit drawn on the charts (ms).
    #[cfg_attr(test, ts(type = "number"))]
    pub page_load_limit_ms: i64,
    /// Class names, indexed by class number.
    #[cfg_attr(test, ts(type = "string[]"))]
    pub classes: [&'static str; 5],
    /// All runs replayed the same recording.
    pub same_recording: bool,
    /// Distinct recordings (one when `same_recording`).
    pub recordings: Vec<RecModel>,
    /// Runs in the order given.
    pub runs: Vec<RunModel>,
    /// A capacity directory's search (its runs are the last good and first bad steps).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub capacity: Option<crate::capfile::CapacityResult>,
}

/// A recording's event lines as columns.
#[derive(Debug, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct RecModel {
    /// File it was read from.
    pub path: String,
    /// Target URL from its header, if any.
    pub target: Option<String>,
    /// First begin to last end (ms).
    #[cfg_attr(test, ts(type = "number"))]
    pub duration_ms: i64,
    /// Physical line numbers.
    pub line: Vec<u32>,
    /// Event type per line.
    #[cfg_attr(test, ts(as = "Vec<String>"))]
    pub kind: Vec<Kind>,
    /// Class number per line.
    pub class: Vec<u8>,
    /// Short label per line.
    pub label: Vec<String>,
    /// Recorded begin, ms since the first event.
    #[cfg_attr(test, ts(type = "number[]"))]
    pub begin: Vec<i64>,
    /// Recorded duration (ms).
    #[cfg_attr(test, ts(type = "number[]"))]
    pub dur: Vec<i64>,
}

/// One run.
#[derive(Debug, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct RunModel {
    /// Display name.
    pub name: String,
    /// Directory.
    pub dir: String,
    /// Index into `Model::recordings`.
    pub recording: usize,
    /// Epoch ms of the run's first row.
    #[cfg_attr(test, ts(type = "number"))]
    pub start_epoch_ms: i64,
    /// First row to last row (ms).
    #[cfg_attr(test, ts(type = "number"))]
    pub duration_ms: i64,
    /// Warm-up ends (ms since run start).
    #[cfg_attr(test, ts(type = "number"))]
    pub warmup_end_ms: i64,
    /// Cool-down starts (ms since run start).
    #[cfg_attr(test, ts(type = "number"))]
    pub cooldown_start_ms: i64,
    /// What the run's sessions say (summary.json's [`crate::rundir::Outcome`]) and the report's
    /// own figures.
    pub summary: RunFigures,
    /// Session columns.
    pub sessions: SessionCols,
    /// Event columns, grouped by session in `sessions` order.
    pub events: EventCols,
    /// Per recording line `[line, n, min, q1, median, q3, max, p90]` (ms).
    #[cfg_attr(test, ts(type = "number[][]"))]
    pub lines: Vec<[i64; 8]>,
    /// The load shape each second (shape.csv): `[ms since run start, users asked, users,
    /// arrivals asked (-1: closed model), arrivals]`; empty for runs without shape.csv.
    #[cfg_attr(test, ts(type = "number[][]"))]
    pub shape: Vec<[i64; 5]>,
    /// manifold's pool each second (manifold.csv, `--manifold`): `[ms since run start, ready,
    /// busy, starting, queue, saturation × 1000]`; empty for runs that did not poll it.
    #[cfg_attr(test, ts(type = "number[][]"))]
    pub manifold: Vec<[i64; 6]>,
    /// A mix of journeys (`replay a.log:70 b.log:30`): summary.json's figures per journey, in
    /// name order; empty for a run of one recording (or without summary.json: shinycannon's).
    pub journeys: Vec<JourneyRow>,
    /// Sessions' first use vs reuse of their input (`--data` row), each line's durations split.
    pub inputs: super::inputs::InputUse,
    /// Each recording line's mean time split by the server's `Server-Timing` into queue / server
    /// / rest (timing/*.csv); empty when the server sent none.
    pub timing: Vec<crate::timing::Split>,
    /// explain.json when `surge explain` made this run (its `loaded/`): each request or output
    /// ranked by cost per session; null otherwise.
    #[cfg_attr(test, ts(type = "unknown"))]
    pub explain: serde_json::Value,
}

/// One journey of a mixed run, as summary.json splits it (the same nearest-rank percentiles).
#[derive(Serialize, Debug, Clone, PartialEq)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct JourneyRow {
    /// Its name (the recording's file stem).
    pub name: String,
    /// Its weight in the mix.
    pub weight: u32,
    /// Sessions started, completed and failed.
    #[cfg_attr(test, ts(type = "number[]"))]
    pub sessions: [u64; 3],
    /// Its completed sessions' durations, ms.
    pub session: Summary,
    /// All its events, ms.
    pub events: Summary,
}

/// summary.json's `journeys` of the run in `dir`, if it has any.
fn journeys_of(dir: &std::path::Path) -> Vec<JourneyRow> {
    let Ok(v) = crate::rundir::read_summary(dir) else {
        return Vec::new();
    };
    let Some(map) = v["journeys"].as_object() else {
        return Vec::new();
    };
    let summary = |x: &serde_json::Value| serde_json::from_value(x.clone()).unwrap_or_default();
    map.iter()
        .map(|(name, j)| JourneyRow {
            name: name.clone(),
            weight: j["weight"].as_u64().unwrap_or(0) as u32,
            sessions: ["started", "completed", "failed"]
                .map(|k| j["sessions"][k].as_u64().unwrap_or(0)),
            session: summary(&j["session_duration"]),
            events: summary(&j["overall"]),
        })
        .collect()
}

/// Sessions as columns.
#[derive(Debug, Serialize, Default)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct SessionCols {
    /// session_id.
    pub id: Vec<u32>,
    /// worker_id.
    pub worker: Vec<u32>,
    /// iteration.
    pub iter: Vec<u32>,
    /// Start, ms since run start.
    #[cfg_attr(test, ts(type = "number[]"))]
    pub start: Vec<i64>,
    /// Duration (ms).
    #[cfg_attr(test, ts(type = "number[]"))]
    pub dur: Vec<i64>,
    /// 0 done, 1 failed, 2 unfinished.
    pub outcome: Vec<u8>,
    /// Index into `summary.outcome.failures` (its failure's group), -1 when none.
    pub reason: Vec<i32>,
    /// Page load (ms), -1 when none.
    #[cfg_attr(test, ts(type = "number[]"))]
    pub page_load: Vec<i64>,
    /// Number of events of this session in `events`.
    pub n: Vec<u32>,
}

/// Events as columns.
#[derive(Debug, Serialize, Default)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct EventCols {
    /// recording.log line.
    pub line: Vec<u32>,
    /// ms after the previous event's end (first event: after session start).
    #[cfg_attr(test, ts(type = "number[]"))]
    pub gap: Vec<i64>,
    /// Duration (ms).
    #[cfg_attr(test, ts(type = "number[]"))]
    pub dur: Vec<i64>,
    /// Indices (into these columns) of events cut short by a failure.
    pub failed: Vec<u32>,
}

/// Builds the model from loaded runs and their summaries.
pub fn build(runs: &[Run], summaries: &[RunFigures], page_load_limit_ms: i64) -> Model {
    let mut recordings: Vec<&Lines> = Vec::new();
    let mut rec_index = Vec::new();
    for r in runs {
        match recordings.iter().position(|x| x.text == r.recording.text) {
            Some(i) => rec_index.push(i),
            None => {
                rec_index.push(recordings.len());
                recordings.push(&r.recording);
            }
        }
    }
    Model {
        version: 1,
        generated: crate::timefmt::format_iso(crate::timefmt::now_ms()),
        page_load_limit_ms,
        classes: CLASS_NAMES,
        same_recording: recordings.len() == 1,
        recordings: recordings.iter().map(|r| rec_model(r)).collect(),
        runs: runs
            .iter()
            .zip(summaries)
            .zip(rec_index)
            .map(|((run, sum), ri)| run_model(run, sum, ri))
            .collect(),
        capacity: None,
    }
}

fn rec_model(r: &Lines) -> RecModel {
    RecModel {
        path: r.path.display().to_string(),
        target: r.target.clone(),
        duration_ms: r.duration_ms,
        line: r.lines.iter().map(|l| l.line).collect(),
        kind: r.lines.iter().map(|l| l.kind).collect(),
        class: r.lines.iter().map(|l| l.class.index() as u8).collect(),
        label: r.lines.iter().map(|l| l.label.clone()).collect(),
        begin: r.lines.iter().map(|l| l.begin_ms).collect(),
        dur: r.lines.iter().map(|l| l.dur_ms).collect(),
    }
}

fn run_model(run: &Run, sum: &RunFigures, recording: usize) -> RunModel {
    let mut s = SessionCols::default();
    let mut e = EventCols::default();
    for sess in &run.sessions {
        s.id.push(sess.id);
        s.worker.push(sess.worker);
        s.iter.push(sess.iteration);
        s.start.push(sess.start - sum.start_ms);
        s.dur.push(sess.end - sess.start);
        s.outcome.push(sess.outcome as u8);
        s.reason.push(sum.failure_of(sess).map_or(-1, |i| i as i32));
        s.page_load
            .push(stats::page_load(sess, &run.recording).unwrap_or(-1));
        s.n.push(sess.events.len() as u32);
        let mut prev_end = sess.start;
        for ev in &sess.events {
            if ev.failed {
                e.failed.push(e.line.len() as u32);
            }
            e.line.push(ev.line);
            e.gap.push(ev.start - prev_end);
            e.dur.push(ev.end - ev.start);
            prev_end = ev.end;
        }
    }
    RunModel {
        name: run.name.clone(),
        dir: run.dir.display().to_string(),
        recording,
        start_epoch_ms: sum.start_ms,
        duration_ms: sum.duration_ms,
        warmup_end_ms: sum.phases.warmup_end,
        cooldown_start_ms: sum.phases.cooldown_start,
        summary: sum.clone(),
        sessions: s,
        events: e,
        lines: stats::line_boxes(run)
            .iter()
            .map(|b| {
                [
                    b.line as i64,
                    b.n as i64,
                    b.min,
                    b.q1,
                    b.med,
                    b.q3,
                    b.max,
                    b.p90,
                ]
            })
            .collect(),
        shape: (crate::rundir::read_points(&run.dir)
            .unwrap_or_default()
            .iter())
        .map(|p| {
            let asked = p.asked_arrivals.map_or(-1, |a| a as i64);
            let (u, au) = (i64::from(p.users), i64::from(p.asked_users));
            [p.at_ms - sum.start_ms, au, u, asked, p.arrivals as i64]
        })
        .collect(),
        manifold: (crate::manifold_poll::read(&run.dir).and_then(Result::ok))
            .unwrap_or_default()
            .iter()
            .map(|(t, p)| {
                let n = |v: u32| i64::from(v);
                let sat = (p.saturation * 1000.0).round() as i64;
                [
                    t - sum.start_ms,
                    n(p.ready),
                    n(p.busy),
                    n(p.starting),
                    n(p.queue),
                    sat,
                ]
            })
            .collect(),
        journeys: journeys_of(&run.dir),
        inputs: super::inputs::input_use(run),
        timing: crate::timing::split_by_line(&run.timing),
        explain: (std::fs::read_to_string(run.dir.join("explain.json")).ok())
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default(),
    }
}

#[cfg(test)]
#[path = "../../../../tests/ts_types.rs"]
mod ts_types;

#[cfg(test)]
mod tests {
    use super::ts_types;
    use super::*;
    use crate::capfile::{CapacityResult, StepResult};
    use crate::report::stats::Dist;
    use crate::rundir::{FailureCount, Outcome, Percentiles, SessionCounts};
    use ts_rs::TS;

    /// web/src/report/model.gen.ts is what the Rust types the model serializes generate: a field
    /// added to the model (or summary.json's percentiles) reaches the TypeScript compiler.
    #[test]
    fn typescript_types_match_the_rust_ones() {
        let decls = [
            Model::decl(),
            RecModel::decl(),
            RunModel::decl(),
            JourneyRow::decl(),
            RunFigures::decl(),
            Dist::decl(),
            Outcome::decl(),
            SessionCounts::decl(),
            FailureCount::decl(),
            Percentiles::decl(),
            Summary::decl(),
            SessionCols::decl(),
            EventCols::decl(),
            CapacityResult::decl(),
            StepResult::decl(),
            crate::report::inputs::InputUse::decl(),
            crate::report::inputs::InputLine::decl(),
            crate::timing::Split::decl(),
            crate::capfile::Prediction::decl(),
        ];
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../web/src/report/model.gen.ts");
        ts_types::check(
            &path,
            "// Generated from the Rust types (crates/surge/src/report/model.rs, report/stats.rs,\n\
             // report/inputs.rs, rundir/outcome.rs, stats.rs, capfile.rs, timing.rs) by `SURGE_WRITE_TS=1 cargo test -p surge --lib model`. Do not edit.\n\n",
            &decls,
            "SURGE_WRITE_TS",
            "SURGE_WRITE_TS=1 cargo test -p surge --lib model",
        );
    }
}
