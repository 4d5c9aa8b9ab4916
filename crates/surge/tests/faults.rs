//! Unlucky runs of surge (issue 23): each with its exact outcome — exit status, the one error
//! line naming the file, and what is (not) left in the run directory.

mod common;
mod segments_support;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use segments_support::*;

/// A small tmpfs (unmounted on drop), or `None` where this process may not mount.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(at: &Path, size: &str) -> Option<Tmpfs> {
        std::fs::create_dir_all(at).unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(at)
            .output()
            .is_ok_and(|o| o.status.success());
        ok.then(|| Tmpfs(at.to_owned()))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).output();
    }
}

/// Every file under `dir`, recursively.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(files(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// A replay whose run directory fills its disk: the run stops at the first session CSV it cannot
/// write, exits 2 with one line naming that file, logs the failure once (not once per session),
/// and leaves no empty, cut or temporary file (every CSV left is whole; summary.json, if there,
/// is whole JSON).
#[test]
fn a_full_disk_stops_the_replay_with_one_line_naming_the_file() {
    let tmp = TempDir::new("surge-full-disk");
    let Some(disk) = Tmpfs::mount(&tmp.path().join("full"), "24k") else {
        eprintln!("skipped: cannot mount a tmpfs here (needs root)");
        return;
    };
    let (_app, target) = start_sse_app("normal");
    let rec = write_recording(tmp.path(), false);
    let run = disk.0.join("run");
    let out = surge()
        .args(["replay", rec.to_str().unwrap(), &target, "--users", "40"])
        .args([
            "--start-interval",
            "0",
            "--loaded-duration",
            "1s",
            "--think-time",
            "none",
        ])
        .arg("--output-dir")
        .arg(&run)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    let last = stderr.lines().last().unwrap();
    let sessions = format!("{}/sessions/", run.display());
    assert!(
        last.starts_with(&format!("surge: error: {sessions}"))
            && last.ends_with(".csv: No space left on device (os error 28)"),
        "{last}"
    );
    let lost = stderr.matches("No space left on device").count();
    assert_eq!(
        lost, 2,
        "the failure is logged once, then the error line:\n{stderr}"
    );
    for f in files(&run) {
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        let bytes = std::fs::read(&f).unwrap();
        assert!(!name.starts_with('.'), "temporary file left: {f:?}");
        assert!(!bytes.is_empty(), "empty file left: {f:?}");
        if name == "summary.json" {
            serde_json::from_slice::<serde_json::Value>(&bytes).expect("whole summary.json");
        } else if name.ends_with(".csv") && f.starts_with(run.join("sessions")) {
            assert!(bytes.ends_with(b"\n"), "cut CSV: {f:?}");
            let rows = read_csv(&f).rows;
            let last = rows.last().map(|r| r[3].as_str());
            assert!(
                matches!(last, Some("PLAYBACK_DONE" | "PLAYBACK_FAIL")),
                "a whole session ends with its verdict row: {f:?} {last:?}"
            );
        }
    }
}
