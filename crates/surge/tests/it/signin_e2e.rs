//! Sign-in, against the real R Shiny app behind a loopback stand-in that speaks the login exchange
//! shinycannon implements (see `signin_support` for the shinycannon source lines it follows):
//! shinycannon's variables sign every session in to "Connect" and "Shiny Server Pro", the API key
//! goes as `Authorization: Key`, surge's `--login-form` and `--header-env` work, a bad password
//! stops the run at once with the server's answer, and no secret appears in any output.

use crate::common;
use crate::signin_support;

use common::*;
use signin_support::{Mode, KEY, PASS, TENANT, USER};
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

fn fixture_recording() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/shiny-app/recording.log")
}

const SECRETS: [&str; 3] = [PASS, KEY, TENANT];

/// No secret in stdout, stderr or any file of the run directory (debug.log included).
fn assert_no_secret(out: &Output, run: &Path) {
    let mut texts = vec![
        ("stdout".to_string(), out.stdout.clone()),
        ("stderr".to_string(), out.stderr.clone()),
    ];
    if run.exists() {
        let mut stack = vec![run.to_path_buf()];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap().flatten() {
                let p = e.path();
                if p.is_dir() {
                    stack.push(p);
                } else {
                    texts.push((p.display().to_string(), std::fs::read(&p).unwrap()));
                }
            }
        }
    }
    assert!(texts.len() > 4, "the run wrote files: {texts:?}");
    for (name, bytes) in texts {
        let text = String::from_utf8_lossy(&bytes);
        for s in SECRETS {
            assert!(!text.contains(s), "{name} contains a secret");
        }
    }
}

/// Replays the fixture recording with `users` users through the stand-in at `port`.
fn replay(port: u16, users: u32, run: &Path, env: &[(&str, &str)], extra: &[&str]) -> Output {
    let mut cmd = replay_cmd(
        &fixture_recording(),
        &format!("http://127.0.0.1:{port}/"),
        users,
        run,
    );
    cmd.args(["--start-interval", "100ms", "--think-time", "none"])
        .args(["--log-level", "debug", "--debug-log"])
        .args(extra);
    for v in [
        "SHINYCANNON_USER",
        "SHINYCANNON_PASS",
        "SHINYCANNON_CONNECT_API_KEY",
    ] {
        cmd.env_remove(v);
    }
    cmd.envs(env.iter().copied());
    cmd.output().unwrap()
}

fn assert_all_signed_in(out: &Output, run: &Path, users: u64, logins: u32) {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let s = summary(run);
    let started = s["sessions"]["started"].as_u64().unwrap();
    assert!(started >= users, "{stdout}");
    assert_eq!(s["sessions"]["failed"].as_u64(), Some(0), "{stdout}");
    // One sign-in per session, plus the check before the run.
    assert_eq!(u64::from(logins), started + 1, "{stdout}");
    assert_no_secret(out, run);
}

#[test]
fn shinycannon_variables_sign_in_to_connect_and_shiny_server_pro() {
    let (_app, app_port) = start_shiny();
    let tmp = TempDir::new("signin");
    let env = [("SHINYCANNON_USER", USER), ("SHINYCANNON_PASS", PASS)];
    for mode in [Mode::Connect, Mode::ShinyServerPro] {
        let (port, counts) = signin_support::start(mode, app_port);
        let run = tmp.path().join(format!("{mode:?}"));
        let out = replay(port, 5, &run, &env, &[]);
        let logins = counts.logins_ok.load(Ordering::Relaxed);
        assert_all_signed_in(&out, &run, 5, logins);
        assert_eq!(counts.logins_refused.load(Ordering::Relaxed), 0, "{mode:?}");
        assert!(
            counts.forwarded.load(Ordering::Relaxed) >= 5 * 2,
            "{mode:?}"
        );
    }
}

#[test]
fn api_key_from_shinycannons_variable_or_api_key_env() {
    let (_app, app_port) = start_shiny();
    let tmp = TempDir::new("signin-key");
    let (port, counts) = signin_support::start(Mode::Connect, app_port);
    let run = tmp.path().join("shinycannon-key");
    let out = replay(port, 3, &run, &[("SHINYCANNON_CONNECT_API_KEY", KEY)], &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert_eq!(summary(&run)["sessions"]["failed"].as_u64(), Some(0));
    assert_eq!(counts.logins_ok.load(Ordering::Relaxed), 0);
    assert!(counts.with_key.load(Ordering::Relaxed) >= 3);
    assert_no_secret(&out, &run);

    let run = tmp.path().join("api-key-env");
    let out = replay(
        port,
        3,
        &run,
        &[("MY_CONNECT_KEY", KEY)],
        &["--api-key-env", "MY_CONNECT_KEY"],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert_eq!(summary(&run)["sessions"]["failed"].as_u64(), Some(0));
    assert_no_secret(&out, &run);
}

#[test]
fn login_form_with_header_env() {
    let (_app, app_port) = start_shiny();
    let tmp = TempDir::new("signin-form");
    let (port, counts) = signin_support::start(Mode::Form, app_port);
    let run = tmp.path().join("form");
    let env = [
        ("APP_USER", USER),
        ("APP_PASS", PASS),
        ("APP_TENANT", TENANT),
    ];
    let flags = [
        "--login-form",
        "/login",
        "--user-env",
        "APP_USER",
        "--pass-env",
        "APP_PASS",
        "--header-env",
        "X-Tenant: APP_TENANT",
    ];
    let out = replay(port, 4, &run, &env, &flags);
    assert_all_signed_in(&out, &run, 4, counts.logins_ok.load(Ordering::Relaxed));
}

#[test]
fn a_bad_password_stops_the_run_at_once_with_the_servers_answer() {
    // No app behind: a refused sign-in must never reach it.
    let tmp = TempDir::new("signin-bad");
    for (mode, answer) in [
        (
            Mode::Connect,
            // Quoted through the one escaper (control characters only; quotes stay as sent).
            r#"POST /__login__ answered 401: {"code":13,"error":"The username or password is incorrect."}"#,
        ),
        (
            Mode::ShinyServerPro,
            "POST /__login__ answered 401: Incorrect username or password.",
        ),
    ] {
        let (port, counts) = signin_support::start(mode, free_port());
        let run = tmp.path().join(format!("{mode:?}"));
        let t = Instant::now();
        let env = [
            ("SHINYCANNON_USER", USER),
            ("SHINYCANNON_PASS", "wrong-password"),
        ];
        let out = replay(port, 5, &run, &env, &[]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "{mode:?} took {:?}",
            t.elapsed()
        );
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert_eq!(
            stderr.trim(),
            format!("surge: error: sign-in failed: {answer}")
        );
        assert!(
            !run.exists(),
            "no run directory for a run that never started"
        );
        assert_eq!(counts.logins_refused.load(Ordering::Relaxed), 1);
        assert_eq!(counts.forwarded.load(Ordering::Relaxed), 0);
    }
    // A variable surge is told to read but that is not set: one line naming it.
    let (port, _) = signin_support::start(Mode::Connect, free_port());
    let out = replay(
        port,
        1,
        &tmp.path().join("unset"),
        &[],
        &["--api-key-env", "NO_SUCH_VAR_X"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(
        stderr.trim(),
        "surge: error: --api-key-env NO_SUCH_VAR_X: the environment variable NO_SUCH_VAR_X is not set or empty"
    );
}

/// The stand-in is honest: real shinycannon (built from source, see
/// ../shared/reference/peer-baselines.md; its jar named by SHINYCANNON_JAR) signs in to it as
/// Connect and as Shiny Server Pro and replays through it. A benchmark-side check: skipped, with a
/// line saying so, when SHINYCANNON_JAR is not set.
#[test]
fn real_shinycannon_signs_in_to_the_stand_in() {
    let Some(jar) = std::env::var_os("SHINYCANNON_JAR") else {
        eprintln!("SKIPPED: real shinycannon against the sign-in stand-in (set SHINYCANNON_JAR)");
        return;
    };
    let (_app, app_port) = start_shiny();
    let tmp = TempDir::new("signin-shinycannon");
    for mode in [Mode::Connect, Mode::ShinyServerPro] {
        let (port, counts) = signin_support::start(mode, app_port);
        let run = tmp.path().join(format!("{mode:?}"));
        let out = std::process::Command::new("java")
            .arg("-jar")
            .arg(&jar)
            .arg(fixture_recording())
            .arg(format!("http://127.0.0.1:{port}/"))
            .args(["--workers", "2", "--loaded-duration-minutes", "0"])
            .arg("--output-dir")
            .arg(&run)
            .env("SHINYCANNON_USER", USER)
            .env("SHINYCANNON_PASS", PASS)
            .env_remove("SHINYCANNON_CONNECT_API_KEY")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{mode:?}: {stderr}");
        let csvs = session_csvs(&run);
        assert_eq!(csvs.len(), 2, "{mode:?}: {stderr}");
        let done = count_rows(&run, "PLAYBACK_DONE");
        assert!(done >= 1, "{mode:?}: {done} sessions done: {stderr}");
        assert_eq!(counts.logins_ok.load(Ordering::Relaxed), 2, "{mode:?}");
        assert_eq!(counts.logins_refused.load(Ordering::Relaxed), 0, "{mode:?}");
        assert!(counts.forwarded.load(Ordering::Relaxed) > 0, "{mode:?}");
    }
}
