//! The independent recount the insight tests compare against: `tests/reference/recount.py`
//! (Python standard library only, no code shared with the engine) run on raw day files.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// A real day's log: under `$CRANWHALES_TEST_DATA/cranlogs` (set by `make test`), else
/// `../shared/data/cranlogs` beside the repo.
pub fn day_file(date: &str) -> PathBuf {
    let dir = match std::env::var_os("CRANWHALES_TEST_DATA") {
        Some(root) => PathBuf::from(root).join("cranlogs"),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/cranlogs"),
    };
    dir.join(format!("{date}.csv.gz"))
}

/// The recount of `dates` (one JSON object per day, in order); `packages` limits the
/// per-package part to those names (`None`: every package).
pub fn recount(dates: &[&str], packages: Option<&[&str]>) -> Vec<serde_json::Value> {
    let files: Vec<PathBuf> = dates.iter().map(|d| day_file(d)).collect();
    recount_files(&files, packages)
}

/// The recount of one day file anywhere (every package).
pub fn recount_file(file: &Path) -> Vec<serde_json::Value> {
    recount_files(&[file.to_owned()], None)
}

fn recount_files(files: &[PathBuf], packages: Option<&[&str]>) -> Vec<serde_json::Value> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/reference/recount.py");
    let mut cmd = Command::new("python3");
    cmd.arg(script);
    cmd.args(files);
    if let Some(p) = packages {
        cmd.arg("--packages").arg(p.join(","));
    }
    let out = cmd.output().expect("python3 runs");
    assert!(
        out.status.success(),
        "recount.py failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("recount.py prints JSON")
}

/// `1234567` → `1,234,567`, written here rather than taken from the crate.
pub fn thousands(v: u64) -> String {
    let s = v.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A JSON number as u64.
pub fn n(v: &serde_json::Value) -> u64 {
    v.as_u64()
        .unwrap_or_else(|| panic!("not a whole number: {v}"))
}

/// Downloads of a recounted package left after taking out the whales of rank ≤ `top`.
pub fn without(pkg: &serde_json::Value, top: u64) -> u64 {
    let by_whales: u64 = (pkg["by_rank"].as_array().unwrap().iter())
        .filter(|p| n(&p[0]) <= top)
        .map(|p| n(&p[1]))
        .sum();
    n(&pkg["downloads"]) - by_whales
}
