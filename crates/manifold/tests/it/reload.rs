//! Reload with no downtime, through the real binary and a real SIGHUP: the config file is read
//! again and a new generation of (Python) workers starts; new sessions see the new version, a
//! session begun before goes on on its old worker until quiet, then the old process is gone. A
//! new generation that cannot start, or a broken config file, leaves the old one in service.
//! The pool settings read again apply too (`--min`, `--max`, `--request-timeout` …), and one
//! that cannot change live is logged as kept.

use crate::common;

use std::thread;
use std::time::Duration;

use common::*;

/// Pool settings of the first test (sticky sessions, up to 2 workers).
const SESSIONS: &str = "min = 1\nmax = 2\nper-worker = 4\nsticky = \"cookie\"\nstop-timeout = \"1s\"\ndrain-timeout = \"20s\"\n";

/// Writes a config file: TOML `settings` lines and the worker `command`.
fn write_config(path: &std::path::Path, settings: &str, command: &[String]) {
    let quoted: Vec<String> = command.iter().map(|a| format!("{a:?}")).collect();
    std::fs::write(
        path,
        format!("{settings}command = [{}]\n", quoted.join(", ")),
    )
    .unwrap();
}

fn sighup(m: &Manifold) {
    unsafe {
        libc::kill(m.child.id() as i32, libc::SIGHUP);
    }
}

#[test]
fn sighup_starts_a_new_generation_and_old_sessions_finish_on_the_old_one() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("manifold.toml");
    write_config(&cfg, SESSIONS, &py_worker(&["--version", "v1"]));
    let mut m = start(&on_free_port(&["--config", cfg.to_str().unwrap()]));
    let first = m.get("/version");
    assert_eq!(first.body, "v1");
    let cookie = first.cookie();
    let old_pid = pids(&m.status())[0];
    let session = || request(&m.addr, "GET", "/version", &[("Cookie", &cookie)], "");

    write_config(&cfg, SESSIONS, &py_worker(&["--version", "v2"]));
    sighup(&m);
    let s = m.wait_status("generation 2 in service", |s| s["totals"]["reloads"] == 1);
    assert_eq!(s["generation"], 2);
    // New sessions see v2, the old session stays on v1 while it is active.
    for _ in 0..6 {
        assert_eq!(m.get("/version").body, "v2");
        assert_eq!(session().body, "v1");
        // why: the old session's pace: it stays active while the new generation serves.
        thread::sleep(Duration::from_millis(200));
    }
    let s = m.status();
    let old = workers(&s)
        .into_iter()
        .find(|w| w["pid"] == old_pid)
        .expect("old worker still there");
    assert_eq!(
        (old["generation"].as_u64(), old["state"].as_str()),
        (Some(1), Some("draining"))
    );
    // Once the session is quiet the old worker stops.
    let s = m.wait_status("old generation gone", |s| {
        workers(s).iter().all(|w| w["generation"] == 2)
    });
    assert_gone(old_pid);
    assert_eq!(s["totals"]["bad_gateway"], 0);
    let after = session();
    assert_eq!(after.body, "v2", "a session whose worker is gone moves on");

    // A new generation that cannot start: the old one keeps serving, and status says why.
    write_config(&cfg, SESSIONS, &args(&["/nonexistent/app", "{port}"]));
    sighup(&m);
    let s = m.wait_status("reload given up", |s| s["totals"]["reload_failures"] == 1);
    assert_eq!(s["generation"], 2);
    let msg = s["last_error"]["message"].as_str().unwrap();
    assert!(
        msg.starts_with("reload to generation 3 failed, keeping generation 2: cannot start worker"),
        "{msg}"
    );
    assert_eq!(m.get("/version").body, "v2");
    assert!(workers(&s).iter().all(|w| w["state"] == "ready"), "{s}");

    // A broken config file: logged, nothing changes.
    std::fs::write(&cfg, "min = \n").unwrap();
    sighup(&m);
    wait_until("the broken config logged", || {
        m.log().contains("keeping the current generation")
    });
    assert_eq!(m.get("/version").body, "v2");
    assert_eq!(m.status()["generation"], 2);
    m.sigterm();
    assert_eq!(m.wait().code(), Some(0), "{}", m.log());
}

/// Ready workers of generation `g`, and whether every worker listed is of it.
fn generation_only(s: &serde_json::Value, g: u64) -> Option<usize> {
    let all = workers(s);
    all.iter()
        .all(|w| w["generation"] == g)
        .then(|| all.iter().filter(|w| w["state"] == "ready").count())
}

/// SIGHUP applies the pool settings read again, not only the command: `--min 1 --max 1` with a
/// 30 s request timeout becomes `--min 3 --max 4` with 1 s (status shows them; three workers of
/// the new generation run; a 5 s request gets 504 after 1 s), then `--min 1 --max 1` again
/// (the three drain though only one replacement may start: one worker left). `--max-connections`
/// belongs to the listening process: logged as kept.
#[test]
fn sighup_applies_pool_settings_and_the_pool_follows() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("manifold.toml");
    let pool = |min: usize, max: usize, timeout: &str, conns: usize| {
        format!("min = {min}\nmax = {max}\nrequest-timeout = \"{timeout}\"\nmax-connections = {conns}\nstop-timeout = \"1s\"\ndrain-timeout = \"5s\"\n")
    };
    let settings = |s: &serde_json::Value| {
        (
            s["min"].as_u64().unwrap(),
            s["max"].as_u64().unwrap(),
            s["request_timeout_s"].as_f64().unwrap(),
        )
    };
    write_config(&cfg, &pool(1, 1, "30s", 100), &py_worker(&[]));
    let mut m = start(&on_free_port(&["--config", cfg.to_str().unwrap()]));
    assert_eq!(settings(&m.status()), (1, 1, 30.0));

    write_config(&cfg, &pool(3, 4, "1s", 200), &py_worker(&[]));
    sighup(&m);
    let s = m.wait_status("three workers of generation 2", |s| {
        generation_only(s, 2) == Some(3)
    });
    assert_eq!(settings(&s), (3, 4, 1.0));
    // Status lists every setting in force, from the settings table.
    assert_eq!(
        (&s["settings"]["max"], &s["settings"]["request-timeout"]),
        (&serde_json::json!("4"), &serde_json::json!("1s"))
    );
    assert_eq!(s["settings"]["max-connections"], "100", "kept");
    let log = m.log();
    assert!(log.contains("reload: at once"), "{log}");
    assert!(
        log.contains("--max-connections") && log.contains("kept (needs a restart)"),
        "{log}"
    );
    let start = std::time::Instant::now();
    let r = m.get("/sleep?ms=5000");
    assert_eq!(r.status, 504, "{}", r.body);
    assert!(
        r.body.contains("within 1s (--request-timeout)"),
        "{}",
        r.body
    );
    assert!(
        start.elapsed() < Duration::from_secs(4),
        "{:?}",
        start.elapsed()
    );

    write_config(&cfg, &pool(1, 1, "30s", 200), &py_worker(&[]));
    sighup(&m);
    let s = m.wait_status("one worker, of generation 3", |s| {
        generation_only(s, 3) == Some(1) && workers(s).len() == 1
    });
    assert_eq!(settings(&s), (1, 1, 30.0));
    assert_eq!(m.get("/hello").body, "hello");
    m.sigterm();
    assert_eq!(m.wait().code(), Some(0), "{}", m.log());
}
