//! Driving the real R Shiny app under surge replay (the reload and chaos tests): a versioned copy
//! of `fixtures/shiny-replay/app.R` whose session log says which process, version and time each
//! session had, surge replay with looping users, and readers for both records.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::{fixture, on_free_port, start_env, Manifold};

/// A child process killed on drop (a failing test leaves nothing running).
pub struct Proc(pub Child);

impl Drop for Proc {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

/// `manifold shiny APP` on a free port with `flags` before the preset, each R session logged to
/// `log` (`MANIFOLD_SESSION_LOG`, read by [`r_sessions`]).
pub fn start_shiny(app: &Path, log: &Path, flags: &[&str]) -> Manifold {
    let mut a = on_free_port(flags);
    a.push("shiny".into());
    a.push(app.display().to_string());
    start_env(&a, &[("MANIFOLD_SESSION_LOG", log.to_str().unwrap())])
}

/// A run length in seconds from environment variable `var`, else `default`.
pub fn env_secs(var: &str, default: u64) -> u64 {
    std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Seconds since the Unix epoch, as R's `Sys.time()` prints them.
pub fn now_s() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

/// Writes the replay app into `dir/app.R` as version `version`: each session logs
/// `start|end PID TOKEN VERSION TIME` to `MANIFOLD_SESSION_LOG`. Written to a temp file and
/// renamed, so an R process never reads half of it.
pub fn write_app(dir: &Path, version: &str) {
    let src = std::fs::read_to_string(fixture("shiny-replay/app.R")).unwrap();
    let old = r#"paste(what, Sys.getpid(), session$token, "\n")"#;
    assert!(src.contains(old), "fixture app changed");
    let text = format!(
        "APP_VERSION <- \"{version}\"\n{}",
        src.replace(
            old,
            r#"paste(what, Sys.getpid(), session$token, APP_VERSION, format(as.numeric(Sys.time()), nsmall = 3), "\n")"#
        )
    );
    std::fs::create_dir_all(dir).unwrap();
    let tmp = dir.join(".app.R.tmp");
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, dir.join("app.R")).unwrap();
}

/// One R session from the session log.
#[derive(Debug, Clone)]
pub struct RSession {
    pub pid: u32,
    pub token: String,
    pub version: String,
    pub start: f64,
    pub ended: bool,
}

/// Every session the R processes logged.
pub fn r_sessions(log: &Path) -> Vec<RSession> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let mut out: Vec<RSession> = Vec::new();
    for l in text.lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        match f.as_slice() {
            ["start", pid, token, version, time] => {
                if let (Ok(pid), Ok(start)) = (pid.parse(), time.parse()) {
                    out.push(RSession {
                        pid,
                        token: token.to_string(),
                        version: version.to_string(),
                        start,
                        ended: false,
                    });
                    continue;
                }
            }
            ["end", _, token, ..] => {
                if let Some(s) = out.iter_mut().find(|s| s.token == *token) {
                    s.ended = true;
                    continue;
                }
            }
            _ => {}
        }
        // Each line is one append write() (the app pastes it first), so no two processes'
        // lines can interleave and no kill can cut one: a line that does not parse is a
        // broken log, not a session to guess at.
        panic!(
            "{}: a session log line that does not parse: {l:?}",
            log.display()
        );
    }
    out
}

/// The surge binary built beside manifold's.
pub fn surge() -> Command {
    let bin = Path::new(env!("CARGO_BIN_EXE_manifold")).with_file_name("surge");
    assert!(
        bin.is_file(),
        "{} missing: cargo build -p surge --bin surge (the make target does)",
        bin.display()
    );
    Command::new(bin)
}

/// surge replay of the recorded session against `addr`: `users` users, looping for `secs`.
pub fn replay(addr: &str, users: u32, secs: u64, out: &Path) -> Proc {
    let secs = format!("{secs}s");
    let args = ["--start-interval", "300ms", "--loaded-duration", &secs];
    surge_replay(&format!("http://{addr}/"), users, &args, out)
}

/// surge replay of the recorded session against `target` with `users` users and `args`, its
/// run directory `out`; silent.
pub fn surge_replay(target: &str, users: u32, args: &[&str], out: &Path) -> Proc {
    Proc(
        surge()
            .arg("replay")
            .arg(fixture("shiny-replay/recording.log"))
            .args(["--target", target, "--users", &users.to_string()])
            .args(args)
            .args(["--message-timeout", "20s", "--output-dir"])
            .arg(out)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    )
}

/// Waits for a process to exit within `limit`; its exit code.
pub fn wait_exit(p: &mut Proc, limit: Duration) -> Option<i32> {
    let mut status = None;
    let done = super::poll_until(limit, || {
        status = p.0.try_wait().unwrap();
        status.is_some()
    });
    assert!(done, "process did not finish in {limit:?}");
    status.and_then(|s| s.code())
}

/// One replayed session from surge's CSV: its file, start (ms) and failure reason if it failed.
#[derive(Debug)]
pub struct Replayed {
    pub file: PathBuf,
    pub start_ms: i64,
    pub failure: Option<String>,
}

/// Every session CSV of a surge run directory: its path and its data rows, each split into at
/// most 7 fields (the last, the message, may hold commas).
pub fn session_csvs(run: &Path) -> Vec<(PathBuf, Vec<Vec<String>>)> {
    std::fs::read_dir(run.join("sessions"))
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            let text = std::fs::read_to_string(&p).unwrap();
            let rows = text
                .lines()
                .filter(|l| !l.starts_with('#') && !l.starts_with("session_id"))
                .map(|l| l.splitn(7, ',').map(str::to_string).collect())
                .collect();
            (p, rows)
        })
        .collect()
}

/// Every session of a surge run directory.
pub fn replayed(run: &Path) -> Vec<Replayed> {
    let mut out: Vec<Replayed> = session_csvs(run)
        .into_iter()
        .filter_map(|(file, rows)| {
            let start_ms = rows.first()?[4].parse().unwrap_or(0);
            let last = rows.last()?;
            let failure = (last[3] == "PLAYBACK_FAIL").then(|| last[6].clone());
            Some(Replayed {
                file,
                start_ms,
                failure,
            })
        })
        .collect();
    out.sort_by_key(|s| s.start_ms);
    out
}
