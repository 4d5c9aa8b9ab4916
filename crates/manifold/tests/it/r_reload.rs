//! Reload under load with the real R Shiny app: surge replays a recorded session through
//! manifold (2 R workers) with users looping for `MANIFOLD_RELOAD_SECS` (default 60) seconds; half
//! way the app file changes v1 → v2 (the version is in each R session's log line) and manifold
//! gets SIGHUP: 0 failed sessions, sessions begun before finish on the old processes (v1),
//! sessions begun after are on new processes (v2), the old processes are gone at the end. Needs R shiny and the surge binary: `make test-manifold-reload` runs it.

use crate::common;

use std::time::{Duration, Instant};

use common::replay::*;
use common::*;

#[test]
#[ignore = "needs R shiny and the surge binary: make test-manifold-reload"]
fn reload_under_load_keeps_every_session() {
    let secs = env_secs("MANIFOLD_RELOAD_SECS", 60);
    let dir = tempfile::tempdir().unwrap();
    let app = dir.path().join("app");
    let log = dir.path().join("sessions.log");
    write_app(&app, "v1");
    let mut m = start_shiny(
        &app,
        &log,
        &["--min", "2", "--max", "2", "--drain-timeout", "30s"],
    );
    let old_pids = pids(&m.status());
    let run = dir.path().join("run");
    let began = Instant::now();
    let mut surge = replay(&m.addr, 4, secs, &run);
    // why: the reload must land half way through the load: the run's own schedule.
    std::thread::sleep(Duration::from_secs(secs / 2));
    write_app(&app, "v2");
    let hup_at = now_s();
    unsafe {
        libc::kill(m.child.id() as i32, libc::SIGHUP);
    }
    m.wait_status("generation 2 in service", |s| s["totals"]["reloads"] == 1);
    let ready_at = now_s();
    let code = wait_exit(&mut surge, Duration::from_secs(secs + 120));
    let sessions = replayed(&run);
    let failed: Vec<_> = sessions.iter().filter(|s| s.failure.is_some()).collect();
    assert!(
        failed.is_empty(),
        "failed sessions: {failed:#?}\n{}",
        m.log()
    );
    assert_eq!(code, Some(0));
    let r = r_sessions(&log);
    let v1: Vec<_> = r.iter().filter(|s| s.version == "v1").collect();
    let v2: Vec<_> = r.iter().filter(|s| s.version == "v2").collect();
    eprintln!(
        "reload under load: {} replayed sessions in {:?}, 0 failed; R sessions v1 {} v2 {}",
        sessions.len(),
        began.elapsed(),
        v1.len(),
        v2.len()
    );
    assert!(!v1.is_empty() && !v2.is_empty(), "{r:#?}");
    // Before the file changed every session ran v1 on the old processes; those begun well after
    // the new generation was in service ran on new processes, which run v2. (An old process may
    // show v2 to a session begun between the file change and the reload: Shiny re-reads a
    // changed app.R for new sessions by itself.) Every v1 session ended.
    for s in &r {
        let old = old_pids.contains(&s.pid);
        if s.start < hup_at {
            assert!(old && s.version == "v1", "{s:?}");
        }
        if s.start > ready_at + 3.0 {
            assert!(!old, "a new session on an old process: {s:?}");
        }
        if !old {
            assert_eq!(s.version, "v2", "{s:?}");
        }
    }
    assert!(
        v1.iter().all(|s| s.ended),
        "a v1 session did not end: {v1:#?}"
    );
    // The old R processes are gone once their sessions ended.
    let s = m.wait_status("only generation 2", |s| {
        workers(s).iter().all(|w| w["generation"] == 2)
    });
    for pid in &old_pids {
        assert_gone(*pid);
    }
    assert_eq!(s["totals"]["bad_gateway"], 0, "{s}");
    let new_pids = pids(&s);
    m.sigterm();
    assert_eq!(m.wait().code(), Some(0));
    for pid in new_pids {
        assert_gone(pid);
    }
}
