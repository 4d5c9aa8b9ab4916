//! Worker temp directories (`worker::tmpdir`): every worker, plain or a `--preload` fork, has
//! its own `TMPDIR` under manifold's directory, removed when the worker is reaped; a killed R
//! worker's `RtmpXXXX` goes with it, and the directory of a SIGKILLed manifold is removed by the
//! next manifold's start. Each test gives manifold a `TMPDIR` of its own and reads it on disk.

use crate::common;
use crate::preload::running;

use std::path::{Path, PathBuf};

use common::*;

/// Every path below `dir` (directories and files), relative to it, sorted.
fn tree(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            out.push(e.path().strip_prefix(dir).unwrap().display().to_string());
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                todo.push(e.path());
            }
        }
    }
    out.sort();
    out
}

/// `TMPDIR` in the environment of process `pid`.
fn tmpdir_of(pid: u32) -> PathBuf {
    let env = std::fs::read(format!("/proc/{pid}/environ")).unwrap();
    env.split(|b| *b == 0)
        .find_map(|kv| kv.strip_prefix(b"TMPDIR="))
        .map(|v| PathBuf::from(String::from_utf8_lossy(v).into_owned()))
        .unwrap_or_else(|| panic!("no TMPDIR for {pid}"))
}

/// Plain workers and `--preload` forks: each its own TMPDIR in manifold's directory (one per
/// worker), gone once that worker is reaped; the whole directory gone after SIGTERM.
#[test]
fn each_worker_has_its_own_tmpdir_until_it_is_reaped() {
    let tmp = tempfile::tempdir().unwrap();
    let env = [("TMPDIR", tmp.path().to_str().unwrap())];
    let fork_parent = vec![
        "python3".to_string(),
        fixture("slow_preload.py").display().to_string(),
        "0".to_string(),
    ];
    let flags = ["--listen", "127.0.0.1:0", "--min", "2", "--max", "2"];
    for command in [py_worker(&[]), fork_parent] {
        let preload = command != py_worker(&[]);
        let mut a = flags.to_vec();
        if preload {
            a.push("--preload");
        }
        let mut m = start_env(&with_command(&a, command), &env);
        let s = m.wait_status("two ready", |s| ready(s) == 2);
        let dirs: Vec<PathBuf> = pids(&s).into_iter().map(tmpdir_of).collect();
        let root = dirs[0].parent().unwrap().to_path_buf();
        assert_eq!(root.parent(), Some(tmp.path()), "{dirs:?}");
        assert_ne!(dirs[0], dirs[1]);
        assert!(dirs.iter().all(|d| d.is_dir() && d.parent() == Some(&root)));
        let victim = pids(&s)[0];
        unsafe { libc::kill(victim as i32, libc::SIGKILL) };
        m.wait_status("a replacement ready", |s| {
            ready(s) == 2 && !pids(s).contains(&victim)
        });
        wait_until("the killed worker's directory removed", || {
            !dirs[0].exists()
        });
        assert!(dirs[1].is_dir());
        m.sigterm();
        assert_eq!(m.wait().code(), Some(0), "preload {preload}: {}", m.log());
        assert_eq!(tree(tmp.path()), Vec::<String>::new(), "preload {preload}");
    }
}

/// A hung R worker killed at `--request-timeout` leaves no `RtmpXXXX` behind; a SIGKILLed
/// manifold leaves its directory (nothing runs to remove it), and the next manifold's start
/// removes it.
#[test]
fn a_killed_r_worker_and_a_sigkilled_manifold_leave_no_temp_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let env = [("TMPDIR", tmp.path().to_str().unwrap())];
    let api = fixture("plumber/api.R");
    let a = [
        "--listen",
        "127.0.0.1:0",
        "--min",
        "1",
        "--max",
        "1",
        "--request-timeout",
        "1s",
        "plumber",
        api.to_str().unwrap(),
    ];
    let mut m = start_env(&args(&a), &env);
    let hung = pids(&m.status())[0];
    let rtmp = |t: &[String]| t.iter().filter(|p| p.contains("/Rtmp")).count();
    assert_eq!(rtmp(&tree(tmp.path())), 1, "{:?}", tree(tmp.path()));
    assert_eq!(m.get("/sleep?ms=30000").status, 504);
    m.wait_status("the hung worker replaced", |s| {
        ready(s) == 1 && !pids(s).contains(&hung)
    });
    wait_until("the hung worker gone", || !running(hung));
    // One R worker runs: one RtmpXXXX, in its own directory.
    wait_until("only the running worker's Rtmp left", || {
        rtmp(&tree(tmp.path())) == 1
    });
    let last = pids(&m.status())[0];
    unsafe { libc::kill(m.child.id() as i32, libc::SIGKILL) };
    m.wait();
    wait_until("the R worker to die with manifold", || !running(last));
    assert_eq!(rtmp(&tree(tmp.path())), 1, "{:?}", tree(tmp.path()));
    let mut next = start_env(&base(&["--min", "1", "--max", "1"]), &env);
    let left = tree(tmp.path());
    assert_eq!(rtmp(&left), 0, "the next start removes it: {left:?}");
    next.sigterm();
    next.wait();
    assert_eq!(tree(tmp.path()), Vec::<String>::new());
}
