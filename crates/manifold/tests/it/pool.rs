//! Pool behaviour with real processes: manifold over the Python fixture worker. Behaviour tests
//! run manifold in-process ([`InProc`]); exit codes, signals and the forwarded log use the binary.
//! They run on the real clock: the workers are real processes that start, answer and stop in
//! real time, and a paused clock would fire every timer (ready, stop, idle) while they work
//! (`pool_clock.rs` has the cases where it does fit).

use crate::common;

use std::collections::BTreeSet;
use std::thread;

use common::*;

/// Under concurrent load the pool grows to --max (never beyond), and shrinks back to --min when
/// idle, with the stopped worker processes really gone.
#[test]
fn scales_up_under_load_and_down_when_idle() {
    let m = InProc::start(&base(&["--min", "1", "--max", "3", "--idle-timeout", "1s"]));
    let addr = m.addr.clone();
    let reqs: Vec<_> = (0..6)
        .map(|i| {
            let addr = addr.clone();
            thread::spawn(move || request(&addr, "GET", &format!("/sleep?ms=600&tag={i}"), &[], ""))
        })
        .collect();
    let s = m.wait_status("three workers", |s| workers(s).len() == 3);
    assert!(workers(&s).len() <= 3);
    let mut served_by = BTreeSet::new();
    for r in reqs {
        let r = r.join().unwrap();
        assert_eq!(r.status, 200, "{}", r.body);
        let v: serde_json::Value = serde_json::from_str(&r.body).unwrap();
        served_by.insert(v["pid"].as_u64().unwrap() as u32);
    }
    assert!(
        served_by.len() >= 2,
        "load was spread over workers: {served_by:?}"
    );
    let all = pids(&m.status());
    assert_eq!(
        m.status()["totals"]["worker_starts"],
        3,
        "never more than --max"
    );
    let s = m.wait_status("back to one worker", |s| workers(s).len() == 1);
    let kept = pids(&s)[0];
    for pid in all.into_iter().filter(|p| *p != kept) {
        assert_gone(pid);
    }
    assert!(alive(kept));
    assert_eq!(s["totals"]["idle_stops"], 2);
    assert_eq!(s["totals"]["served"], 6);
}

/// With the only worker busy, a full queue answers 503 at once and a waiting request answers
/// 503 with Retry-After when --queue-timeout passes; the busy request still succeeds.
#[test]
fn queue_full_and_queue_timeout_give_503() {
    let m = InProc::start(&base(&[
        "--min",
        "1",
        "--max",
        "1",
        "--queue-size",
        "1",
        "--queue-timeout",
        "300ms",
    ]));
    let addr = m.addr.clone();
    let long = thread::spawn(move || request(&addr, "GET", "/sleep?ms=2000", &[], ""));
    m.wait_status("busy worker", |s| workers(s)[0]["busy"] == 1);
    let addr = m.addr.clone();
    let queued = thread::spawn(move || request(&addr, "GET", "/sleep?ms=1", &[], ""));
    m.wait_status("one waiter", |s| s["queue"] == 1);
    let full = m.get("/sleep?ms=1");
    assert_eq!(full.status, 503);
    assert_eq!(full.body.trim(), "manifold: queue full");
    assert!(full.header("retry-after").is_some());
    let timed_out = queued.join().unwrap();
    assert_eq!(timed_out.status, 503);
    assert_eq!(timed_out.body.trim(), "manifold: queue timeout");
    assert_eq!(timed_out.header("retry-after"), Some("1"));
    assert_eq!(long.join().unwrap().status, 200);
    let s = m.status();
    assert_eq!(s["totals"]["queue_full"], 1);
    assert_eq!(s["totals"]["queue_timeouts"], 1);
    assert_eq!(s["queue"], 0);
}

/// A worker that dies mid-request gives that request 502 and is replaced by a new process.
#[test]
fn crash_gives_502_and_a_replacement_worker() {
    let m = InProc::start(&base(&["--min", "1", "--max", "1"]));
    let p1: u32 = m.get("/pid").body.parse().unwrap();
    // A GET that crashes its worker on its kept-alive connection is sent once more (issue 32: a
    // GET that got no byte of answer is retried once): its new connection to the same worker is
    // refused or reset (the worker exited), so it goes to a replacement; it crashes that one too
    // and gets its 502. It kills two workers, never more.
    let r = m.get("/crash");
    assert_eq!(r.status, 502, "{}", r.body);
    assert!(
        r.body.starts_with("manifold: worker 2 failed"),
        "{}",
        r.body
    );
    assert_gone(p1);
    // Worker 2's exit may be noticed after the 502: wait for the third.
    let s = m.wait_status("replacement ready", |s| {
        ready(s) == 1 && workers(s).len() == 1 && workers(s)[0]["id"] == 3
    });
    assert_eq!(s["totals"]["worker_starts"], 3, "{s}");
    assert_eq!(s["totals"]["connect_retries"], 1, "{s}");
    let p2: u32 = m.get("/pid").body.parse().unwrap();
    assert_ne!(p1, p2);
    let s = m.status();
    // Worker 2 died while ready: a crash. Worker 1 is one too when its exit was noticed before
    // its new connection's reset, else it was replaced for the retry (a race the test cannot
    // time). One 502.
    let crashes = s["totals"]["worker_crashes"].as_u64().unwrap();
    assert!((1..=2).contains(&crashes), "{s}");
    assert_eq!(s["totals"]["bad_gateway"], 1);
}

/// A command that exits at once ends manifold with a one-line error naming the worker, its exit
/// code and its output, after a bounded number of attempts (no busy loop).
#[test]
fn command_that_exits_at_once_is_a_clear_error() {
    let dir = std::env::temp_dir().join(format!("manifold-exit-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let count = dir.join("starts");
    let cmd = py_worker(&["--exit-at-once", "--count-file", count.to_str().unwrap()]);
    let (code, log) = run_to_exit(&with_command(&["--listen", "127.0.0.1:0"], cmd));
    assert_eq!(code, Some(1));
    let last = log.lines().last().unwrap();
    assert_eq!(
        last,
        "manifold: error: worker 3 exited with code 3 before it was ready; last output: fixture: refusing to start (exit-at-once) (gave up after 3 attempts)"
    );
    let starts = std::fs::read_to_string(&count).unwrap().lines().count();
    assert_eq!(starts, 3);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A program that does not exist is reported by name.
#[test]
fn missing_program_is_a_clear_error() {
    let (code, log) = run_to_exit(&args(&[
        "--listen",
        "127.0.0.1:0",
        "--",
        "/nonexistent/app",
        "{port}",
    ]));
    assert_eq!(code, Some(1));
    assert!(
        log.lines().last().unwrap().starts_with(
            "manifold: error: cannot start worker 3 (/nonexistent/app): No such file or directory"
        ),
        "{log}"
    );
}

/// A worker that never opens its port within --ready-timeout is killed and reported.
#[test]
fn slow_start_past_ready_timeout_is_reported() {
    let cmd = py_worker(&["--slow-start", "20000"]);
    let (code, log) = run_to_exit(&with_command(
        &["--listen", "127.0.0.1:0", "--ready-timeout", "300ms"],
        cmd,
    ));
    assert_eq!(code, Some(1));
    let last = log.lines().last().unwrap();
    assert!(
        last.starts_with("manifold: error: worker 3 not ready after 300ms: port ")
            && last.ends_with("does not accept connections (gave up after 3 attempts)"),
        "{last}"
    );
    // The slow workers were killed, not left sleeping.
    let pids: Vec<u32> = log
        .lines()
        .filter_map(|l| l.split("pid=").nth(1))
        .map(|p| p.split_whitespace().next().unwrap().parse().unwrap())
        .collect();
    assert_eq!(pids.len(), 3, "{log}");
    pids.into_iter().for_each(assert_gone);
}

/// --health-path gates readiness: a 404 path keeps workers from ever serving.
#[test]
fn health_path_must_answer_2xx() {
    let m = InProc::start(&base(&["--health-path", "/hello"]));
    assert_eq!(m.get("/hello").body, "hello");
    drop(m);
    let (code, log) = run_to_exit(&base(&["--health-path", "/nope", "--ready-timeout", "3s"]));
    assert_eq!(code, Some(1));
    assert!(log.contains("/nope answered 404 Not Found"), "{log}");
}

/// A worker that prints megabytes per request keeps serving, and its output is forwarded with
/// the worker prefix.
#[test]
fn chatty_worker_keeps_serving() {
    let m = start(&with_command(
        &["--listen", "127.0.0.1:0", "--max", "1"],
        py_worker(&["--chatty", "2000000"]),
    ));
    for i in 0..15 {
        let r = m.get(&format!("/sleep?ms=1&tag={i}"));
        assert_eq!(r.status, 200, "request {i}");
    }
    assert!(m.log().contains(&format!("[worker 1] {}", "x".repeat(99))));
}

/// Requests waiting in the queue are served in arrival order.
#[test]
fn queue_is_fifo() {
    let m = InProc::start(&base(&["--min", "1", "--max", "1"]));
    let addr = m.addr.clone();
    let first = thread::spawn(move || request(&addr, "GET", "/sleep?ms=500&tag=first", &[], ""));
    m.wait_status("busy", |s| workers(s)[0]["busy"] == 1);
    let mut waiting = Vec::new();
    for i in 0..5 {
        let addr = m.addr.clone();
        waiting.push(thread::spawn(move || {
            request(&addr, "GET", &format!("/sleep?ms=20&tag={i}"), &[], "")
        }));
        m.wait_status("queued", |s| s["queue"] == i + 1);
    }
    assert_eq!(first.join().unwrap().status, 200);
    let done: Vec<f64> = waiting
        .into_iter()
        .map(|t| {
            let r = t.join().unwrap();
            let v: serde_json::Value = serde_json::from_str(&r.body).unwrap();
            v["done"].as_f64().unwrap()
        })
        .collect();
    assert!(
        done.windows(2).all(|w| w[0] < w[1]),
        "finish order {done:?}"
    );
}

/// SIGTERM while requests are running and queued: every accepted request is answered 200,
/// manifold exits 0, and all worker processes are gone.
#[test]
fn sigterm_during_load_loses_no_accepted_request() {
    let mut m = start(&base(&["--min", "2", "--max", "2"]));
    let pids = pids(&m.status());
    let reqs: Vec<_> = (0..6)
        .map(|i| {
            let addr = m.addr.clone();
            thread::spawn(move || request(&addr, "GET", &format!("/sleep?ms=400&tag={i}"), &[], ""))
        })
        .collect();
    m.wait_status("all accepted", |s| {
        let busy: u64 = workers(s).iter().map(|w| w["busy"].as_u64().unwrap()).sum();
        busy == 2 && s["queue"] == 4
    });
    m.sigterm();
    for r in reqs {
        assert_eq!(r.join().unwrap().status, 200);
    }
    assert_eq!(m.wait().code(), Some(0));
    pids.into_iter().for_each(assert_gone);
    assert!(
        std::net::TcpStream::connect(&m.addr).is_err(),
        "still accepting"
    );
}

/// With --sticky cookie, a client's requests stay on the worker named in its cookie even when
/// another worker is free; X-Forwarded-* headers reach the worker.
#[test]
fn sticky_cookie_pins_a_client_to_its_worker() {
    let m = InProc::start(&base(&["--min", "2", "--max", "2", "--sticky", "cookie"]));
    let r = m.get("/echo");
    let cookie = r.cookie();
    assert!(cookie.starts_with("manifold_worker="), "{cookie}");
    let v: serde_json::Value = serde_json::from_str(&r.body).unwrap();
    let pid = v["pid"].as_u64().unwrap();
    assert_eq!(v["headers"]["x-forwarded-for"], "127.0.0.1");
    assert_eq!(v["headers"]["x-forwarded-proto"], "http");
    assert_eq!(v["headers"]["x-forwarded-host"], m.addr.as_str());
    for _ in 0..6 {
        let r = request(&m.addr, "POST", "/echo", &[("Cookie", &cookie)], "data");
        assert!(r.header("set-cookie").is_none());
        let v: serde_json::Value = serde_json::from_str(&r.body).unwrap();
        assert_eq!(v["pid"].as_u64().unwrap(), pid);
        assert_eq!(v["body"], "data");
    }
    let id: u64 = cookie.split('=').nth(1).unwrap().parse().unwrap();
    let s = m.status();
    let served: Vec<(u64, u64)> = workers(&s)
        .iter()
        .map(|w| (w["id"].as_u64().unwrap(), w["served"].as_u64().unwrap()))
        .collect();
    assert!(served.contains(&(id, 7)), "{served:?}");
    // A cookie naming a worker that does not exist is replaced.
    let r = request(
        &m.addr,
        "GET",
        "/pid",
        &[("Cookie", "manifold_worker=99")],
        "",
    );
    assert_eq!(r.status, 200);
    assert!(r
        .header("set-cookie")
        .unwrap()
        .starts_with("manifold_worker="));
}

/// The metrics page is Prometheus text that agrees with the status page.
#[test]
fn metrics_match_status() {
    let m = InProc::start(&base(&["--min", "2", "--max", "3"]));
    for _ in 0..4 {
        assert_eq!(m.get("/hello").status, 200);
    }
    let text = m.get("/__manifold__/metrics").body;
    assert!(text.contains("manifold_workers_ready 2\n"), "{text}");
    assert!(
        text.contains("manifold_requests_served_total 4\n"),
        "{text}"
    );
    assert!(text.contains("manifold_workers_max 3\n"), "{text}");
    let s = m.status();
    let per_worker: u64 = workers(&s)
        .iter()
        .map(|w| w["served"].as_u64().unwrap())
        .sum();
    assert_eq!(per_worker, 4);
    // Most-recently-used first: sequential requests all went to one worker.
    assert!(workers(&s).iter().any(|w| w["served"] == 4), "{s}");
}

/// Bad settings end with a one-line error naming the flag. A flag value that does not parse
/// (a duration, a size) is a usage error, exit code 2 and clap's words, as cranwhales' and
/// surge's own duration flags; settings that contradict each other, and a bad value in the
/// config file (named by file and key), exit 1.
#[test]
fn bad_settings_are_one_line_errors() {
    let (code, log) = run_to_exit(&with_command(&["--min", "3", "--max", "2"], py_worker(&[])));
    assert_eq!(code, Some(1));
    assert_eq!(log.trim(), "manifold: error: --min 3 is above --max 2");
    let (code, log) = run_to_exit(&with_command(&["--drain-timeout", "25"], py_worker(&[])));
    assert_eq!(code, Some(2), "{log}");
    assert_eq!(
        log.trim(),
        "manifold: error: invalid value '25' for '--drain-timeout <DURATION>': \"25\": a duration needs a unit, e.g. 25s or 500ms"
    );
    let (code, log) = run_to_exit(&with_command(&["--max-rss", "2XB"], py_worker(&[])));
    assert_eq!(code, Some(2), "{log}");
    assert_eq!(
        log.trim(),
        "manifold: error: invalid value '2XB' for '--max-rss <SIZE>': \"2XB\": not a size; write e.g. 65536, 64KiB, 16MiB or 1GB"
    );
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("m.toml");
    std::fs::write(&file, "idle-timeout = \"later\"\ncommand = [\"true\"]\n").unwrap();
    let (code, log) = run_to_exit(&["--config".into(), file.display().to_string()]);
    assert_eq!(code, Some(1), "{log}");
    assert!(
        log.trim().starts_with(&format!(
            "manifold: error: config file {}: idle-timeout: \"later\": not a duration (",
            file.display()
        )),
        "{log}"
    );
}

/// Starting an extra (slow) worker does not hold up the proxy: while it starts, the status page
/// answers and shows it starting with one request queued; the queued request then runs on it.
#[test]
fn scale_up_does_not_block_the_proxy() {
    let m = InProc::start(&with_command(
        &["--listen", "127.0.0.1:0", "--min", "1", "--max", "2"],
        py_worker(&["--slow-start", "1500"]),
    ));
    let addr = m.addr.clone();
    let long = thread::spawn(move || request(&addr, "GET", "/sleep?ms=4000", &[], ""));
    let s = m.wait_status("first worker busy", |s| workers(s)[0]["busy"] == 1);
    let first_pid = workers(&s)[0]["pid"].as_u64().unwrap();
    let addr = m.addr.clone();
    let queued = thread::spawn(move || request(&addr, "GET", "/pid", &[], ""));
    m.wait_status("second worker starting, one waiting", |s| {
        workers(s).len() == 2 && workers(s)[1]["state"] == "starting" && s["queue"] == 1
    });
    let r = queued.join().unwrap();
    assert_eq!(r.status, 200);
    let second_pid: u64 = r.body.parse().unwrap();
    assert_ne!(second_pid, first_pid);
    assert_eq!(long.join().unwrap().status, 200);
}

/// Stopping a worker that ignores SIGTERM escalates to SIGKILL after --stop-timeout and takes
/// its whole process group (a helper child it started) with it.
#[test]
fn stop_kills_the_whole_group_even_if_sigterm_is_ignored() {
    let mut m = start(&with_command(
        &["--listen", "127.0.0.1:0", "--stop-timeout", "300ms"],
        py_worker(&["--ignore-term", "--helper"]),
    ));
    let pid: u32 = m.get("/pid").body.parse().unwrap();
    let helper: u32 = m.get("/helper").body.parse().unwrap();
    assert!(helper > 0 && alive(helper));
    m.sigterm();
    assert_eq!(m.wait().code(), Some(0));
    assert_gone(pid);
    assert_gone(helper);
    assert!(
        m.log()
            .contains("worker stopped worker=1 status=killed by signal 9"),
        "{}",
        m.log()
    );
}

/// When replacements of a crashed worker keep failing, manifold backs off instead of looping and
/// answers 503 with the cause; the status page shows the error.
#[test]
fn failing_replacements_back_off_and_answer_503() {
    let dir = std::env::temp_dir().join(format!("manifold-once-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (count, marker) = (dir.join("starts"), dir.join("ran"));
    let m = InProc::start(&with_command(
        &["--listen", "127.0.0.1:0", "--min", "1", "--max", "1"],
        py_worker(&[
            "--count-file",
            count.to_str().unwrap(),
            "--once",
            marker.to_str().unwrap(),
        ]),
    ));
    // A POST: a GET would wait for a replacement to retry on (see errors.rs).
    assert_eq!(request(&m.addr, "POST", "/crash", &[], "").status, 502);
    let s = m.wait_status("three failed starts", |s| {
        s["totals"]["start_failures"].as_u64() >= Some(3)
    });
    assert!(
        s["last_error"]["message"].as_str().unwrap().contains(
            "exited with code 3 before it was ready; last output: fixture: already ran once"
        ),
        "{s}"
    );
    let r = m.get("/hello");
    assert_eq!(r.status, 503);
    assert!(
        r.body
            .starts_with("manifold: workers cannot start: worker "),
        "{}",
        r.body
    );
    // Back-off: 250 ms, 500 ms, 1 s, ... so only a handful of attempts so far.
    let starts = std::fs::read_to_string(&count).unwrap().lines().count();
    assert!((4..=6).contains(&starts), "{starts} starts");
    drop(m);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A second SIGTERM during the drain stops the workers at once: the long request is not
/// answered 200, manifold exits 0 and the worker is gone.
#[test]
fn second_sigterm_stops_without_waiting() {
    use std::io::{Read, Write};
    let mut m = start(&base(&["--min", "1", "--max", "1"]));
    let pid = pids(&m.status())[0];
    let mut s = std::net::TcpStream::connect(&m.addr).unwrap();
    s.set_read_timeout(Some(DEADLINE)).unwrap();
    s.write_all(b"GET /sleep?ms=60000 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    m.wait_status("busy", |s| workers(s)[0]["busy"] == 1);
    m.sigterm();
    // The first signal has been handled once manifold says it stopped accepting (polling the
    // port instead races with other tests' processes that may be given the freed port).
    wait_until("stopped accepting after SIGTERM", || {
        m.log().contains("stopped accepting")
    });
    m.sigterm();
    assert_eq!(m.wait().code(), Some(0));
    assert_gone(pid);
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    let text = String::from_utf8_lossy(&raw);
    assert!(!text.starts_with("HTTP/1.1 200"), "{text}");
}

/// If manifold itself is killed with SIGKILL (no chance to stop anything), its workers die too
/// instead of living on as orphans.
#[test]
fn workers_die_with_a_killed_manifold() {
    let mut m = start(&base(&["--min", "2", "--max", "2"]));
    let pids = pids(&m.status());
    assert_eq!(pids.len(), 2);
    assert!(pids.iter().all(|&p| alive(p)));
    m.child.kill().unwrap();
    m.wait();
    for p in pids {
        assert_gone(p);
    }
}
