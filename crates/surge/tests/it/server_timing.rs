//! `Server-Timing` read per request and each line's time split into queue / server / rest, against
//! a server whose split is known: FIFO slots (the queue), a fixed compute time per path (the
//! server), and a delay before its response leaves (the network), all on loopback. The server
//! keeps its own account of every request, the truth surge's split is held to.

use crate::common::{fresh_dir, parse_replay_args};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

/// What the known server saw of one request: its path, queue wait, compute and the network delay
/// it really slept (a timer overshoots by up to a millisecond), in ms.
pub(crate) type Truth = Arc<Mutex<Vec<Seen>>>;
/// One request as the known server saw it: path, queue wait, compute, network delay (ms).
pub(crate) type Seen = (String, f64, f64, f64);

/// Held by the tests whose assertions are timings against a known queue (this suite's, explain's,
/// capacity's knee): on a 2-core machine two of them at once would delay each other's users.
pub(crate) static TIMED: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// A server with `slots` FIFO slots; a request for `/x?ms=N` holds one for N ms (compute), then
/// waits `net` with the slot free before its response is written (the network's share), and
/// says `Server-Timing: queue;dur=…, app;dur=…` as it measured them. Returns the base URL and its
/// account of every request.
pub(crate) fn start_known(slots: usize, net: Duration) -> (String, Truth) {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    l.set_nonblocking(true).unwrap();
    let truth: Truth = Arc::default();
    let t = truth.clone();
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
                tokio::spawn(serve(s, sem.clone(), net, t.clone()));
            }
        })
    });
    (format!("http://127.0.0.1:{port}/"), truth)
}

async fn serve(
    s: tokio::net::TcpStream,
    sem: Arc<tokio::sync::Semaphore>,
    net: Duration,
    truth: Truth,
) {
    let (r, mut w) = s.into_split();
    let mut r = BufReader::new(r);
    loop {
        let (mut len, mut path, mut line) = (0usize, String::new(), String::new());
        loop {
            line.clear();
            if r.read_line(&mut line).await.unwrap_or(0) == 0 {
                return;
            }
            if line == "\r\n" {
                break;
            }
            if path.is_empty() {
                path = line.split(' ').nth(1).unwrap_or("/").to_string();
            }
            if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                len = v.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0; len];
        if r.read_exact(&mut body).await.is_err() {
            return;
        }
        let ms: u64 = (path.split_once("ms=")).map_or(100, |(_, v)| v.parse().unwrap_or(100));
        let arrived = Instant::now();
        let (queue, app) = {
            let _slot = sem.acquire().await.unwrap();
            let began = Instant::now();
            // why: the app's work, what the `server` part must recover.
            tokio::time::sleep(Duration::from_millis(ms)).await;
            (began - arrived, began.elapsed())
        };
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        // why: the network's delay, outside what the server reports: the `rest` part.
        let slept = Instant::now();
        tokio::time::sleep(net).await;
        let slept = ms(slept.elapsed());
        (truth.lock().unwrap()).push((path.clone(), ms(queue), ms(app), slept));
        let resp = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nServer-Timing: queue;dur={:.3}, app;dur={:.3};desc=\"work, done\"\r\nContent-Length: 2\r\n\r\nok",
            ms(queue),
            ms(app)
        );
        if w.write_all(resp.as_bytes()).await.is_err() {
            return;
        }
    }
}

/// A surge/http recording of `paths` requested one after the other (50 ms apart).
pub(crate) fn recording(dir: &Path, paths: &[&str]) -> PathBuf {
    let p = dir.join("recording.log");
    let mut text =
        String::from("# version: 1\n# target_url: http://127.0.0.1:1\n# target_type: surge/http\n");
    for (i, path) in paths.iter().enumerate() {
        let at = |ms: usize| format!("2026-01-01T00:00:{:02}.{:03}Z", ms / 1000, ms % 1000);
        let kind = if i == 0 { "REQ_HOME" } else { "REQ_GET" };
        text.push_str(&format!(
            "{{\"type\":\"{kind}\",\"begin\":\"{}\",\"end\":\"{}\",\"status\":200,\"url\":\"{path}\"}}\n",
            at(i * 50),
            at(i * 50 + 20)
        ));
    }
    std::fs::write(&p, text).unwrap();
    p
}

/// Replays `rec` against `url` in-process with `flags`, into `out`.
pub(crate) async fn replay(
    rec: &Path,
    url: &str,
    out: &Path,
    flags: &[&str],
) -> surge::replay::Replayed {
    let mut v = vec![rec.to_str().unwrap(), url];
    v.extend_from_slice(flags);
    v.extend_from_slice(&["--output-dir", out.to_str().unwrap()]);
    let plan = surge::replay::ReplayPlan::from_args(&parse_replay_args(&v), &[])
        .await
        .unwrap();
    surge::replay::run(plan, std::future::pending())
        .await
        .unwrap()
}

/// 4 slots, 100 ms of compute, 5 ms of network: at 1, 8 and 16 users (each playing 6 requests
/// back to back) the report's split recovers the server's own mean queue wait and compute within
/// 5% of them (0.5 ms for a queue of nothing), and the rest is the network delay the server
/// really slept plus at most 5% of the measured time (the client's share); the parts sum to the
/// measured time. The queue
/// grows with the users (none alone; with 16 on 4 slots most requests wait), so each run checks
/// a different split.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queue_server_and_rest_are_recovered_at_1_8_and_16_users() {
    let _timed = TIMED.lock().await;
    let net = Duration::from_millis(5);
    for users in [1u32, 8, 16] {
        let (url, truth) = start_known(4, net);
        let dir = fresh_dir(&format!("server-timing-{users}"));
        let rec = recording(&dir, &["/x?ms=100"; 6]);
        let out = dir.join("run");
        let u = users.to_string();
        let r = replay(
            &rec,
            &url,
            &out,
            &[
                "--users",
                &u,
                "--think-time",
                "none",
                "--start-interval",
                "0s",
            ],
        )
        .await;
        assert_eq!(r.exit_code(), 0);
        let m = crate::common::report_model(&crate::common::report_args(vec![out.clone()], &[]));
        let splits = m["runs"][0]["timing"].as_array().unwrap();
        assert_eq!(splits.len(), 6, "one split per recorded line: {splits:?}");
        let seen = truth.lock().unwrap().clone();
        assert_eq!(seen.len(), 6 * users as usize);
        let mean = |f: &dyn Fn(&Seen) -> f64| seen.iter().map(f).sum::<f64>() / seen.len() as f64;
        let (queue, app, delay) = (mean(&|t| t.1), mean(&|t| t.2), mean(&|t| t.3));
        let f = |s: &serde_json::Value, k: &str| s[k].as_f64().unwrap();
        let n: f64 = splits.iter().map(|s| f(s, "n")).sum();
        assert_eq!(
            n as usize,
            seen.len(),
            "every request's Server-Timing recorded"
        );
        // The run's mean of each part over all lines (each line has `users` requests).
        let part = |k: &str| splits.iter().map(|s| f(s, k)).sum::<f64>() / splits.len() as f64;
        let (q, s, rest, measured) = (
            part("queue_ms"),
            part("server_ms"),
            part("rest_ms"),
            part("measured_ms"),
        );
        eprintln!("{users} users: measured {measured:.2} = queue {q:.2} + server {s:.2} + rest {rest:.2}; truth queue {queue:.2}, app {app:.2}, network {delay:.2}");
        assert!(
            (q + s + rest - measured).abs() < 1e-6,
            "parts sum to the measured time"
        );
        let within = |got: f64, want: f64, what: &str| {
            // 5% of the known value; a queue of (almost) nothing alone is held to 0.5 ms.
            let tol = (want * 0.05).max(0.5);
            assert!(
                (got - want).abs() <= tol,
                "{users} users: {what} {got:.2} ms, known {want:.2} ms ± {tol:.2}"
            );
        };
        within(q, queue, "queue");
        within(s, 100.0, "server");
        within(s, app, "server (as the server measured)");
        // The rest is the network delay plus the client's own time (loopback, parsing), which
        // no server can know: held to 5% of the measured time.
        assert!(
            rest >= delay - 0.01 && rest - delay <= 0.05 * measured,
            "{users} users: rest {rest:.2} ms, network {delay:.2} ms + at most 5% of {measured:.2}"
        );
        assert!(delay >= 5.0);
        if users == 16 {
            assert!(q > 100.0, "16 users on 4 slots queue: {q:.1} ms");
        }
        // The run directory keeps shinycannon's files as they were; the split is beside them.
        assert!(out.join("timing").is_dir());
        let csv = std::fs::read_to_string(crate::common::session_csvs(&out)[0].clone()).unwrap();
        assert!(csv.lines().nth(2).unwrap().starts_with(
            "session_id,worker_id,iteration,event,timestamp,input_line_number,comment"
        ));
    }
}
