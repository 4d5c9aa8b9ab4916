//! Writing the merged run directory: the segments' sessions renumbered in start order (comment
//! lines kept, so each CSV still says which segment ran it, plus `"merged":true`), and summary.json
//! recomputed from every session's rows with the replay's own aggregate.

use super::error::MergeError;
use super::read::{Part, SessionFile};
use crate::checks::Threshold;
use crate::rundir::{self, Aggregate, FailureCount, Head, Plan, RunSummary, Split};
use crate::segment::RunConfig;
use crate::timefmt;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The sessions of all parts in start order (ties: segment, then the segment's own id), with
/// their new ids 0, 1, 2, ...
pub fn in_start_order(parts: &[Part]) -> Vec<&SessionFile> {
    let all = (parts.iter()).flat_map(|p| p.sessions.iter().map(|s| (p.tag.segment.index, s)));
    rundir::join::in_start_order(all, |s| (s.start(), s.old_id))
}

/// summary.json of the merged run: histograms and counts from every session's rows, failures
/// (typed, with their first reason) summed from the segments' summaries, checks re-evaluated on
/// the merged numbers.
pub fn summary(parts: &[Part], sessions: &[&SessionFile]) -> Result<RunSummary, MergeError> {
    let mut agg = Aggregate::new();
    for s in sessions {
        agg.add_session(s.events.iter().copied(), s.ended());
    }
    failures(parts)?
        .into_iter()
        .for_each(|f| agg.add_failure(f));
    let (max_failure_rate, thresholds) = checks_of(&parts[0])?;
    let mut merged =
        rundir::from_aggregate(head(parts, sessions), &agg, (max_failure_rate, &thresholds));
    let summaries: Vec<&Value> = parts.iter().map(|p| &p.summary).collect();
    let rows = sessions.iter().map(|s| {
        let journey = s
            .rows
            .first()
            .and_then(|r| crate::replay::journey_of_row(r));
        (journey, s.events.as_slice(), s.ended())
    });
    merged.journeys =
        crate::replay::merged_journeys(&summaries, rows).map_err(MergeError::Journeys)?;
    Ok(merged)
}

/// The segments' failures in segment order (the aggregate groups them again by kind and
/// recording line: counts added, the detail of the lowest segment's).
fn failures(parts: &[Part]) -> Result<Vec<FailureCount>, MergeError> {
    let mut all = Vec::new();
    for p in parts {
        let list: Vec<FailureCount> = serde_json::from_value(p.summary["failures"].clone())
            .map_err(|err| MergeError::Json {
                path: p.dir.join("summary.json: failures"),
                err,
            })?;
        all.extend(list);
    }
    Ok(all)
}

/// `--max-failure-rate` and `--threshold`s, read back from a segment's summary.json checks.
fn checks_of(p: &Part) -> Result<(f64, Vec<Threshold>), MergeError> {
    let mut rate = 0.0;
    let mut thresholds = Vec::new();
    let checks = p.summary["checks"].as_array();
    for c in checks.into_iter().flatten() {
        let text = c["check"].as_str().unwrap_or_default();
        match text.strip_prefix("failure_rate<=") {
            Some(r) => {
                rate = r.parse().map_err(|_| MergeError::Check {
                    name: p.name.clone(),
                    text: text.to_string(),
                })?
            }
            None => thresholds.push(text.parse().map_err(|err| MergeError::Threshold {
                name: p.name.clone(),
                err,
            })?),
        }
    }
    Ok((rate, thresholds))
}

/// The plan and times of the merged run: the plan from the segments' config line, its start
/// (`--start-at`, else the earliest segment's), its end the last segment's.
fn head(parts: &[Part], sessions: &[&SessionFile]) -> Head {
    let first = &parts[0];
    let cfg = &first.config;
    let int = |p: &Part, k: &str| p.summary[k].as_i64();
    let start_at = cfg.start_at.as_deref().and_then(timefmt::parse_iso);
    let earliest = parts.iter().filter_map(|p| int(p, "started_at_ms")).min();
    let last_row = (sessions.iter())
        .filter_map(|s| s.events.last().map(|e| e.1))
        .max()
        .unwrap_or(0);
    let finished = parts.iter().filter_map(|p| int(p, "finished_at_ms")).max();
    let (users, interval) = (cfg.workers, cfg.start_interval_ms);
    Head {
        plan: Plan {
            recording: cfg.recording_path.clone(),
            target: cfg.app_url.clone(),
            users,
            start_interval_ms: interval,
            loaded_duration_ms: (cfg.loaded_duration_minutes * 60_000.0).round() as u64,
            think_time: cfg.think_time.clone(),
            shape: cfg.shape.clone(),
            message_timeout_ms: cfg.message_timeout_ms,
            insecure: (parts.iter()).any(|p| p.summary["insecure"] == Value::Bool(true)),
        },
        started_at_ms: start_at.or(earliest).unwrap_or(0),
        warmup_ms: (interval * u64::from(users.saturating_sub(1))) as i64,
        finished_at_ms: finished.unwrap_or(last_row).max(last_row),
        recording_duration_ms: int(first, "recording_duration_ms").unwrap_or(0),
        interrupted: parts
            .iter()
            .any(|p| p.summary["interrupted"] == Value::Bool(true)),
        split: Split {
            segment: None,
            start_at: start_at.map(timefmt::format_iso),
            late_start_ms: (parts.iter())
                .filter_map(|p| p.summary["late_start_ms"].as_u64())
                .max()
                .unwrap_or(0),
            segment_users: None,
            merged_segments: Some(parts.len() as u32),
        },
    }
}

/// Writes the merged run into `out` via a temporary sibling directory renamed at the end, so
/// `out` is either the whole merged run or untouched.
pub fn run_dir(
    out: &Path,
    overwrite: bool,
    parts: &[Part],
    sessions: &[&SessionFile],
    summary: &RunSummary,
) -> Result<(), MergeError> {
    let tmp = temp_sibling(out);
    let _ = std::fs::remove_dir_all(&tmp);
    let result = fill(&tmp, parts, sessions, summary).and_then(|()| {
        if overwrite && out.exists() {
            std::fs::remove_dir_all(out).map_err(io(out))?;
        }
        std::fs::rename(&tmp, out).map_err(io(out))
    });
    if result.is_err() {
        let _ = std::fs::remove_dir_all(&tmp);
    }
    result
}

fn temp_sibling(out: &Path) -> PathBuf {
    let name = out
        .file_name()
        .map_or("merged".into(), |n| n.to_string_lossy());
    out.with_file_name(format!(".{name}.merging-{}", std::process::id()))
}

/// An I/O error on `path`, typed.
fn io(path: &Path) -> impl Fn(std::io::Error) -> MergeError + '_ {
    move |err| MergeError::Io {
        path: path.to_path_buf(),
        err,
    }
}

/// A mix's `journeys/<name>/` recordings, copied as they are.
fn copy_tree(from: &Path, to: &Path) -> Result<(), MergeError> {
    std::fs::create_dir_all(to).map_err(io(to))?;
    for e in std::fs::read_dir(from).map_err(io(from))? {
        let src = e.map_err(io(from))?.path();
        let dst = to.join(src.file_name().unwrap_or_default());
        if src.is_dir() {
            copy_tree(&src, &dst)?;
        } else {
            std::fs::copy(&src, &dst).map_err(io(&src))?;
        }
    }
    Ok(())
}

fn fill(
    dir: &Path,
    parts: &[Part],
    sessions: &[&SessionFile],
    summary: &RunSummary,
) -> Result<(), MergeError> {
    std::fs::create_dir_all(dir.join("sessions")).map_err(io(dir))?;
    // recording.log and the POST bodies it names: the segments' copies are identical.
    for e in std::fs::read_dir(&parts[0].dir).map_err(io(&parts[0].dir))? {
        let src = e.map_err(io(&parts[0].dir))?.path();
        let name = src.file_name().unwrap_or_default();
        if src.is_file() && name != rundir::SUMMARY_JSON {
            std::fs::copy(&src, dir.join(name)).map_err(io(&src))?;
        }
        if src.is_dir() && name == "journeys" {
            copy_tree(&src, &dir.join(name))?;
        }
    }
    for (id, s) in sessions.iter().enumerate() {
        let name = format!("{id}_{}_{}.csv", s.worker, s.iteration);
        let path = dir.join("sessions").join(&name);
        std::fs::write(&path, render(id, s)).map_err(io(&path))?;
        copy_timing(s, &dir.join(crate::timing::TIMING_DIR), &name)?;
    }
    rundir::write_summary(dir, summary).map_err(|(path, err)| MergeError::Io { path, err })
}

/// The session's `timing/` file (its Server-Timing samples, beside its CSV in the segment), if
/// it has one, under the session's new name: the report joins them across segments by line.
fn copy_timing(s: &SessionFile, to: &Path, name: &str) -> Result<(), MergeError> {
    let (Some(sessions), Some(file)) = (s.path.parent(), s.path.file_name()) else {
        return Ok(());
    };
    let Some(run) = sessions.parent() else {
        return Ok(());
    };
    let src = run.join(crate::timing::TIMING_DIR).join(file);
    if !src.is_file() {
        return Ok(());
    }
    std::fs::create_dir_all(to).map_err(io(to))?;
    std::fs::copy(&src, to.join(name)).map_err(io(&src))?;
    Ok(())
}

/// A session's CSV under its new id: the segment's `#` lines (the JSON one marked merged), the
/// header, and the rows unchanged apart from session_id.
fn render(id: usize, s: &SessionFile) -> String {
    let mut out = String::with_capacity(s.rows.iter().map(|r| r.len() + 8).sum::<usize>() + 512);
    for (i, c) in s.comments.iter().enumerate() {
        out.push('#');
        match RunConfig::from_comments(&[c]).filter(|_| i == 1) {
            Some(config) => {
                let merged = RunConfig {
                    merged: Some(true),
                    ..config
                };
                out.push(' ');
                out.push_str(&merged.to_line());
            }
            None => out.push_str(c),
        }
        out.push('\n');
    }
    out.push_str(&crate::rundir::COLUMNS.join(","));
    out.push('\n');
    for r in &s.rows {
        out.push_str(&id.to_string());
        out.push(',');
        out.push_str(r);
        out.push('\n');
    }
    out
}
