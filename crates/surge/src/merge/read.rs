//! Reading a segment's run directory for `surge merge`: its recording, its summary.json (if the
//! segment finished) and every session CSV, rows kept as text so they are written back unchanged
//! apart from the session id.

use super::error::{MergeError, RowError};
use crate::output::{RowEvent, COLUMNS};
use crate::segment::Tag;
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
    /// The JSON config of its CSVs' second `#` line.
    pub config: serde_json::Value,
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
    let path = dir.join("summary.json");
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(err) => return Err(MergeError::NoSummary { path, err }),
    };
    let summary = match serde_json::from_str(&text) {
        Ok(s) => s,
        Err(err) => return Err(MergeError::Json { path, err }),
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(&sessions_dir)
        .map_err(io(&sessions_dir))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "csv"))
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(MergeError::NoSessions(sessions_dir));
    }
    let sessions = files
        .iter()
        .map(|f| session(f))
        .collect::<Result<Vec<_>, _>>()?;
    let (tag, config) = tag_of(&name, &sessions)?;
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

/// The segment tag all of a directory's CSVs carry (they share their comment lines).
fn tag_of(name: &str, sessions: &[SessionFile]) -> Result<(Tag, serde_json::Value), MergeError> {
    let first = &sessions[0];
    let config: serde_json::Value = first
        .comments
        .get(1)
        .and_then(|l| serde_json::from_str(l.trim()).ok())
        .ok_or_else(|| MergeError::NoConfig(first.path.clone()))?;
    if config.get("merged").is_some() {
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

/// Reads one session CSV (as surge writes them: `#` lines, the column header, unquoted rows).
fn session(path: &Path) -> Result<SessionFile, MergeError> {
    let text = std::fs::read_to_string(path).map_err(io(path))?;
    let mut lines = text.lines().enumerate();
    let mut comments = Vec::new();
    let header = loop {
        match lines.next() {
            Some((_, l)) if l.starts_with('#') => comments.push(l[1..].to_string()),
            Some((_, l)) => break l,
            None => return Err(MergeError::NoHeader(path.to_path_buf())),
        }
    };
    if header != COLUMNS.join(",") {
        return Err(MergeError::Columns {
            path: path.to_path_buf(),
            line: comments.len() + 1,
            header: header.to_string(),
        });
    }
    let mut s = SessionFile {
        path: path.to_path_buf(),
        comments,
        old_id: 0,
        worker: 0,
        iteration: 0,
        rows: Vec::new(),
        events: Vec::new(),
        failure: None,
        done: false,
    };
    for (i, line) in lines.filter(|(_, l)| !l.is_empty()) {
        row(&mut s, line).map_err(|err| MergeError::Row {
            path: path.to_path_buf(),
            line: i + 1,
            err,
        })?;
    }
    if s.rows.is_empty() {
        return Err(MergeError::EmptySession(path.to_path_buf()));
    }
    Ok(s)
}

/// One data row into `s`; the error names the field.
fn row(s: &mut SessionFile, line: &str) -> Result<(), RowError> {
    let f: Vec<&str> = line.splitn(7, ',').collect();
    if f.len() != 7 {
        return Err(RowError::Fields(f.len()));
    }
    let num = |i: usize| -> Result<i64, RowError> {
        f[i].trim().parse::<i64>().map_err(|_| RowError::NotNumber {
            field: field_name(i),
            text: f[i].to_string(),
        })
    };
    let (id, worker, iteration, ts) = (num(0)? as u32, num(1)? as u32, num(2)? as u32, num(4)?);
    num(5)?;
    if s.rows.is_empty() {
        (s.old_id, s.worker, s.iteration) = (id, worker, iteration);
    } else if (id, worker, iteration) != (s.old_id, s.worker, s.iteration) {
        return Err(RowError::OtherSession {
            id,
            worker,
            iteration,
            file_id: s.old_id,
            file_worker: s.worker,
            file_iteration: s.iteration,
        });
    }
    let event = RowEvent::parse(f[3]).ok_or_else(|| RowError::UnknownEvent(f[3].to_string()))?;
    match event {
        RowEvent::Fail => s.failure = Some(f[6].to_string()),
        RowEvent::Done => s.done = true,
        _ => {}
    }
    s.events.push((event, ts));
    s.rows.push(line[f[0].len() + 1..].to_string());
    Ok(())
}

fn field_name(i: usize) -> &'static str {
    COLUMNS.get(i).copied().unwrap_or("?")
}
