//! Reading a run directory (surge replay or shinycannon output) for the report: `recording.log`
//! plus `sessions/*.csv` through the run directory's one CSV reader ([`crate::rundir::csv`]);
//! here `<TYPE>_START`/`<TYPE>_END` rows pair into events (checked against the recording) and
//! `PLAYBACK_DONE`/`PLAYBACK_FAIL` end a session.

use std::path::{Path, PathBuf};

use super::{lines, lines::Lines, ReportError};
use crate::failure::FailureKind;
use crate::recording::Kind;
use crate::rundir::csv;
use crate::rundir::{fail_comment, parse_fail_comment, Ended, RowEvent, SessionLog};

/// One step of a session: a recording line replayed from `start` to `end` (epoch ms).
#[derive(Debug, Clone)]
pub struct Event {
    /// recording.log line it replays.
    pub line: u32,
    /// Epoch ms.
    pub start: i64,
    /// Epoch ms; for an event cut short by a failure, the failure time.
    pub end: i64,
    /// The session failed (or stopped) while this event was running.
    pub failed: bool,
}

/// One simulated session (one CSV file).
#[derive(Debug, Clone)]
pub struct Session {
    /// `session_id` column.
    pub id: u32,
    /// `worker_id` column: the simulated user.
    pub worker: u32,
    /// `iteration`: how many sessions this worker ran before.
    pub iteration: u32,
    /// Epoch ms of its first row.
    pub start: i64,
    /// Epoch ms of its last row.
    pub end: i64,
    /// Done, failed or unfinished.
    pub outcome: Ended,
    /// Why it failed: the CSV comment (without its `kind=`), or the line it failed at when the
    /// comment is empty.
    pub reason: Option<String>,
    /// The kind of its failure (`kind=` in the comment; `unknown` for shinycannon's).
    pub fail_kind: Option<FailureKind>,
    /// Line the failure happened at, if failed.
    pub fail_line: Option<u32>,
    /// Its events in order.
    pub events: Vec<Event>,
    /// The `--data` row it replayed with (`data=<row>` on PLAYER_SESSION_CREATE); None: the
    /// recorded input (no `--data`, or shinycannon's CSVs).
    pub input: Option<u32>,
}

/// A run: its recording and its sessions sorted by start time.
#[derive(Debug)]
pub struct Run {
    /// Display name (`--name` or the directory name).
    pub name: String,
    /// Directory it was read from.
    pub dir: PathBuf,
    /// The recording it replayed.
    pub recording: Lines,
    /// Sessions sorted by start.
    pub sessions: Vec<Session>,
    /// What the server's `Server-Timing` said per request (timing/*.csv; empty without).
    pub timing: Vec<crate::timing::Sample>,
}

/// Reads a run directory; every malformed input is an error naming file, line and field.
pub fn load_run(dir: &Path, name: String) -> Result<Run, ReportError> {
    let sessions_dir = dir.join("sessions");
    if !sessions_dir.is_dir() {
        return Err(ReportError::Input {
            at: dir.display().to_string(),
            msg: "not a run directory: no sessions/ folder (expected `surge replay` or shinycannon output)".into(),
        });
    }
    let rec_path = dir.join("recording.log");
    if !rec_path.is_file() {
        return Err(ReportError::Input {
            at: dir.display().to_string(),
            msg: "not a run directory: no recording.log".into(),
        });
    }
    let recording = lines::read(&rec_path)?;
    let files = csv::session_files(dir).map_err(|e| ReportError::io(&sessions_dir, e))?;
    if files.is_empty() {
        return Err(ReportError::Input {
            at: sessions_dir.display().to_string(),
            msg: "no session files (*.csv)".into(),
        });
    }
    let mut sessions = files
        .iter()
        .map(|f| read_session(f, &recording))
        .collect::<Result<Vec<_>, _>>()?;
    sessions.sort_by_key(|s| (s.start, s.id));
    let timing = crate::timing::read_run(dir).map_err(|e| ReportError::Input {
        at: dir.display().to_string(),
        msg: e.to_string(),
    })?;
    Ok(Run {
        name,
        dir: dir.to_path_buf(),
        recording,
        sessions,
        timing,
    })
}

/// A session the replay kept in memory ([`crate::replay::Replayed::sessions`]), read as if from
/// its CSV: the same pairing of rows into events, so an in-process judge (a capacity step)
/// measures what `surge report` would read from the file.
///
/// # Errors
/// A row names a line that is not an event of `rec` (the session replayed another recording).
pub fn session_of(log: &SessionLog, rec: &Lines) -> Result<Session, ReportError> {
    let mut acc = Reading {
        id: Some(log.session),
        worker: log.worker,
        iteration: log.iteration,
        first: None,
        last: 0,
        outcome: Ended::Unfinished,
        reason: None,
        fail_kind: None,
        fail_line: None,
        open: Vec::new(),
        events: Vec::new(),
        input: None,
    };
    let fail = log.failure.as_ref().map(fail_comment).unwrap_or_default();
    let name = log.file_name();
    for (i, r) in log.rows.iter().enumerate() {
        let comment = if r.event == RowEvent::Fail { &fail } else { "" };
        let at = format!("{name}:{}", i + 1);
        acc.event(rec, r.event, r.ts, r.line, comment, &at)?;
    }
    acc.input = log.data_row;
    acc.finish(Path::new(&name))
}

struct Open {
    kind: Kind,
    line: u32,
    start: i64,
}

fn read_session(path: &Path, rec: &Lines) -> Result<Session, ReportError> {
    let file = csv::read_session(path)?;
    let mut acc = Reading {
        id: Some(file.id),
        worker: file.worker,
        iteration: file.iteration,
        first: None,
        last: 0,
        outcome: Ended::Unfinished,
        reason: None,
        fail_kind: None,
        fail_line: None,
        open: Vec::new(),
        events: Vec::new(),
        input: None,
    };
    for r in &file.rows {
        let at = format!("{}:{}", path.display(), r.at);
        acc.event(rec, r.event, r.ts, r.line, &r.comment, &at)?;
    }
    acc.finish(path)
}

/// A session file being read: what its rows said so far.
struct Reading {
    id: Option<u32>,
    worker: u32,
    iteration: u32,
    first: Option<i64>,
    last: i64,
    outcome: Ended,
    reason: Option<String>,
    fail_kind: Option<FailureKind>,
    fail_line: Option<u32>,
    open: Vec<Open>,
    events: Vec<Event>,
    input: Option<u32>,
}

impl Reading {
    /// One row: `event` at `ts` for recording line `line`; `at` is the row's `file:line`.
    fn event(
        &mut self,
        rec: &Lines,
        e: RowEvent,
        ts: i64,
        line: u32,
        comment: &str,
        at: &str,
    ) -> Result<(), ReportError> {
        self.first.get_or_insert(ts);
        self.last = self.last.max(ts);
        match e {
            RowEvent::SessionCreate => self.input = data_row(comment),
            RowEvent::SleepStart | RowEvent::SleepEnd => {}
            RowEvent::Done => self.outcome = Ended::Done,
            RowEvent::Fail => {
                self.outcome = Ended::Failed;
                self.fail_line = Some(line);
                let (kind, comment) = parse_fail_comment(comment);
                self.fail_kind = Some(kind);
                self.reason = Some(if comment.is_empty() {
                    let kind = rec_kind(rec, line);
                    format!("failed at recording line {line} ({kind})")
                } else {
                    comment.to_string()
                });
                self.close_open(ts);
            }
            RowEvent::Start(kind) => {
                check_line(rec, line, at)?;
                self.open.push(Open {
                    kind,
                    line,
                    start: ts,
                });
            }
            RowEvent::End(kind) => {
                let pos = (self.open.iter())
                    .rposition(|o| o.kind == kind && o.line == line)
                    .ok_or_else(|| ReportError::Input {
                        at: at.to_string(),
                        msg: format!(
                            "field event: {} without a matching {}",
                            e.name(),
                            kind.start_name()
                        ),
                    })?;
                let o = self.open.remove(pos);
                self.events.push(Event {
                    line,
                    start: o.start,
                    end: ts,
                    failed: false,
                });
            }
        }
        Ok(())
    }

    /// Ends every open event at `ts` as failed.
    fn close_open(&mut self, ts: i64) {
        for o in self.open.drain(..) {
            self.events.push(Event {
                line: o.line,
                start: o.start,
                end: ts,
                failed: true,
            });
        }
    }

    fn finish(mut self, path: &Path) -> Result<Session, ReportError> {
        let Some(id) = self.id else {
            return Err(ReportError::Input {
                at: path.display().to_string(),
                msg: "session file has no rows".into(),
            });
        };
        // Events still open when the file ends: the run was stopped mid-event.
        self.close_open(self.last);
        self.events.sort_by_key(|e| (e.start, e.end));
        Ok(Session {
            id,
            worker: self.worker,
            iteration: self.iteration,
            start: self.first.unwrap_or(0),
            end: self.last,
            outcome: self.outcome,
            reason: self.reason,
            fail_kind: self.fail_kind,
            fail_line: self.fail_line,
            events: self.events,
            input: self.input,
        })
    }
}

/// `data=<row>` in a PLAYER_SESSION_CREATE comment (`journey=<name> data=<row>` in a mix).
fn data_row(comment: &str) -> Option<u32> {
    comment
        .split(' ')
        .rev()
        .find_map(|w| w.strip_prefix("data=")?.parse().ok())
}

fn rec_kind(rec: &Lines, line: u32) -> String {
    rec.get(line)
        .map(|l| l.kind.name().to_string())
        .unwrap_or_else(|| "?".into())
}

fn check_line(rec: &Lines, line: u32, at: &str) -> Result<(), ReportError> {
    if rec.get(line).is_none() {
        return Err(ReportError::Input {
            at: at.to_string(),
            msg: format!(
                "field input_line_number: {line} is not an event line of {}",
                rec.path.display()
            ),
        });
    }
    Ok(())
}
