//! `surge capacity` passes replay's per-session flags to every step: `--data`/`--data-mode`,
//! `--capture`, the sign-in flags (`--api-key-env`, `--header-env`) and `-H`. The target is a
//! loopback server that refuses a request without the API key, the env header or the plain
//! header (401), hands out a token on its home page and refuses a day request that does not send
//! one of its tokens back (400), and counts the distinct days asked for. A step that lost any of
//! those flags fails every session, breaks the failure rate and the search answers "breaks".

use crate::common;

use common::{fresh_dir, surge};
use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::{Arc, Mutex};

const API_KEY: &str = "k-3a91-secret-api-key";
const TOKEN_HEADER: &str = "t-77c2-secret-header";

/// What the server saw: the tokens it issued, the days asked with a valid token, refusals.
#[derive(Default)]
struct Seen {
    tokens: BTreeSet<String>,
    days: BTreeSet<String>,
    refused: u32,
}

/// The server's answer to one request: status line and body.
fn answer(seen: &Mutex<Seen>, path: &str, headers: &[(String, String)]) -> (&'static str, String) {
    let h = |name: &str| {
        (headers.iter())
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    };
    let mut s = seen.lock().unwrap();
    let signed_in = h("authorization") == Some(&format!("Key {API_KEY}"))
        && h("x-token") == Some(TOKEN_HEADER)
        && h("x-plain") == Some("yes");
    if !signed_in {
        s.refused += 1;
        return ("401 Unauthorized", "sign in first".into());
    }
    if path == "/" {
        let token = format!("tok{}", s.tokens.len());
        s.tokens.insert(token.clone());
        return ("200 OK", format!("<p>token={token};</p>"));
    }
    // /day/<day>?t=<token>
    let valid = (path.strip_prefix("/day/"))
        .and_then(|rest| rest.split_once("?t="))
        .filter(|(day, t)| s.tokens.contains(*t) && day.starts_with("2015-"));
    match valid {
        Some((day, _)) => {
            let day = day.to_string();
            s.days.insert(day);
            ("200 OK", "day".into())
        }
        None => {
            s.refused += 1;
            ("400 Bad Request", format!("bad day request {path}"))
        }
    }
}

/// The server on loopback (a thread per connection, keep-alive); returns its base URL.
fn start_server(seen: Arc<Mutex<Seen>>) -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            let seen = seen.clone();
            std::thread::spawn(move || serve(s, &seen));
        }
    });
    format!("http://127.0.0.1:{port}/")
}

fn serve(stream: TcpStream, seen: &Mutex<Seen>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut out = stream;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let mut headers = Vec::new();
        loop {
            let mut h = String::new();
            if reader.read_line(&mut h).unwrap_or(0) == 0 {
                return;
            }
            if h == "\r\n" {
                break;
            }
            if let Some((k, v)) = h.split_once(':') {
                headers.push((k.trim().to_string(), v.trim().to_string()));
            }
        }
        let len = (headers.iter())
            .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
            .and_then(|(_, v)| v.parse().ok())
            .unwrap_or(0usize);
        let mut body = vec![0; len];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let path = line.split_whitespace().nth(1).unwrap_or("/");
        let (status, body) = answer(seen, path, &headers);
        let resp = format!(
            "HTTP/1.1 {status}\r\nContent-Type: text/html\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        if out.write_all(resp.as_bytes()).is_err() {
            return;
        }
    }
}

/// A surge/http recording: the home page, then the day of `${day}` with the captured token.
fn recording(dir: &Path) -> std::path::PathBuf {
    let p = dir.join("recording.log");
    std::fs::write(
        &p,
        "# version: 1\n# target_url: http://127.0.0.1:1\n# target_type: surge/http\n\
         {\"type\":\"REQ_HOME\",\"begin\":\"2026-01-01T00:00:00.000Z\",\"end\":\"2026-01-01T00:00:00.010Z\",\"status\":200,\"url\":\"/\"}\n\
         {\"type\":\"REQ_GET\",\"begin\":\"2026-01-01T00:00:00.020Z\",\"end\":\"2026-01-01T00:00:00.030Z\",\"status\":200,\"url\":\"/day/${day}?t=${TICKET}\"}\n",
    )
    .unwrap();
    p
}

#[test]
fn every_step_gets_data_capture_and_sign_in() {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let url = start_server(seen.clone());
    let dir = fresh_dir("capacity-session-flags");
    let rec = recording(&dir);
    let days: Vec<String> = (1..=20).map(|d| format!("2015-02-{d:02}")).collect();
    let csv = dir.join("days.csv");
    std::fs::write(&csv, format!("day\n{}\n", days.join("\n"))).unwrap();
    let out = dir.join("cap");
    let o = surge()
        .arg("capacity")
        .arg(&rec)
        .arg(&url)
        .args(["--slo", "page_load:p95<5s", "--max-failure-rate", "0"])
        .args(["--start", "2", "--max-load", "4", "--step-sessions", "20"])
        .args(["--step-max", "20s", "--think-time", "none"])
        .arg("--data")
        .arg(&csv)
        .args(["--data-mode", "sequential"])
        .args(["--capture", r"TICKET=token=(\w+);"])
        .args(["--api-key-env", "CAP_TEST_KEY"])
        .args(["--header-env", "X-Token: CAP_TEST_HEADER"])
        .args(["-H", "X-Plain: yes"])
        .arg("--output-dir")
        .arg(&out)
        .env("CAP_TEST_KEY", API_KEY)
        .env("CAP_TEST_HEADER", TOKEN_HEADER)
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert_eq!(o.status.code(), Some(0), "{stdout}{stderr}");
    assert!(
        stdout.starts_with("holds at least 4 concurrent users"),
        "{stdout}{stderr}"
    );
    let cap: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("capacity.json")).unwrap()).unwrap();
    let steps = cap["steps"].as_array().unwrap();
    assert_eq!(
        steps.iter().map(|s| s["load"].as_f64()).collect::<Vec<_>>(),
        [Some(2.0), Some(4.0)],
        "{cap}"
    );
    for s in steps {
        assert_eq!(s["failed"].as_u64(), Some(0), "{s}");
        // Every session of the step, warm-up included, signed in, captured and sent a day.
        let summary = common::summary(&out.join(s["dir"].as_str().unwrap()));
        assert_eq!(summary["sessions"]["failed"].as_u64(), Some(0), "{summary}");
    }
    let seen = seen.lock().unwrap();
    assert_eq!(seen.refused, 0, "requests refused by the server");
    // Sequential rows: each step's ≥ 22 sessions took rows 1, 2, ... (20 rows, wrapping) so every day was asked, and
    // only days of the file.
    assert_eq!(
        seen.days,
        days.iter().cloned().collect::<BTreeSet<_>>(),
        "distinct days asked"
    );
    assert!(seen.tokens.len() >= 44, "{} tokens", seen.tokens.len());
    // No secret in any file the search wrote, nor on its output.
    for f in common::files_under(&out) {
        let text = String::from_utf8_lossy(&std::fs::read(&f).unwrap()).into_owned();
        for secret in [API_KEY, TOKEN_HEADER] {
            assert!(!text.contains(secret), "{} holds a secret", f.display());
        }
    }
    assert!(!stdout.contains(API_KEY) && !stderr.contains(API_KEY));
}

/// A bad `--data` file stops the search before anything is written: one line, exit status 2.
#[test]
fn a_bad_data_file_is_one_line_before_any_step() {
    let dir = fresh_dir("capacity-session-flags-bad");
    let rec = recording(&dir);
    let out = dir.join("cap");
    let o = surge()
        .arg("capacity")
        .arg(&rec)
        .arg("http://127.0.0.1:9/")
        .args(["--slo", "page_load:p95<5s"])
        .arg("--data")
        .arg(dir.join("missing.csv"))
        .arg("--output-dir")
        .arg(&out)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("missing.csv"), "{stderr}");
    assert!(!out.exists());
}
