//! shape.csv: users and arrivals over time, asked by the load shape and achieved (written by a
//! replay each second, read back by the report and `capacity`).

use super::files::write_atomic;
use std::fmt::Write as _;
use std::path::Path;

/// File name of the load-shape series in the run directory (users and arrivals over time).
pub const SHAPE_CSV: &str = "shape.csv";

/// One moment of a run: users and arrivals asked by the shape and achieved.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ShapePoint {
    /// Unix ms.
    pub at_ms: i64,
    /// Users the shape asks for now (an open model: its `--max-users` bound).
    pub asked_users: u32,
    /// Users in their loop of sessions now.
    pub users: u32,
    /// Sessions the shape asks to have started by now (open model only).
    pub asked_arrivals: Option<u64>,
    /// Sessions started by now.
    pub arrivals: u64,
}

/// Writes shape.csv: `unix_ms,asked_users,users,asked_arrivals,arrivals` (asked_arrivals empty for
/// closed models), whole or not at all.
///
/// # Errors
/// The file and the OS error when it cannot be written.
pub fn write_points(
    dir: &Path,
    points: &[ShapePoint],
) -> Result<(), (std::path::PathBuf, std::io::Error)> {
    let mut s = String::from("unix_ms,asked_users,users,asked_arrivals,arrivals\n");
    for p in points {
        let asked = p.asked_arrivals.map(|a| a.to_string()).unwrap_or_default();
        let _ = writeln!(
            s,
            "{},{},{},{asked},{}",
            p.at_ms, p.asked_users, p.users, p.arrivals
        );
    }
    let path = dir.join(SHAPE_CSV);
    write_atomic(&path, s.as_bytes()).map_err(|e| (path, e))
}

/// Reads a run directory's shape.csv; None when the run has none (older runs, shinycannon).
pub fn read_points(dir: &std::path::Path) -> Option<Vec<ShapePoint>> {
    let text = std::fs::read_to_string(dir.join(SHAPE_CSV)).ok()?;
    let mut out = Vec::new();
    for line in text.lines().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        if f.len() != 5 {
            return None;
        }
        out.push(ShapePoint {
            at_ms: f[0].parse().ok()?,
            asked_users: f[1].parse().ok()?,
            users: f[2].parse().ok()?,
            asked_arrivals: f[3].parse().ok(),
            arrivals: f[4].parse().ok()?,
        });
    }
    Some(out)
}
