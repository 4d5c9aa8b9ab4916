//! Signing simulated users in before they replay. shinycannon's way first, with its environment
//! variables, so its documented command lines keep working: `SHINYCANNON_USER` and
//! `SHINYCANNON_PASS` sign each session in to Posit Connect or Shiny Server Pro,
//! `SHINYCANNON_CONNECT_API_KEY` sends Connect's `Authorization: Key …` (rstudio/shinycannon
//! Main.kt `getCreds` and `maybeLogin`, ProtectedApp.kt `postLogin`). Then surge's general forms:
//! `--api-key-env`, `--login-form` with `--user-env`/`--pass-env`, `--header-env`. Secrets come
//! only from the environment, are held as [`Secret`] (whose Debug prints no value) and sent as
//! sensitive headers; no message quotes them.

mod detect;
mod form;

pub use detect::ServerType;

use crate::target::{self, Conn, CookieJar, Target};
use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{HeaderName, HeaderValue};
use hyper::Request;
use std::fmt;
use std::time::Duration;

/// shinycannon's user name variable (used with [`ENV_PASS`]).
pub const ENV_USER: &str = "SHINYCANNON_USER";
/// shinycannon's password variable.
pub const ENV_PASS: &str = "SHINYCANNON_PASS";
/// shinycannon's Posit Connect API key variable (wins over user and password, as in shinycannon).
pub const ENV_API_KEY: &str = "SHINYCANNON_CONNECT_API_KEY";

/// Most bytes of a sign-in answer read (a login page, an error).
const BODY_MAX: usize = 256 * 1024;

/// The sign-in flags of `surge replay` (shinycannon's variables need none).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct SignInArgs {
    /// Send 'Authorization: Key <value>' (Posit Connect's API key header) on every request, the
    /// value read from this environment variable; it is never printed
    #[arg(long, value_name = "VAR")]
    pub api_key_env: Option<String>,
    /// Sign each simulated user in first with a form POST to this URL (a path, or a URL on the
    /// target's host): username, password and the form page's hidden inputs; the session keeps
    /// the cookies it sets
    #[arg(long, value_name = "URL", requires_all = ["user_env", "pass_env"])]
    pub login_form: Option<String>,
    /// With --login-form: the environment variable holding the user name
    #[arg(long, value_name = "VAR", requires = "login_form")]
    pub user_env: Option<String>,
    /// With --login-form: the environment variable holding the password
    #[arg(long, value_name = "VAR", requires = "login_form")]
    pub pass_env: Option<String>,
    /// Extra request header whose value is read from an environment variable, 'Name: VAR'
    /// (repeatable); the value is never printed
    #[arg(long = "header-env", value_name = "NAME: VAR")]
    pub header_env: Vec<String>,
}

/// A value from the environment that must never be shown: Debug and Display print `***`.
#[derive(Clone)]
pub struct Secret(Box<str>);

impl Secret {
    /// A value read from the environment, registered with [`crate::secret`] so that no text
    /// surge prints or writes shows it (a server may echo it back in its answer).
    fn new(value: String) -> Secret {
        crate::secret::register(&value);
        Secret(value.into())
    }

    fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

/// The exchange each session goes through before its first recorded request.
#[derive(Debug, Clone)]
enum Exchange {
    /// shinycannon with an API key: one GET of the app for the load balancer's cookies
    /// (ProtectedApp.kt `getConnectCookies`, lines 133-152, 208-215).
    ConnectCookies,
    /// Posit Connect: JSON `{username, password}` POSTed to `<app>/__login__`; 200 or 302 and an
    /// `rsconnect` cookie (ProtectedApp.kt `loginRSC`, lines 154-167).
    Connect { user: Secret, pass: Secret },
    /// Shiny Server Pro: the login page's hidden inputs plus username and password, form-POSTed
    /// to `<app>/__login__`; 200 or 302 and a `session_state` cookie (`loginSSP`, lines 169-186).
    ShinyServer { user: Secret, pass: Secret },
    /// `--login-form`: the page's hidden inputs plus username and password, form-POSTed; any
    /// status below 400.
    Form {
        path: String,
        user: Secret,
        pass: Secret,
    },
}

/// A run's sign-in, checked before any user starts: headers every request carries (values marked
/// sensitive) and the exchange each session goes through first.
#[derive(Debug, Clone, Default)]
pub struct SignIn {
    /// Sent on every request and WebSocket upgrade of every session.
    pub headers: Vec<(HeaderName, HeaderValue)>,
    exchange: Option<Exchange>,
    /// What the run signs in to, for the run's output (never a secret).
    pub description: Option<String>,
}

/// An answer to a sign-in request: status, headers, up to [`BODY_MAX`] of its body.
struct Reply {
    status: u16,
    headers: hyper::HeaderMap,
    body: Vec<u8>,
}

/// Why a sign-in could not be made; one line, never a secret.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignInError {
    /// A sign-in flag or the environment variable it names is wrong (the message names both).
    #[error("{0}")]
    Flag(String),
    /// The server answered a sign-in request, but not with success (or without the session
    /// cookie): the request, the status and the first line of its answer.
    #[error("{request} answered {status}: {detail}")]
    Refused {
        /// `POST /__login__`.
        request: String,
        /// The HTTP status.
        status: u16,
        /// The answer's first line (escaped, cut), or what was missing.
        detail: String,
    },
    /// The request could not be made or answered in time (connection, timeout, protocol).
    #[error("{request}: {reason}")]
    Exchange {
        /// `GET /app/`.
        request: String,
        /// What went wrong.
        reason: String,
    },
    /// A protected app on a server that shinycannon's variables cannot sign in to.
    #[error("{0}")]
    Unsupported(String),
}

impl SignIn {
    /// The sign-in the flags and the environment ask for (`env` reads a variable); a server that
    /// must be asked what it is (shinycannon's variables) is asked once here, with `headers`.
    pub async fn resolve(
        args: &SignInArgs,
        env: &dyn Fn(&str) -> Option<String>,
        target: &Target,
        headers: &[(HeaderName, HeaderValue)],
        timeout: Duration,
    ) -> Result<SignIn, SignInError> {
        let need = |var: &str, flag: &str| -> Result<Secret, SignInError> {
            match env(var) {
                Some(v) if !v.is_empty() => Ok(Secret::new(v)),
                _ => Err(SignInError::Flag(format!(
                    "{flag} {var}: the environment variable {var} is not set or empty"
                ))),
            }
        };
        let mut s = SignIn::default();
        for h in &args.header_env {
            let (name, var) = h.split_once(':').ok_or_else(|| {
                SignInError::Flag(format!("--header-env \"{h}\": expected 'Name: VAR'"))
            })?;
            let name = HeaderName::from_bytes(name.trim().as_bytes())
                .map_err(|e| SignInError::Flag(format!("--header-env \"{h}\": {e}")))?;
            let value = need(var.trim(), "--header-env")?;
            s.headers
                .push((name, sensitive(value.expose(), "--header-env")?));
        }
        if let Some(var) = &args.api_key_env {
            let key = need(var, "--api-key-env")?;
            s.headers.push(key_header(&key)?);
        }
        if let Some(url) = &args.login_form {
            let path = same_target_path(url, target)?;
            let user = need(args.user_env.as_deref().unwrap_or_default(), "--user-env")?;
            let pass = need(args.pass_env.as_deref().unwrap_or_default(), "--pass-env")?;
            s.description = Some(format!("form sign-in at {path}"));
            s.exchange = Some(Exchange::Form { path, user, pass });
        }
        if args.api_key_env.is_none() && args.login_form.is_none() {
            s.shinycannon(env, target, headers, timeout).await?;
        }
        Ok(s)
    }

    /// shinycannon's variables: the API key wins over user and password (Main.kt `getCreds`,
    /// lines 285-313); the server is told by one GET (`servedBy`); the key is sent only to
    /// Connect (Main.kt lines 637-644), user and password only when the app is protected.
    async fn shinycannon(
        &mut self,
        env: &dyn Fn(&str) -> Option<String>,
        target: &Target,
        headers: &[(HeaderName, HeaderValue)],
        timeout: Duration,
    ) -> Result<(), SignInError> {
        let get = |v: &str| env(v).filter(|s| !s.is_empty()).map(Secret::new);
        let key = get(ENV_API_KEY);
        let creds = get(ENV_USER).zip(get(ENV_PASS));
        if key.is_none() && creds.is_none() {
            return Ok(());
        }
        let app = target.path("/");
        let (mut conn, mut jar) = (Conn::default(), CookieJar::default());
        let first = exchange(
            target, &mut conn, &mut jar, headers, "GET", &app, None, timeout,
        )
        .await?;
        let server = detect::served_by(&target.endpoint.host, &first.headers, &first.body);
        if let Some(key) = key {
            if server != ServerType::Connect {
                eprintln!("surge: warning: {ENV_API_KEY} is set but the target looks like {server}, not Posit Connect: the key is not sent (as shinycannon)");
                return Ok(());
            }
            self.headers.push(key_header(&key)?);
            self.exchange = Some(Exchange::ConnectCookies);
            self.description = Some(format!("{server} with {ENV_API_KEY}"));
            return Ok(());
        }
        let (user, pass) = creds.expect("checked above");
        if !detect::is_protected(first.status) {
            eprintln!("surge: {ENV_USER} and {ENV_PASS} set, but the target app doesn't require authentication (status {}): no sign-in", first.status);
            return Ok(());
        }
        self.exchange = Some(match server {
            ServerType::Connect => Exchange::Connect { user, pass },
            ServerType::ShinyServer => Exchange::ShinyServer { user, pass },
            other => {
                return Err(SignInError::Unsupported(format!(
                    "{app} answered {} (protected) but looks like {other}: {ENV_USER}/{ENV_PASS} sign in to Posit Connect or Shiny Server Pro only (see --login-form)",
                    first.status
                )))
            }
        });
        self.description = Some(format!("{server} as {ENV_USER}"));
        Ok(())
    }

    /// Whether sessions go through an exchange before their first recorded request.
    pub fn per_session(&self) -> bool {
        self.exchange.is_some()
    }

    /// Signs one session in on its own connection and cookie jar (the session keeps both).
    /// The error is one line: the request, the status and the first line of the answer.
    pub async fn sign_in(
        &self,
        target: &Target,
        conn: &mut Conn,
        jar: &mut CookieJar,
        headers: &[(HeaderName, HeaderValue)],
        timeout: Duration,
    ) -> Result<(), SignInError> {
        let Some(ex) = &self.exchange else {
            return Ok(());
        };
        let app = target.path("/");
        let login = target.path("/__login__");
        let (path, body, cookie) = match ex {
            Exchange::ConnectCookies => {
                let r = exchange(target, conn, jar, headers, "GET", &app, None, timeout).await?;
                return expect_status(&r, "GET", &app, &[200, 302]);
            }
            Exchange::Connect { user, pass } => {
                exchange(target, conn, jar, headers, "GET", &app, None, timeout).await?;
                let json =
                    serde_json::json!({"username": user.expose(), "password": pass.expose()});
                (
                    login,
                    ("application/json", json.to_string()),
                    Some("rsconnect"),
                )
            }
            Exchange::ShinyServer { user, pass } => {
                let page = exchange(target, conn, jar, headers, "GET", &app, None, timeout).await?;
                (
                    login,
                    (FORM, form_body(&page, user, pass)),
                    Some("session_state"),
                )
            }
            Exchange::Form { path, user, pass } => {
                let page = exchange(target, conn, jar, headers, "GET", path, None, timeout).await?;
                (path.clone(), (FORM, form_body(&page, user, pass)), None)
            }
        };
        let r = exchange(
            target,
            conn,
            jar,
            headers,
            "POST",
            &path,
            Some(body),
            timeout,
        )
        .await?;
        match cookie {
            Some(c) => {
                expect_status(&r, "POST", &path, &[200, 302])?;
                if !jar.has(c) {
                    return Err(SignInError::Refused {
                        request: format!("POST {path}"),
                        status: r.status,
                        detail: format!(
                            "no {c} cookie set (the session cookie shinycannon expects)"
                        ),
                    });
                }
                Ok(())
            }
            None if r.status >= 400 => expect_status(&r, "POST", &path, &[]),
            None => Ok(()),
        }
    }
}

/// shinycannon's check (`getCookiesPost`: 200 or 302), as one line with the server's answer.
fn expect_status(r: &Reply, method: &str, path: &str, ok: &[u16]) -> Result<(), SignInError> {
    if ok.contains(&r.status) {
        return Ok(());
    }
    Err(SignInError::Refused {
        request: format!("{method} {path}"),
        status: r.status,
        detail: form::first_line(&r.body),
    })
}

const FORM: &str = "application/x-www-form-urlencoded";

/// username, password and the login page's hidden inputs (whatever its status: Shiny Server Pro
/// serves its login page with 403, and shinycannon reads it all the same).
fn form_body(page: &Reply, user: &Secret, pass: &Secret) -> String {
    let html = String::from_utf8_lossy(&page.body);
    let hidden = form::hidden_inputs(&html);
    let fields = [("username", user.expose()), ("password", pass.expose())];
    let hidden = hidden.iter().map(|(k, v)| (k.as_str(), v.as_str()));
    form::urlencoded(fields.into_iter().chain(hidden))
}

/// `Authorization: Key <key>`, marked sensitive.
fn key_header(key: &Secret) -> Result<(HeaderName, HeaderValue), SignInError> {
    let v = sensitive(&format!("Key {}", key.expose()), "the API key")?;
    Ok((hyper::header::AUTHORIZATION, v))
}

/// A header value that hyper and our Debug never show; the error names `what`, not the value.
fn sensitive(value: &str, what: &str) -> Result<HeaderValue, SignInError> {
    let mut v = HeaderValue::from_str(value)
        .map_err(|_| SignInError::Flag(format!("{what}: the value is not a valid header value")))?;
    v.set_sensitive(true);
    Ok(v)
}

/// `--login-form`'s path: a path as given, or a URL on the target's scheme, host and port.
fn same_target_path(url: &str, target: &Target) -> Result<String, SignInError> {
    if url.starts_with('/') {
        return Ok(url.to_string());
    }
    let origin = target.origin();
    match url.strip_prefix(&origin) {
        Some(rest) if rest.is_empty() || rest.starts_with('/') => Ok(if rest.is_empty() {
            "/".into()
        } else {
            rest.into()
        }),
        _ => Err(SignInError::Flag(format!(
            "--login-form {url}: must be a path or a URL on the target ({origin})"
        ))),
    }
}

/// One sign-in request on the session's connection, cookies sent and stored.
#[allow(clippy::too_many_arguments)]
async fn exchange(
    target: &Target,
    conn: &mut Conn,
    jar: &mut CookieJar,
    headers: &[(HeaderName, HeaderValue)],
    method: &str,
    path: &str,
    body: Option<(&str, String)>,
    timeout: Duration,
) -> Result<Reply, SignInError> {
    let fail = |reason: String| SignInError::Exchange {
        request: format!("{method} {path}"),
        reason,
    };
    let mut b = Request::builder()
        .method(method)
        .uri(path)
        .header(hyper::header::HOST, target.authority.as_str())
        .header(
            hyper::header::USER_AGENT,
            concat!("surge/", env!("CARGO_PKG_VERSION")),
        );
    if let Some(c) = jar.header() {
        b = b.header(hyper::header::COOKIE, c);
    }
    for (k, v) in headers {
        b = b.header(k, v);
    }
    let bytes = match body {
        Some((ctype, text)) => {
            b = b.header(hyper::header::CONTENT_TYPE, ctype);
            Bytes::from(text)
        }
        None => Bytes::new(),
    };
    let req = b.body(Full::new(bytes)).map_err(|e| fail(e.to_string()))?;
    let resp = tokio::time::timeout(timeout, conn.send(target, req))
        .await
        .map_err(|_| fail(format!("no answer within {timeout:?}")))?
        .map_err(|e| fail(e.to_string()))?;
    jar.store(resp.headers());
    let status = resp.status().as_u16();
    let (parts, body) = resp.into_parts();
    let body = target::read_body(body, BODY_MAX, timeout)
        .await
        .map_err(|e| fail(e.to_string()))?;
    Ok(Reply {
        status,
        headers: parts.headers,
        body,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_do_not_print_and_paths_stay_on_the_target() {
        let s = Secret("hunter2".into());
        assert_eq!(format!("{s:?}"), "***");
        let (_, v) = key_header(&s).unwrap();
        assert!(!format!("{v:?}").contains("hunter2"));
        let t = Target::parse("http://127.0.0.1:8080/app/").unwrap();
        assert_eq!(same_target_path("/login", &t).unwrap(), "/login");
        assert_eq!(
            same_target_path("http://127.0.0.1:8080/x/login", &t).unwrap(),
            "/x/login"
        );
        assert!(same_target_path("http://evil.example/login", &t).is_err());
    }
}
