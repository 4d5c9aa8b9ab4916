//! A session's CSV, laid out exactly like shinycannon's (so shinyloadtest's report and `surge
//! report` read it): `sessions/<session>_<worker>_<iteration>.csv`, the shinycannon row vocabulary
//! (`COLUMNS`, `RowEvent`), written whole when the session ends (no half files).

use crate::failure::{Failure, FailureKind};
use crate::recording::Kind;
use std::fmt::Write as _;
use std::path::Path;

/// The session CSV's columns, as shinycannon writes them (the report reads by the same list).
pub const COLUMNS: [&str; 7] = [
    "session_id",
    "worker_id",
    "iteration",
    "event",
    "timestamp",
    "input_line_number",
    "comment",
];

/// The `event` column of a session CSV: shinycannon's row vocabulary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowEvent {
    /// `PLAYER_SESSION_CREATE`: the session's first row.
    SessionCreate,
    /// `PLAYBACK_SLEEPBEFORE_START`: think time before an event begins.
    SleepStart,
    /// `PLAYBACK_SLEEPBEFORE_END`.
    SleepEnd,
    /// `<TYPE>_START`: a recording event begins.
    Start(Kind),
    /// `<TYPE>_END`: it ended.
    End(Kind),
    /// `PLAYBACK_DONE`: the session completed.
    Done,
    /// `PLAYBACK_FAIL`: the session failed (the comment says why).
    Fail,
}

impl RowEvent {
    /// The name written in the CSV.
    pub fn name(self) -> &'static str {
        match self {
            RowEvent::SessionCreate => "PLAYER_SESSION_CREATE",
            RowEvent::SleepStart => "PLAYBACK_SLEEPBEFORE_START",
            RowEvent::SleepEnd => "PLAYBACK_SLEEPBEFORE_END",
            RowEvent::Start(k) => k.start_name(),
            RowEvent::End(k) => k.end_name(),
            RowEvent::Done => "PLAYBACK_DONE",
            RowEvent::Fail => "PLAYBACK_FAIL",
        }
    }

    /// Parses a CSV `event` value; None for names shinycannon does not write.
    pub fn parse(s: &str) -> Option<RowEvent> {
        let fixed = [
            RowEvent::SessionCreate,
            RowEvent::SleepStart,
            RowEvent::SleepEnd,
            RowEvent::Done,
            RowEvent::Fail,
        ];
        if let Some(e) = fixed.into_iter().find(|e| e.name() == s) {
            return Some(e);
        }
        if let Some(k) = s.strip_suffix("_START").and_then(Kind::parse) {
            return Some(RowEvent::Start(k));
        }
        s.strip_suffix("_END")
            .and_then(Kind::parse)
            .map(RowEvent::End)
    }
}

/// One CSV row kept in memory until the session ends (16 bytes).
#[derive(Debug, Clone, Copy)]
pub struct Row {
    /// What happened (the `event` column).
    pub event: RowEvent,
    /// Unix ms when it happened (the `timestamp` column).
    pub ts: i64,
    /// recording.log line of the event it belongs to; 0 for the session's own create and done rows.
    pub line: u32,
}

/// The rows of one session; rendered to `sessions/<s>_<w>_<i>.csv` when it ends.
#[derive(Debug)]
pub struct SessionLog {
    /// Run-wide session number, counted as sessions start (`session_id`).
    pub session: u32,
    /// The simulated user that ran it, 0-based (`worker_id`).
    pub worker: u32,
    /// Which of that user's sessions this is, 0-based (`iteration`): users loop over the recording.
    pub iteration: u32,
    /// The rows so far, in order.
    pub rows: Vec<Row>,
    /// Why the session failed; its readable line goes into PLAYBACK_FAIL's comment column.
    pub failure: Option<Failure>,
    /// A mix's journey this session played (the PLAYER_SESSION_CREATE row says `journey=<name>`).
    pub journey: Option<std::sync::Arc<str>>,
    /// The `--data` row it took, 1-based (the PLAYER_SESSION_CREATE row says `data=<row>`): the
    /// report tells a session's first use of its input from a reuse by it.
    pub data_row: Option<u32>,
    /// Requests whose response carried `Server-Timing`, written to `timing/<name>` beside the CSV.
    pub timings: Vec<crate::timing::Sample>,
}

impl SessionLog {
    /// A new log; rows are appended by the player.
    pub fn new(session: u32, worker: u32, iteration: u32) -> SessionLog {
        SessionLog {
            session,
            worker,
            iteration,
            rows: Vec::with_capacity(64),
            failure: None,
            journey: None,
            data_row: None,
            timings: Vec::new(),
        }
    }

    /// Appends a row stamped now.
    pub fn push(&mut self, event: RowEvent, line: u32) {
        self.rows.push(Row {
            event,
            ts: crate::timefmt::now_ms(),
            line,
        });
    }

    /// File name shinycannon uses.
    pub fn file_name(&self) -> String {
        format!("{}_{}_{}.csv", self.session, self.worker, self.iteration)
    }

    /// Renders the CSV: the run's two `#` comment lines, the column header, then the rows.
    pub fn render(&self, comment_lines: &str) -> String {
        let mut s = String::with_capacity(comment_lines.len() + 80 + self.rows.len() * 48);
        s.push_str(comment_lines);
        s.push_str(&COLUMNS.join(","));
        s.push('\n');
        for r in &self.rows {
            let comment = match (r.event, &self.journey) {
                (RowEvent::Fail, _) => self.failure.as_ref().map(fail_comment).unwrap_or_default(),
                (RowEvent::SessionCreate, j) => create_comment(j.as_deref(), self.data_row),
                _ => String::new(),
            };
            let _ = writeln!(
                s,
                "{},{},{},{},{},{},{}",
                self.session,
                self.worker,
                self.iteration,
                r.event.name(),
                r.ts,
                r.line,
                comment
            );
        }
        s
    }

    /// Writes the CSV into `<dir>/sessions/`: to a hidden temp file renamed into place once whole, so
    /// a failed write (a full disk) leaves no file rather than an empty or cut one.
    pub fn write(&self, dir: &Path, comment_lines: &str) -> std::io::Result<()> {
        let sessions = dir.join("sessions");
        let name = self.file_name();
        let tmp = sessions.join(format!(".{name}.tmp"));
        let written = std::fs::write(&tmp, self.render(comment_lines))
            .and_then(|()| std::fs::rename(&tmp, sessions.join(&name)));
        if written.is_err() {
            let _ = std::fs::remove_file(&tmp);
            return written;
        }
        self.write_timings(dir, &name)
    }

    /// Writes `<dir>/timing/<name>` (temp + rename) when any response said `Server-Timing`.
    fn write_timings(&self, dir: &Path, name: &str) -> std::io::Result<()> {
        if self.timings.is_empty() {
            return Ok(());
        }
        let folder = dir.join(crate::timing::TIMING_DIR);
        std::fs::create_dir_all(&folder)?;
        let tmp = folder.join(format!(".{name}.tmp"));
        let written = std::fs::write(&tmp, crate::timing::render(&self.timings))
            .and_then(|()| std::fs::rename(&tmp, folder.join(name)));
        if written.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        written
    }
}

/// PLAYER_SESSION_CREATE's comment: `journey=<name>` (a mix), `data=<row>` (`--data`), both
/// space-separated, or empty.
fn create_comment(journey: Option<&str>, data_row: Option<u32>) -> String {
    let j = journey.map(|j| format!("journey={}", csv_safe(j)));
    let d = data_row.map(|r| format!("data={r}"));
    let parts: Vec<String> = [j, d].into_iter().flatten().collect();
    parts.join(" ")
}

/// Longest free-text CSV field, in characters: a cut failure reason with its size fits.
const CSV_FIELD_MAX: usize = crate::failure::MAX_REASON + 40;

/// PLAYBACK_FAIL's comment: `kind=<kind> <reason>` (the kind summary.json counts by, then the
/// readable line shinycannon's comment holds), so a reader of the rows alone (`surge report`)
/// states failures by kind as summary.json does.
pub fn fail_comment(f: &Failure) -> String {
    format!(
        "kind={} {}",
        f.cause.kind().name(),
        csv_safe(&f.to_string())
    )
}

/// A PLAYBACK_FAIL comment read back: its kind and its reason. A comment without `kind=`
/// (shinycannon's, or surge's before it wrote one) is of kind `unknown`, all of it the reason.
pub fn parse_fail_comment(comment: &str) -> (FailureKind, &str) {
    let comment = comment.trim();
    let tagged = comment.strip_prefix("kind=").and_then(|rest| {
        let (name, reason) = rest.split_once(' ').unwrap_or((rest, ""));
        Some((FailureKind::from_name(name)?, reason.trim()))
    });
    tagged.unwrap_or((FailureKind::Unknown, comment))
}

/// Makes free text safe for an unquoted CSV field (no commas, quotes or newlines). A failure
/// reason arrives already cut to [`crate::failure::MAX_REASON`] characters with its size
/// (`…(N bytes)`), and is kept whole so the CSV says what stderr and summary.json say; the
/// bound here only stops what was not cut before.
pub fn csv_safe(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            ',' => ';',
            '"' => '\'',
            '\n' | '\r' => ' ',
            c => c,
        })
        .take(CSV_FIELD_MAX)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_events_round_trip() {
        let mut all = vec![
            RowEvent::SessionCreate,
            RowEvent::SleepStart,
            RowEvent::SleepEnd,
            RowEvent::Done,
            RowEvent::Fail,
        ];
        for k in Kind::ALL {
            all.extend([RowEvent::Start(k), RowEvent::End(k)]);
        }
        for e in all {
            assert_eq!(RowEvent::parse(e.name()), Some(e), "{}", e.name());
        }
        assert_eq!(RowEvent::parse("PLAYBACK_MAYBE"), None);
        assert_eq!(RowEvent::parse("REQ_PUT_START"), None);
        assert_eq!(std::mem::size_of::<Row>(), 16);
    }

    /// A full disk (a temp file that is /dev/full) leaves no CSV behind: absent, never empty or cut.
    #[test]
    fn a_failed_write_leaves_no_file() {
        let dir = std::env::temp_dir().join(format!("surge-output-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("sessions")).unwrap();
        let log = SessionLog::new(5, 0, 1);
        std::os::unix::fs::symlink("/dev/full", dir.join("sessions/.5_0_1.csv.tmp")).unwrap();
        let err = log.write(&dir, "# a\n# {}\n").unwrap_err();
        assert_eq!(err.raw_os_error(), Some(28), "ENOSPC: {err}");
        let left: Vec<_> = std::fs::read_dir(dir.join("sessions")).unwrap().collect();
        assert!(left.is_empty(), "files left: {left:?}");
        log.write(&dir, "# a\n# {}\n").unwrap();
        let csv = std::fs::read_to_string(dir.join("sessions/5_0_1.csv")).unwrap();
        assert!(csv.starts_with("# a\n# {}\nsession_id,"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn renders_shinycannon_rows() {
        let mut log = SessionLog::new(3, 1, 2);
        log.rows.push(Row {
            event: RowEvent::SessionCreate,
            ts: 10,
            line: 0,
        });
        log.rows.push(Row {
            event: RowEvent::Fail,
            ts: 12,
            line: 7,
        });
        log.failure = Some(
            Failure::from(crate::failure::Cause::WrongStatus {
                expected: 200,
                got: 500,
            })
            .request(Some("GET"), "/x"),
        );
        let csv = log.render("# a\n# {}\n");
        assert_eq!(log.file_name(), "3_1_2.csv");
        assert_eq!(
            csv,
            "# a\n# {}\nsession_id,worker_id,iteration,event,timestamp,input_line_number,comment\n\
             3,1,2,PLAYER_SESSION_CREATE,10,0,\n3,1,2,PLAYBACK_FAIL,12,7,kind=wrong_status status 500; expected 200: GET /x\n"
        );
        let comment = csv.lines().last().unwrap().splitn(7, ',').nth(6).unwrap();
        assert_eq!(
            parse_fail_comment(comment),
            (FailureKind::WrongStatus, "status 500; expected 200: GET /x")
        );
        let shinycannon = "timeout waiting for message";
        assert_eq!(
            parse_fail_comment(shinycannon),
            (FailureKind::Unknown, shinycannon)
        );
        assert_eq!(parse_fail_comment(""), (FailureKind::Unknown, ""));
    }
}
