//! Chaos with the real R Shiny app: surge replays a recorded session through manifold (4 R
//! workers) for `MANIFOLD_CHAOS_SECS` (default 60; the run is 300) while this test kills
//! random workers with SIGKILL, hangs one (SIGSTOP), and reloads once (SIGHUP, app v1 → v2).
//! Only sessions on a killed or hung worker may fail, each with a reason; every other R session
//! ends normally; no process is left behind. `make test-manifold-chaos` runs it.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use common::replay::*;
use common::*;

fn signal(pid: u32, sig: i32) {
    unsafe {
        libc::kill(pid as i32, sig);
    }
}

/// A pseudo-random pick among the ready workers not hit yet (seeded by the clock).
fn victim(m: &Manifold, hit: &BTreeSet<u32>, seed: &mut u64) -> Option<u32> {
    let s = m.status();
    let candidates: Vec<u32> = workers(&s)
        .iter()
        .filter(|w| w["state"] == "ready")
        .map(|w| w["pid"].as_u64().unwrap() as u32)
        .filter(|p| !hit.contains(p))
        .collect();
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    (!candidates.is_empty()).then(|| candidates[(*seed % candidates.len() as u64) as usize])
}

/// Ids of the workers manifold's log says it stopped with requests or sessions open.
fn stopped_by_manifold(log: &str) -> BTreeSet<u64> {
    log.lines()
        .filter(|l| l.contains("; replaced") || l.contains("with sessions open"))
        .filter_map(|l| {
            let at = l
                .find("worker=")
                .map(|i| i + 7)
                .or_else(|| l.find("worker ").map(|i| i + 7))?;
            let digits: String = l[at..].chars().take_while(|c| c.is_ascii_digit()).collect();
            digits.parse().ok()
        })
        .collect()
}

#[test]
#[ignore = "needs R shiny and the surge binary: make test-manifold-chaos"]
fn chaos_only_sessions_on_killed_workers_fail() {
    let secs = env_secs("MANIFOLD_CHAOS_SECS", 60);
    let dir = tempfile::tempdir().unwrap();
    let app = dir.path().join("app");
    let log = dir.path().join("sessions.log");
    let access = dir.path().join("access.jsonl");
    write_app(&app, "v1");
    let mut m = start_shiny(
        &app,
        &log,
        &[
            "--min",
            "4",
            "--max",
            "4",
            "--request-timeout",
            "5s",
            "--stop-timeout",
            "2s",
            "--drain-timeout",
            "30s",
            "--access-log",
            access.to_str().unwrap(),
        ],
    );
    let mut seen: BTreeSet<u32> = pids(&m.status()).into_iter().collect();
    // Worker id → pid, to read the access log (ids) against the victims (pids).
    let mut id_pid: BTreeMap<u64, u32> = BTreeMap::new();
    let mut note = |s: &serde_json::Value, seen: &mut BTreeSet<u32>| {
        for w in workers(s) {
            let pid = w["pid"].as_u64().unwrap() as u32;
            seen.insert(pid);
            id_pid.insert(w["id"].as_u64().unwrap(), pid);
        }
    };
    let run = dir.path().join("run");
    let began = Instant::now();
    let began_s = now_s();
    let mut surge = replay(&m.addr, 8, secs, &run);
    let mut seed = (now_s() * 1e6) as u64 | 1;
    let mut hit: BTreeSet<u32> = BTreeSet::new();
    // (fraction of the run, action)
    let plan = [
        (0.2, "kill"),
        (0.35, "hang"),
        (0.5, "reload"),
        (0.65, "kill"),
        (0.8, "kill"),
    ];
    for (at, action) in plan {
        let when = Duration::from_secs_f64(secs as f64 * at);
        while began.elapsed() < when {
            note(&m.status(), &mut seen);
            // why: the chaos plan's schedule (status noted every 200 ms until the next action).
            std::thread::sleep(Duration::from_millis(200));
        }
        match action {
            "reload" => {
                write_app(&app, "v2");
                signal(m.child.id(), libc::SIGHUP);
            }
            _ => {
                let Some(pid) = victim(&m, &hit, &mut seed) else {
                    continue;
                };
                hit.insert(pid);
                let sig = if action == "kill" {
                    libc::SIGKILL
                } else {
                    libc::SIGSTOP
                };
                eprintln!("chaos: {action} worker pid {pid} at {:?}", began.elapsed());
                signal(pid, sig);
            }
        }
    }
    let code = wait_exit(&mut surge, Duration::from_secs(secs + 180));
    // Let the R processes log the ends of the last sessions.
    let s = m.wait_status("workers idle", |s| {
        workers(s)
            .iter()
            .all(|w| w["busy"] == 0 || w["state"] != "ready")
    });
    note(&s, &mut seen);
    // Let the R processes log the ends of the last sessions (onSessionEnded runs after the
    // socket closes; on a loaded machine that took over 2 s): until every session on a worker
    // left alone has ended, at most 30 s; the assertion below still fails one that never does.
    poll_until(Duration::from_secs(30), || {
        !r_sessions(&log)
            .iter()
            .any(|s| !hit.contains(&s.pid) && !s.ended)
    });
    note(&m.status(), &mut seen);
    let sessions = replayed(&run);
    let failed: Vec<&Replayed> = sessions.iter().filter(|s| s.failure.is_some()).collect();
    let r = r_sessions(&log);
    seen.extend(r.iter().map(|s| s.pid));
    // Workers manifold itself stopped with sessions open (one that passed --request-timeout on a
    // loaded machine, a drain past its limit) are hit too: its log says so, by worker id.
    let log_text = m.log();
    let stopped_ids = stopped_by_manifold(&log_text);
    let stopped: BTreeSet<u32> = stopped_ids
        .iter()
        .filter_map(|id| id_pid.get(id).copied())
        .filter(|p| !hit.contains(p))
        .collect();
    let on_victims = r
        .iter()
        .filter(|s| (hit.contains(&s.pid) || stopped.contains(&s.pid)) && !s.ended)
        .count();
    let hit_ids: BTreeSet<u64> = id_pid
        .iter()
        .filter(|(id, p)| hit.contains(p) || stopped_ids.contains(id))
        .map(|(id, _)| *id)
        .collect();
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&access)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let on_hit = |l: &serde_json::Value| l["worker"].as_u64().is_some_and(|w| hit_ids.contains(&w));
    // Sessions whose WebSocket was on a hit worker, and 5xx answers (manifold's 502/504).
    let ws_on_hit = lines
        .iter()
        .filter(|l| l["status"] == 101 && on_hit(l))
        .count();
    let gateway_errors = lines
        .iter()
        .filter(|l| l["status"].as_u64().is_some_and(|s| s >= 500))
        .count();
    eprintln!(
        "chaos: {} replayed sessions in {:?}, {} failed; hit {:?}, stopped by manifold {:?}; R sessions {} ({} cut on hit workers); WebSockets on hit workers {}; 5xx answers {}",
        sessions.len(),
        began.elapsed(),
        failed.len(),
        hit,
        stopped,
        r.len(),
        on_victims,
        ws_on_hit,
        gateway_errors
    );
    for f in &failed {
        let why = f.failure.as_deref().unwrap();
        eprintln!("  failed: {} — {why}", f.file.display());
        assert!(!why.trim().is_empty(), "a failure without a reason: {f:?}");
    }
    assert!(!hit.is_empty(), "no worker was hit");
    // Every R session on a worker left alone ended normally.
    let cut: Vec<_> = r
        .iter()
        .filter(|s| !hit.contains(&s.pid) && !stopped.contains(&s.pid) && !s.ended)
        .collect();
    if !cut.is_empty() {
        for s in &cut {
            eprintln!(
                "  cut: pid {} token {} started {:.3} s into the run",
                s.pid,
                s.token,
                s.start - began_s
            );
        }
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        for l in text.lines().filter(|l| {
            cut.iter()
                .any(|s| l.contains(&s.token) || l.contains(&s.pid.to_string()))
        }) {
            eprintln!("  session log: {l}");
        }
        for l in log_text
            .lines()
            .filter(|l| l.contains("WARN") || l.contains("worker"))
        {
            eprintln!("  manifold: {l}");
        }
    }
    assert!(cut.is_empty(), "sessions cut on healthy workers: {cut:#?}");
    // Each failed replay is explained by a session on a hit worker or a 5xx answer.
    assert!(
        failed.len() <= ws_on_hit + gateway_errors,
        "{} failed, only {} sessions on hit workers + {} 5xx",
        failed.len(),
        ws_on_hit,
        gateway_errors
    );
    assert!(sessions.len() > failed.len() * 2, "most sessions complete");
    assert_eq!(code, Some(if failed.is_empty() { 0 } else { 1 }));
    // The hung worker is not left behind, nor anything else after the stop.
    m.sigterm();
    assert_eq!(m.wait().code(), Some(0), "{}", m.log());
    for pid in &seen {
        assert_gone(*pid);
    }
}
