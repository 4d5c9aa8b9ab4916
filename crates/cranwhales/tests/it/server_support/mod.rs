//! Test support for the server suites: `cranwhales serve` in-process on port 0 (and the real binary
//! for signal tests), a real source server on loopback serving ../shared/data/cranlogs, a raw
//! async HTTP/1.1 client (so malformed and abusive requests can be sent), and an independent
//! count of a day's log.
#![allow(dead_code)]

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use clap::Parser;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The repository root.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The 78 real daily logs: `$CRANWHALES_TEST_DATA/cranlogs` (set by `make test`, see
/// `scripts/test-data.py`), else `../shared/data/cranlogs` beside the repo.
pub fn cranlogs() -> PathBuf {
    match std::env::var_os("CRANWHALES_TEST_DATA") {
        Some(root) => PathBuf::from(root).join("cranlogs"),
        None => repo().join("../shared/data/cranlogs"),
    }
}

#[derive(Parser)]
struct Args {
    #[command(flatten)]
    serve: cranwhales::server::ServeArgs,
}

/// A fresh temp dir with a sample dir holding copies of `samples`; returns the serve flags
/// (store, cache, samples, port 0) followed by `extra`.
fn store_dir(samples: &[&str], extra: &[&str]) -> (tempfile::TempDir, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let sample_dir = dir.path().join("sample");
    std::fs::create_dir_all(&sample_dir).unwrap();
    for day in samples {
        std::fs::copy(
            cranlogs().join(format!("{day}.csv.gz")),
            sample_dir.join(format!("{day}.csv.gz")),
        )
        .unwrap();
    }
    let path = |p: &Path| p.display().to_string();
    let mut args = vec![
        "--db".to_owned(),
        path(&dir.path().join("cw.db")),
        "--cache-dir".to_owned(),
        path(&dir.path().join("cache")),
        "--sample-dir".to_owned(),
        path(&sample_dir),
        "--addr".to_owned(),
        "127.0.0.1:0".to_owned(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    (dir, args)
}

/// `cranwhales serve` running in-process on this test's runtime (so a paused clock applies to
/// it), on a fresh temp store; stopped (drained) by [`App::stop`] or when the test ends.
pub struct App {
    pub addr: SocketAddr,
    pub dir: tempfile::TempDir,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<anyhow::Result<()>>,
}

impl App {
    /// Opens a store with `samples` ingested and serves it with `extra` flags.
    pub async fn start(samples: &[&str], extra: &[&str]) -> App {
        let (dir, args) = store_dir(samples, extra);
        let args = Args::try_parse_from(std::iter::once("serve".to_owned()).chain(args))
            .unwrap()
            .serve;
        let server = cranwhales::server::open(&args).await.unwrap();
        let listener = tokio::net::TcpListener::bind(args.addr).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(cranwhales::server::run(listener, server, async {
            let _ = rx.await;
        }));
        App {
            addr,
            dir,
            stop: Some(tx),
            task,
        }
    }

    /// Sends the shutdown signal without waiting.
    pub fn signal(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
    }

    /// Sends the shutdown signal and waits until the server has drained and returned.
    pub async fn stop(mut self) {
        self.signal();
        (&mut self.task).await.unwrap().unwrap();
    }

    /// Whether `run` has returned.
    pub fn finished(&self) -> bool {
        self.task.is_finished()
    }

    /// The store file.
    pub fn db(&self) -> PathBuf {
        self.dir.path().join("cw.db")
    }
}

/// The real `cranwhales serve` binary (for signals and exit codes), killed on drop.
pub struct Binary {
    pub child: Child,
    pub addr: SocketAddr,
    pub dir: tempfile::TempDir,
    /// Its stderr so far, and whether it ended (the process closed it: exited); the condition
    /// variable is notified on every line and at the end.
    log: Arc<(Mutex<(String, bool)>, Condvar)>,
}

impl Binary {
    /// Starts the binary like [`App::start`] and waits for its URL line.
    pub fn start(samples: &[&str], extra: &[&str]) -> Binary {
        let (dir, args) = store_dir(samples, extra);
        let mut child = Command::new(env!("CARGO_BIN_EXE_cranwhales"))
            .arg("serve")
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start cranwhales serve");
        let log = Arc::new((Mutex::new((String::new(), false)), Condvar::new()));
        let (sink, err) = (log.clone(), child.stderr.take().unwrap());
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                eprintln!("{line}");
                let mut l = sink.0.lock().unwrap();
                l.0.push_str(&line);
                l.0.push('\n');
                sink.1.notify_all();
            }
            sink.0.lock().unwrap().1 = true;
            sink.1.notify_all();
        });
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let url = line
            .split("http://")
            .nth(1)
            .unwrap_or_else(|| panic!("no URL in {line:?}"));
        let addr = url.trim().trim_end_matches('/').parse().unwrap();
        Binary {
            child,
            addr,
            dir,
            log,
        }
    }

    /// What the server wrote to stderr so far.
    pub fn log(&self) -> String {
        self.log.0.lock().unwrap().0.clone()
    }

    /// Waits (at most `secs`) for its stderr to hold `text`, or to end; whether it holds it. An
    /// event: the reader thread notifies each line.
    pub fn wait_log(&self, text: &str, secs: u64) -> bool {
        let (m, cv) = &*self.log;
        let g = m.lock().unwrap();
        let (g, _) = cv
            .wait_timeout_while(g, Duration::from_secs(secs), |(log, ended)| {
                !log.contains(text) && !*ended
            })
            .unwrap();
        g.0.contains(text)
    }

    /// Sends SIGTERM.
    pub fn sigterm(&self) {
        let pid = self.child.id().to_string();
        let ok = Command::new("kill").args(["-TERM", &pid]).status().unwrap();
        assert!(ok.success());
    }

    /// Waits (at most a minute) for the process to exit; its exit code. The event is its stderr
    /// closing (the process is gone), then `wait` reaps it at once.
    pub fn wait(&mut self) -> Option<i32> {
        let (m, cv) = &*self.log;
        let g = m.lock().unwrap();
        let (g, _) = cv
            .wait_timeout_while(g, Duration::from_secs(60), |(_, ended)| !*ended)
            .unwrap();
        assert!(g.1, "cranwhales serve did not exit");
        drop(g);
        self.child.wait().unwrap().code()
    }
}

impl Drop for Binary {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A response as read off the socket.
#[derive(Debug)]
pub struct Resp {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Resp {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
    /// The `error` of a `{"error": …}` body (panics if the body is not that envelope).
    pub fn error(&self) -> String {
        assert_eq!(
            self.header("content-type"),
            Some("application/json"),
            "status {}: {}",
            self.status,
            self.text()
        );
        let v = self.json();
        let obj = v.as_object().unwrap();
        assert_eq!(obj.len(), 1, "only an error field: {v}");
        obj["error"].as_str().expect("error is a string").to_owned()
    }
}

/// Sends raw request bytes and reads the whole response (the request should say `Connection: close`).
pub async fn raw(addr: SocketAddr, request: &[u8]) -> Resp {
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    // A server that refuses a request may close before all of it is sent; its answer still came.
    let _ = s.write_all(request).await;
    let mut buf = Vec::new();
    let _ = s.read_to_end(&mut buf).await;
    parse_response(&buf)
}

/// All responses read off one connection until the server closes it.
pub async fn raw_all(addr: SocketAddr, request: &[u8]) -> Vec<Resp> {
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    s.write_all(request).await.unwrap();
    let mut buf = Vec::new();
    let _ = s.read_to_end(&mut buf).await;
    let mut out = Vec::new();
    let mut rest = &buf[..];
    while !rest.is_empty() {
        let (resp, used) = parse_one(rest);
        out.push(resp);
        rest = &rest[used..];
    }
    out
}

/// GET with optional extra header lines.
pub async fn get(addr: SocketAddr, path: &str, headers: &[(&str, &str)]) -> Resp {
    let mut req = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    raw(addr, req.as_bytes()).await
}

pub fn parse_response(buf: &[u8]) -> Resp {
    parse_one(buf).0
}

/// One response at the start of `buf` (Content-Length, chunked, or to the end); bytes used.
fn parse_one(buf: &[u8]) -> (Resp, usize) {
    let end = buf
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no response head in {:?}", String::from_utf8_lossy(buf)));
    let head = String::from_utf8_lossy(&buf[..end]).into_owned();
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| {
            l.split_once(':')
                .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        })
        .collect();
    let find = |name: &str| {
        headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.clone())
    };
    let rest = &buf[end + 4..];
    let (body, used) = if find("transfer-encoding").is_some_and(|v| v.contains("chunked")) {
        dechunk(rest)
    } else if let Some(n) = find("content-length").map(|v| v.parse::<usize>().unwrap()) {
        (rest[..n.min(rest.len())].to_vec(), n.min(rest.len()))
    } else {
        (rest.to_vec(), rest.len())
    };
    (
        Resp {
            status,
            headers,
            body,
        },
        end + 4 + used,
    )
}

fn dechunk(b: &[u8]) -> (Vec<u8>, usize) {
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(nl) = b[at..].windows(2).position(|w| w == b"\r\n") {
        let size =
            usize::from_str_radix(String::from_utf8_lossy(&b[at..at + nl]).trim(), 16).unwrap_or(0);
        if size == 0 {
            return (out, (at + nl + 4).min(b.len()));
        }
        if b.len() < at + nl + 2 + size {
            break;
        }
        out.extend_from_slice(&b[at + nl + 2..at + nl + 2 + size]);
        at += nl + 2 + size + 2;
    }
    (out, b.len())
}

/// Follows `/api/days/{date}/progress` until the server ends it; returns every event's JSON.
pub async fn follow(addr: SocketAddr, date: &str) -> Vec<serde_json::Value> {
    let resp = get(addr, &format!("/api/days/{date}/progress"), &[]).await;
    assert_eq!(resp.status, 200, "progress: {}", resp.text());
    assert_eq!(resp.header("content-type"), Some("text/event-stream"));
    events(&resp.text())
}

/// The JSON of each `data:` line of an SSE body.
pub fn events(text: &str) -> Vec<serde_json::Value> {
    text.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(|d| serde_json::from_str(d.trim()).unwrap())
        .collect()
}

/// Asks for a day until it is stored (following progress while it is fetched); panics on failure.
pub async fn fetch_day(addr: SocketAddr, date: &str, count: u32) -> serde_json::Value {
    for _ in 0..100 {
        let r = get(addr, &format!("/api/days/{date}?count={count}"), &[]).await;
        match r.status {
            200 => return r.json(),
            202 => {
                let events = follow(addr, date).await;
                let last = events.last().expect("at least one event");
                assert_eq!(last["phase"], "done", "fetch of {date} failed: {last}");
            }
            s => panic!("GET {date}: {s} {}", r.text()),
        }
    }
    panic!("{date} never became available")
}

/// How the source server answers one date.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Behaviour {
    /// The real file, whole.
    Serve,
    /// Headers and the first half, then the rest once the test calls [`Source::release`] (never,
    /// for a source that hangs).
    Hold,
    /// Headers and the first half, then the connection closes.
    Die,
    /// 404, as for a day not published yet.
    Missing,
    /// 500 with an error body.
    Fail,
    /// A whole response of the file's first half (Content-Length says so): a half-written file.
    Truncated,
}

#[derive(Default)]
struct Gates {
    released: HashSet<String>,
    /// Connections that sent their first half and wait, by date.
    holding: HashMap<String, u32>,
    stop: bool,
}

/// A real HTTP server on loopback in the `{base}/{YYYY}/{date}.csv.gz` layout, serving
/// ../shared/data/cranlogs (or another directory of day files), counting requests per path.
pub struct Source {
    pub url: String,
    pub hits: Arc<Mutex<HashMap<String, u32>>>,
    behaviour: Arc<Mutex<HashMap<String, Behaviour>>>,
    gates: Arc<(Mutex<Gates>, Condvar)>,
    stop: Arc<AtomicBool>,
}

impl Source {
    pub fn start() -> Source {
        Source::start_in(cranlogs())
    }

    /// A source publishing the `{date}.csv.gz` files of `dir` (days made for a test).
    pub fn start_in(dir: PathBuf) -> Source {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let hits = Arc::new(Mutex::new(HashMap::new()));
        let behaviour: Arc<Mutex<HashMap<String, Behaviour>>> =
            Arc::new(Mutex::new(HashMap::new()));
        let gates = Arc::new((Mutex::new(Gates::default()), Condvar::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (h, b, g, st) = (hits.clone(), behaviour.clone(), gates.clone(), stop.clone());
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if st.load(Ordering::Relaxed) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let (h, b, g, dir) = (h.clone(), b.clone(), g.clone(), dir.clone());
                std::thread::spawn(move || serve_one(conn, &dir, &h, &b, &g));
            }
        });
        Source {
            url,
            hits,
            behaviour,
            gates,
            stop,
        }
    }

    pub fn set(&self, date: &str, b: Behaviour) {
        self.behaviour.lock().unwrap().insert(date.to_owned(), b);
    }

    pub fn hits(&self, date: &str) -> u32 {
        *self.hits.lock().unwrap().get(date).unwrap_or(&0)
    }

    /// Lets held downloads of `date` send their second half (now and from now on).
    pub fn release(&self, date: &str) {
        let (m, cv) = &*self.gates;
        m.lock().unwrap().released.insert(date.to_owned());
        cv.notify_all();
    }

    /// Waits (bounded: 20 s) until a download of `date` has sent its first half and is held: an
    /// event (the source's condition variable, notified when a download reaches the hold), on a
    /// blocking thread so the test's runtime keeps serving meanwhile (and a paused clock does not
    /// auto-advance while it waits).
    pub async fn held(&self, date: &str) {
        let (gates, date) = (self.gates.clone(), date.to_owned());
        let held = tokio::task::spawn_blocking(move || {
            let (m, cv) = &*gates;
            let g = m.lock().unwrap();
            let (g, _) = cv
                .wait_timeout_while(g, Duration::from_secs(20), |g| {
                    g.holding.get(&date).copied().unwrap_or(0) == 0
                })
                .unwrap();
            g.holding.get(&date).copied().unwrap_or(0) > 0
        })
        .await
        .unwrap();
        assert!(held, "no download reached the source's hold within 20 s");
    }

    /// Whether a download of `date` has sent its first half and is being held.
    pub fn holding(&self, date: &str) -> bool {
        self.gates
            .0
            .lock()
            .unwrap()
            .holding
            .get(date)
            .copied()
            .unwrap_or(0)
            > 0
    }
}

impl Drop for Source {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        let (m, cv) = &*self.gates;
        m.lock().unwrap().stop = true;
        cv.notify_all();
        let _ = TcpStream::connect(self.url.trim_start_matches("http://"));
    }
}

fn serve_one(
    mut conn: TcpStream,
    dir: &Path,
    hits: &Mutex<HashMap<String, u32>>,
    behaviour: &Mutex<HashMap<String, Behaviour>>,
    gates: &(Mutex<Gates>, Condvar),
) {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if conn.read(&mut byte).unwrap_or(0) == 0 {
            return;
        }
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head);
    let path = head.split(' ').nth(1).unwrap_or("").to_owned();
    // /{YYYY}/{date}.csv.gz
    let date = path
        .rsplit('/')
        .next()
        .unwrap_or("")
        .trim_end_matches(".csv.gz")
        .to_owned();
    *hits.lock().unwrap().entry(date.clone()).or_insert(0) += 1;
    let file = dir.join(format!("{date}.csv.gz"));
    let year_ok = path.split('/').nth(1) == date.get(..4);
    let Ok(data) =
        std::fs::read(&file)
            .map_err(|_| ())
            .and_then(|d| if year_ok { Ok(d) } else { Err(()) })
    else {
        let _ = conn.write_all(
            b"HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\nConnection: close\r\n\r\nnot found",
        );
        return;
    };
    let b = behaviour
        .lock()
        .unwrap()
        .get(&date)
        .copied()
        .unwrap_or(Behaviour::Serve);
    let half = data.len() / 2;
    let early: Option<Vec<u8>> = match b {
        Behaviour::Missing => Some(b"HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\nConnection: close\r\n\r\nnot found".to_vec()),
        Behaviour::Fail => Some(b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 5\r\nConnection: close\r\n\r\nerror".to_vec()),
        Behaviour::Truncated => Some([format!("HTTP/1.1 200 OK\r\nContent-Type: application/gzip\r\nContent-Length: {half}\r\nConnection: close\r\n\r\n").as_bytes(), &data[..half]].concat()),
        _ => None,
    };
    if let Some(answer) = early {
        let _ = conn.write_all(&answer);
        return;
    }
    let _ = conn.write_all(
        format!("HTTP/1.1 200 OK\r\nContent-Type: application/gzip\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", data.len()).as_bytes(),
    );
    match b {
        Behaviour::Serve => {
            let _ = conn.write_all(&data);
        }
        Behaviour::Hold => {
            if conn.write_all(&data[..half]).is_err() {
                return;
            }
            let (m, cv) = gates;
            let mut g = m.lock().unwrap();
            *g.holding.entry(date.clone()).or_insert(0) += 1;
            // Wakes `Source::held` (and the other held downloads, which wait again).
            cv.notify_all();
            while !g.released.contains(&date) && !g.stop {
                g = cv.wait(g).unwrap();
            }
            *g.holding.get_mut(&date).unwrap() -= 1;
            let go = !g.stop;
            drop(g);
            if go {
                let _ = conn.write_all(&data[half..]);
            }
        }
        Behaviour::Die => {
            let _ = conn.write_all(&data[..half]);
        }
        Behaviour::Missing | Behaviour::Fail | Behaviour::Truncated => {}
    }
}

/// An independent, deliberately simple count of one day's log: split lines on commas.
#[derive(Debug, Default)]
pub struct Reference {
    pub downloads: u64,
    pub bytes: u64,
    pub skipped: u64,
    pub hourly: [u64; 24],
    /// ip_id -> (downloads, bytes, packages, hourly)
    pub ips: HashMap<u64, (u64, u64, HashSet<String>, [u64; 24])>,
}

impl Reference {
    pub fn of(date: &str) -> Reference {
        let f = std::fs::File::open(cranlogs().join(format!("{date}.csv.gz"))).unwrap();
        let r = BufReader::new(flate2::read::GzDecoder::new(f));
        let mut out = Reference::default();
        for line in r.lines().skip(1) {
            let line = line.unwrap();
            if line.is_empty() {
                continue;
            }
            let f: Vec<&str> = line.split(',').collect();
            assert_eq!(f.len(), 10, "{line}");
            if f[6] == "NA" {
                out.skipped += 1;
                continue;
            }
            let size: u64 = f[2].trim_matches('"').parse().unwrap();
            let hour: usize = f[1].trim_matches('"')[..2].parse().unwrap();
            let ip: u64 = f[9].trim_matches('"').parse().unwrap();
            out.downloads += 1;
            out.bytes += size;
            out.hourly[hour] += 1;
            let e = out
                .ips
                .entry(ip)
                .or_insert_with(|| (0, 0, HashSet::new(), [0; 24]));
            e.0 += 1;
            e.1 += size;
            e.2.insert(f[6].trim_matches('"').to_owned());
            e.3[hour] += 1;
        }
        out
    }

    /// Top `n` ip_ids by downloads desc, ties by ip_id asc.
    pub fn top(&self, n: usize) -> Vec<u64> {
        let mut v: Vec<(u64, u64)> = self.ips.iter().map(|(ip, e)| (*ip, e.0)).collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        v.into_iter().take(n).map(|(ip, _)| ip).collect()
    }

    pub fn packages(&self) -> usize {
        // Distinct packages over all rows: recomputed from the per-ip sets.
        let mut all = HashSet::new();
        for e in self.ips.values() {
            all.extend(e.2.iter().cloned());
        }
        all.len()
    }
}
