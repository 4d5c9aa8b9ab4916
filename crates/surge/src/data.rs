//! `--data users.csv`: different inputs per simulated session. The header row names the
//! placeholders (`${column}`), each later row is one set of values; `--data-mode` says which row a
//! session takes: `sequential` (session i takes row i, wrapping), `random`, or `unique` (a row is
//! never used twice; the run stops starting sessions when rows run out). Loaded once, shared.

use crate::segment::Segment;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// How sessions pick rows.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DataMode {
    /// Session i takes row i, wrapping around after the last.
    #[default]
    Sequential,
    /// Each session takes a random row.
    Random,
    /// Session i takes row i; no row is used twice, and no session starts once rows run out.
    Unique,
}

/// A loaded data file: its column names (placeholders) and rows.
#[derive(Debug)]
pub struct DataSet {
    /// The file, for messages.
    pub path: PathBuf,
    /// Column names from the header row.
    pub columns: Vec<Arc<str>>,
    /// Values, one row per session, as many as columns.
    pub rows: Vec<Vec<Box<str>>>,
    /// `--data-mode`.
    pub mode: DataMode,
}

impl DataSet {
    /// Reads the CSV (header row = names, at least one row); errors are one line naming the
    /// file and the line.
    pub fn load(path: &Path, mode: DataMode) -> Result<DataSet, DataError> {
        let at = |what: String| DataError {
            path: path.to_owned(),
            what,
        };
        let mut r = csv::ReaderBuilder::new()
            .trim(csv::Trim::All)
            .from_path(path)
            .map_err(|e| at(e.to_string()))?;
        let header = r.headers().map_err(|e| at(e.to_string()))?.clone();
        let mut columns: Vec<Arc<str>> = Vec::new();
        for name in &header {
            let ok =
                !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
            if !ok {
                return Err(at(format!(
                    "line 1: column name {name:?} is not a placeholder name (letters, digits, _)"
                )));
            }
            if crate::tokens::NAMES.contains(&name) {
                return Err(at(format!(
                    "line 1: column {name} is a built-in placeholder"
                )));
            }
            if columns.iter().any(|c| &**c == name) {
                return Err(at(format!("line 1: column {name} appears twice")));
            }
            columns.push(name.into());
        }
        let mut rows = Vec::new();
        for rec in r.records() {
            let rec = rec.map_err(|e| at(e.to_string()))?;
            rows.push(rec.iter().map(Into::into).collect());
        }
        if rows.is_empty() {
            return Err(at("no rows after the header".into()));
        }
        Ok(DataSet {
            path: path.to_path_buf(),
            columns,
            rows,
            mode,
        })
    }

    /// The row of session `sid` (this process's count; a segment K/N takes rows K-1, K-1+N, …
    /// so segments never share a unique row); None when `unique` rows are used up.
    pub fn row(&self, sid: u32, segment: Option<Segment>, rng: &mut u64) -> Option<&[Box<str>]> {
        self.row_index(sid, segment, rng)
            .map(|i| self.rows[i].as_slice())
    }

    /// The index (0-based, header not counted) of the row [`DataSet::row`] gives.
    pub fn row_index(&self, sid: u32, segment: Option<Segment>, rng: &mut u64) -> Option<usize> {
        let n = self.rows.len() as u64;
        let (k, of) = segment.map_or((0, 1), |s| (u64::from(s.index - 1), u64::from(s.count)));
        let i = u64::from(sid) * of + k;
        let i = match self.mode {
            DataMode::Sequential => i % n,
            DataMode::Random => crate::tokens::next_random(rng) % n,
            DataMode::Unique if i < n => i,
            DataMode::Unique => return None,
        };
        Some(i as usize)
    }

    /// The line printed once when `unique` rows run out.
    pub fn exhausted_line(&self) -> String {
        format!(
            "surge: --data {}: all {} rows used (--data-mode unique): no more sessions start",
            self.path.display(),
            self.rows.len()
        )
    }
}

/// Why a `--data` file cannot be used: the file and what is wrong with it, on one line.
#[derive(Debug, thiserror::Error)]
#[error("--data {}: {what}", path.display())]
pub struct DataError {
    /// The file given to `--data`.
    pub path: std::path::PathBuf,
    /// What is wrong (with its line where there is one).
    pub what: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loads_and_picks_rows() {
        let dir = std::env::temp_dir().join(format!("surge-data-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("d.csv");
        std::fs::write(&p, "date,user\n2015-01-01,a\n2015-01-02,b\n2015-01-03,c\n").unwrap();
        let d = DataSet::load(&p, DataMode::Unique).unwrap();
        assert_eq!(&*d.columns[1], "user");
        let mut rng = 1;
        assert_eq!(&*d.row(2, None, &mut rng).unwrap()[0], "2015-01-03");
        assert!(d.row(3, None, &mut rng).is_none());
        let seg = Some(Segment { index: 2, count: 2 });
        assert_eq!(&*d.row(0, seg, &mut rng).unwrap()[1], "b");
        assert!(d.row(1, seg, &mut rng).is_none());
        std::fs::write(&p, "date,bad-name\n1,2\n").unwrap();
        let e = DataSet::load(&p, DataMode::Sequential)
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 1: column name \"bad-name\""), "{e}");
        std::fs::write(&p, "date\n").unwrap();
        assert!(DataSet::load(&p, DataMode::Sequential)
            .unwrap_err()
            .to_string()
            .ends_with("no rows after the header"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
