//! Test support for the server suites: the real `cranwhales serve` binary on a temp store, a real
//! source server on loopback serving ../shared/data/cranlogs, a raw HTTP/1.1 client (so malformed
//! and abusive requests can be sent), and an independent count of a day's log.
#![allow(dead_code)]

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

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

/// A running `cranwhales serve`, killed on drop.
pub struct Server {
    child: Child,
    pub addr: SocketAddr,
    pub dir: tempfile::TempDir,
}

impl Server {
    /// Starts the binary on a fresh temp store with `extra` flags; `samples` are copied into the
    /// sample dir (ingested at start).
    pub fn start(samples: &[&str], extra: &[&str]) -> Server {
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
        let mut child = Command::new(env!("CARGO_BIN_EXE_cranwhales"))
            .arg("serve")
            .arg("--db")
            .arg(dir.path().join("cw.db"))
            .arg("--cache-dir")
            .arg(dir.path().join("cache"))
            .arg("--sample-dir")
            .arg(&sample_dir)
            .args(["--addr", "127.0.0.1:0"])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start cranwhales serve");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let url = line
            .split("http://")
            .nth(1)
            .unwrap_or_else(|| panic!("no URL in {line:?}"));
        let addr = url.trim().trim_end_matches('/').parse().unwrap();
        Server { child, addr, dir }
    }

    /// Whether the process is still running.
    pub fn alive(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }
}

impl Drop for Server {
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
}

/// Sends raw request bytes and reads the whole response (the request should say `Connection: close`).
pub fn raw(addr: SocketAddr, request: &[u8]) -> Resp {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    s.write_all(request).unwrap();
    let mut buf = Vec::new();
    let _ = s.read_to_end(&mut buf);
    parse_response(&buf)
}

/// GET with optional extra header lines.
pub fn get(addr: SocketAddr, path: &str, headers: &[(&str, &str)]) -> Resp {
    let mut req = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    raw(addr, req.as_bytes())
}

pub fn parse_response(buf: &[u8]) -> Resp {
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
    let mut body = buf[end + 4..].to_vec();
    let chunked = headers
        .iter()
        .any(|(k, v)| k.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked"));
    if chunked {
        body = dechunk(&body);
    }
    Resp {
        status,
        headers,
        body,
    }
}

fn dechunk(mut b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(nl) = b.windows(2).position(|w| w == b"\r\n") {
        let size = usize::from_str_radix(String::from_utf8_lossy(&b[..nl]).trim(), 16).unwrap_or(0);
        if size == 0 || b.len() < nl + 2 + size {
            break;
        }
        out.extend_from_slice(&b[nl + 2..nl + 2 + size]);
        b = &b[nl + 2 + size + 2..];
    }
    out
}

/// Follows `/api/days/{date}/progress` until the final event; returns every event's JSON.
pub fn follow(addr: SocketAddr, date: &str) -> Vec<serde_json::Value> {
    let resp = get(addr, &format!("/api/days/{date}/progress"), &[]);
    assert_eq!(resp.status, 200, "progress: {}", resp.text());
    assert_eq!(resp.header("content-type"), Some("text/event-stream"));
    resp.text()
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(|d| serde_json::from_str(d.trim()).unwrap())
        .collect()
}

/// Asks for a day until it is stored (following progress while it is fetched); panics on failure.
pub fn fetch_day(addr: SocketAddr, date: &str, count: u32) -> serde_json::Value {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let r = get(addr, &format!("/api/days/{date}?count={count}"), &[]);
        match r.status {
            200 => return r.json(),
            202 => {
                let events = follow(addr, date);
                let last = events.last().expect("at least one event");
                assert_eq!(last["phase"], "done", "fetch of {date} failed: {last}");
            }
            s => panic!("GET {date}: {s} {}", r.text()),
        }
        assert!(Instant::now() < deadline, "{date} never became available");
    }
}

/// How the source server answers one date.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Behaviour {
    /// The real file, whole.
    Serve,
    /// The real file at this many bytes per second.
    Throttle(u64),
    /// Headers and the first half, then nothing (until the test ends).
    Hang,
    /// Headers and the first half, then the connection closes.
    Die,
}

/// A real HTTP server on loopback in the `{base}/{YYYY}/{date}.csv.gz` layout, serving
/// ../shared/data/cranlogs, counting requests per path.
pub struct Source {
    pub url: String,
    pub hits: Arc<Mutex<HashMap<String, u32>>>,
    behaviour: Arc<Mutex<HashMap<String, Behaviour>>>,
    stop: Arc<AtomicBool>,
}

impl Source {
    pub fn start() -> Source {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let hits = Arc::new(Mutex::new(HashMap::new()));
        let behaviour: Arc<Mutex<HashMap<String, Behaviour>>> =
            Arc::new(Mutex::new(HashMap::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (h, b, st) = (hits.clone(), behaviour.clone(), stop.clone());
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if st.load(Ordering::Relaxed) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let (h, b, st) = (h.clone(), b.clone(), st.clone());
                std::thread::spawn(move || serve_one(conn, &h, &b, &st));
            }
        });
        Source {
            url,
            hits,
            behaviour,
            stop,
        }
    }

    pub fn set(&self, date: &str, b: Behaviour) {
        self.behaviour.lock().unwrap().insert(date.to_owned(), b);
    }

    pub fn hits(&self, date: &str) -> u32 {
        *self.hits.lock().unwrap().get(date).unwrap_or(&0)
    }
}

impl Drop for Source {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = TcpStream::connect(self.url.trim_start_matches("http://"));
    }
}

fn serve_one(
    mut conn: TcpStream,
    hits: &Mutex<HashMap<String, u32>>,
    behaviour: &Mutex<HashMap<String, Behaviour>>,
    stop: &AtomicBool,
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
    let file = cranlogs().join(format!("{date}.csv.gz"));
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
    let _ = conn.write_all(
        format!("HTTP/1.1 200 OK\r\nContent-Type: application/gzip\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", data.len()).as_bytes(),
    );
    match b {
        Behaviour::Serve => {
            let _ = conn.write_all(&data);
        }
        Behaviour::Throttle(rate) => {
            let chunk = (rate / 20).max(1) as usize;
            for part in data.chunks(chunk) {
                if conn.write_all(part).is_err() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        Behaviour::Hang => {
            let _ = conn.write_all(&data[..data.len() / 2]);
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        Behaviour::Die => {
            let _ = conn.write_all(&data[..data.len() / 2]);
        }
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
