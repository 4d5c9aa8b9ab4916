//! Reading a segment's run directory for `surge merge`: its recording, its summary.json (if the
//! segment finished) and every session CSV (through [`crate::rundir::csv`]), rows kept as the
//! text they are written back as, unchanged apart from the session id.

use super::error::MergeError;
use crate::rundir;
use crate::rundir::RowEvent;
use crate::segment::{RunConfig, Tag};
use std::path::{Path, PathBuf};

/// One session CSV of a segment.
#[derive(Debug)]
pub struct SessionFile {
    /// Where it was read from (for error messages).
    pub path: PathBuf,
    /// Its `#` lines, without the `#`.
    pub comments: Vec<String>,
    /// session_id as written by the segment.
    pub old_id: u32,
    pub worker: u32,
    pub iteration: u32,
    /// Each row without its session_id column: `worker,iteration,event,timestamp,line,comment`.
    pub rows: Vec<String>,
    /// (event, Unix ms) of each row.
    pub events: Vec<(RowEvent, i64)>,
    /// The PLAYBACK_FAIL row's comment, if the session failed.
    pub failure: Option<String>,
    /// Whether a PLAYBACK_DONE row ends it.
    pub done: bool,
}

impl SessionFile {
    /// How it ended: a PLAYBACK_FAIL row makes it failed, else PLAYBACK_DONE completed.
    pub fn ended(&self) -> crate::rundir::Ended {
        use crate::rundir::Ended;
        match (&self.failure, self.done) {
            (Some(_), _) => Ended::Failed,
            (None, true) => Ended::Done,
            (None, false) => Ended::Unfinished,
        }
    }

    /// Unix ms of its first row (its start).
    pub fn start(&self) -> i64 {
        self.events.first().map_or(0, |e| e.1)
    }
}

/// A segment's run directory as read.
#[derive(Debug)]
pub struct Part {
    pub dir: PathBuf,
    /// The directory as given on the command line (for messages).
    pub name: String,
    pub tag: Tag,
    /// The run config of its CSVs' second `#` line.
    pub config: RunConfig,
    pub recording: String,
    /// Its summary.json (surge writes it even on Ctrl-C; a segment without one was killed).
    pub summary: serde_json::Value,
    pub sessions: Vec<SessionFile>,
}

/// Reads one segment directory; errors name the file (and line) at fault.
pub fn part(dir: &Path) -> Result<Part, MergeError> {
    let name = dir.display().to_string();
    let sessions_dir = dir.join("sessions");
    let rec_path = dir.join("recording.log");
    if !sessions_dir.is_dir() || !rec_path.is_file() {
        return Err(MergeError::NotRunDir(name));
    }
    let recording = std::fs::read_to_string(&rec_path).map_err(io(&rec_path))?;
    let summary = rundir::read_summary(dir).map_err(|(path, e)| match e {
        rundir::SummaryReadError::Io(err) => MergeError::NoSummary { path, err },
        rundir::SummaryReadError::Json(err) => MergeError::Json { path, err },
    })?;
    let files = rundir::csv::session_files(dir).map_err(io(&sessions_dir))?;
    if files.is_empty() {
        return Err(MergeError::NoSessions(sessions_dir));
    }
    let sessions = files
        .iter()
        .map(|f| session(f))
        .collect::<Result<Vec<_>, _>>()?;
    let (tag, config) = plan_of(&name, &sessions)?;
    Ok(Part {
        dir: dir.to_path_buf(),
        name,
        tag,
        config,
        recording,
        summary,
        sessions,
    })
}

/// An I/O error on `path`, typed.
fn io(path: &Path) -> impl Fn(std::io::Error) -> MergeError + '_ {
    move |err| MergeError::Io {
        path: path.to_path_buf(),
        err,
    }
}

/// The run config and segment tag all of a directory's CSVs carry (they share their comment
/// lines).
fn plan_of(name: &str, sessions: &[SessionFile]) -> Result<(Tag, RunConfig), MergeError> {
    let first = &sessions[0];
    let config = (first.comments.get(1))
        .and_then(|l| RunConfig::from_comments(&[l]))
        .ok_or_else(|| MergeError::NoConfig(first.path.clone()))?;
    if config.merged.is_some() {
        return Err(MergeError::AlreadyMerged(name.to_string()));
    }
    let tag = match Tag::from_config(&config) {
        Some(t) => t.map_err(|err| MergeError::Tag {
            path: first.path.clone(),
            err,
        })?,
        None => return Err(MergeError::NotSegment(name.to_string())),
    };
    if let Some(other) = sessions[1..].iter().find(|s| s.comments != first.comments) {
        return Err(MergeError::CommentsDiffer {
            path: other.path.clone(),
            first: first.path.clone(),
        });
    }
    Ok((tag, config))
}

/// Reads one session CSV through the run directory's one reader, keeping each row as the
/// text it is written back as (without its session_id).
fn session(path: &Path) -> Result<SessionFile, MergeError> {
    let csv = rundir::csv::read_session(path)?;
    let mut s = SessionFile {
        path: csv.path,
        comments: csv.comments,
        old_id: csv.id,
        worker: csv.worker,
        iteration: csv.iteration,
        rows: Vec::with_capacity(csv.rows.len()),
        events: Vec::with_capacity(csv.rows.len()),
        failure: None,
        done: false,
    };
    for r in csv.rows {
        match r.event {
            RowEvent::Fail => s.failure = Some(r.comment.clone()),
            RowEvent::Done => s.done = true,
            _ => {}
        }
        s.events.push((r.event, r.ts));
        s.rows.push(format!(
            "{},{},{},{},{},{}",
            s.worker,
            s.iteration,
            r.event.name(),
            r.ts,
            r.line,
            rundir::csv_safe(&r.comment)
        ));
    }
    Ok(s)
}
