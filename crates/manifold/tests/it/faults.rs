//! Faults of issue 30, each with the real binary or in-process manifold and real Python workers:
//! silent client connections, `--max` while recycling, a kept-alive worker connection that dies
//! before answering, is closed before the request is written or is closed by a healthy worker
//! after reading a GET, a worker that answers no GET at all, an idle worker connection too old to
//! reuse, the access log under rotation and on a full disk, and `last_error` after a failed reload.

use crate::common;

#[path = "../../../../tests/mounts.rs"]
mod mounts;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::thread;
use std::time::{Duration, Instant};

use common::*;

/// Sends `sig` to the manifold process.
fn signal(m: &Manifold, sig: i32) {
    // SAFETY: kill on the pid of a child we spawned and have not reaped.
    unsafe {
        libc::kill(m.child.id() as i32, sig);
    }
}

/// Whether the peer closed `s` (EOF or reset) within `limit`; a read that times out is not.
fn closed_by_peer(mut s: &TcpStream, limit: Duration) -> bool {
    s.set_read_timeout(Some(limit)).unwrap();
    let mut b = [0u8; 64];
    match s.read(&mut b) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) => e.kind() == std::io::ErrorKind::ConnectionReset,
    }
}

/// A worker's idle connection is reused only within `upstream::REUSE_WITHIN` (1 s) of its last
/// use: requests in a row share one connection, one after 1.5 s idle comes on a new one, so
/// manifold does not write on a connection the worker's own keep-alive timeout may be closing.
#[test]
fn an_idle_worker_connection_is_reused_only_within_a_second() {
    let m = start(&base(&["--min", "1", "--max", "1"]));
    let peer = || {
        let r = m.get("/peer");
        assert_eq!(r.status, 200, "{}", r.body);
        r.body
    };
    let first = peer();
    assert_eq!(peer(), first, "the next request reuses the connection");
    // why: the idle time under test; nothing to wait on but the clock.
    thread::sleep(Duration::from_millis(1500));
    let after = peer();
    assert_ne!(after, first, "after 1.5 s idle, a new connection");
    assert_eq!(peer(), after, "which is reused in turn");
}

/// A connection that sends nothing is closed after `--header-timeout` counted from accept, so
/// silent sockets cannot hold `--max-connections` places: 100 of them fill `--max-connections
/// 100` and are all closed after 1 s, and a real request is served again.
#[test]
fn silent_connections_are_closed_after_header_timeout_from_accept() {
    let m = InProc::start(&base(&[
        "--max-connections",
        "100",
        "--header-timeout",
        "1s",
    ]));
    assert_eq!(m.get("/hello").status, 200);
    let silent: Vec<TcpStream> = (0..100)
        .map(|_| TcpStream::connect(&m.addr).unwrap())
        .collect();
    // Each silent one is closed by manifold, none by this test.
    for (i, s) in silent.iter().enumerate() {
        assert!(
            closed_by_peer(s, Duration::from_secs(10)),
            "silent connection {i} kept open"
        );
    }
    let r = m.get("/hello");
    assert_eq!((r.status, r.body.as_str()), (200, "hello"));
}

/// 10,000 silent sockets from one host against the binary's default `--max-connections` (half
/// its open-file limit, raised to the hard limit at start) do not stop a real request from
/// being served, and are closed after `--header-timeout`.
#[test]
fn ten_thousand_silent_sockets_do_not_stop_a_real_request() {
    const SILENT: usize = 10_000;
    let soft = manifold::config::raise_open_file_limit();
    if soft < (SILENT as u64) + 2_000 {
        eprintln!(
            "skipped: open-file limit {soft} is below {} (ulimit -Hn)",
            SILENT + 2_000
        );
        return;
    }
    let m = start(&base(&["--header-timeout", "3s"]));
    let silent: Vec<TcpStream> = (0..SILENT)
        .map(|i| TcpStream::connect(&m.addr).unwrap_or_else(|e| panic!("connect #{i}: {e}")))
        .collect();
    let start = Instant::now();
    let mut r = m.get("/hello");
    wait_until("the real request served", || {
        r = m.get("/hello");
        r.status != 503
    });
    eprintln!(
        "real request served {:?} after {SILENT} silent connections",
        start.elapsed()
    );
    assert_eq!((r.status, r.body.as_str()), (200, "hello"));
    for (i, s) in silent.iter().enumerate() {
        assert!(
            closed_by_peer(s, DEADLINE),
            "silent connection {i} kept open"
        );
    }
}

/// Worker processes that are children of `pid`, read from /proc.
fn children(pid: u32) -> usize {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return 0;
    };
    dir.filter_map(|e| e.ok())
        .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
        .filter(|stat| {
            // Field 4 (after the parenthesised name) is the parent pid.
            stat.rsplit_once(") ")
                .and_then(|(_, rest)| rest.split_whitespace().nth(1))
                .and_then(|p| p.parse::<u32>().ok())
                == Some(pid)
        })
        .count()
}

/// `--max` bounds every worker process while recycling, draining ones included: `--min 2 --max
/// 2 --max-requests 5` under four clients in a loop never has more than 2 worker processes
/// (counted from /proc), and workers are recycled with every request answered.
#[test]
fn max_bounds_every_worker_process_while_recycling() {
    let m = start(&base(&[
        "--min",
        "2",
        "--max",
        "2",
        "--max-requests",
        "5",
        "--stop-timeout",
        "1s",
    ]));
    let pid = m.child.id();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sampler = {
        let done = done.clone();
        thread::spawn(move || {
            let mut most = 0;
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                most = most.max(children(pid));
                // why: sampling /proc; a process count has no event to wait on.
                thread::sleep(Duration::from_millis(5));
            }
            most
        })
    };
    let clients: Vec<_> = (0..4)
        .map(|_| {
            let addr = m.addr.clone();
            thread::spawn(move || {
                (0..40)
                    .map(|_| request(&addr, "GET", "/hello", &[], "").status)
                    .filter(|s| *s != 200)
                    .count()
            })
        })
        .collect();
    let failed: usize = clients.into_iter().map(|c| c.join().unwrap()).sum();
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    let most = sampler.join().unwrap();
    assert_eq!(failed, 0, "{}", m.log());
    let s = m.status();
    assert!(s["totals"]["recycles"].as_u64().unwrap() >= 1, "{s}");
    assert!(most <= 2, "{most} worker processes at once with --max 2");
}

/// The retry rule's other side: a request with a body that was written to a kept-alive worker
/// connection and got no byte of answer is not sent again (the worker read it and may have
/// acted on it): 502. A GET without a body is (issue 32: idempotent), once, to the same worker
/// on a new connection: 200, one `connect_retries`.
#[test]
fn a_request_written_to_a_kept_alive_connection_is_not_retried() {
    let m = InProc::start(&base(&["--min", "1", "--max", "1"]));
    // The fixture answers /then-drop, then reads the next request on that connection and closes
    // it without a byte of answer; manifold keeps the connection for the next request.
    for (method, body, status) in [("GET", "", 200), ("POST", "a body", 502)] {
        assert_eq!(m.get("/then-drop").status, 200);
        let r = request(&m.addr, method, "/echo", &[], body);
        assert_eq!(r.status, status, "{method}: {}", r.body);
    }
    let s = m.status();
    assert_eq!(s["totals"]["connect_retries"], 1, "{s}");
    assert_eq!(s["totals"]["bad_gateway"], 1, "{s}");
}

/// A sticky session keeps its worker when the worker closed its idle kept-alive connection just
/// before the session's next request was written on it: the request comes back unsent and goes
/// once more to the same worker on a new connection (answered with that worker's pid), counted
/// in `connect_retries` and the access log's `retried`. As in a Shiny app, the session also
/// holds a WebSocket on its worker, so a worker picked afresh would be the other, idle one (the
/// old rule's answer). The close is timed by the in-process hook `proxy::fault` (the request
/// waits after the connection's check) and made by the fixture worker on SIGUSR1.
#[test]
fn an_unsent_request_is_retried_on_its_sticky_worker() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("access.jsonl");
    let (m, cookie, pid) = sticky_session(&log);
    let s = m.status();
    let worker = workers(&s)
        .into_iter()
        .find(|w| w["pid"] == pid)
        .unwrap_or_else(|| panic!("worker {pid} in {s}"));
    let (id, port) = (
        worker["id"].clone(),
        worker["port"].as_u64().unwrap() as u16,
    );
    manifold::proxy::fault::hold_next_kept_alive_send(port);
    let (addr, c) = (m.addr.clone(), cookie.clone());
    let next = thread::spawn(move || request(&addr, "GET", "/pid", &[("Cookie", &c)], ""));
    wait_until("the request held on the kept-alive connection", || {
        manifold::proxy::fault::held(port)
    });
    // The session's WebSocket: its worker, single-threaded, takes it once the kept-alive
    // connection closes; the new connection of the retry waits for it to end.
    let mut ws = TcpStream::connect(&m.addr).unwrap();
    ws.set_read_timeout(Some(DEADLINE)).unwrap();
    let head = "GET /upgrade HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n";
    write!(ws, "{head}Cookie: {cookie}\r\n\r\n").unwrap();
    m.wait_status("the WebSocket on the session's worker", |s| {
        workers(s).iter().any(|w| w["id"] == id && w["busy"] == 2)
    });
    // SAFETY: kill on the pid of a live worker of this manifold.
    unsafe {
        libc::kill(pid as i32, libc::SIGUSR1);
    }
    let mut b = [0u8; 12];
    ws.read_exact(&mut b).unwrap();
    assert_eq!(&b, b"HTTP/1.1 101");
    // The retry has picked its worker once it is counted; then the WebSocket ends.
    m.wait_status("the retry", |s| s["totals"]["connect_retries"] == 1);
    drop(ws);
    let r = next.join().unwrap();
    assert_eq!((r.status, r.body.as_str()), (200, pid.to_string().as_str()));
    let s = m.status();
    assert_eq!(s["totals"]["connect_retries"], 1, "{s}");
    assert_eq!(s["totals"]["bad_gateway"], 0, "{s}");
    wait_until("three access log lines", || {
        std::fs::read_to_string(&log).is_ok_and(|t| t.lines().count() >= 3)
    });
    let text = std::fs::read_to_string(&log).unwrap();
    let retried: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|l| l["retried"] == true)
        .collect();
    assert_eq!(retried.len(), 1, "{text}");
    assert_eq!(
        (&retried[0]["path"], &retried[0]["worker"]),
        (&"/pid".into(), &id),
        "{text}"
    );
}

/// Two workers, sticky cookies and an access log at `log`, and a session pinned by a first
/// `/pid`: (manifold, the session's cookie, its worker's pid).
fn sticky_session(log: &std::path::Path) -> (InProc, String, u32) {
    let m = InProc::start(&base(&[
        "--min",
        "2",
        "--max",
        "2",
        "--sticky",
        "cookie",
        "--access-log",
        log.to_str().unwrap(),
    ]));
    let first = m.get("/pid");
    assert_eq!(first.status, 200, "{}", first.body);
    let (cookie, pid) = (first.cookie(), first.body.parse::<u32>().unwrap());
    (m, cookie, pid)
}

/// The access log's lines once there are `n` of them (bounded wait).
fn log_lines(log: &std::path::Path, n: usize) -> Vec<serde_json::Value> {
    wait_until(&format!("{n} access log lines"), || {
        std::fs::read_to_string(log).is_ok_and(|t| t.lines().count() >= n)
    });
    let text = std::fs::read_to_string(log).unwrap();
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The status entry of the worker with `pid`, if listed.
fn worker_with_pid(s: &serde_json::Value, pid: u32) -> Option<serde_json::Value> {
    workers(s).into_iter().find(|w| w["pid"] == pid)
}

/// A healthy worker that closes its kept-alive connection after reading the next GET on it,
/// without a byte of answer (its keep-alive timeout racing manifold's write of the request), is
/// not taken for dead: the GET goes once more to the same worker on a new connection and is
/// answered there, so the sticky session keeps its worker. The worker is not replaced (same pid,
/// alive and ready, no start nor `last_error`), one `connect_retries`, one `retried` log line.
#[test]
fn a_get_unanswered_on_a_kept_alive_connection_stays_on_its_worker() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("access.jsonl");
    let (m, cookie, pid) = sticky_session(&log);
    let c = [("Cookie", cookie.as_str())];
    // Answered on the session's kept-alive connection, which the worker then closes after reading
    // the next request on it.
    assert_eq!(request(&m.addr, "GET", "/then-drop", &c, "").status, 200);
    let before = m.status();
    let id = worker_with_pid(&before, pid).unwrap()["id"].clone();
    let r = request(&m.addr, "GET", "/pid", &c, "");
    assert_eq!((r.status, r.body.as_str()), (200, pid.to_string().as_str()));
    let s = m.status();
    assert!(alive(pid), "worker {pid} gone: {s}");
    let w = worker_with_pid(&s, pid).unwrap_or_else(|| panic!("worker {pid} not listed: {s}"));
    assert_eq!((&w["id"], &w["state"]), (&id, &"ready".into()), "{s}");
    assert_eq!(
        s["totals"]["worker_starts"],
        before["totals"]["worker_starts"]
    );
    assert_eq!(s["totals"]["worker_crashes"], 0, "{s}");
    assert_eq!(s["totals"]["connect_retries"], 1, "{s}");
    assert_eq!(s["totals"]["bad_gateway"], 0, "{s}");
    assert!(s["last_error"].is_null(), "{s}");
    let lines = log_lines(&log, 3);
    let retried: Vec<_> = lines.iter().filter(|l| l["retried"] == true).collect();
    assert_eq!(retried.len(), 1, "{lines:?}");
    assert_eq!(
        (&retried[0]["path"], &retried[0]["worker"]),
        (&"/pid".into(), &id)
    );
}

/// A worker that dies on a GET sent on its kept-alive connection is still replaced, and the GET
/// answered by the other worker: the new connection to it is refused or reset (it exited), which
/// tells a dead worker from one that closed an idle connection.
#[test]
fn a_get_whose_worker_dies_on_a_kept_alive_connection_is_answered_by_another() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("access.jsonl");
    let (m, cookie, pid) = sticky_session(&log);
    let (addr, c) = (m.addr.clone(), cookie.clone());
    let get = thread::spawn(move || request(&addr, "GET", "/sleep?ms=2000", &[("Cookie", &c)], ""));
    m.wait_status("the GET on its kept-alive connection", |s| {
        worker_with_pid(s, pid).is_some_and(|w| w["busy"] == 1)
    });
    // SAFETY: kill on the pid of a live worker of this manifold.
    unsafe {
        libc::kill(pid as i32, libc::SIGKILL);
    }
    let r = get.join().unwrap();
    assert_eq!(r.status, 200, "{}", r.body);
    let v: serde_json::Value = serde_json::from_str(&r.body).unwrap();
    assert_ne!(v["pid"], pid, "{v}");
    assert_gone(pid);
    let s = m.status();
    assert_eq!(s["totals"]["connect_retries"], 1, "{s}");
    assert_eq!(s["totals"]["bad_gateway"], 0, "{s}");
    let lines = log_lines(&log, 2);
    assert_eq!(
        (&lines[1]["status"], &lines[1]["retried"]),
        (&200.into(), &true.into())
    );
}

/// A worker that answers no GET at all, on new connections either, gets 502 and at most two
/// workers are touched: on its kept-alive connection, the GET's second try on a new connection
/// to the same worker gets no answer either, so that worker is replaced and the other one is
/// never sent it; on a new connection, the worker is replaced and the one picked afresh gets
/// the second (last) try.
#[test]
fn a_worker_that_answers_no_get_gets_a_502_and_touches_at_most_two() {
    let m = InProc::start(&base(&["--min", "2", "--max", "2", "--sticky", "cookie"]));
    let first = m.get("/pid");
    let (cookie, a) = (first.cookie(), first.body.parse::<u32>().unwrap());
    let s = m.status();
    let id = worker_with_pid(&s, a).unwrap()["id"].clone();
    let b = pids(&s).into_iter().find(|p| *p != a).unwrap();
    // Kept-alive: two tries on the session's worker, then 502; the other worker untouched.
    let r = request(&m.addr, "GET", "/no-answer", &[("Cookie", &cookie)], "");
    assert_eq!(r.status, 502, "{}", r.body);
    assert!(
        r.body.starts_with(&format!("manifold: worker {id} failed")),
        "{}",
        r.body
    );
    assert_gone(a);
    let s = m.status();
    let other = worker_with_pid(&s, b).unwrap_or_else(|| panic!("worker {b} not listed: {s}"));
    assert_eq!(
        (&other["state"], &other["served"]),
        (&"ready".into(), &0.into()),
        "{s}"
    );
    assert_eq!(s["totals"]["connect_retries"], 1, "{s}");
    assert_eq!(s["totals"]["bad_gateway"], 1, "{s}");
    // New connections: the first worker replaced, the second try on another, then 502.
    let s = m.wait_status("two ready workers", |s| ready(s) == 2);
    let both = pids(&s);
    let r = request(&m.addr, "GET", "/no-answer", &[], "");
    assert_eq!(r.status, 502, "{}", r.body);
    let s = m.wait_status("one of the two replaced", |s| {
        both.iter()
            .filter(|p| worker_with_pid(s, **p).is_some_and(|w| w["state"] == "ready"))
            .count()
            == 1
    });
    assert_eq!(s["totals"]["connect_retries"], 2, "{s}");
    assert_eq!(s["totals"]["bad_gateway"], 2, "{s}");
    let y = both
        .iter()
        .find_map(|p| worker_with_pid(&s, *p).filter(|w| w["state"] == "ready"))
        .unwrap();
    assert_eq!(y["served"], 1, "{s}");
    // Every worker but those two is new and untouched.
    for w in workers(&s)
        .iter()
        .filter(|w| !both.contains(&(w["pid"].as_u64().unwrap_or(0) as u32)))
    {
        assert_eq!(w["served"], 0, "{s}");
    }
}

/// SIGUSR1 reopens the access log: after `mv access.log access.log.1; kill -USR1`, new lines go
/// to a new access.log and the renamed file keeps only the old ones.
#[test]
fn sigusr1_reopens_the_access_log() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("access.log");
    let m = start(&base(&["--access-log", log.to_str().unwrap()]));
    let lines = |p: &std::path::Path| {
        std::fs::read_to_string(p)
            .map(|t| t.lines().count())
            .unwrap_or(0)
    };
    assert_eq!(m.get("/hello").status, 200);
    wait_until("the first line", || lines(&log) == 1);
    let rotated = dir.path().join("access.log.1");
    std::fs::rename(&log, &rotated).unwrap();
    signal(&m, libc::SIGUSR1);
    wait_until("the reopened log", || log.exists());
    assert_eq!(m.get("/hello").status, 200);
    wait_until("a line in the reopened log", || lines(&log) == 1);
    assert_eq!(lines(&rotated), 1);
}

/// Access log lines lost on a full disk are counted: with the log on a full 64 KiB tmpfs,
/// status `access_log_lines_dropped` and `/metrics` count every line of the requests served.
#[test]
fn access_log_lines_lost_on_a_full_disk_are_counted() {
    let dir = tempfile::tempdir().unwrap();
    let Some(fs) = mounts::Tmpfs::mount(&dir.path().join("small"), "64k") else {
        eprintln!("skipped: cannot mount a tmpfs here (needs root)");
        return;
    };
    // Fill it: the access log's first write meets a full disk.
    let mut filler = std::fs::File::create(fs.0.join("filler")).unwrap();
    while filler.write_all(&[0u8; 4096]).is_ok() {}
    drop(filler);
    let log = fs.0.join("access.log");
    let m = InProc::start(&base(&["--access-log", log.to_str().unwrap()]));
    for _ in 0..5 {
        assert_eq!(m.get("/hello").status, 200);
    }
    let s = m.wait_status("5 dropped lines", |s| s["access_log_lines_dropped"] == 5);
    assert_eq!(s["totals"]["served"], 5);
    let metrics = m.get("/__manifold__/metrics").body;
    assert!(
        metrics.contains("manifold_access_log_lines_dropped_total 5"),
        "{metrics}"
    );
}

/// After a failed reload, `last_error` keeps saying so until a reload succeeds: a later error
/// (a worker crash) is shown after it, not instead of it.
#[test]
fn a_failed_reload_stays_in_last_error_until_a_reload_succeeds() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("manifold.toml");
    let write = |command: &[String]| {
        let quoted: Vec<String> = command.iter().map(|a| format!("{a:?}")).collect();
        let text = format!("min = 1\nmax = 2\ncommand = [{}]\n", quoted.join(", "));
        std::fs::write(&cfg, text).unwrap();
    };
    write(&py_worker(&[]));
    let m = start(&on_free_port(&["--config", cfg.to_str().unwrap()]));
    write(&args(&["/nonexistent/app", "{port}"]));
    signal(&m, libc::SIGHUP);
    m.wait_status("reload given up", |s| s["totals"]["reload_failures"] == 1);
    assert_eq!(m.get("/crash").status, 502);
    let s = m.wait_status("the crash", |s| s["totals"]["worker_crashes"] == 1);
    let msg = s["last_error"]["message"].as_str().unwrap().to_string();
    assert!(msg.starts_with("reload to generation 2 failed"), "{msg}");
    assert!(msg.contains("; later: "), "{msg}");
    write(&py_worker(&[]));
    signal(&m, libc::SIGHUP);
    let s = m.wait_status("reload in service", |s| s["totals"]["reloads"] == 1);
    let msg = s["last_error"]["message"].as_str().unwrap_or_default();
    assert!(!msg.contains("reload to generation"), "{msg}");
}

/// manifold started with its stderr a pipe nobody reads any more (`manifold … 2>&1 | head -2`,
/// a log collector that exited) keeps serving: the "listening" line it cannot write is dropped.
/// It exited 101 there, panicking in `eprintln!`, and took its workers with it.
#[test]
fn a_closed_stderr_does_not_stop_manifold() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr = format!("127.0.0.1:{port}");
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_manifold"))
        .args(with_command(&["--listen", &addr], py_worker(&[])))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn manifold");
    // Killed on drop, should an assertion below fail while it runs.
    let mut m = Manifold {
        child,
        addr: addr.clone(),
        log: Default::default(),
    };
    // The reader goes away before manifold has written anything.
    drop(m.child.stderr.take());
    let start = Instant::now();
    let answer = loop {
        if let Some(status) = m.child.try_wait().unwrap() {
            panic!("manifold exited with its stderr closed: {status}");
        }
        if TcpStream::connect(&addr).is_ok() {
            break request(&addr, "GET", "/hello", &[], "");
        }
        assert!(start.elapsed() < DEADLINE, "manifold never listened");
        thread::sleep(Duration::from_millis(20));
    };
    assert_eq!((answer.status, answer.body.as_str()), (200, "hello"));
    // Still running after the line it could not write, and it stops cleanly on SIGTERM.
    thread::sleep(Duration::from_millis(300));
    assert!(m.child.try_wait().unwrap().is_none(), "manifold exited");
    m.sigterm();
    assert_eq!(m.wait().code(), Some(0));
}
