//! The one reader of session CSVs (surge's and shinycannon's): `#` comment lines, the column
//! header, then rows `session_id,worker_id,iteration,event,timestamp,input_line_number,comment`,
//! all of one session. `report`, `capacity` and `merge` read through it, so a file one accepts
//! the others accept, and a bad one is refused with the same line naming file, line and field.

use super::session::{RowEvent, COLUMNS};
use std::path::{Path, PathBuf};

/// One session CSV as read: its comment lines and its rows, parsed and checked.
#[derive(Debug, Clone)]
pub struct SessionCsv {
    /// Where it was read from (for messages).
    pub path: PathBuf,
    /// The `#` lines before the header, without the `#`.
    pub comments: Vec<String>,
    /// `session_id` of every row.
    pub id: u32,
    /// `worker_id`: the simulated user.
    pub worker: u32,
    /// `iteration`: how many sessions this worker ran before.
    pub iteration: u32,
    /// The rows, in file order.
    pub rows: Vec<CsvRow>,
}

/// One data row (its session, worker and iteration are the file's).
#[derive(Debug, Clone)]
pub struct CsvRow {
    /// What happened.
    pub event: RowEvent,
    /// Unix ms.
    pub ts: i64,
    /// recording.log line (0 for the session's own rows).
    pub line: u32,
    /// The comment field (a PLAYBACK_FAIL's reason).
    pub comment: String,
    /// Physical line in the file (1-based, comments and header counted).
    pub at: u64,
}

/// A session CSV that cannot be read: the file, the line when one is at fault, and what.
#[derive(Debug, thiserror::Error)]
#[error("{}{}: {what}", path.display(), line.map(|l| format!(":{l}")).unwrap_or_default())]
pub struct CsvError {
    /// The file.
    pub path: PathBuf,
    /// 1-based line, when one line is at fault.
    pub line: Option<u64>,
    /// What is wrong.
    pub what: CsvProblem,
}

/// What is wrong with a session CSV.
#[derive(Debug, thiserror::Error)]
pub enum CsvProblem {
    /// Unreadable.
    #[error("{0}")]
    Io(std::io::Error),
    /// Not CSV (the csv crate's reason).
    #[error("{0}")]
    Csv(String),
    /// A header other than shinycannon's columns.
    #[error("unexpected columns {0:?}, expected {cols}", cols = COLUMNS.join(","))]
    Columns(Vec<String>),
    /// A numeric field that is not a number.
    #[error("field {field}: not a number: {text:?}")]
    NotNumber {
        /// Column name.
        field: &'static str,
        /// As found.
        text: String,
    },
    /// A row of another session than the file's first row.
    #[error("field session_id: session {id} worker {worker} iteration {iteration} in the file of session {file_id} worker {file_worker} iteration {file_iteration}")]
    OtherSession {
        /// The row's session.
        id: u32,
        /// Its worker.
        worker: u32,
        /// Its iteration.
        iteration: u32,
        /// The file's session.
        file_id: u32,
        /// Its worker.
        file_worker: u32,
        /// Its iteration.
        file_iteration: u32,
    },
    /// An `event` not in the vocabulary.
    #[error("field event: unknown event {0:?}")]
    UnknownEvent(String),
    /// A header and no rows.
    #[error("session file has no rows")]
    NoRows,
}

/// The `sessions/*.csv` files of a run directory, sorted by name (none is not an error here).
pub fn session_files(run: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(run.join("sessions"))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "csv"))
        .collect();
    files.sort();
    Ok(files)
}

/// Reads and checks one session CSV.
pub fn read_session(path: &Path) -> Result<SessionCsv, CsvError> {
    let err = |line, what| CsvError {
        path: path.to_path_buf(),
        line,
        what,
    };
    let text = std::fs::read_to_string(path).map_err(|e| err(None, CsvProblem::Io(e)))?;
    let comments: Vec<String> = (text.lines())
        .map_while(|l| l.strip_prefix('#').map(str::to_string))
        .collect();
    let body: usize = (text.split_inclusive('\n').take(comments.len()))
        .map(str::len)
        .sum();
    let skipped = comments.len() as u64;
    let mut rdr = csv::ReaderBuilder::new()
        .comment(Some(b'#'))
        .has_headers(true)
        .from_reader(&text.as_bytes()[body..]);
    let csv_err = |e: csv::Error| {
        let line = e.position().map(|p| p.line() + skipped);
        err(line, CsvProblem::Csv(e.to_string()))
    };
    let headers: Vec<String> = rdr
        .headers()
        .map_err(csv_err)?
        .iter()
        .map(String::from)
        .collect();
    if headers != COLUMNS {
        return Err(err(None, CsvProblem::Columns(headers)));
    }
    let mut s = SessionCsv {
        path: path.to_path_buf(),
        comments,
        id: 0,
        worker: 0,
        iteration: 0,
        rows: Vec::new(),
    };
    for record in rdr.records() {
        let record = record.map_err(csv_err)?;
        let at = record.position().map_or(0, |p| p.line()) + skipped;
        row(&mut s, &record, at).map_err(|what| err(Some(at), what))?;
    }
    if s.rows.is_empty() {
        return Err(err(None, CsvProblem::NoRows));
    }
    Ok(s)
}

/// One data row into `s`.
fn row(s: &mut SessionCsv, r: &csv::StringRecord, at: u64) -> Result<(), CsvProblem> {
    let field = |i: usize| r.get(i).unwrap_or("");
    let num = |i: usize| -> Result<i64, CsvProblem> {
        let t = field(i).trim();
        (t.parse::<i64>()
            .or_else(|_| t.parse::<f64>().map(|f| f as i64)))
        .map_err(|_| CsvProblem::NotNumber {
            field: COLUMNS[i],
            text: t.to_string(),
        })
    };
    let (id, worker, iteration) = (num(0)? as u32, num(1)? as u32, num(2)? as u32);
    if s.rows.is_empty() {
        (s.id, s.worker, s.iteration) = (id, worker, iteration);
    } else if (id, worker, iteration) != (s.id, s.worker, s.iteration) {
        return Err(CsvProblem::OtherSession {
            id,
            worker,
            iteration,
            file_id: s.id,
            file_worker: s.worker,
            file_iteration: s.iteration,
        });
    }
    let (ts, line) = (num(4)?, num(5)? as u32);
    let event =
        RowEvent::parse(field(3)).ok_or_else(|| CsvProblem::UnknownEvent(field(3).to_string()))?;
    s.rows.push(CsvRow {
        event,
        ts,
        line,
        comment: field(6).to_string(),
        at,
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<SessionCsv, CsvError> {
        let dir = std::env::temp_dir().join(format!("surge-csv-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(format!("{}.csv", text.len()));
        std::fs::write(&p, text).unwrap();
        read_session(&p)
    }

    const HEAD: &str = "# args\n# {\"a\":1}\nsession_id,worker_id,iteration,event,timestamp,input_line_number,comment\n";

    #[test]
    fn reads_rows_and_names_the_line_at_fault() {
        let s = read(&format!(
            "{HEAD}3,1,0,PLAYER_SESSION_CREATE,1000,0,\n3,1,0,PLAYBACK_FAIL,1.5e3,4,\"a, b\"\n"
        ))
        .unwrap();
        assert_eq!((s.id, s.worker, s.comments.len()), (3, 1, 2));
        assert_eq!((s.rows[1].ts, s.rows[1].line, s.rows[1].at), (1500, 4, 5));
        assert_eq!(s.rows[1].comment, "a, b");
        let e = read(&format!("{HEAD}3,1,0,PLAYER_SESSION_CREATE,soon,0,\n")).unwrap_err();
        assert!(
            e.to_string()
                .ends_with(".csv:4: field timestamp: not a number: \"soon\""),
            "{e}"
        );
        let e = read(&format!("{HEAD}3,1,0,NOPE,1,0,\n")).unwrap_err();
        assert!(
            e.to_string()
                .ends_with(":4: field event: unknown event \"NOPE\""),
            "{e}"
        );
        assert!(read(HEAD)
            .unwrap_err()
            .to_string()
            .ends_with("session file has no rows"));
    }
}
