//! `--preload` with the Python parent of docs/examples/preload.py (the documented protocol):
//! workers are forks of one parent, each draws its own random numbers, a dead fork is replaced by
//! a new fork, and no process is left behind however manifold stops (SIGTERM, SIGINT, SIGKILL),
//! checked in /proc.

use crate::common;

use std::collections::BTreeSet;
use std::path::PathBuf;

use common::*;

/// `python3 docs/examples/preload.py`: the preload parent.
pub fn py_parent() -> Vec<String> {
    let example = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/examples/preload.py");
    vec!["python3".into(), example.display().to_string()]
}

/// Every process below `root` in /proc (children, their children, ...).
pub fn descendants(root: u32) -> Vec<u32> {
    let mut parent_of = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let rest = &stat[stat.rfind(')').unwrap() + 2..];
        let ppid: u32 = rest.split(' ').nth(1).unwrap().parse().unwrap();
        parent_of.push((pid, ppid));
    }
    let mut out = Vec::new();
    let mut frontier = vec![root];
    while let Some(p) = frontier.pop() {
        for (c, _) in parent_of.iter().filter(|(_, pp)| *pp == p) {
            out.push(*c);
            frontier.push(*c);
        }
    }
    out
}

/// Whether `pid` is a live process (not gone, not a zombie waiting to be reaped).
pub fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|s| !s[s.rfind(')').unwrap() + 2..].starts_with('Z'))
}

/// manifold with `--preload` and the Python parent: `--min 2`; its workers, their parent and
/// every process below manifold.
fn start_preloaded(extra: &[&str]) -> (Manifold, Vec<u32>) {
    let mut a = vec![
        "--listen",
        "127.0.0.1:0",
        "--min",
        "2",
        "--max",
        "3",
        "--preload",
    ];
    a.extend_from_slice(extra);
    let m = start(&with_command(&a, py_parent()));
    let s = m.wait_status("two forks ready", |s| ready(s) == 2);
    let forks = pids(&s);
    let all = descendants(m.child.id());
    // One parent and its two forks, all in the parent's process group.
    assert_eq!(all.len(), 3, "{all:?} {forks:?}");
    assert!(
        forks.iter().all(|p| all.contains(p) && *p != 0),
        "{forks:?}"
    );
    (m, all)
}

/// Each fork answers from its own pid and draws its own random numbers (the seed is set after
/// the fork, so two forks never repeat each other).
#[test]
fn forks_serve_with_their_own_pid_and_seed() {
    let (m, _) = start_preloaded(&["--per-worker", "1", "--sticky", "cookie"]);
    let s = m.status();
    let mut seen = BTreeSet::new();
    let mut draws = BTreeSet::new();
    for w in workers(&s) {
        let cookie = format!("manifold_worker={}", w["id"]);
        let hello = request(&m.addr, "GET", "/", &[("Cookie", &cookie)], "");
        assert_eq!(hello.body.trim(), format!("hello from {}", w["pid"]));
        seen.insert(w["pid"].as_u64().unwrap());
        let r = request(&m.addr, "GET", "/random", &[("Cookie", &cookie)], "");
        draws.insert(r.body.trim().to_string());
    }
    assert_eq!(seen.len(), 2);
    assert_eq!(draws.len(), 2, "two forks drew the same number: {draws:?}");
}

/// The parent and its forks run with glibc's mmap threshold fixed at 128 KiB (large blocks
/// mapped afresh, not served from the parent's freed heap), read from /proc/PID/environ.
#[test]
fn the_parent_and_its_forks_keep_mallocs_mmap_threshold() {
    let (_m, all) = start_preloaded(&[]);
    for pid in all {
        let env = std::fs::read(format!("/proc/{pid}/environ")).unwrap();
        let vars: Vec<&[u8]> = env.split(|b| *b == 0).collect();
        assert!(
            vars.contains(&&b"MALLOC_MMAP_THRESHOLD_=131072"[..]),
            "pid {pid}: {}",
            String::from_utf8_lossy(&env).replace('\0', " ")
        );
    }
}

/// A fork killed from outside is replaced by a new fork of the same parent.
#[test]
fn a_killed_fork_is_replaced_by_a_new_fork() {
    let (m, all) = start_preloaded(&[]);
    let parent = *all.iter().find(|p| !pids(&m.status()).contains(p)).unwrap();
    let victim = pids(&m.status())[0];
    unsafe { libc::kill(victim as i32, libc::SIGKILL) };
    let s = m.wait_status("a new fork ready", |s| {
        ready(s) == 2 && !pids(s).contains(&victim)
    });
    let below = descendants(m.child.id());
    assert_eq!(below.len(), 3, "{below:?}");
    assert!(below.contains(&parent), "the same parent forked it");
    assert!(pids(&s).iter().all(|p| below.contains(p)));
    assert_eq!(s["totals"]["worker_crashes"], 1);
}

fn stops_without_leftovers(sig: libc::c_int) {
    let (mut m, all) = start_preloaded(&[]);
    assert_eq!(m.get("/").status, 200);
    unsafe { libc::kill(m.child.id() as i32, sig) };
    let status = m.wait();
    if sig != libc::SIGKILL {
        assert_eq!(status.code(), Some(0), "{}", m.log());
    }
    for p in all {
        wait_until(&format!("process {p} to be gone"), || !running(p));
    }
}

/// SIGTERM: manifold stops the forks, then the parent's whole group.
#[test]
fn sigterm_leaves_no_preload_process() {
    stops_without_leftovers(libc::SIGTERM);
}

/// SIGINT: as SIGTERM.
#[test]
fn sigint_leaves_no_preload_process() {
    stops_without_leftovers(libc::SIGINT);
}

/// SIGKILL of manifold: the parent dies with it (PR_SET_PDEATHSIG), the forks see their parent
/// gone and exit.
#[test]
fn sigkill_of_manifold_leaves_no_preload_process() {
    stops_without_leftovers(libc::SIGKILL);
}

/// A parent that forks only 1.5 s after it is asked (`fixtures/slow_preload.py`), on a free port.
fn start_slow_parent(m_args: &[&str], env: &[(&str, &str)]) -> Manifold {
    let parent = vec![
        "python3".to_string(),
        fixture("slow_preload.py").display().to_string(),
        "1500".to_string(),
    ];
    let a = [&["--listen", "127.0.0.1:0", "--preload"][..], m_args].concat();
    start_env(&with_command(&a, parent), env)
}

/// Status names each generation's preload parent by pid, and a worker whose fork the parent
/// has not answered yet shows `"pid": null` (never 0) until the fork's pid is known.
#[test]
fn status_names_the_parent_and_no_fork_shows_pid_0() {
    let (m, all) = start_preloaded(&[]);
    let s = m.status();
    let forks = pids(&s);
    let parent = *all.iter().find(|p| !forks.contains(p)).unwrap();
    assert_eq!(
        s["preload"],
        serde_json::json!([{ "generation": 1, "pid": parent }])
    );
    // The slow parent: the second worker (asked for by a request that finds the first busy)
    // is listed while its fork is not answered yet.
    let m = start_slow_parent(&["--min", "1", "--max", "2", "--per-worker", "1"], &[]);
    let addr = m.addr.clone();
    let busy = std::thread::spawn(move || request(&addr, "GET", "/sleep?ms=4000", &[], ""));
    m.wait_status("the first worker busy", |s| workers(s)[0]["busy"] == 1);
    let addr = m.addr.clone();
    let waiting = std::thread::spawn(move || request(&addr, "GET", "/hello", &[], ""));
    let seen_unknown = std::cell::Cell::new(false);
    let s = m.wait_status("the second fork ready", |s| {
        for w in workers(s) {
            assert_ne!(w["pid"], 0, "a pid of 0 in {w}");
            let unknown = w["state"] == "starting" && w["pid"].is_null();
            seen_unknown.set(seen_unknown.get() || unknown);
        }
        ready(s) == 2
    });
    assert!(
        seen_unknown.get(),
        "never saw the starting fork without a pid"
    );
    assert_eq!(pids(&s).len(), 2, "{s}");
    assert_eq!(busy.join().unwrap().status, 200);
    assert_eq!(waiting.join().unwrap().status, 200);
}

/// A fork's output goes to its own FIFO and is logged `[worker N]` like any worker's, not as
/// its parent's `[preload G]`.
#[test]
fn fork_output_is_logged_as_its_worker() {
    let mut m = start_slow_parent(&["--min", "1", "--max", "1"], &[]);
    let s = m.status();
    let (id, pid) = (workers(&s)[0]["id"].clone(), pids(&s)[0]);
    let line = format!("[worker {id}] fork {pid} serving port");
    wait_until("the fork's line in manifold's log", || {
        m.log().contains(&line)
    });
    assert!(!m.log().contains("[preload 1] fork"), "{}", m.log());
    m.sigterm();
    m.wait();
}
