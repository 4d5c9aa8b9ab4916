//! Shared helpers: run manifold in-process ([`InProc`], port 0) or as the real binary (for exit
//! codes, signals and its log), talk HTTP/1.1 to it, read its status page.
#![allow(dead_code)]

pub mod replay;
pub mod shiny;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

/// Upper bound for anything a test waits for; tests stop by themselves well before.
pub const DEADLINE: Duration = Duration::from_secs(60);

/// Path of a file under tests/fixtures.
pub fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// The Python fixture worker command (`{port}` substituted by manifold), plus extra options.
pub fn py_worker(extra: &[&str]) -> Vec<String> {
    let mut v = vec![
        "python3".to_string(),
        fixture("worker.py").display().to_string(),
        "{port}".to_string(),
    ];
    v.extend(extra.iter().map(|s| s.to_string()));
    v
}

/// A running manifold process; killed on drop if the test did not stop it.
pub struct Manifold {
    pub child: Child,
    pub addr: String,
    pub log: Arc<Mutex<String>>,
}

/// Starts manifold with `args`, waits for its "listening" line, and collects its stderr.
pub fn start(args: &[String]) -> Manifold {
    start_env(args, &[])
}

/// [`start`] with extra environment variables (passed on to the workers too).
pub fn start_env(args: &[String], env: &[(&str, &str)]) -> Manifold {
    let (child, log, rx, _) = spawn_reader(args, env);
    let addr = rx
        .recv_timeout(DEADLINE)
        .unwrap_or_else(|_| panic!("manifold did not start; log:\n{}", log.lock().unwrap()));
    Manifold { child, addr, log }
}

/// Spawns manifold without waiting; the receiver yields the listen address once printed.
pub fn spawn(args: &[String]) -> (Child, Arc<Mutex<String>>, mpsc::Receiver<String>) {
    let (child, log, rx, _) = spawn_reader(args, &[]);
    (child, log, rx)
}

/// Runs manifold until it exits by itself (bounded) and returns its exit code and full stderr.
pub fn run_to_exit(args: &[String]) -> (Option<i32>, String) {
    let (mut child, log, _, reader) = spawn_reader(args, &[]);
    let status = wait_child(&mut child);
    reader.join().unwrap();
    let log = log.lock().unwrap().clone();
    (status.code(), log)
}

type Spawned = (
    Child,
    Arc<Mutex<String>>,
    mpsc::Receiver<String>,
    std::thread::JoinHandle<()>,
);

fn spawn_reader(args: &[String], env: &[(&str, &str)]) -> Spawned {
    let mut child = Command::new(env!("CARGO_BIN_EXE_manifold"))
        .args(args)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn manifold");
    let log = Arc::new(Mutex::new(String::new()));
    let (tx, rx) = mpsc::channel();
    let err = child.stderr.take().unwrap();
    let sink = log.clone();
    let reader = std::thread::spawn(move || {
        // Keep only a bounded log: chatty workers print megabytes.
        for line in BufReader::new(err).lines() {
            let Ok(line) = line else { break };
            if let Some(rest) = line.strip_prefix("manifold: listening on http://") {
                let addr = rest.split_whitespace().next().unwrap().to_string();
                let _ = tx.send(addr);
            }
            let mut l = sink.lock().unwrap();
            if l.len() < 200_000 {
                l.push_str(&line);
                l.push('\n');
            }
        }
    });
    (child, log, rx, reader)
}

impl Manifold {
    /// Sends SIGTERM.
    pub fn sigterm(&self) {
        unsafe {
            libc::kill(self.child.id() as i32, libc::SIGTERM);
        }
    }

    /// Waits for exit (bounded).
    pub fn wait(&mut self) -> ExitStatus {
        wait_child(&mut self.child)
    }

    pub fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }
}

impl Drop for Manifold {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// What a test asks of a running manifold, in-process or the binary: both listen on `addr`.
pub trait Served {
    /// The address it listens on.
    fn addr(&self) -> &str;

    /// GET `path`.
    fn get(&self, path: &str) -> Resp {
        request(self.addr(), "GET", path, &[], "")
    }

    /// The parsed status JSON.
    fn status(&self) -> serde_json::Value {
        status_at(self.addr())
    }

    /// Polls the status page until `f` holds (bounded by [`DEADLINE`]).
    fn wait_status(&self, what: &str, f: impl Fn(&serde_json::Value) -> bool) -> serde_json::Value {
        wait_status_at(self.addr(), what, f)
    }
}

impl Served for Manifold {
    fn addr(&self) -> &str {
        &self.addr
    }
}

impl Served for InProc {
    fn addr(&self) -> &str {
        &self.addr
    }
}

/// The parsed status JSON of the manifold at `addr`.
pub fn status_at(addr: &str) -> serde_json::Value {
    let r = request(addr, "GET", "/__manifold__/status", &[], "");
    assert_eq!(r.status, 200, "{}", r.body);
    serde_json::from_str(&r.body).unwrap()
}

/// Polls the status page until `f` holds (bounded by [`DEADLINE`]).
pub fn wait_status_at(
    addr: &str,
    what: &str,
    f: impl Fn(&serde_json::Value) -> bool,
) -> serde_json::Value {
    let mut last = serde_json::Value::Null;
    let held = poll_until(DEADLINE, || {
        last = status_at(addr);
        f(&last)
    });
    assert!(held, "timed out waiting for {what}; last status {last}");
    last
}

/// The one poll loop of the suite: checks `f` every 20 ms until it holds (true) or `limit`
/// passed (false). For conditions that announce themselves by no event a test can wait on (a
/// status page, a file, another process, a log line).
pub fn poll_until(limit: Duration, mut f: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    loop {
        if f() {
            return true;
        }
        if start.elapsed() >= limit {
            return false;
        }
        // why: the poll interval; the condition has no event to wait on.
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// [`poll_until`] within [`DEADLINE`], panicking with `what` if `f` never holds.
pub fn wait_until(what: &str, f: impl FnMut() -> bool) {
    assert!(poll_until(DEADLINE, f), "timed out waiting for {what}");
}

/// The settings `args` give, as the binary would parse them.
pub fn config(args: &[String]) -> manifold::Config {
    use clap::Parser;
    let cli = manifold::Cli::try_parse_from(
        std::iter::once("manifold".to_string()).chain(args.iter().cloned()),
    )
    .unwrap();
    manifold::Config::from_cli(cli).unwrap()
}

/// `manifold::run` in-process on a runtime thread of its own (real clock), listening on port 0;
/// drained and its workers stopped on [`InProc::stop`] or drop.
pub struct InProc {
    pub addr: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<Result<(), manifold::Error>>>,
}

impl InProc {
    /// Starts the pool with these flags; requests wait in the listen backlog until `--min`
    /// workers are ready.
    pub fn start(args: &[String]) -> InProc {
        let cfg = config(args);
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                let shutdown = async {
                    let _ = rx.await;
                };
                manifold::run(listener, cfg, shutdown, std::future::pending()).await
            })
        });
        InProc {
            addr,
            stop: Some(tx),
            thread: Some(thread),
        }
    }

    /// Drains, stops every worker, and returns what `run` returned.
    pub fn stop(mut self) -> Result<(), manifold::Error> {
        self.finish()
    }

    fn finish(&mut self) -> Result<(), manifold::Error> {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        match self.thread.take() {
            Some(t) => t.join().unwrap(),
            None => Ok(()),
        }
    }
}

impl Drop for InProc {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = self.finish();
        } else if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
    }
}

/// `manifold::run` on the calling test's own tokio runtime (so a paused clock applies to it),
/// listening on port 0.
pub struct RunHere {
    pub addr: String,
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<Result<(), manifold::Error>>,
}

/// Starts [`RunHere`] with these flags; requests wait in the backlog until `--min` are ready.
pub async fn run_here(args: &[String]) -> RunHere {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let (stop, rx) = tokio::sync::oneshot::channel::<()>();
    let cfg = config(args);
    let task = tokio::spawn(async move {
        let shutdown = async {
            let _ = rx.await;
        };
        manifold::run(listener, cfg, shutdown, std::future::pending()).await
    });
    RunHere { addr, stop, task }
}

impl RunHere {
    /// Drains, stops every worker, and checks that `run` returned Ok.
    pub async fn stop(self) {
        let _ = self.stop.send(());
        self.task.await.unwrap().unwrap();
    }

    /// One GET on a fresh connection, read to the end.
    pub async fn get(&self, path: &str) -> Resp {
        get_async(&self.addr, path).await
    }

    /// The parsed status JSON.
    pub async fn status(&self) -> serde_json::Value {
        serde_json::from_str(&self.get("/__manifold__/status").await.body).unwrap()
    }
}

/// One GET on a fresh connection (`Connection: close`), read to the end, without blocking the
/// runtime (for tests on tokio's paused clock).
pub async fn get_async(addr: &str, path: &str) -> Resp {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let req = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).await.unwrap();
    parse(&raw).unwrap()
}

/// Waits for a child with a bound; panics if it does not exit.
pub fn wait_child(child: &mut Child) -> ExitStatus {
    let mut status = None;
    wait_until("the process to exit", || {
        status = child.try_wait().unwrap();
        status.is_some()
    });
    status.expect("exited")
}

/// Workers listed in a status document.
pub fn workers(s: &serde_json::Value) -> Vec<serde_json::Value> {
    s["workers"].as_array().unwrap().clone()
}

/// The pids of the workers listed in a status document (a `--preload` fork whose parent has
/// not answered yet has none).
pub fn pids(s: &serde_json::Value) -> Vec<u32> {
    workers(s)
        .iter()
        .filter_map(|w| w["pid"].as_u64())
        .map(|p| p as u32)
        .collect()
}

/// Workers in state "ready".
pub fn ready(s: &serde_json::Value) -> usize {
    workers(s).iter().filter(|w| w["state"] == "ready").count()
}

/// Whether a process exists (kill(pid, 0)).
pub fn alive(pid: u32) -> bool {
    unsafe { libc::kill(pid as i32, 0) == 0 }
}

/// Waits until `pid` is gone (bounded); panics otherwise.
pub fn assert_gone(pid: u32) {
    wait_until(&format!("process {pid} to be gone"), || !alive(pid));
}

/// An HTTP response as a test sees it.
#[derive(Debug, Clone)]
pub struct Resp {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Resp {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The `name=value` part of its Set-Cookie header, which it must have.
    pub fn cookie(&self) -> String {
        let set = self.header("set-cookie").expect("a Set-Cookie header");
        set.split(';').next().unwrap().to_string()
    }
}

/// One HTTP/1.1 request on a fresh connection (`Connection: close`), read to the end.
pub fn request(addr: &str, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> Resp {
    let mut s = TcpStream::connect(addr).unwrap_or_else(|e| panic!("connect {addr}: {e}"));
    s.set_read_timeout(Some(DEADLINE)).unwrap();
    let mut req = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    s.write_all(req.as_bytes()).unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    parse(&raw).unwrap_or_else(|| {
        panic!(
            "bad response to {path}: {:?}",
            String::from_utf8_lossy(&raw)
        )
    })
}

/// A whole response as read off a connection.
pub fn parse(raw: &[u8]) -> Option<Resp> {
    let end = raw.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = std::str::from_utf8(&raw[..end]).ok()?;
    let mut lines = head.split("\r\n");
    let status = lines.next()?.split_whitespace().nth(1)?.parse().ok()?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect();
    let mut body = raw[end + 4..].to_vec();
    let chunked = headers
        .iter()
        .any(|(k, v)| k.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked"));
    if chunked {
        let mut out = Vec::new();
        let mut rest = &body[..];
        loop {
            let nl = rest.windows(2).position(|w| w == b"\r\n")?;
            let size =
                usize::from_str_radix(std::str::from_utf8(&rest[..nl]).ok()?.trim(), 16).ok()?;
            if size == 0 {
                break;
            }
            out.extend_from_slice(&rest[nl + 2..nl + 2 + size]);
            rest = &rest[nl + 2 + size + 2..];
        }
        body = out;
    }
    Some(Resp {
        status,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    })
}

/// Opens an upgraded connection to the fixture's `/upgrade` echo (a WebSocket stand-in) through
/// the manifold at `addr`; the 101 head has been read.
pub fn upgrade(addr: &str) -> TcpStream {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(DEADLINE)).unwrap();
    write!(
        s,
        "GET /upgrade HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n"
    )
    .unwrap();
    let mut head = Vec::new();
    let mut b = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        s.read_exact(&mut b).unwrap();
        head.push(b[0]);
    }
    assert!(head.starts_with(b"HTTP/1.1 101"), "{head:?}");
    s
}

/// Converts string slices to owned args.
pub fn args(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// `--listen 127.0.0.1:0` (any free port) and `extra`.
pub fn on_free_port(extra: &[&str]) -> Vec<String> {
    args(&[&["--listen", "127.0.0.1:0"], extra].concat())
}

/// Manifold on a free port with `extra` flags over the Python fixture worker.
pub fn base(extra: &[&str]) -> Vec<String> {
    let mut a = on_free_port(extra);
    a.push("--".into());
    a.extend(py_worker(&[]));
    a
}

/// manifold on a free port with `flags`, then the R preset `preset` (`plumber` or `shiny`) over
/// the fixture `app` (a plumber file or a Shiny app directory).
pub fn start_r(preset: &str, app: &str, flags: &[&str]) -> Manifold {
    let app = fixture(app);
    start(&on_free_port(
        &[flags, &[preset, app.to_str().unwrap()]].concat(),
    ))
}

/// `a` followed by `--` and the command.
pub fn with_command(a: &[&str], command: Vec<String>) -> Vec<String> {
    let mut v = args(a);
    v.push("--".into());
    v.extend(command);
    v
}
