//! `surge capacity` and replay's load shapes against a target whose behaviour is known: a test
//! server on loopback with a fixed number of slots and a fixed service time, requests queueing
//! FIFO for a slot. The search runs in-process (`surge::capacity::run`); the binary is started
//! only for exit statuses and stderr lines.

use crate::common;

use common::{capacity_plan, fresh_dir, parse_replay_args, surge};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

/// A server with `slots` slots: each request holds one for `service`, waiting FIFO for it
/// (tokio's semaphore is fair). Runs on its own thread and runtime; returns its base URL.
pub(crate) fn start_slots(slots: usize, service: Duration) -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    l.set_nonblocking(true).unwrap();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let l = tokio::net::TcpListener::from_std(l).unwrap();
            let sem = Arc::new(tokio::sync::Semaphore::new(slots));
            loop {
                let (s, _) = l.accept().await.unwrap();
                tokio::spawn(serve(s, sem.clone(), service));
            }
        })
    });
    format!("http://127.0.0.1:{port}/")
}

async fn serve(s: tokio::net::TcpStream, sem: Arc<tokio::sync::Semaphore>, service: Duration) {
    let (r, mut w) = s.into_split();
    let mut r = BufReader::new(r);
    loop {
        let mut len = 0usize;
        let mut line = String::new();
        loop {
            line.clear();
            if r.read_line(&mut line).await.unwrap_or(0) == 0 {
                return;
            }
            if line == "\r\n" {
                break;
            }
            if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                len = v.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0; len];
        if r.read_exact(&mut body).await.is_err() {
            return;
        }
        {
            let _slot = sem.acquire().await.unwrap();
            // why: the app's work: its service time is what bounds the users it holds.
            tokio::time::sleep(service).await;
        }
        let resp = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nok";
        if w.write_all(resp).await.is_err() {
            return;
        }
    }
}

/// A surge/http recording of one page: a single REQ_HOME (so a session is one request and its
/// page load that request's time).
pub(crate) fn recording(dir: &Path) -> PathBuf {
    let p = dir.join("recording.log");
    std::fs::write(
        &p,
        "# version: 1\n# target_url: http://127.0.0.1:1\n# target_type: surge/http\n\
         {\"type\":\"REQ_HOME\",\"begin\":\"2026-01-01T00:00:00.000Z\",\"end\":\"2026-01-01T00:00:00.050Z\",\"status\":200,\"url\":\"/\"}\n",
    )
    .unwrap();
    p
}

/// Replays the one-request recording against `url` in-process with the shape flags `shape`
/// (into a fresh `name` dir's `run/`): the run directory and the outcome.
async fn replay_shape(name: &str, url: &str, shape: &[&str]) -> (PathBuf, surge::replay::Replayed) {
    let dir = fresh_dir(name);
    let rec = recording(&dir);
    let out = dir.join("run");
    let mut v = vec![rec.to_str().unwrap(), url];
    v.extend_from_slice(shape);
    v.extend_from_slice(&["--output-dir", out.to_str().unwrap()]);
    let plan = surge::replay::ReplayPlan::from_args(&parse_replay_args(&v), &[])
        .await
        .unwrap();
    let outcome = surge::replay::run(plan, std::future::pending())
        .await
        .unwrap();
    (out, outcome)
}

/// 4 slots × 50 ms, closed model with no think time. N users each send their next request as
/// soon as the last one returns, so all N requests are always in the system: with FIFO slots and
/// a fixed service time S, a request waits for the ⌈N/c⌉−1 service rounds ahead of it, and its
/// response time is ⌊N/c⌋·S or ⌈N/c⌉·S (mean N·S/c, Little's law with throughput c/S). When c
/// does not divide N, the share at ⌈N/c⌉·S is (N mod c)/c ≥ 1/4, above 5%, so p95 = ⌈N/c⌉·S.
/// An SLO p95 < L holds iff ⌈N/c⌉·S < L, so the knee is N* = c·(⌈L/S⌉ − 1) = 4·(10 − 1) = 36
/// for L = 500 ms. The search must find it within ±10%.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn capacity_finds_the_queueing_knee() {
    let _timed = crate::server_timing::TIMED.lock().await;
    let (c, s_ms, limit_ms) = (4u32, 50u64, 500u64);
    let knee = c * (limit_ms.div_ceil(s_ms) as u32 - 1);
    assert_eq!(knee, 36);
    let url = start_slots(c as usize, Duration::from_millis(s_ms));
    let dir = fresh_dir("capacity-knee");
    let rec = recording(&dir);
    let out = dir.join("cap");
    let a = capacity_plan(&[
        rec.to_str().unwrap(),
        &url,
        "--slo",
        &format!("page_load:p95<{limit_ms}ms"),
        "--think-time",
        "none",
        "--start",
        "4",
        "--step-sessions",
        "100",
        "--step-max",
        "20s",
        "--output-dir",
        out.to_str().unwrap(),
    ]);
    let res = surge::capacity::run(a, std::future::pending())
        .await
        .unwrap();
    let holds = res.holds.expect("an answer") as u32;
    let breaks = res.breaks.expect("a breaking step") as u32;
    let lo = (f64::from(knee) * 0.9).ceil() as u32;
    let hi = (f64::from(knee) * 1.1).floor() as u32;
    assert!(
        (lo..=hi).contains(&holds),
        "holds {holds}, knee {knee} ± 10%: {}\n{:#?}",
        res.answer,
        res.steps
    );
    assert!(breaks > holds && breaks - holds <= 2, "{}", res.answer);
    assert_eq!(res.exit_code(), 0);
    let want = format!("holds {holds} concurrent users (page_load p95 ");
    assert!(res.answer.starts_with(&want), "{}", res.answer);
    assert!(
        res.answer
            .contains(&format!("); breaks at {breaks} (page_load p95 ")),
        "{}",
        res.answer
    );
    // Never past breaking for more than one step: every step after the first bad one is below it.
    let first_bad = res.steps.iter().position(|s| !s.ok).unwrap();
    let bad_load = res.steps[first_bad].load;
    assert!(res.steps[first_bad + 1..].iter().all(|s| s.load < bad_load));
    // Each step is an ordinary run directory that `surge report` reads.
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("capacity.json")).unwrap()).unwrap();
    assert_eq!(json["holds"].as_f64(), Some(f64::from(holds)));
    // Given the capacity directory, the report compares the last good and the first bad step and
    // carries the search for its capacity view.
    let m = common::report_model(&common::report_args(vec![out.clone()], &[]));
    assert_eq!(m["capacity"]["holds"].as_f64(), Some(f64::from(holds)));
    let names: Vec<&str> = m["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            format!("holds {holds} users"),
            format!("breaks at {breaks} users")
        ]
    );
    for s in &res.steps {
        let m = common::report_model(&common::report_args(vec![out.join(&s.dir)], &[]));
        assert!(
            m["runs"][0]["summary"]["outcome"]["sessions"]["started"]
                .as_u64()
                .unwrap() as usize
                >= s.sessions
        );
    }
}

/// `--stages`: users over time in shape.csv follow the asked ramp up, hold and ramp down.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stages_are_achieved() {
    let url = start_slots(100, Duration::from_millis(20));
    let (out, outcome) = replay_shape(
        "capacity-stages",
        &url,
        &["--stages", "2s:6, 2s:6, 2s:0", "--think-time", "none"],
    )
    .await;
    assert_eq!(outcome.exit_code(), 0);
    let points = surge::rundir::read_points(&out).expect("shape.csv");
    assert!(points.len() >= 6, "{points:?}");
    // Asked users from the stages alone: 0→6 over 0–2 s, 6 until 4 s, 6→0 until 6 s.
    let asked = |t: f64| -> f64 {
        if t < 2.0 {
            3.0 * t
        } else if t < 4.0 {
            6.0
        } else if t < 6.0 {
            6.0 - 3.0 * (t - 4.0)
        } else {
            0.0
        }
    };
    let t0 = outcome.summary.started_at_ms;
    for p in &points {
        let t = (p.at_ms - t0) as f64 / 1000.0;
        let want = asked(t);
        assert!(
            (f64::from(p.users) - want).abs() <= 1.5,
            "at {t:.2} s: {} users, asked {want}: {points:?}",
            p.users
        );
    }
    assert!(points.iter().any(|p| p.users == 6), "{points:?}");
    // The report carries the series for the concurrency chart, in ms since the run's first row.
    let m = common::report_model(&common::report_args(vec![out.clone()], &[]));
    let shape = m["runs"][0]["shape"].as_array().unwrap();
    assert_eq!(shape.len(), points.len());
    assert!(shape.iter().any(|p| p[1] == 6 && p[2] == 6), "{shape:?}");
    assert_eq!(outcome.summary.plan.users, 6);
}

/// `--stages` over minutes, on tokio's paused clock: 8 virtual minutes in about a second of
/// wall time. Against a refused port every session fails at once and its user pauses 500 ms
/// (virtual) before the next, so the shape is driven by timers only; each shape.csv point (one
/// per virtual second) must follow the stages: 0→4 users over 2 min, 4 for 4 min, 4→0 in 2 min.
#[tokio::test(start_paused = true)]
async fn stages_over_minutes_on_the_paused_clock() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let wall = std::time::Instant::now();
    let (out, outcome) = replay_shape(
        "capacity-stages-paused",
        &format!("http://127.0.0.1:{port}"),
        &["--stages", "2m:4, 4m:4, 2m:0"],
    )
    .await;
    let points = surge::rundir::read_points(&out).expect("shape.csv");
    let (first, last) = (points[0].at_ms, points[points.len() - 1].at_ms);
    assert!(
        (last - first) >= 8 * 60_000 - 1000,
        "{} virtual ms",
        last - first
    );
    assert!(points.len() >= 480, "{} points", points.len());
    let asked = |t: f64| -> f64 {
        if t < 120.0 {
            4.0 * t / 120.0
        } else if t < 360.0 {
            4.0
        } else if t < 480.0 {
            4.0 - 4.0 * (t - 360.0) / 120.0
        } else {
            0.0
        }
    };
    for p in &points {
        let t = (p.at_ms - first) as f64 / 1000.0;
        let want = asked(t);
        assert!(
            (f64::from(p.users) - want).abs() <= 1.5,
            "at {t:.1} s: {} users, asked {want}",
            p.users
        );
    }
    assert!(points.iter().filter(|p| p.users == 4).count() >= 200);
    let s = &outcome.summary.outcome.sessions;
    assert!(s.started > 100 && s.completed == 0, "{s:?}");
    assert_eq!(
        outcome
            .summary
            .outcome
            .failures_by_kind
            .keys()
            .map(|k| k.name())
            .collect::<Vec<_>>(),
        ["connect_error"]
    );
    assert!(
        wall.elapsed() < Duration::from_secs(120),
        "{:?}",
        wall.elapsed()
    );
}

/// `--arrival-rate 20/s` for 2 s starts exactly 40 sessions (at k/20 s for k = 0..39).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn arrival_rate_starts_the_asked_sessions() {
    let url = start_slots(100, Duration::from_millis(20));
    let (out, outcome) = replay_shape(
        "capacity-arrivals",
        &url,
        &["--arrival-rate", "20/s", "--loaded-duration", "2s"],
    )
    .await;
    assert_eq!(outcome.summary.outcome.sessions.started, 40);
    assert_eq!(outcome.summary.outcome.sessions.completed, 40);
    assert_eq!(common::session_csvs(&out).len(), 40);
    let last = surge::rundir::read_points(&out).unwrap().pop().unwrap();
    assert_eq!((last.arrivals, last.asked_arrivals), (40, Some(40)));
}

fn run_surge(args: &[&str]) -> (Option<i32>, String, String) {
    let o = surge().args(args).output().unwrap();
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// `--max-users` bounds an open model: arrivals beyond it are dropped, said once on stderr.
#[test]
fn max_users_bounds_arrivals_with_one_line() {
    let url = start_slots(100, Duration::from_millis(1000));
    let dir = fresh_dir("capacity-max-users");
    let rec = recording(&dir);
    let out = dir.join("run");
    let (code, _, err) = run_surge(&[
        "replay",
        rec.to_str().unwrap(),
        &url,
        "--arrival-rate",
        "10/s",
        "--loaded-duration",
        "600ms",
        "--max-users",
        "3",
        "--output-dir",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{err}");
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("--max-users 3 reached"))
        .collect();
    assert_eq!(lines.len(), 1, "{err}");
    let s = common::summary(&out);
    assert_eq!(
        (
            s["sessions"]["started"].as_u64(),
            s["arrivals_dropped"].as_u64()
        ),
        (Some(3), Some(3))
    );
}

/// Bad input: one line naming the flag, exit status 2, nothing written.
#[test]
fn bad_input_is_one_line_and_exit_2() {
    let dir = fresh_dir("capacity-bad");
    let rec = recording(&dir);
    let rec = rec.to_str().unwrap();
    let out = dir.join("out");
    let o = out.to_str().unwrap();
    let url = "http://127.0.0.1:9/";
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec![
                "capacity",
                rec,
                url,
                "--slo",
                "pageload:p95<2s",
                "--output-dir",
                o,
            ],
            "--slo \"pageload:p95<2s\": unknown metric",
        ),
        (
            vec![
                "capacity",
                rec,
                url,
                "--slo",
                "page_load:p95>2s",
                "--output-dir",
                o,
            ],
            "--slo \"page_load:p95>2s\"",
        ),
        (
            vec![
                "capacity",
                rec,
                url,
                "--slo",
                "WS_RECV:p95<2s",
                "--output-dir",
                o,
            ],
            "has no WS_RECV event",
        ),
        (vec!["capacity", rec, url, "--output-dir", o], "--slo <SLO>"),
        (
            vec![
                "capacity",
                rec,
                url,
                "--slo",
                "page_load:p95<2s",
                "--growth",
                "1",
                "--output-dir",
                o,
            ],
            "--growth 1: must be above 1",
        ),
        (
            vec![
                "capacity",
                rec,
                url,
                "--slo",
                "page_load:p95<2s",
                "--max-failure-rate",
                "2",
                "--output-dir",
                o,
            ],
            "failure rate \"2\"",
        ),
        (
            vec!["replay", rec, url, "--stages", "2m", "--output-dir", o],
            "--stages \"2m\": \"2m\" is not DURATION:USERS",
        ),
        (
            vec!["replay", rec, url, "--stages", "2m:0", "--output-dir", o],
            "no stage asks for any user",
        ),
        (
            vec![
                "replay",
                rec,
                url,
                "--stages",
                "1m:5",
                "--users",
                "3",
                "--output-dir",
                o,
            ],
            "--stages",
        ),
        (
            vec![
                "replay",
                rec,
                url,
                "--arrival-rate",
                "0/s",
                "--loaded-duration",
                "1s",
                "--output-dir",
                o,
            ],
            "--arrival-rate \"0/s\"",
        ),
        (
            vec![
                "replay",
                rec,
                url,
                "--arrival-rate",
                "2/d",
                "--loaded-duration",
                "1s",
                "--output-dir",
                o,
            ],
            "--arrival-rate \"2/d\"",
        ),
        (
            vec![
                "replay",
                rec,
                url,
                "--arrival-rate",
                "2/s",
                "--output-dir",
                o,
            ],
            "--arrival-rate needs --loaded-duration",
        ),
    ];
    for (args, want) in cases {
        let (code, stdout, stderr) = run_surge(&args);
        assert_eq!(code, Some(2), "{args:?}: {stdout}{stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{args:?}: {stderr}");
        assert!(
            stderr.contains(want),
            "{args:?}: want {want:?}, got {stderr}"
        );
        assert!(!out.exists(), "{args:?} created {}", out.display());
    }
}

/// A target that breaks the SLO already at the first step: exit status 1 and an answer saying so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn first_step_breaking_exits_1() {
    let url = start_slots(4, Duration::from_millis(50));
    let dir = fresh_dir("capacity-first-breaks");
    let rec = recording(&dir);
    let out = dir.join("cap");
    let a = capacity_plan(&[
        rec.to_str().unwrap(),
        &url,
        "--slo",
        "page_load:p95<10ms",
        "--step-sessions",
        "5",
        "--think-time",
        "none",
        "--output-dir",
        out.to_str().unwrap(),
    ]);
    let res = surge::capacity::run(a, std::future::pending())
        .await
        .unwrap();
    // The answer is the line `surge capacity` prints.
    assert_eq!(res.exit_code(), 1, "{}", res.answer);
    assert!(
        res.answer
            .starts_with("breaks already at the first step, 1 concurrent users (page_load p95 "),
        "{}",
        res.answer
    );
    assert!(out.join("step-01/summary.json").is_file());
}
