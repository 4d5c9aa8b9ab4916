//! manifold on many hosts, simulated on loopback: real HAProxy running `deploy/haproxy/haproxy.cfg`
//! as shipped, in front of two manifold instances ("hosts"), each with two real R Shiny workers;
//! surge replays a Shiny session recorded in Chromium (`fixtures/shiny-replay`) through HAProxy.
//!
//! Needs Debian's haproxy and the surge binary beside manifold's, so plain `cargo test` skips it;
//! `make test-manifold-haproxy` (part of `make test`) runs it after the workspace test build.
//!
//! Evidence comes from three independent records: HAProxy's request log (which host, which
//! cookies, its own cookie verdict), manifold's per-worker counters, and the R processes' own
//! session log (`MANIFOLD_SESSION_LOG`), plus surge's session CSVs for outcomes.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::replay::{surge_replay, wait_exit, Proc};
use common::*;

/// Phase 1: 40 users, one session each (their think time alone outlasts the 2.34 s warm-up).
const USERS: u32 = 40;
/// Phase 2: 24 users 100 ms apart; host1 gets SIGTERM 1.5 s in and drains for 2 s.
const USERS_2: u32 = 24;

struct TempDir(PathBuf);

impl TempDir {
    fn new() -> TempDir {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let p =
            std::env::temp_dir().join(format!("manifold-haproxy-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// One manifold "host": the shiny preset, 2 R workers, a 2 s drain, its own session log and
/// access log (`access_log`: read only to explain a failed count).
fn start_host(n: u32, dir: &Path) -> (Manifold, PathBuf) {
    let log = dir.join(format!("host{n}.sessions"));
    let access = access_log(dir, n);
    let flags = [
        "--min",
        "2",
        "--max",
        "2",
        "--drain-timeout",
        "2s",
        "--access-log",
        access.to_str().unwrap(),
    ];
    let m = common::replay::start_shiny(&fixture("shiny-replay"), &log, &flags);
    (m, log)
}

fn access_log(dir: &Path, n: u32) -> PathBuf {
    dir.join(format!("host{n}.access"))
}

/// What manifold's access log says of host `n`, for a failure message: lines per worker, and
/// every line that was sent again, moved off its sticky worker, or not a 200/101.
fn access_summary(dir: &Path, n: u32) -> String {
    let text = std::fs::read_to_string(access_log(dir, n)).unwrap_or_default();
    let mut per_worker: BTreeMap<String, u64> = BTreeMap::new();
    let mut odd = Vec::new();
    for l in text.lines() {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(l) else {
            odd.push(format!("unparsed: {l}"));
            continue;
        };
        *per_worker.entry(v["worker"].to_string()).or_default() += 1;
        let moved = !v["sticky"].is_null() && v["sticky"] != v["worker"];
        let status = v["status"].as_u64().unwrap_or(0);
        if v["retried"] == true || moved || !(status == 200 || status == 101) {
            odd.push(l.to_string());
        }
    }
    format!("access log of host{n}: per worker {per_worker:?}; notable lines: {odd:#?}")
}

/// HAProxy with the shipped config, logging to a buffer the test reads.
struct Haproxy {
    _proc: Proc,
    port: u16,
    lines: Arc<Mutex<Vec<String>>>,
}

fn start_haproxy(host1: &str, host2: &str) -> Haproxy {
    let port = free_port();
    let cfg = repo_root().join("deploy/haproxy/haproxy.cfg");
    let mut child = Command::new("haproxy")
        .args(["-db", "-f"])
        .arg(&cfg)
        .env("HAPROXY_BIND", format!("127.0.0.1:{port}"))
        .env("MANIFOLD_1", host1)
        .env("MANIFOLD_2", host2)
        .env("TZ", "UTC")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("haproxy (Debian package haproxy; make deps installs it)");
    let lines = Arc::new(Mutex::new(Vec::new()));
    for out in [
        Box::new(child.stdout.take().unwrap()) as Box<dyn std::io::Read + Send>,
        Box::new(child.stderr.take().unwrap()),
    ] {
        let sink = lines.clone();
        thread::spawn(move || {
            for l in BufReader::new(out).lines().map_while(Result::ok) {
                sink.lock().unwrap().push(l);
            }
        });
    }
    let start = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            child.try_wait().unwrap().is_none(),
            "haproxy exited: {:?}",
            lines.lock().unwrap()
        );
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "haproxy did not listen: {:?}",
            lines.lock().unwrap()
        );
        // why: the poll interval while haproxy starts listening (no readiness signal of its own).
        thread::sleep(Duration::from_millis(20));
    }
    Haproxy {
        _proc: Proc(child),
        port,
        lines,
    }
}

/// One request as HAProxy logged it (the shipped `log-format`).
#[derive(Debug, Clone)]
struct Logged {
    at_ms: i64,
    server: String,
    status: u16,
    tsc: String,
    retries: String,
    host_cookie: String,
    worker_cookie: String,
    worker_set: String,
    path: String,
}

impl Logged {
    /// A session's first request: the page, sent without cookies.
    fn is_home(&self) -> bool {
        self.path == "/" && self.worker_cookie.is_empty() && self.host_cookie.is_empty()
    }
    /// The worker that served it: the one its cookie named, or the one manifold just assigned.
    fn worker(&self) -> &str {
        if self.worker_set.is_empty() {
            &self.worker_cookie
        } else {
            &self.worker_set
        }
    }
}

/// `23/Nov/2026:14:13:22.123` (UTC) → Unix ms.
fn parse_date(s: &str) -> i64 {
    let (d, t) = s.split_once(':').unwrap();
    let mut dp = d.split('/');
    let day: i64 = dp.next().unwrap().parse().unwrap();
    let months = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let name = dp.next().unwrap();
    let mon = months.iter().position(|m| *m == name).unwrap() as i64 + 1;
    let year: i64 = dp.next().unwrap().parse().unwrap();
    // Days from civil (H. Hinnant's algorithm).
    let y = if mon <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (mon + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let mut tp = t.split(':');
    let h: i64 = tp.next().unwrap().parse().unwrap();
    let m: i64 = tp.next().unwrap().parse().unwrap();
    let sec: f64 = tp.next().unwrap().parse().unwrap();
    (days * 86_400 + h * 3600 + m * 60) * 1000 + (sec * 1000.0).round() as i64
}

fn parse_log(line: &str) -> Option<Logged> {
    let f: Vec<&str> = line.split_whitespace().collect();
    if f.len() < 16 || !f[1].starts_with('[') || !f[3].contains('/') {
        return None;
    }
    // An unset variable is logged as "-".
    let kv = |i: usize, k: &str| match f[i].strip_prefix(k) {
        Some("-") => String::new(),
        Some(v) => v.to_string(),
        None => panic!("{k} expected in field {i}: {line}"),
    };
    Some(Logged {
        at_ms: parse_date(f[1].trim_start_matches('[').trim_end_matches(']')),
        server: f[3].split('/').nth(1).unwrap().to_string(),
        status: f[5].parse().ok()?,
        tsc: f[7].to_string(),
        retries: f[8].rsplit('/').next().unwrap().to_string(),
        host_cookie: kv(10, "host_cookie="),
        worker_cookie: kv(11, "worker_cookie="),
        worker_set: kv(12, "worker_set="),
        path: f[14].to_string(),
    })
}

fn logged(h: &Haproxy, from: usize) -> Vec<Logged> {
    h.lines.lock().unwrap()[from..]
        .iter()
        .filter_map(|l| parse_log(l))
        .collect()
}

fn replay(port: u16, users: u32, out: &Path) -> Proc {
    let target = format!("http://127.0.0.1:{port}/");
    surge_replay(&target, users, &["--start-interval", "60ms"], out)
}

/// One replayed session from its CSV: when its page was requested, and how it ended.
#[derive(Debug)]
struct Session {
    name: String,
    home_ms: i64,
    failure: Option<String>,
}

fn sessions(run: &Path) -> Vec<Session> {
    let mut out = Vec::new();
    for (p, rows) in common::replay::session_csvs(run) {
        let home_ms = rows
            .iter()
            .find(|r| r[3] == "REQ_HOME_START")
            .map(|r| r[4].parse().unwrap())
            .unwrap_or_else(|| panic!("{}: no REQ_HOME_START", p.display()));
        let last = rows.last().unwrap();
        let failure = (last[3] == "PLAYBACK_FAIL").then(|| last[6].clone());
        assert!(
            failure.is_some() || last[3] == "PLAYBACK_DONE",
            "{}",
            p.display()
        );
        out.push(Session {
            name: p.file_stem().unwrap().to_string_lossy().into(),
            home_ms,
            failure,
        });
    }
    out.sort_by_key(|s| s.home_ms);
    out
}

/// R's own record: sessions started per pid.
fn r_sessions(log: &Path) -> BTreeMap<u64, usize> {
    let mut per_pid = BTreeMap::new();
    for l in std::fs::read_to_string(log).unwrap_or_default().lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.first() == Some(&"start") {
            *per_pid.entry(f[1].parse().unwrap()).or_insert(0) += 1;
        }
    }
    per_pid
}

/// Waits until no worker of `m` has a request or WebSocket open; returns that status.
fn settled(m: &Manifold) -> serde_json::Value {
    m.wait_status("workers idle", |s| {
        workers(s).iter().all(|w| w["busy"] == 0)
    })
}

/// Phase 1: every session's page, assets and WebSocket on one host and one worker, no failure.
fn phase_one(h: &Haproxy, hosts: &[(&Manifold, &Path); 2], dir: &Path) {
    let run = dir.join("run1");
    let mut p = replay(h.port, USERS, &run);
    assert_eq!(
        wait_exit(&mut p, Duration::from_secs(120)),
        Some(0),
        "replay 1 failed"
    );
    let ss = sessions(&run);
    assert_eq!(ss.len(), USERS as usize);
    let failed: Vec<_> = ss.iter().filter(|s| s.failure.is_some()).collect();
    assert!(failed.is_empty(), "failed sessions: {failed:?}");

    let mut log = Vec::new();
    wait_until("websocket log lines", || {
        log = logged(h, 0);
        log.iter().filter(|l| l.status == 101).count() == USERS as usize
    });
    // Read after HAProxy has logged every request: manifold counts one when its lease ends (a
    // WebSocket's when its tunnel closes), and a worker may count its last ones a moment after
    // HAProxy logged them (a CI run once read a host's status 2 requests short). Each worker
    // gets a bounded while to count as many as HAProxy sent it; the comparison below then checks
    // the counts exactly, whatever the wait found.
    // Independent counts agree: HAProxy's requests per (host, worker) = manifold's served per
    // worker, and HAProxy's WebSockets per (host, worker) = sessions R started in that process.
    let mut by_worker: BTreeMap<(String, String), (u64, usize)> = BTreeMap::new();
    for l in &log {
        let e = by_worker
            .entry((l.server.clone(), l.worker().into()))
            .or_default();
        e.0 += 1;
        if l.status == 101 {
            e.1 += 1;
        }
    }
    let sent = |host: &str, worker: &serde_json::Value| {
        let key = (host.to_owned(), worker["id"].to_string());
        by_worker.get(&key).map_or(0, |e| e.0)
    };
    let statuses: Vec<serde_json::Value> = hosts
        .iter()
        .enumerate()
        .map(|(i, (m, _))| {
            let name = format!("host{}", i + 1);
            poll_until(Duration::from_secs(10), || {
                workers(&m.status())
                    .iter()
                    .all(|w| w["served"].as_u64() >= Some(sent(&name, w)))
            });
            settled(m)
        })
        .collect();
    let homes: Vec<&Logged> = log.iter().filter(|l| l.is_home()).collect();
    assert_eq!(
        homes.len(),
        USERS as usize,
        "one cookieless page per session"
    );
    for l in &homes {
        assert_eq!(
            &l.tsc[2..4],
            "NI",
            "page: no cookie, SERVERID inserted: {l:?}"
        );
        assert!(
            !l.worker_set.is_empty(),
            "page got a manifold_worker cookie: {l:?}"
        );
    }
    // Every later request carried the cookies of its session's first response; HAProxy found
    // SERVERID valid and used that host, and manifold kept it on the worker its cookie named.
    for l in log.iter().filter(|l| !l.is_home()) {
        assert_eq!(l.host_cookie, l.server, "{l:?}");
        assert_eq!(&l.tsc[2..3], "V", "valid persistence cookie: {l:?}");
        assert!(!l.worker_cookie.is_empty(), "{l:?}");
        assert!(l.worker_set.is_empty(), "manifold moved a session: {l:?}");
        assert!(l.status == 200 || l.status == 101, "{l:?}");
    }
    let mut hosts_used = BTreeSet::new();
    for (i, ((_, rlog), s)) in hosts.iter().zip(&statuses).enumerate() {
        let name = format!("host{}", i + 1);
        let r = r_sessions(rlog);
        for w in workers(s) {
            let key = (name.clone(), w["id"].to_string());
            let (reqs, ws) = by_worker.remove(&key).unwrap_or_default();
            assert_eq!(
                w["served"].as_u64(),
                Some(reqs),
                "{key:?}: haproxy vs manifold; host status {s}; {}; haproxy lines retried or not 200/101: {:#?}",
                access_summary(dir, i as u32 + 1),
                log.iter()
                    .filter(|l| l.server == name && (l.retries != "0" || !(l.status == 200 || l.status == 101)))
                    .collect::<Vec<_>>()
            );
            let pid = w["pid"].as_u64().unwrap();
            assert_eq!(
                r.get(&pid).copied().unwrap_or(0),
                ws,
                "{key:?} (pid {pid}): haproxy vs R"
            );
            if ws > 0 {
                hosts_used.insert(name.clone());
            }
            eprintln!(
                "phase 1: {name} worker {} (pid {pid}): {ws} sessions, {reqs} requests",
                w["id"]
            );
        }
    }
    assert!(
        by_worker.is_empty(),
        "requests on workers manifold does not list: {by_worker:?}"
    );
    assert_eq!(hosts_used.len(), 2, "sessions spread over both hosts");
}

/// Phase 2: host1 gets SIGTERM mid-run. Sessions on host2 are untouched, new sessions go to
/// host2, and every failure is a session that was on host1 (each with its reason).
fn phase_two(h: &Haproxy, host1: &mut Manifold, host2: &Manifold, dir: &Path) {
    let from = h.lines.lock().unwrap().len();
    let run = dir.join("run2");
    let host1_pids = pids(&host1.status());
    let mut p = replay(h.port, USERS_2, &run);
    // why: SIGTERM must land mid-run, with sessions open on both hosts: the replay's own time.
    thread::sleep(Duration::from_millis(800));
    host1.sigterm();
    let stopped_ms = now_ms();
    let code = wait_exit(&mut p, Duration::from_secs(120));
    assert_eq!(
        host1.wait().code(),
        Some(0),
        "host1 drained and stopped cleanly"
    );
    host1_pids.into_iter().for_each(assert_gone);
    let s2 = settled(host2);
    assert_eq!(s2["totals"]["worker_crashes"], 0);
    assert_eq!(s2["totals"]["bad_gateway"], 0);

    let ss = sessions(&run);
    assert_eq!(ss.len(), USERS_2 as usize);
    let mut homes: Vec<Logged> = logged(h, from)
        .into_iter()
        .filter(|l| l.is_home())
        .collect();
    assert_eq!(homes.len(), ss.len(), "one page per session: {homes:?}");
    // Join each session to its page request in HAProxy's log by order of arrival (pages are
    // 60 ms apart; HAProxy logs a request when it ends, so its lines are sorted by when the
    // request came). Each session's delay from surge's start to HAProxy's receipt may differ
    // from the run's usual delay by less than half that gap, else the join is in doubt (a
    // busy machine delays pages by more than 30 ms: a run beside a spinning core read 62 ms).
    homes.sort_by_key(|l| l.at_ms);
    let mut skews: Vec<i64> = ss
        .iter()
        .zip(&homes)
        .map(|(s, l)| l.at_ms - s.home_ms)
        .collect();
    let joined = skews.clone();
    skews.sort_unstable();
    let usual = skews[skews.len() / 2];
    let mut cut = 0;
    let mut late = 0;
    for (s, l) in ss.iter().zip(&homes) {
        let skew = l.at_ms - s.home_ms;
        assert!(
            (skew - usual).abs() < 30,
            "{}: page at {} in surge, {} in haproxy: {skew} ms against the usual {usual} ms (all: {joined:?})",
            s.name,
            s.home_ms,
            l.at_ms
        );
        match (&s.failure, l.server.as_str()) {
            (None, _) => {}
            (Some(why), "host1") => {
                assert!(s.home_ms < stopped_ms, "{}: started after the stop", s.name);
                eprintln!("phase 2: {} (host1) failed: {why}", s.name);
                assert!(why.contains("WebSocket"), "{}: {why}", s.name);
                cut += 1;
            }
            (Some(why), other) => panic!("{} on {other} failed: {why}", s.name),
        }
        if l.at_ms > stopped_ms + 5 {
            assert_eq!(
                l.server, "host2",
                "a new session went to the stopped host: {l:?}"
            );
            late += 1;
            if l.retries.starts_with('+') {
                eprintln!(
                    "phase 2: {} refused by draining host1, sent to host2",
                    s.name
                );
            }
        }
    }
    // HAProxy's own account: host1 went to drain on its 404, then down when it stopped (two
    // failed checks a second apart after its listener closed).
    let mut events: Vec<String> = Vec::new();
    poll_until(DEADLINE / 4, || {
        events = h.lines.lock().unwrap()[from..]
            .iter()
            .filter(|l| l.starts_with("Server manifolds/"))
            .cloned()
            .collect();
        events.iter().any(|e| e.contains("host1 is DOWN"))
    });
    events
        .iter()
        .for_each(|e| eprintln!("phase 2: haproxy: {e}"));
    let stopping = events.iter().position(|e| {
        e.starts_with("Server manifolds/host1 is stopping") && e.contains("code: 404")
    });
    let down = events
        .iter()
        .position(|e| e.starts_with("Server manifolds/host1 is DOWN"));
    assert!(
        matches!((stopping, down), (Some(a), Some(b)) if a < b),
        "{events:?}"
    );
    assert!(!events.iter().any(|e| e.contains("host2")), "{events:?}");
    let on1 = homes.iter().filter(|l| l.server == "host1").count();
    eprintln!(
        "phase 2: {} sessions; host1 had {on1} ({cut} cut by the stop, {} finished while it drained); \
         {late} started after the stop, all on host2",
        ss.len(),
        on1 - cut
    );
    assert!(cut >= 1, "the stop cut no session: was host1 idle?");
    assert!(late >= 1, "no session started after the stop");
    assert_eq!(code, Some(1), "surge exits 1 when sessions failed");
}

#[test]
#[ignore = "needs haproxy and the surge binary: make test-manifold-haproxy"]
fn haproxy_keeps_shiny_sessions_sticky_and_drains_a_stopped_host() {
    let dir = TempDir::new();
    let (mut host1, log1) = start_host(1, &dir.0);
    let (host2, log2) = start_host(2, &dir.0);
    let h = start_haproxy(&host1.addr, &host2.addr);
    phase_one(&h, &[(&host1, &log1), (&host2, &log2)], &dir.0);
    phase_two(&h, &mut host1, &host2, &dir.0);
}
