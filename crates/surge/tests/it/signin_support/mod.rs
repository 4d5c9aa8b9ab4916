//! A loopback stand-in for the sign-in of Posit Connect and Shiny Server Pro (neither can run
//! here), in front of the real R Shiny app. It speaks the exchange shinycannon implements
//! (rstudio/shinycannon, commit 8e10a8e, src/main/kotlin/com/rstudio/shinycannon/):
//! - Detect.kt lines 32-54 (`servedBy`): Connect is told by an `rscid` cookie, Shiny Server Pro by
//!   an `SSP-XSRF` cookie; ProtectedApp.kt lines 80-82 (`isProtected`): a protected app answers
//!   403 or 404 to a user who has not signed in.
//! - ProtectedApp.kt lines 154-167 (`loginRSC`): Connect takes JSON `{"username", "password"}`
//!   POSTed to `<app>/__login__`, answers 200 or 302 and sets the `rsconnect` cookie.
//! - ProtectedApp.kt lines 84-96 and 169-186 (`getInputs`, `loginSSP`): Shiny Server Pro's login
//!   page carries hidden inputs that come back with username and password, form-encoded, to
//!   `<app>/__login__`; it answers 302 and sets `session_state`.
//! - Main.kt lines 162-167, 278-282, 637-644: with an API key every request carries
//!   `Authorization: Key <key>`, and each session first GETs the app for cookies.
//!
//! `Form` mode is surge's `--login-form`: a page at /login with a hidden CSRF input, POSTed back
//! with username and password (and, in this stand-in, an `X-Tenant` header the run sends with
//! `--header-env`).
//!
//! A request that is signed in (a cookie this stand-in issued, or the API key) is forwarded to the
//! app with the rest of its connection spliced through (WebSocket upgrades included); every other
//! request is answered here. Counters say how many sign-ins were accepted and refused.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

/// The test's secrets: none of them may appear in any output of a run.
pub const USER: &str = "alice-signin-user";
pub const PASS: &str = "pw-Zq81-never-printed";
pub const KEY: &str = "apikey-7c1f0e9a-never-printed";
pub const TENANT: &str = "tenant-55x-never-printed";
const XSRF: &str = "xsrf-3b5d";

/// Which server the stand-in plays.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Mode {
    Connect,
    ShinyServerPro,
    Form,
}

/// What the stand-in saw.
#[derive(Default)]
pub struct Counts {
    pub logins_ok: AtomicU32,
    pub logins_refused: AtomicU32,
    pub forwarded: AtomicU32,
    pub denied: AtomicU32,
    pub with_key: AtomicU32,
    tokens: Mutex<Vec<String>>,
}

/// Starts the stand-in on a free port in front of the app at `upstream`; returns its port.
pub fn start(mode: Mode, upstream: u16) -> (u16, Arc<Counts>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let counts = Arc::new(Counts::default());
    let c = counts.clone();
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            let c = c.clone();
            std::thread::spawn(move || serve(s, mode, upstream, &c));
        }
    });
    (port, counts)
}

fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines().skip(1).find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.trim().eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

fn respond(s: &mut TcpStream, status: &str, extra: &str, body: &str) {
    let text = format!(
        "HTTP/1.1 {status}\r\nContent-Length: {}\r\nContent-Type: text/html\r\n{extra}\r\n{body}",
        body.len()
    );
    let _ = s.write_all(text.as_bytes());
}

/// One client connection: requests answered here until one is signed in, then spliced.
fn serve(mut s: TcpStream, mode: Mode, upstream: u16, c: &Counts) {
    let mut buf = Vec::new();
    loop {
        let head_len = loop {
            if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
            let mut chunk = [0u8; 8192];
            match s.read(&mut chunk) {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        };
        let head = String::from_utf8_lossy(&buf[..head_len]).to_string();
        let clen: usize = header(&head, "content-length").map_or(0, |v| v.parse().unwrap());
        while buf.len() < head_len + clen {
            let mut chunk = [0u8; 8192];
            match s.read(&mut chunk) {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
        let body = String::from_utf8_lossy(&buf[head_len..head_len + clen]).to_string();
        let mut first = head.split_whitespace();
        let (method, path) = (first.next().unwrap_or(""), first.next().unwrap_or(""));
        let key = header(&head, "authorization") == Some(&format!("Key {KEY}"));
        if key {
            c.with_key.fetch_add(1, Ordering::Relaxed);
        }
        let login_path = if mode == Mode::Form {
            "/login"
        } else {
            "/__login__"
        };
        if path == login_path && method == "POST" {
            login(&mut s, mode, &head, &body, c);
        } else if path == "/login" && mode == Mode::Form {
            let page = format!(
                r#"<html><body><form method="post"><input type="hidden" name="csrf" value="{XSRF}"/><input name="username"/></form></body></html>"#
            );
            respond(&mut s, "200 OK", "", &page);
        } else if signed_in(&head, c) || (key && mode == Mode::Connect) {
            c.forwarded.fetch_add(1, Ordering::Relaxed);
            let Ok(mut up) = TcpStream::connect(("127.0.0.1", upstream)) else {
                return;
            };
            let _ = up.write_all(&buf);
            splice(s, up);
            return;
        } else {
            c.denied.fetch_add(1, Ordering::Relaxed);
            deny(&mut s, mode);
        }
        buf.drain(..head_len + clen);
    }
}

fn signed_in(head: &str, c: &Counts) -> bool {
    let Some(cookies) = header(head, "cookie") else {
        return false;
    };
    let tokens = c.tokens.lock().unwrap();
    cookies.split(';').any(|kv| {
        let v = kv.split_once('=').map_or("", |(_, v)| v.trim());
        tokens.iter().any(|t| t == v)
    })
}

/// A user who has not signed in: Connect answers 404 and sets `rscid`; Shiny Server Pro answers
/// 403 with its login page (hidden `_xsrf`) and sets `SSP-XSRF`.
fn deny(s: &mut TcpStream, mode: Mode) {
    match mode {
        Mode::Connect => respond(
            s,
            "404 Not Found",
            "Set-Cookie: rscid=lb-1; Path=/\r\n",
            "Not found\n",
        ),
        Mode::ShinyServerPro => {
            let page = format!(
                r#"<html><body><form action="__login__" method="post"><input type="hidden" name="_xsrf" value="{XSRF}"/><input type="text" name="username"/></form></body></html>"#
            );
            respond(
                s,
                "403 Forbidden",
                &format!("Set-Cookie: SSP-XSRF={XSRF}; Path=/\r\n"),
                &page,
            )
        }
        Mode::Form => respond(s, "302 Found", "Location: /login\r\n", ""),
    }
}

fn login(s: &mut TcpStream, mode: Mode, head: &str, body: &str, c: &Counts) {
    let form: Vec<(String, String)> = form_urlencoded::parse(body.as_bytes())
        .into_owned()
        .collect();
    let field = |k: &str| form.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    let ok = match mode {
        Mode::Connect => {
            let v: serde_json::Value = serde_json::from_str(body).unwrap_or_default();
            v["username"] == USER && v["password"] == PASS
        }
        Mode::ShinyServerPro => {
            field("username") == Some(USER)
                && field("password") == Some(PASS)
                && field("_xsrf") == Some(XSRF)
        }
        Mode::Form => {
            field("username") == Some(USER)
                && field("password") == Some(PASS)
                && field("csrf") == Some(XSRF)
                && header(head, "x-tenant") == Some(TENANT)
        }
    };
    if !ok {
        c.logins_refused.fetch_add(1, Ordering::Relaxed);
        let answer = match mode {
            Mode::Connect => "{\"code\":13,\"error\":\"The username or password is incorrect.\"}\n",
            _ => "Incorrect username or password.\nTry again.\n",
        };
        respond(s, "401 Unauthorized", "", answer);
        return;
    }
    let n = c.logins_ok.fetch_add(1, Ordering::Relaxed);
    let token = format!("tok-{n}-{}", std::process::id());
    c.tokens.lock().unwrap().push(token.clone());
    match mode {
        Mode::Connect => respond(
            s,
            "200 OK",
            &format!("Set-Cookie: rsconnect={token}; Path=/; HttpOnly\r\n"),
            "{}",
        ),
        Mode::ShinyServerPro => respond(
            s,
            "302 Found",
            &format!("Location: ./\r\nSet-Cookie: session_state={token}; Path=/\r\n"),
            "",
        ),
        Mode::Form => respond(
            s,
            "303 See Other",
            &format!("Location: /\r\nSet-Cookie: sid={token}; Path=/\r\n"),
            "",
        ),
    }
}

fn splice(a: TcpStream, b: TcpStream) {
    let (mut a2, mut b2) = (a.try_clone().unwrap(), b.try_clone().unwrap());
    let t = std::thread::spawn(move || {
        let _ = std::io::copy(&mut b2, &mut a2);
        let _ = a2.shutdown(Shutdown::Write);
    });
    let (mut a, mut b) = (a, b);
    let _ = std::io::copy(&mut a, &mut b);
    let _ = b.shutdown(Shutdown::Write);
    let _ = t.join();
}
