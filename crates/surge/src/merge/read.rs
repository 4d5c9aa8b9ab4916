//! Reading a segment's run directory for `surge merge`: its recording, its summary.json (if the
//! segment finished) and every session CSV, rows kept as text so they are written back unchanged
//! apart from the session id.

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
pub fn part(dir: &Path) -> Result<Part, String> {
    let name = dir.display().to_string();
    let sessions_dir = dir.join("sessions");
    let rec_path = dir.join("recording.log");
    if !sessions_dir.is_dir() || !rec_path.is_file() {
        return Err(format!(
            "{name}: not a run directory (expected recording.log and sessions/ from surge replay)"
        ));
    }
    let recording =
        std::fs::read_to_string(&rec_path).map_err(|e| format!("{}: {e}", rec_path.display()))?;
    let summary_path = dir.join("summary.json");
    let text = std::fs::read_to_string(&summary_path).map_err(|e| {
        format!(
            "{}: {e} (a segment without summary.json was stopped before it finished: kill -9, out of memory, a deadline)",
            summary_path.display()
        )
    })?;
    let summary =
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", summary_path.display()))?;
    let mut files: Vec<PathBuf> = std::fs::read_dir(&sessions_dir)
        .map_err(|e| format!("{}: {e}", sessions_dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "csv"))
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(format!(
            "{}: no session files (*.csv)",
            sessions_dir.display()
        ));
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

/// The segment tag all of a directory's CSVs carry (they share their comment lines).
fn tag_of(name: &str, sessions: &[SessionFile]) -> Result<(Tag, serde_json::Value), String> {
    let first = &sessions[0];
    let config: serde_json::Value = first
        .comments
        .get(1)
        .and_then(|l| serde_json::from_str(l.trim()).ok())
        .ok_or_else(|| {
            format!(
                "{}: no JSON config in its second # line (not written by surge replay)",
                first.path.display()
            )
        })?;
    if config.get("merged").is_some() {
        return Err(format!(
            "{name}: already a merged run (merge the segments themselves)"
        ));
    }
    let tag = match Tag::from_config(&config) {
        Some(t) => t.map_err(|e| format!("{}: {e}", first.path.display()))?,
        None => {
            return Err(format!(
                "{name}: not a segment of a plan (its sessions name no segment: run surge replay with --segment K/N)"
            ))
        }
    };
    if let Some(other) = sessions[1..].iter().find(|s| s.comments != first.comments) {
        return Err(format!(
            "{}: its # lines differ from {}'s (sessions of different runs in one directory)",
            other.path.display(),
            first.path.display()
        ));
    }
    Ok((tag, config))
}

/// Reads one session CSV (as surge writes them: `#` lines, the column header, unquoted rows).
fn session(path: &Path) -> Result<SessionFile, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut lines = text.lines().enumerate();
    let mut comments = Vec::new();
    let header = loop {
        match lines.next() {
            Some((_, l)) if l.starts_with('#') => comments.push(l[1..].to_string()),
            Some((_, l)) => break l,
            None => return Err(format!("{}: no column header", path.display())),
        }
    };
    if header != COLUMNS.join(",") {
        return Err(format!(
            "{}:{}: unexpected columns {header:?}, expected {}",
            path.display(),
            comments.len() + 1,
            COLUMNS.join(",")
        ));
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
        row(&mut s, line).map_err(|e| format!("{}:{}: {e}", path.display(), i + 1))?;
    }
    if s.rows.is_empty() {
        return Err(format!("{}: session file has no rows", path.display()));
    }
    Ok(s)
}

/// One data row into `s`; the error names the field.
fn row(s: &mut SessionFile, line: &str) -> Result<(), String> {
    let f: Vec<&str> = line.splitn(7, ',').collect();
    if f.len() != 7 {
        return Err(format!("expected 7 fields, found {}", f.len()));
    }
    let num = |i: usize| -> Result<i64, String> {
        f[i].trim()
            .parse::<i64>()
            .map_err(|_| format!("field {}: not a number: {:?}", field_name(i), f[i]))
    };
    let (id, worker, iteration, ts) = (num(0)? as u32, num(1)? as u32, num(2)? as u32, num(4)?);
    num(5)?;
    if s.rows.is_empty() {
        (s.old_id, s.worker, s.iteration) = (id, worker, iteration);
    } else if (id, worker, iteration) != (s.old_id, s.worker, s.iteration) {
        return Err(format!(
            "session {id} worker {worker} iteration {iteration} in the file of session {} worker {} iteration {}",
            s.old_id, s.worker, s.iteration
        ));
    }
    let event =
        RowEvent::parse(f[3]).ok_or_else(|| format!("field event: unknown event {:?}", f[3]))?;
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
