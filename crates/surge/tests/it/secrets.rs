//! Secrets never printed (issue 30): a sign-in server that echoes the credentials it was sent in
//! its refusal cannot get them into anything surge prints or writes.

use crate::common;

use common::*;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

/// The test's secrets: the password has a space and a quote, so the echo is form-decoded and
/// quoted escaped (`\"`) in surge's one-line refusal.
const USER: &str = "echo-user-7Qx";
const PASS: &str = "pw 9Lk\"never-shown";

/// A `--login-form` app at `/login` that accepts the first `accept` sign-ins (cookie `sid`) and
/// answers every later one `401 Incorrect username or password: user=… password=…`, the values
/// decoded from the form it was sent; anything else is 200. Its base URL.
fn echo_signin_app(accept: u32) -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", l.local_addr().unwrap());
    let accepted = Arc::new(AtomicU32::new(0));
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            let accepted = accepted.clone();
            std::thread::spawn(move || serve(s, accept, &accepted));
        }
    });
    url
}

fn serve(s: TcpStream, accept: u32, accepted: &AtomicU32) {
    let mut r = BufReader::new(s.try_clone().unwrap());
    let mut out = s;
    loop {
        let mut first = String::new();
        if r.read_line(&mut first).unwrap_or(0) == 0 {
            return;
        }
        let mut len = 0;
        loop {
            let mut h = String::new();
            if r.read_line(&mut h).unwrap_or(0) == 0 {
                return;
            }
            if h == "\r\n" {
                break;
            }
            if let Some(v) = h.to_ascii_lowercase().strip_prefix("content-length:") {
                len = v.trim().parse().unwrap();
            }
        }
        let mut body = vec![0; len];
        if r.read_exact(&mut body).is_err() {
            return;
        }
        let (status, extra, text) = if first.starts_with("POST /login ") {
            let form: Vec<(String, String)> = form_urlencoded::parse(&body).into_owned().collect();
            let get = |k: &str| form.iter().find(|(n, _)| n == k).map_or("", |(_, v)| v);
            if accepted.fetch_add(1, Ordering::SeqCst) < accept {
                (
                    "303 See Other",
                    "Set-Cookie: sid=ok; Path=/\r\nLocation: /\r\n",
                    String::new(),
                )
            } else {
                let echo = format!(
                    "Incorrect username or password: user={} password={}\n",
                    get("username"),
                    get("password")
                );
                ("401 Unauthorized", "", echo)
            }
        } else if first.starts_with("GET /login ") {
            let page =
                r#"<form method="post"><input type="hidden" name="csrf" value="c1"/></form>"#;
            ("200 OK", "", page.to_string())
        } else {
            ("200 OK", "", "ok".to_string())
        };
        let resp = format!(
            "HTTP/1.1 {status}\r\nContent-Type: text/html\r\nContent-Length: {}\r\n{extra}\r\n{text}",
            text.len()
        );
        if out.write_all(resp.as_bytes()).is_err() {
            return;
        }
    }
}

/// `surge replay` signing in with `--login-form`, the secrets in its environment.
fn replay_signing_in(
    rec: &std::path::Path,
    url: &str,
    run: &std::path::Path,
) -> std::process::Output {
    replay_cmd(rec, url, 3, run)
        .args(["--login-form", "/login", "--user-env", "ECHO_USER"])
        .args(["--pass-env", "ECHO_PASS", "--start-interval", "0"])
        .args([
            "--think-time",
            "none",
            "--debug-log",
            "--log-level",
            "debug",
        ])
        .env("ECHO_USER", USER)
        .env("ECHO_PASS", PASS)
        .output()
        .unwrap()
}

/// Where any form of a secret shows in `text` (as sent, or as surge quotes a server's answer).
fn leaks(text: &str) -> Vec<&'static str> {
    let quoted = PASS.replace('"', "\\\"");
    [USER, PASS, "pw 9Lk", "never-shown"]
        .into_iter()
        .filter(|s| text.contains(s))
        .chain(text.contains(&quoted).then_some("the quoted password"))
        .collect()
}

/// A sign-in server that echoes the user name and password in its 401 (`… answered 401:
/// Incorrect username or password: user=… password=…`): the refused first sign-in's error line
/// shows `***` in their place, and when sessions' sign-ins are refused later, no output of the
/// run (stdout, stderr, every file of the run directory with `--debug-log`, report.html) holds
/// either value; `***` stands where they were.
#[test]
fn a_server_echoing_the_credentials_cannot_get_them_printed() {
    let tmp = TempDir::new("surge-echo-secrets");
    let rec = tmp.path().join("rec.log");
    std::fs::write(
        &rec,
        "# version: 1\n# target_url: http://127.0.0.1:1/\n# target_type: surge/http\n\
         {\"type\":\"REQ_HOME\",\"begin\":\"2026-01-01T00:00:00.000Z\",\"end\":\"2026-01-01T00:00:00.010Z\",\"status\":200,\"url\":\"/\"}\n",
    )
    .unwrap();

    // Every sign-in refused: the run stops before it starts, with the one error line.
    let run = tmp.path().join("refused");
    let out = replay_signing_in(&rec, &echo_signin_app(0), &run);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("answered 401: Incorrect username or password: user=*** password=***"),
        "{err}"
    );
    let printed = format!("{}{err}", String::from_utf8_lossy(&out.stdout));
    assert_eq!(leaks(&printed), Vec::<&str>::new(), "{printed}");

    // The run's check passes, every session's sign-in is refused: the reasons go everywhere.
    let run = tmp.path().join("run");
    let out = replay_signing_in(&rec, &echo_signin_app(1), &run);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let report = tmp.path().join("report.html");
    let r = surge()
        .arg("report")
        .arg(&run)
        .arg("-o")
        .arg(&report)
        .output()
        .unwrap();
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let mut texts = vec![
        (
            "stdout".to_string(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        ),
        ("stderr".to_string(), err.into_owned()),
        (
            "report.html".to_string(),
            std::fs::read_to_string(&report).unwrap(),
        ),
    ];
    for f in files_under(&run) {
        let text = String::from_utf8_lossy(&std::fs::read(&f).unwrap()).into_owned();
        texts.push((f.display().to_string(), text));
    }
    for (name, text) in &texts {
        assert_eq!(leaks(text), Vec::<&str>::new(), "{name}: {text}");
    }
    let masked = |name: &str| {
        let text = &texts.iter().find(|(n, _)| n.ends_with(name)).unwrap().1;
        text.contains("user=*** password=***")
    };
    for name in ["stderr", "summary.json", "debug.log", "report.html"] {
        assert!(masked(name), "{name} shows the refusal, masked");
    }
}
