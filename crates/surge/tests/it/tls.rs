//! surge over TLS, with real parts only: openssl makes a CA and server certificates for
//! `app.surge.test` at test time (plus an expired one, one for another name, and a second CA),
//! Debian's HAProxy terminates TLS with them on loopback ports in front of the real R Shiny app and
//! of `cranwhales serve`, and surge reaches it as `https://app.surge.test:PORT/` with `--resolve
//! app.surge.test:PORT:127.0.0.1 --ca-cert ca.pem`: record in Chromium through it, replay 20 users
//! (HTTP and WSS), import an https HAR, bench it (HTTP/1.1 and HTTP/2 via ALPN). HAProxy's own log
//! (a file) counts the requests that crossed TLS. Wrong CA, expired certificate and wrong name each
//! stop replay, bench and record with exit 2 and one line naming the host and the reason.
//! Skips (saying why) only when haproxy or openssl is missing (`make deps` installs both).

use crate::common;

use common::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};
use surge::recording::{Kind, Recording};

const HOST: &str = "app.surge.test";

fn haproxy_bin() -> Option<PathBuf> {
    ["/usr/sbin/haproxy", "/usr/bin/haproxy"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
}

/// The reason to skip, when a tool is missing.
fn missing_tools() -> Option<String> {
    if haproxy_bin().is_none() {
        return Some("haproxy not installed (Debian package haproxy; make deps)".into());
    }
    let openssl = Command::new("openssl").arg("version").output();
    if !openssl.is_ok_and(|o| o.status.success()) {
        return Some("openssl not installed (Debian package openssl; make deps)".into());
    }
    None
}

macro_rules! need_tools {
    () => {
        if let Some(why) = missing_tools() {
            eprintln!("SKIPPED: {why}");
            return;
        }
    };
}

fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Certificates made here: `ca.pem` (trusted with --ca-cert), `other-ca.pem` (a CA that signed
/// nothing HAProxy shows), and HAProxy's `good.pem`, `expired.pem`, `wrong-name.pem` (cert + key).
struct Pki {
    dir: PathBuf,
}

impl Pki {
    fn make(dir: &Path) -> Pki {
        let ec = [
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
        ];
        for ca in ["ca", "other-ca"] {
            let (key, pem, subj) = (
                format!("{ca}.key"),
                format!("{ca}.pem"),
                format!("/CN=surge test {ca}"),
            );
            let mut a = vec!["req", "-x509"];
            a.extend(ec);
            a.extend(["-keyout", &key, "-out", &pem, "-days", "30", "-subj", &subj]);
            openssl(dir, &a);
        }
        let mut a = vec!["req"];
        a.extend(ec);
        a.extend([
            "-keyout",
            "srv.key",
            "-out",
            "srv.csr",
            "-subj",
            "/CN=server",
        ]);
        openssl(dir, &a);
        for (name, san, days) in [
            ("good", HOST, "30"),
            ("expired", HOST, "-1"),
            ("wrong-name", "other.surge.test", "30"),
        ] {
            let ext = format!("{name}.ext");
            std::fs::write(dir.join(&ext), format!("subjectAltName=DNS:{san}\n")).unwrap();
            let crt = format!("{name}.crt");
            openssl(
                dir,
                &[
                    "x509",
                    "-req",
                    "-in",
                    "srv.csr",
                    "-CA",
                    "ca.pem",
                    "-CAkey",
                    "ca.key",
                    "-CAcreateserial",
                    "-out",
                    &crt,
                    "-days",
                    days,
                    "-extfile",
                    &ext,
                ],
            );
            let mut pem = std::fs::read(dir.join(&crt)).unwrap();
            pem.extend(std::fs::read(dir.join("srv.key")).unwrap());
            std::fs::write(dir.join(format!("{name}.pem")), pem).unwrap();
        }
        Pki {
            dir: dir.to_path_buf(),
        }
    }

    fn file(&self, name: &str) -> String {
        self.dir.join(name).display().to_string()
    }
}

/// HAProxy terminating TLS on three loopback ports (good, expired, wrong-name certificates) in
/// front of one backend; its request log (one line per request) is collected.
struct Haproxy {
    _proc: Proc,
    good: u16,
    expired: u16,
    wrong: u16,
    log: PathBuf,
}

impl Haproxy {
    fn start(pki: &Pki, backend: u16) -> Haproxy {
        let (good, expired, wrong) = (free_port(), free_port(), free_port());
        let front = |name: &str, port: u16| {
            format!(
                "frontend {name}\n  bind 127.0.0.1:{port} ssl crt {} alpn h2,http/1.1\n  default_backend app\n",
                pki.file(&format!("{name}.pem"))
            )
        };
        let cfg = format!(
            "global\n  log stdout format raw local0\n  maxconn 4096\n\
             defaults\n  mode http\n  log global\n  option httplog\n  timeout connect 5s\n  \
             timeout client 60s\n  timeout server 60s\n  timeout tunnel 1h\n\
             {}{}{}backend app\n  server s1 127.0.0.1:{backend}\n",
            front("good", good),
            front("expired", expired),
            front("wrong-name", wrong),
        );
        let path = pki.dir.join("haproxy.cfg");
        std::fs::write(&path, cfg).unwrap();
        // Logs go to a file: HAProxy drops log lines a full pipe would block on.
        let log = pki.dir.join("haproxy.log");
        let child = Command::new(haproxy_bin().unwrap())
            .args(["-db", "-f"])
            .arg(&path)
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&log).unwrap())
            .stderr(std::fs::File::create(pki.dir.join("haproxy.err")).unwrap())
            .spawn()
            .unwrap();
        let proc = Proc(child);
        for p in [good, expired, wrong] {
            let err = std::fs::read_to_string(pki.dir.join("haproxy.err")).unwrap_or_default();
            assert!(wait_port(p, Duration::from_secs(10)), "haproxy: {err}");
        }
        Haproxy {
            _proc: proc,
            good,
            expired,
            wrong,
            log,
        }
    }

    /// Log lines (so far) of the `good` frontend that contain `needle`.
    fn count(&self, needle: &str) -> usize {
        let log = std::fs::read_to_string(&self.log).unwrap_or_default();
        (log.lines())
            .filter(|l| l.contains(" good~ ") && l.contains(needle))
            .count()
    }

    /// Waits (bounded) until `count(needle)` reaches `n`; returns the count.
    fn wait_count(&self, needle: &str, n: usize) -> usize {
        wait_until(Duration::from_secs(5), || self.count(needle) >= n);
        self.count(needle)
    }
}

/// `https://app.surge.test:PORT/` and the flags that reach it.
fn tls_flags(pki: &Pki, port: u16) -> (String, Vec<String>) {
    (
        format!("https://{HOST}:{port}/"),
        vec![
            "--resolve".into(),
            format!("{HOST}:{port}:127.0.0.1"),
            "--ca-cert".into(),
            pki.file("ca.pem"),
        ],
    )
}

/// A clean replay over TLS (exit 0, no failed session, no `insecure`); returns summary.json.
fn replay_tls(
    rec: &Path,
    target: &str,
    flags: &[String],
    users: u32,
    run: &Path,
    extra: &[&str],
) -> serde_json::Value {
    let mut all: Vec<&str> = flags.iter().map(String::as_str).collect();
    all.extend(extra);
    let s = replay_clean(rec, target, users, run, &all);
    assert!(s["sessions"]["started"].as_u64().unwrap() >= u64::from(users));
    assert!(
        s.get("insecure").is_none(),
        "verified run: no insecure field"
    );
    s
}

/// HTTP requests a run's summary counts (every REQ_* event), for comparing with HAProxy's log.
fn http_requests(s: &serde_json::Value) -> usize {
    let ev = s["events"].as_object().unwrap();
    (ev.iter())
        .filter(|(k, _)| k.starts_with("REQ_"))
        .map(|(_, v)| v["count"].as_u64().unwrap() as usize)
        .sum()
}

#[test]
fn cranwhales_behind_haproxy_tls_records_replays_and_benches() {
    need_tools!();
    let tmp = TempDir::new("tls-cw");
    let pki = Pki::make(tmp.path());
    let (_cw, cw_port) = start_cranwhales_with_samples(tmp.path());
    let h = Haproxy::start(&pki, cw_port);
    let (target, flags) = tls_flags(&pki, h.good);

    // Record in Chromium: the browser talks http to the recorder, the recorder https upstream.
    let rec_path = tmp.path().join("recording.log");
    let (mut rec, proxy) = record_in_process(&target, &rec_path, &flags);
    drive_browser("cranwhales", &proxy, None);
    assert!(rec.stop(Duration::from_secs(10)).is_some());
    let recording = Recording::load(&rec_path).unwrap();
    assert_eq!(recording.target_url.as_deref(), Some(target.as_str()));
    assert_eq!(recording.events[0].kind, Kind::ReqHome);
    assert!(
        recording.events.iter().any(|e| e.url.contains("count=8")),
        "the changed control was recorded"
    );
    assert!(h.count("GET /api/") >= 2, "the recording went through TLS");

    // Replay 20 users: 0 failures, and HAProxy's TLS frontend saw every request.
    let before = h.count(" HTTP/1.1\"");
    let run = tmp.path().join("run");
    let s = replay_tls(
        &rec_path,
        &target,
        &flags,
        20,
        &run,
        &["--start-interval", "10ms"],
    );
    let n = http_requests(&s);
    assert_eq!(
        n as u64,
        s["sessions"]["started"].as_u64().unwrap() * recording.events.len() as u64
    );
    assert_eq!(h.wait_count(" HTTP/1.1\"", before + n) - before, n);

    // Bench over TLS, HTTP/1.1 and HTTP/2 (ALPN h2): each answered request is in HAProxy's log.
    for (tag, n, extra) in [("h1", 400, vec![]), ("h2", 200, vec!["--http2"])] {
        let url = format!("{target}?surge-bench-{tag}");
        let n_s = n.to_string();
        let mut argv = vec!["-n", &n_s, "-c", "8", "-t", "1", "--json", &url];
        argv.extend(flags.iter().map(String::as_str));
        argv.extend(&extra);
        let (code, r) = bench_in_process(&argv);
        assert_eq!(code, Some(0), "{r}");
        assert_eq!(r["ok"].as_u64(), Some(n as u64), "{r}");
        let proto = if tag == "h2" { "HTTP/2.0" } else { "HTTP/1.1" };
        assert_eq!(h.wait_count(&format!("surge-bench-{tag} {proto}"), n), n);
    }
}

/// A recording with one request (a surge/http REQ_HOME), for the failure cases.
fn one_request_recording(dir: &Path) -> PathBuf {
    let p = dir.join("one.log");
    std::fs::write(
        &p,
        "# version: 1\n# target_url: http://x/\n# target_type: surge/http\n\
         {\"type\":\"REQ_HOME\",\"begin\":\"2026-01-01T00:00:00.000Z\",\"end\":\"2026-01-01T00:00:00.010Z\",\"status\":200,\"url\":\"/\"}\n",
    )
    .unwrap();
    p
}

/// Runs `cmd` (bounded by its own handshake timeout) and returns its output and how long it took.
fn run_timed(mut cmd: Command) -> (Output, Duration) {
    let t = Instant::now();
    let out = cmd.stdin(Stdio::null()).output().unwrap();
    (out, t.elapsed())
}

/// Exit status 2, within `within`, and exactly one stderr line containing every word of `want`.
fn assert_one_line(what: &str, (out, took): (Output, Duration), want: &[&str], within: Duration) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{what}: {err}");
    assert!(took < within, "{what}: took {took:?}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "{what}: {err}");
    for w in want {
        assert!(lines[0].contains(w), "{what}: {:?} lacks {w:?}", lines[0]);
    }
}

#[test]
fn certificate_errors_stop_replay_bench_and_record_with_one_line() {
    need_tools!();
    let tmp = TempDir::new("tls-errors");
    let pki = Pki::make(tmp.path());
    let backend = start_http(|_| Some("200 OK"));
    let h = Haproxy::start(&pki, backend);
    let rec = one_request_recording(tmp.path());
    let cases = [
        (h.good, "other-ca.pem", "unknown issuer"),
        (h.expired, "ca.pem", "certificate expired"),
        (h.wrong, "ca.pem", "name mismatch"),
    ];
    for (port, ca, reason) in cases {
        let target = format!("https://{HOST}:{port}/");
        let resolve = format!("{HOST}:{port}:127.0.0.1");
        let tls = ["--resolve", resolve.as_str(), "--ca-cert", &pki.file(ca)];
        let want = [format!("{HOST}:{port}"), reason.to_string()];
        let want: Vec<&str> = want.iter().map(String::as_str).collect();
        let run = tmp.path().join(format!("run-{port}"));
        let mut replay = replay_cmd(&rec, &target, 1000, &run);
        replay.args(tls);
        assert_one_line("replay", run_timed(replay), &want, Duration::from_secs(10));
        assert!(
            !run.exists(),
            "no run directory for a run that did not start"
        );
        let mut bench = surge();
        bench.args(["bench", "-n", "10", &target]).args(tls);
        assert_one_line("bench", run_timed(bench), &want, Duration::from_secs(10));
        let mut record = surge();
        record
            .args([
                "record",
                "--target",
                &target,
                "--listen",
                "127.0.0.1:0",
                "-o",
            ])
            .arg(tmp.path().join("r.log"))
            .args(tls);
        assert_one_line("record", run_timed(record), &want, Duration::from_secs(10));
    }
    // The names in the wrong-name certificate are shown.
    let resolve = format!("{HOST}:{}:127.0.0.1", h.wrong);
    let mut bench = surge();
    bench
        .args(["bench", "-n", "1", &format!("https://{HOST}:{}/", h.wrong)])
        .args(["--resolve", &resolve, "--ca-cert", &pki.file("ca.pem")]);
    assert_one_line(
        "bench",
        run_timed(bench),
        &["it names other.surge.test"],
        Duration::from_secs(10),
    );

    // --insecure accepts the expired certificate: a warning line, and summary.json says so.
    let run = tmp.path().join("insecure");
    let resolve = format!("{HOST}:{}:127.0.0.1", h.expired);
    let out = replay_cmd(&rec, &format!("https://{HOST}:{}/", h.expired), 3, &run)
        .args([
            "--resolve",
            &resolve,
            "--insecure",
            "--start-interval",
            "10ms",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("warning: --insecure"), "{err}");
    let s = summary(&run);
    assert_eq!(s["insecure"], serde_json::Value::Bool(true));
    assert_eq!(s["sessions"]["failed"].as_u64(), Some(0));
}

#[test]
fn a_silent_tls_server_fails_the_handshake_instead_of_hanging() {
    // A listener that accepts and never answers: the handshake times out, exit 2, one line.
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for s in l.incoming().flatten() {
            held.push(s);
        }
    });
    let tmp = TempDir::new("tls-silent");
    let rec = one_request_recording(tmp.path());
    let target = format!("https://127.0.0.1:{port}/");
    let mut replay = replay_cmd(&rec, &target, 5, &tmp.path().join("run"));
    replay.arg("--insecure");
    let (out, took) = run_timed(replay);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(took < Duration::from_secs(15), "{took:?}");
    assert!(
        err.lines()
            .last()
            .unwrap()
            .contains("no handshake answer within 10s"),
        "{err}"
    );
}

#[test]
fn shiny_app_behind_haproxy_tls_records_and_replays_over_wss() {
    need_tools!();
    let tmp = TempDir::new("tls-shiny");
    let pki = Pki::make(tmp.path());
    let (_r, shiny_port) = start_shiny();
    let h = Haproxy::start(&pki, shiny_port);
    let (target, flags) = tls_flags(&pki, h.good);

    let rec_path = tmp.path().join("recording.log");
    let har = tmp.path().join("session.har");
    let (mut rec, proxy) = record_in_process(&target, &rec_path, &flags);
    drive_browser("shiny", &proxy, Some(&har));
    assert!(rec.wait(Duration::from_secs(20)).is_some());
    let recording = Recording::load(&rec_path).unwrap();
    assert_eq!(recording.target_type.as_deref(), Some("R/Shiny"));
    let text = std::fs::read_to_string(&rec_path).unwrap();
    assert!(
        text.contains("Result: 343"),
        "the app's output came back over wss"
    );
    assert!(text.contains("${SESSION}"));

    let run = tmp.path().join("run");
    let extra = ["--start-interval", "150ms", "--message-timeout", "20s"];
    let s = replay_tls(&rec_path, &target, &flags, 20, &run, &extra);
    let ws_opens = s["events"]["WS_OPEN"]["count"].as_u64().unwrap();
    assert_eq!(ws_opens, s["sessions"]["started"].as_u64().unwrap());
    // Each replayed WebSocket went through HAProxy's TLS frontend (logged when it closes).
    assert!(h.wait_count("/websocket", ws_opens as usize + 1) > ws_opens as usize);

    // The browser's HAR as an https page would have saved it: import-har keeps the https origin,
    // and the recording replays over TLS.
    let proxy_origin = proxy.trim_end_matches('/');
    let https_har = std::fs::read_to_string(&har)
        .unwrap()
        .replace(proxy_origin, target.trim_end_matches('/'))
        .replace(
            &proxy_origin.replace("http://", "ws://"),
            &target.trim_end_matches('/').replace("https://", "wss://"),
        );
    std::fs::write(tmp.path().join("https.har"), https_har).unwrap();
    let har_rec = tmp.path().join("har.log");
    let hr = import_har(&tmp.path().join("https.har"), &har_rec);
    assert_eq!(hr.target_url.as_deref(), Some(target.as_str()));
    assert!(hr.events.iter().any(|e| e.kind == Kind::WsOpen));
    replay_tls(
        &har_rec,
        &target,
        &flags,
        2,
        &tmp.path().join("har-run"),
        &extra,
    );
}

/// `openssl s_server` on a free loopback port with `cert` and `key` (the handshake is all these
/// tests need); killed on drop.
fn s_server(dir: &Path, cert: &str, key: &str) -> (Proc, u16) {
    let port = free_port();
    let child = Command::new("openssl")
        .current_dir(dir)
        .args(["s_server", "-quiet", "-www", "-accept", &port.to_string()])
        .args(["-cert", cert, "-key", key])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let p = Proc(child);
    assert!(wait_port(port, Duration::from_secs(10)), "openssl s_server");
    (p, port)
}

/// A self-signed certificate made as a CA (`openssl req -x509`'s default CA:TRUE), trusted with
/// `--ca-cert` or not: replay and bench stop with exit 2 and one line that says so and gives the
/// way out (where rustls's words were `bad certificate: Other(OtherError(CaUsedAsEndEntity))`);
/// a self-signed CA:FALSE one untrusted is an unknown issuer with the same way out, and each way
/// out works (`--ca-cert` for the CA:FALSE one, `--insecure`).
#[test]
fn a_self_signed_certificate_gets_a_sentence_with_the_way_out() {
    need_tools!();
    let tmp = TempDir::new("tls-self-signed");
    let san = format!("subjectAltName=DNS:{HOST}");
    // `ca`: as `openssl req -x509` makes it (CA:TRUE); `leaf`: the same, marked CA:FALSE.
    for (name, extra) in [
        ("ca", None),
        ("leaf", Some("basicConstraints=critical,CA:FALSE")),
    ] {
        let (key, pem) = (format!("{name}.key"), format!("{name}.pem"));
        let mut args = vec!["req", "-x509", "-newkey", "ec", "-pkeyopt"];
        args.extend([
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            &key,
            "-out",
            &pem,
        ]);
        args.extend([
            "-days",
            "30",
            "-subj",
            "/CN=app.surge.test",
            "-addext",
            &san,
        ]);
        args.extend(extra.iter().flat_map(|e| ["-addext", e]));
        openssl(tmp.path(), &args);
    }
    let (_ca_srv, ca_port) = s_server(tmp.path(), "ca.pem", "ca.key");
    let (_leaf_srv, leaf_port) = s_server(tmp.path(), "leaf.pem", "leaf.key");
    let rec = one_request_recording(tmp.path());
    let file = |n: &str| tmp.path().join(n).display().to_string();
    let (ca, leaf) = (file("ca.pem"), file("leaf.pem"));
    let self_ca = "self-signed CA certificate used as the server's own (CA:TRUE";
    let cases: [(u16, &[&str], &str); 3] = [
        (ca_port, &[], self_ca),
        (ca_port, &["--ca-cert", &ca], self_ca),
        (leaf_port, &[], "certificate from an unknown issuer"),
    ];
    for (port, flags, reason) in cases {
        let target = format!("https://{HOST}:{port}/");
        let resolve = format!("{HOST}:{port}:127.0.0.1");
        let want = [
            format!("TLS handshake with {HOST}:{port}: {reason}"),
            "--ca-cert FILE".into(),
            "or skip the check with --insecure".into(),
        ];
        let want: Vec<&str> = want.iter().map(String::as_str).collect();
        let run = tmp.path().join("run");
        let mut replay = replay_cmd(&rec, &target, 2, &run);
        replay.args(["--resolve", &resolve]).args(flags);
        assert_one_line("replay", run_timed(replay), &want, Duration::from_secs(10));
        assert!(!run.exists(), "no run directory");
        let mut bench = surge();
        bench
            .args(["bench", "-n", "2", &target, "--resolve", &resolve])
            .args(flags);
        assert_one_line("bench", run_timed(bench), &want, Duration::from_secs(10));
    }
    // The ways out work: the CA:FALSE one trusted with --ca-cert, the CA one with --insecure.
    let ways_out: [(u16, &[&str]); 2] = [
        (leaf_port, &["--ca-cert", &leaf]),
        (ca_port, &["--insecure"]),
    ];
    for (port, flags) in ways_out {
        let target = format!("https://{HOST}:{port}/");
        let mut bench = surge();
        bench
            .args(["bench", "-n", "2", "--no-keepalive", &target])
            .args(flags);
        bench.args(["--resolve", &format!("{HOST}:{port}:127.0.0.1")]);
        let (out, _) = run_timed(bench);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
