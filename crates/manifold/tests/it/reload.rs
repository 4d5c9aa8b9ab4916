//! Reload with no downtime, through the real binary and a real SIGHUP: the config file is read
//! again and a new generation of (Python) workers starts; new sessions see the new version, a
//! session begun before goes on on its old worker until quiet, then the old process is gone. A
//! new generation that cannot start, or a broken config file, leaves the old one in service.

use crate::common;

use std::thread;
use std::time::Duration;

use common::*;

fn write_config(path: &std::path::Path, command: &[String]) {
    let quoted: Vec<String> = command.iter().map(|a| format!("{a:?}")).collect();
    std::fs::write(
        path,
        format!(
            "min = 1\nmax = 2\nper-worker = 4\nsticky = \"cookie\"\nstop-timeout = \"1s\"\ndrain-timeout = \"20s\"\ncommand = [{}]\n",
            quoted.join(", ")
        ),
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
    write_config(&cfg, &py_worker(&["--version", "v1"]));
    let mut m = start(&on_free_port(&["--config", cfg.to_str().unwrap()]));
    let first = m.get("/version");
    assert_eq!(first.body, "v1");
    let cookie = first.cookie();
    let old_pid = pids(&m.status())[0];
    let session = || request(&m.addr, "GET", "/version", &[("Cookie", &cookie)], "");

    write_config(&cfg, &py_worker(&["--version", "v2"]));
    sighup(&m);
    let s = m.wait_status("generation 2 in service", |s| s["totals"]["reloads"] == 1);
    assert_eq!(s["generation"], 2);
    // New sessions see v2, the old session stays on v1 while it is active.
    for _ in 0..6 {
        assert_eq!(m.get("/version").body, "v2");
        assert_eq!(session().body, "v1");
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
    write_config(&cfg, &args(&["/nonexistent/app", "{port}"]));
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
    let start = std::time::Instant::now();
    while !m.log().contains("keeping the current generation") {
        assert!(start.elapsed() < DEADLINE, "{}", m.log());
        thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(m.get("/version").body, "v2");
    assert_eq!(m.status()["generation"], 2);
    m.sigterm();
    assert_eq!(m.wait().code(), Some(0), "{}", m.log());
}
