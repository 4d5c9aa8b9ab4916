//! Helpers shared by surge's integration tests: paths, free ports, real child processes (R, surge,
//! node) that are killed when dropped, and reading run directories.
#![allow(dead_code)]

mod inproc;
mod wait;
pub use inproc::*;
pub use wait::wait_until;

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// Repository root (two levels above this crate).
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// The real shinyloadtest files: `$CRANWHALES_TEST_DATA/shinyloadtest` (set by `make test`, see
/// `scripts/test-data.py`), else ../shared/data/shinyloadtest next to the repo.
pub fn shared() -> PathBuf {
    match std::env::var_os("CRANWHALES_TEST_DATA") {
        Some(root) => PathBuf::from(root).join("shinyloadtest"),
        None => repo().join("../shared/data/shinyloadtest"),
    }
}

/// The surge binary built for this test run.
pub fn surge() -> Command {
    Command::new(env!("CARGO_BIN_EXE_surge"))
}

/// `surge replay RECORDING --target TARGET --users N --output-dir RUN`; callers add the rest.
pub fn replay_cmd(recording: &Path, target: &str, users: u32, run: &Path) -> Command {
    let mut c = surge();
    c.arg("replay")
        .arg(recording)
        .args(["--target", target, "--users", &users.to_string()])
        .arg("--output-dir")
        .arg(run);
    c
}

/// Waits (at most `within`) until the run directory holds at least `n` session CSVs.
pub fn wait_sessions(run: &Path, n: usize, within: Duration) {
    wait_until(within, || {
        run.join("sessions").exists() && session_csvs(run).len() >= n
    });
}

/// A port nobody listens on right now, never handed out twice in this test process: the
/// kernel may give a just-closed port to the next bind, and two tests running side by side
/// would then start their servers on one port (the second fails to bind, and its test talks to
/// the first's server).
pub fn free_port() -> u16 {
    static GIVEN: std::sync::Mutex<Vec<u16>> = std::sync::Mutex::new(Vec::new());
    loop {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut given = GIVEN.lock().unwrap();
        if !given.contains(&port) {
            given.push(port);
            return port;
        }
    }
}

/// Waits until something accepts connections on the port.
pub fn wait_port(port: u16, within: Duration) -> bool {
    wait_until(within, || TcpStream::connect(("127.0.0.1", port)).is_ok())
}

/// A child process killed on drop.
pub struct Proc(pub Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts the fixture Shiny app with Rscript on a free port; panics with a clear message if R/shiny
/// is missing (make test installs r-cran-shiny).
pub fn start_shiny() -> (Proc, u16) {
    start_shiny_env(&[])
}

/// `start_shiny` with extra environment variables for R (e.g. SURGE_SESSION_LOG, see app.R).
pub fn start_shiny_env(env: &[(&str, &Path)]) -> (Proc, u16) {
    start_shiny_app("shiny-app", env)
}

/// Starts the Shiny app in `tests/fixtures/<fixture>` with Rscript on a free port.
pub fn start_shiny_app(fixture: &str, env: &[(&str, &Path)]) -> (Proc, u16) {
    let port = free_port();
    let app = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(fixture);
    let child = Command::new("Rscript")
        .arg("-e")
        .arg(format!(
            "shiny::runApp('{}', port = {port}, host = '127.0.0.1', launch.browser = FALSE)",
            app.display()
        ))
        .envs(env.iter().map(|(k, v)| (k, v.as_os_str())))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("Rscript not found: install r-base-core and r-cran-shiny (make deps)");
    let p = Proc(child);
    assert!(
        wait_port(port, Duration::from_secs(60)),
        "R Shiny app did not start listening on port {port} within 60 s"
    );
    (p, port)
}

/// The cranwhales binary the workspace built (`$CARGO_TARGET_DIR` or `target/`, debug); the
/// calling test fails, saying how to build it, when it is missing.
pub fn cranwhales_bin() -> PathBuf {
    let dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join("target"));
    let bin = [
        dir.join("debug/cranwhales"),
        repo().join("target/debug/cranwhales"),
    ]
    .into_iter()
    .find(|b| b.is_file());
    bin.unwrap_or_else(|| {
        panic!(
            "{} not built: run `cargo build -p cranwhales`",
            dir.join("debug/cranwhales").display()
        )
    })
}

/// `cranwhales serve` on a free loopback port, its store and download cache in `dir`, with
/// `args` added (`--sample-dir`, `--source-url`, …) and its output silenced; waits (at most
/// `within`: an empty store ingests its sample days first) until it listens.
pub fn start_cranwhales(dir: &Path, args: &[&std::ffi::OsStr], within: Duration) -> (Proc, u16) {
    let port = free_port();
    let p = Proc(
        Command::new(cranwhales_bin())
            .arg("serve")
            .arg("--db")
            .arg(dir.join("cw.db"))
            .args(["--addr", &format!("127.0.0.1:{port}")])
            .arg("--cache-dir")
            .arg(dir.join("cache"))
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    assert!(
        wait_port(port, within),
        "cranwhales serve did not listen on {port} within {} s",
        within.as_secs()
    );
    (p, port)
}

/// `start_cranwhales` with the repository's sample days in its empty store.
pub fn start_cranwhales_with_samples(dir: &Path) -> (Proc, u16) {
    let samples = repo().join("data/sample");
    let args = [std::ffi::OsStr::new("--sample-dir"), samples.as_os_str()];
    start_cranwhales(dir, &args, Duration::from_secs(180))
}

/// Starts `surge record` on an ephemeral port; returns the process and the proxy URL it prints.
pub fn start_record(target: &str, out: &Path) -> (Proc, String) {
    start_record_with(target, out, &[])
}

/// `record --target TARGET --listen 127.0.0.1:0 -o OUT FLAGS…`: the recorder's arguments, for the
/// binary and the in-process recorder alike.
pub fn record_argv(target: &str, out: &Path, flags: &[String]) -> Vec<String> {
    let fixed = [
        "record",
        "--target",
        target,
        "--listen",
        "127.0.0.1:0",
        "-o",
    ];
    let mut argv: Vec<String> = fixed.iter().map(|s| s.to_string()).collect();
    argv.push(out.display().to_string());
    argv.extend(flags.iter().cloned());
    argv
}

/// [`start_record`] with extra flags (TLS: `--ca-cert`, `--resolve`, ...).
pub fn start_record_with(target: &str, out: &Path, flags: &[String]) -> (Proc, String) {
    let mut child = surge()
        .args(record_argv(target, out, flags))
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut line = String::new();
    let mut reader = BufReader::new(child.stdout.take().unwrap());
    reader.read_line(&mut line).unwrap();
    // Keep draining stdout so the recorder never writes into a closed pipe.
    std::thread::spawn(move || {
        let mut rest = String::new();
        while reader.read_line(&mut rest).map(|n| n > 0).unwrap_or(false) {
            rest.clear();
        }
    });
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http://127.0.0.1:"))
        .unwrap_or_else(|| panic!("surge record printed no URL: {line:?}"))
        .to_string();
    (Proc(child), url)
}

/// Runs web/e2e/surge-record.mjs (real headless Chromium) against the proxy URL.
pub fn drive_browser(mode: &str, url: &str, har: Option<&Path>) {
    let root = repo();
    assert!(
        root.join("web/node_modules/playwright-core").exists(),
        "web/node_modules/playwright-core missing: run `make web` (cd web && npm ci)"
    );
    let mut cmd = Command::new("node");
    cmd.current_dir(&root)
        .arg("web/e2e/surge-record.mjs")
        .arg(mode)
        .arg(url);
    if let Some(h) = har {
        cmd.arg(h);
    }
    run_driver(cmd);
}

/// Runs a node browser driver to its end, asserting success; returns what it printed.
pub fn run_driver(mut cmd: Command) -> String {
    let out = cmd
        .output()
        .expect("node not found (needed for the browser driver)");
    assert!(
        out.status.success(),
        "browser driver failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Waits for a child to exit by itself (bounded); returns its exit code.
pub fn wait_exit(p: &mut Proc, within: Duration) -> Option<i32> {
    let mut code = None;
    wait_until(within, || match p.0.try_wait() {
        Ok(Some(s)) => {
            code = s.code();
            true
        }
        _ => false,
    });
    code
}

/// Sends SIGINT (what Ctrl-C sends) and waits up to `within` for the exit; returns its code.
pub fn interrupt(p: &mut Proc, within: Duration) -> Option<i32> {
    signal(p, "-INT", within)
}

/// Sends SIGTERM (what `docker stop` and a Kubernetes deadline send) and waits up to `within`
/// for the exit; returns its code.
pub fn terminate(p: &mut Proc, within: Duration) -> Option<i32> {
    signal(p, "-TERM", within)
}

/// `kill SIG PID`, then the exit code (None: still running after `within`).
fn signal(p: &mut Proc, sig: &str, within: Duration) -> Option<i32> {
    let st = Command::new("kill")
        .args([sig, &p.0.id().to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    wait_exit(p, within)
}

/// Spawns a fixture server that prints `listening PORT` as its first line; returns it and its
/// base URL.
pub fn spawn_listening(mut cmd: Command, what: &str) -> (Proc, String) {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let port: u16 = line
        .trim()
        .strip_prefix("listening ")
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("{what} printed {line:?}"));
    (Proc(child), format!("http://127.0.0.1:{port}/"))
}

/// Starts the Python fixture app (tests/fixtures/sse-app) in `mode` (normal; hang: its JSON API
/// never answers; early, worker: see app.py); returns it and its base URL.
pub fn start_sse_app(mode: &str) -> (Proc, String) {
    let mut cmd = Command::new("python3");
    cmd.arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sse-app/app.py"))
        .arg(mode);
    spawn_listening(cmd, "the fixture app (python3)")
}

/// GET on a plain socket (HTTP/1.1, Connection: close); returns status and body.
pub fn http_get(base: &str, path: &str) -> (u16, Vec<u8>) {
    let hostport = base.trim_start_matches("http://").trim_end_matches('/');
    let mut s = TcpStream::connect(hostport).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {hostport}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut all = Vec::new();
    s.read_to_end(&mut all).unwrap();
    let head_end = all.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    let status = std::str::from_utf8(&all[9..12]).unwrap().parse().unwrap();
    (status, all.split_off(head_end))
}

/// A fresh temporary directory (removed on drop).
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        let p = std::env::temp_dir().join(format!(
            "surge-test-{tag}-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        ));
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Unzips every shinycannon run of the fixtures into `dir`; returns the run directories.
pub fn unzip_runs(dir: &Path) -> Vec<PathBuf> {
    let mut zips: Vec<_> = std::fs::read_dir(shared().join("runs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "zip"))
        .collect();
    zips.sort();
    zips.iter()
        .map(|z| unzip_run(z, &dir.join(z.file_stem().unwrap())))
        .collect()
}

/// Unzips one shinycannon run (a zip holding one directory with recording.log and sessions/) into
/// `into`; returns that run directory.
pub fn unzip_run(zip: &Path, into: &Path) -> PathBuf {
    let st = Command::new("unzip")
        .args(["-q", "-o"])
        .arg(zip)
        .arg("-d")
        .arg(into)
        .status()
        .expect("unzip (apt package unzip) must be installed");
    assert!(st.success(), "unzip {} failed", zip.display());
    let rec = find_file(into, "recording.log").expect("zip has a recording.log");
    rec.parent().unwrap().to_path_buf()
}

/// A finished command's stdout, after asserting it exited 0 (both streams shown when it did not).
pub fn stdout_of_success(out: &std::process::Output) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// Every file under `dir`, recursively (to grep a run's whole output, e.g. for secrets).
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(files_under(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// An empty directory of this name under Cargo's tmp dir for integration tests (what an earlier
/// run left there removed first).
pub fn fresh_dir(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `surge report`'s arguments for `runs` as the command line's defaults give them, asking for the
/// JSON data model.
pub fn report_args(runs: Vec<PathBuf>, names: &[&str]) -> surge::report::ReportArgs {
    surge::report::ReportArgs {
        verdict: Default::default(),
        runs,
        names: names.iter().map(|s| s.to_string()).collect(),
        output: PathBuf::from("unused.html"),
        page_load_limit: Duration::from_secs(10),
        allow_mixed: false,
        json: true,
    }
}

/// The report's data model of `args`, parsed (the report must build).
pub fn report_model(args: &surge::report::ReportArgs) -> serde_json::Value {
    serde_json::from_str(&surge::report::build(args).unwrap().content).unwrap()
}

/// A plain HTTP/1.1 app on loopback, keep-alive aware; returns its port. `answer` gets each
/// request's path (on that connection's thread, so it may sleep) and returns the status line to
/// answer with a text body `ok`, or `None` to close the connection without answering.
pub fn start_http<F>(answer: F) -> u16
where
    F: Fn(&str) -> Option<&'static str> + Send + Sync + 'static,
{
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let answer = std::sync::Arc::new(answer);
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            let answer = answer.clone();
            std::thread::spawn(move || serve_http(s, &*answer));
        }
    });
    port
}

fn serve_http(stream: TcpStream, answer: &dyn Fn(&str) -> Option<&'static str>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut out = stream;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let mut len = 0usize;
        loop {
            let mut h = String::new();
            if reader.read_line(&mut h).unwrap_or(0) == 0 {
                return;
            }
            if h == "\r\n" {
                break;
            }
            if let Some(v) = h.to_ascii_lowercase().strip_prefix("content-length:") {
                len = v.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0; len];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let Some(status) = answer(line.split_whitespace().nth(1).unwrap_or("/")) else {
            return;
        };
        let resp =
            format!("HTTP/1.1 {status}\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nok");
        if out.write_all(resp.as_bytes()).is_err() {
            return;
        }
    }
}

/// An app on loopback whose `/api…` answers go round four ways by request number: 200, 500,
/// a connection closed without an answer, and one never answered (held 3 s, past a 1 s
/// `--message-timeout`); every other path is 200. Each kind of session failure, on one line.
pub fn start_four_way_app() -> u16 {
    let api = std::sync::atomic::AtomicU32::new(0);
    start_http(move |path| {
        if !path.starts_with("/api") {
            return Some("200 OK");
        }
        match api.fetch_add(1, std::sync::atomic::Ordering::SeqCst) % 4 {
            0 => Some("200 OK"),
            1 => Some("500 Internal Server Error"),
            2 => None,
            _ => {
                // why: the app's own slowness is what this answer tests: held past the run's
                // 1 s --message-timeout, then closed.
                std::thread::sleep(Duration::from_secs(3));
                None
            }
        }
    })
}

/// First file named `name` below `dir`.
pub fn find_file(dir: &Path, name: &str) -> Option<PathBuf> {
    for e in std::fs::read_dir(dir).ok()? {
        let p = e.ok()?.path();
        if p.is_dir() {
            if let Some(f) = find_file(&p, name) {
                return Some(f);
            }
        } else if p.file_name().is_some_and(|n| n == name) {
            return Some(p);
        }
    }
    None
}

/// A parsed session CSV: comment lines, column header, rows split on commas.
pub struct Csv {
    pub comments: Vec<String>,
    pub header: String,
    pub rows: Vec<Vec<String>>,
}

/// Reads one shinycannon/surge session CSV.
pub fn read_csv(path: &Path) -> Csv {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let mut comments = Vec::new();
    let mut header = String::new();
    for l in lines.by_ref() {
        if let Some(c) = l.strip_prefix('#') {
            comments.push(c.to_string());
        } else {
            header = l.to_string();
            break;
        }
    }
    let rows = lines
        .filter(|l| !l.is_empty())
        .map(|l| l.splitn(7, ',').map(str::to_string).collect())
        .collect();
    Csv {
        comments,
        header,
        rows,
    }
}

/// All CSVs of a run directory.
pub fn session_csvs(run: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(run.join("sessions"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "csv"))
        .collect();
    v.sort();
    v
}

/// How many rows of `event` a run's session CSVs hold (counted here, not by surge).
pub fn count_rows(run: &Path, event: &str) -> usize {
    let rows = |f: &PathBuf| read_csv(f).rows.iter().filter(|r| r[3] == event).count();
    session_csvs(run).iter().map(rows).sum()
}

/// The set of event names used in a run's CSVs.
pub fn vocabulary(run: &Path) -> BTreeSet<String> {
    let mut set = BTreeSet::new();
    for f in session_csvs(run) {
        for r in read_csv(&f).rows {
            set.insert(r[3].clone());
        }
    }
    set
}

/// summary.json of a surge run.
pub fn summary(run: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(run.join("summary.json")).unwrap()).unwrap()
}
