//! `--preload` with real R (Debian r-cran-plumber, r-cran-shiny): the same answers as without it,
//! a fresh random seed in every fork, the time from a request that needs a new worker to its
//! answer (printed with and without), the memory the forks share (PSS vs RSS from /proc),
//! recycling and SIGHUP with a new parent, and nothing left behind. The surge replay of the
//! case study's Shiny app (needs the surge binary) runs under `make test-manifold-preload`.

use crate::common;
use crate::preload::{descendants, running};

use std::collections::BTreeSet;
use std::thread;
use std::time::{Duration, Instant};

use common::replay::*;
use common::*;

/// manifold on a free port with `flags`, then `--preload` if asked, over the preload test API.
fn plumber(flags: &[&str], preload: bool) -> Manifold {
    let mut a = flags.to_vec();
    if preload {
        a.push("--preload");
    }
    start_r("plumber", "plumber/preload_api.R", &a)
}

/// The live processes below manifold that are not workers: with `--preload`, the parent (a
/// fork that exited may be a zombie of its parent for a moment).
fn parents(m: &Manifold) -> Vec<u32> {
    let w = pids(&m.status());
    descendants(m.child.id())
        .into_iter()
        .filter(|p| !w.contains(p) && running(*p))
        .collect()
}

/// Pss and Rss of `pid` in kB, from /proc/PID/smaps_rollup.
fn pss_rss(pid: u32) -> (u64, u64) {
    let text = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).unwrap();
    let field = |name: &str| -> u64 {
        text.lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    (field("Pss:"), field("Rss:"))
}

/// Time from a request that needs a new worker (the one worker is busy, `--per-worker 1`) to
/// its answer.
fn new_worker_answer(m: &Manifold, hold_ms: u64) -> Duration {
    let addr = m.addr.clone();
    let hold = format!("/sleep?ms={hold_ms}");
    let blocker = thread::spawn(move || request(&addr, "GET", &hold, &[], ""));
    m.wait_status("the one worker busy", |s| {
        workers(s).iter().any(|w| w["busy"] == 1)
    });
    let t = Instant::now();
    let r = m.get("/hello");
    let took = t.elapsed();
    assert_eq!(r.body, "hello");
    assert_eq!(blocker.join().unwrap().status, 200);
    took
}

/// A plumber API with and without `--preload`: the same answers; with it, two workers are forks
/// of one parent and draw different random numbers although the parent drew one before forking
/// (the fork sets a fresh seed); the time a new worker takes to answer is printed for both.
#[test]
fn plumber_preloaded_answers_as_without_and_reseeds() {
    let mut took = Vec::new();
    for preload in [false, true] {
        let flags = ["--min", "1", "--max", "2", "--per-worker", "1"];
        let mut m = plumber(&[&flags[..], &["--sticky", "cookie"]].concat(), preload);
        assert_eq!(m.get("/hello").body, "hello");
        // R's start is seconds; the blocker holds the first worker until the second answered.
        let hold = if preload { 3000 } else { 15000 };
        took.push(new_worker_answer(&m, hold));
        let s = m.wait_status("two ready", |s| ready(s) == 2);
        let mut draws = BTreeSet::new();
        for w in workers(&s) {
            let cookie = format!("manifold_worker={}", w["id"]);
            let pid = request(&m.addr, "GET", "/pid", &[("Cookie", &cookie)], "");
            assert_eq!(pid.body, w["pid"].to_string());
            draws.insert(request(&m.addr, "GET", "/random", &[("Cookie", &cookie)], "").body);
        }
        assert_eq!(
            draws.len(),
            2,
            "two workers drew the same number: {draws:?}"
        );
        if preload {
            let p = parents(&m);
            assert_eq!(p.len(), 1, "one parent: {p:?}");
        }
        m.sigterm();
        assert_eq!(m.wait().code(), Some(0));
    }
    eprintln!(
        "plumber: a request needing a new worker answered in {:.3} s without --preload, {:.3} s with it",
        took[0].as_secs_f64(),
        took[1].as_secs_f64()
    );
}

/// Four forks share the parent's pages: the sum of their PSS is below the sum of their RSS
/// (printed beside four workers without `--preload`).
#[test]
fn preloaded_forks_share_memory() {
    let mut lines = Vec::new();
    for preload in [false, true] {
        let mut m = plumber(&["--min", "4", "--max", "4"], preload);
        let s = m.wait_status("four ready", |s| ready(s) == 4);
        let (pss, rss) = pids(&s)
            .into_iter()
            .map(pss_rss)
            .fold((0, 0), |(a, b), (p, r)| (a + p, b + r));
        lines.push(format!(
            "{} --preload: 4 workers PSS {} MB, RSS {} MB",
            if preload { "with" } else { "without" },
            pss / 1024,
            rss / 1024
        ));
        if preload {
            assert!(pss < rss, "forks share nothing: PSS {pss} kB, RSS {rss} kB");
        }
        m.sigterm();
        m.wait();
    }
    eprintln!("{}", lines.join("\n"));
}

/// With `--preload`, `--max-requests` recycles a fork into a new fork of the same parent, and
/// SIGHUP starts a new parent whose forks replace the old ones; the old parent and its forks are
/// gone after, and everything after SIGKILL of manifold.
#[test]
fn preloaded_workers_recycle_and_reload() {
    let mut m = plumber(&["--min", "1", "--max", "2", "--max-requests", "3"], true);
    // A fork whose pid the parent has not told yet is in no worker's status: wait it out.
    wait_until("one preload parent", || parents(&m).len() == 1);
    let first = parents(&m);
    let before = pids(&m.status());
    for _ in 0..3 {
        assert_eq!(m.get("/hello").body, "hello");
    }
    let s = m.wait_status("recycled", |s| {
        ready(s) == 1 && workers(s).len() == 1 && !pids(s).contains(&before[0])
    });
    assert_eq!(parents(&m), first, "the same parent forked the replacement");
    assert!(!running(before[0]));
    let recycled = pids(&s);
    unsafe { libc::kill(m.child.id() as i32, libc::SIGHUP) };
    let s = m.wait_status("generation 2 in service", |s| {
        s["totals"]["reloads"] == 1 && workers(s).len() == 1 && ready(s) == 1
    });
    assert_eq!(m.get("/hello").body, "hello");
    wait_until("the old parent to stop", || !running(first[0]));
    assert!(!running(recycled[0]));
    wait_until("one preload parent after the reload", || {
        parents(&m).len() == 1
    });
    let second = parents(&m);
    assert_ne!(second, first, "the reload started a new parent");
    let all = descendants(m.child.id());
    assert!(pids(&s).iter().all(|p| all.contains(p)));
    unsafe { libc::kill(m.child.id() as i32, libc::SIGKILL) };
    m.wait();
    for p in all {
        wait_until(&format!("process {p} to be gone"), || !running(p));
    }
}

/// `manifold shiny --preload`: the session's page, script and WebSocket reach the fork named in
/// its cookie, and the server function runs in that fork (the UI, built once when the app was
/// loaded, shows the parent's pid: code at the top of app.R runs once, in the parent).
#[test]
fn shiny_preloaded_session_runs_in_its_fork() {
    let mut m = start_r("shiny", "shiny", &["--min", "2", "--max", "2", "--preload"]);
    let parent = parents(&m);
    let p = shiny::open(&m.addr, "/");
    assert_eq!(vec![p.pid], parent, "the UI was built in the parent");
    let s = m.status();
    let w = workers(&s)
        .into_iter()
        .find(|w| w["id"] == p.worker)
        .unwrap();
    let fork = w["pid"].as_u64().unwrap();
    let out = shiny::output(&m.addr, "/", &p.cookie);
    assert!(out.contains(&format!("pid: {fork}")), "{out}");
    let all = descendants(m.child.id());
    m.sigterm();
    assert_eq!(m.wait().code(), Some(0));
    for p in all {
        wait_until(&format!("process {p} to be gone"), || !running(p));
    }
}

/// The case study's Shiny app replayed by surge through manifold with and without `--preload`:
/// no session fails either way (the same answers: surge checks every recorded reply).
#[test]
#[ignore = "needs R shiny and the surge binary: make test-manifold-preload"]
fn shiny_replay_with_preload_as_without() {
    let secs = env_secs("MANIFOLD_PRELOAD_SECS", 20);
    for preload in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let app = dir.path().join("app");
        let log = dir.path().join("sessions.log");
        write_app(&app, "v1");
        let mut flags = vec!["--min", "2", "--max", "2"];
        if preload {
            flags.push("--preload");
        }
        let mut m = start_shiny(&app, &log, &flags);
        let run = dir.path().join("run");
        let mut surge = replay(&m.addr, 4, secs, &run);
        let code = wait_exit(&mut surge, Duration::from_secs(secs + 120));
        let sessions = replayed(&run);
        let failed: Vec<_> = sessions.iter().filter(|s| s.failure.is_some()).collect();
        assert!(failed.is_empty(), "failed: {failed:#?}\n{}", m.log());
        assert_eq!(code, Some(0));
        assert!(!sessions.is_empty());
        eprintln!(
            "shiny replay {} --preload: {} sessions, 0 failed",
            if preload { "with" } else { "without" },
            sessions.len()
        );
        m.sigterm();
        m.wait();
    }
}
