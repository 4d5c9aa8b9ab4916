//! `surge replay` is a drop-in for shinycannon's command line: the command lines printed in
//! shinyloadtest's documentation run unchanged (only the app URL is rewritten to a real local R
//! Shiny app), every shinycannon flag works with shinycannon's units, and bad combinations are one
//! line and exit status 2.

use crate::common;

use common::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// Command lines as printed in shinyloadtest's README and articles and in shinycannon's --help.
const DOCUMENTED: &[&str] = &[
    // README, "shinycannon" and "Load testing authenticated apps" articles
    "shinycannon recording.log https://shinyapp.example.com/ --workers 5 --loaded-duration-minutes 2 --output-dir run1",
    // "Case study: scaling an app", runs 1, 5 and 5 with new settings
    "shinycannon recording.log https://rsc.example.com/content/1234/ --workers 1 --loaded-duration-minutes 5 --output-dir run1",
    "shinycannon recording.log https://rsc.example.com/content/1234/ --workers 5 --loaded-duration-minutes 5 --output-dir run5",
    "shinycannon recording.log https://rsc.example.com/content/1234/ --workers 5 --loaded-duration-minutes 5 --output-dir run5-new-settings",
    // "Load testing authenticated apps", Posit Connect
    "shinycannon connect_recording.log https://connect.example.com/content/545/ --workers 5 --loaded-duration-minutes 2 --output-dir run2",
    // shinycannon --help
    "shinycannon recording.log https://rsc.example.com/content/123 --workers 3 --loaded-duration-minutes 10",
];

fn fixture_recording() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/shiny-app/recording.log")
}

/// `surge replay` + a shinycannon command line's arguments, the app URL rewritten to `url`.
fn as_surge(line: &str, url: &str) -> Vec<String> {
    let mut args = vec!["replay".to_string()];
    for w in line.split_whitespace().skip(1) {
        args.push(if w.starts_with("https://") { url } else { w }.to_string());
    }
    args
}

/// The value after `flag` in a command line.
fn flag<'a>(args: &'a [String], flag: &str) -> Option<&'a str> {
    let i = args.iter().position(|a| a == flag)?;
    args.get(i + 1).map(String::as_str)
}

/// The run directory a line writes into: its --output-dir, or the one test-logs-* directory.
fn run_dir(cwd: &Path, args: &[String]) -> Option<PathBuf> {
    if let Some(d) = flag(args, "--output-dir") {
        return Some(cwd.join(d));
    }
    std::fs::read_dir(cwd)
        .ok()?
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("test-logs-")
        })
}

/// Worker ids of the sessions that completed (PLAYBACK_DONE) in a run's CSVs.
fn done_workers(run: &Path) -> std::collections::BTreeSet<u32> {
    let mut w = std::collections::BTreeSet::new();
    if !run.join("sessions").is_dir() {
        return w;
    }
    for f in session_csvs(run) {
        let csv = read_csv(&f);
        if csv.rows.iter().any(|r| r[3] == "PLAYBACK_DONE") {
            w.insert(csv.rows[0][1].parse().unwrap());
        }
    }
    w
}

/// The config JSON (second comment line) of a run's first CSV.
fn config(run: &Path) -> serde_json::Value {
    let csv = read_csv(&session_csvs(run)[0]);
    serde_json::from_str(csv.comments[1].trim()).unwrap()
}

#[test]
fn documented_shinycannon_command_lines_run_unchanged() {
    let (_r, port) = start_shiny();
    let url = format!("http://127.0.0.1:{port}/");
    let tmp = TempDir::new("cannon-docs");
    // Every line runs at once, each in a directory of its own holding the recording it names;
    // the loaded durations (2 to 10 minutes) are cut short by Ctrl-C once every worker has
    // completed a session.
    let mut runs = Vec::new();
    for (i, line) in DOCUMENTED.iter().enumerate() {
        let cwd = tmp.path().join(format!("line{i}"));
        std::fs::create_dir_all(&cwd).unwrap();
        let rec = line.split_whitespace().nth(1).unwrap();
        std::fs::copy(fixture_recording(), cwd.join(rec)).unwrap();
        let args = as_surge(line, &url);
        let child = surge()
            .args(&args)
            .current_dir(&cwd)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        runs.push((line, cwd, args, Proc(child)));
    }
    for (line, cwd, args, mut p) in runs {
        let workers: u32 = flag(&args, "--workers").unwrap().parse().unwrap();
        let minutes: f64 = flag(&args, "--loaded-duration-minutes")
            .unwrap()
            .parse()
            .unwrap();
        let mut done = Default::default();
        wait_until(Duration::from_secs(90), || {
            if let Some(run) = run_dir(&cwd, &args) {
                done = done_workers(&run);
                if done.len() == workers as usize {
                    return true;
                }
            }
            assert!(p.0.try_wait().unwrap().is_none(), "{line}: exited early");
            false
        });
        assert_eq!(
            done,
            (0..workers).collect(),
            "{line}: every worker completed a session"
        );
        assert_eq!(
            interrupt(&mut p, Duration::from_secs(30)),
            Some(130),
            "{line}"
        );
        let run = run_dir(&cwd, &args).unwrap();
        let s = summary(&run);
        assert_eq!(s["interrupted"], true, "{line}");
        let c = config(&run);
        assert_eq!(c["appUrl"], url.as_str(), "{line}");
        assert_eq!(c["workers"], workers, "{line}");
        assert_eq!(c["loadedDurationMinutes"].as_f64(), Some(minutes), "{line}");
        // The loaded phase was planned for the documented minutes after the last worker started.
        let planned = s["loaded_end_ms"].as_i64().unwrap() - s["warmup_end_ms"].as_i64().unwrap();
        assert_eq!(planned, (minutes * 60_000.0) as i64, "{line}");
        // The default start interval: the recording's length over the workers (shinycannon's).
        let rec = surge::recording::Recording::load(&fixture_recording()).unwrap();
        assert_eq!(
            c["startIntervalMs"].as_i64(),
            Some(rec.duration_ms() / i64::from(workers)),
            "{line}"
        );
    }
}

/// Every shinycannon flag on one line, with shinycannon's units: plain milliseconds for
/// --start-interval, fractional minutes for --loaded-duration-minutes.
#[test]
fn every_shinycannon_flag_together() {
    let log = TempDir::new("cannon-log");
    let r_log = log.path().join("served.log");
    let (_r, port) = start_shiny_env(&[("SURGE_SESSION_LOG", &r_log)]);
    let url = format!("http://127.0.0.1:{port}/");
    let tmp = TempDir::new("cannon-flags");
    std::fs::copy(fixture_recording(), tmp.path().join("recording.log")).unwrap();
    let line = |level: &str| {
        let mut c = surge();
        c.current_dir(tmp.path()).args([
            "replay",
            "recording.log",
            &url,
            "--workers",
            "2",
            "--loaded-duration-minutes",
            "0.05",
            "--start-interval",
            "300",
            "--output-dir",
            "run",
            "--overwrite-output",
            "-H",
            "X-Surge-Test: cannon",
            "--debug-log",
            "--log-level",
            level,
        ]);
        c
    };
    // Twice: the second run replaces the first (--overwrite-output). Each is bounded: read as
    // seconds, "300" would hold the second worker back for five minutes.
    for level in ["error", "debug"] {
        let err_path = log.path().join(format!("stderr-{level}"));
        let child = line(level)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&err_path).unwrap())
            .spawn()
            .unwrap();
        let code = wait_exit(&mut Proc(child), Duration::from_secs(60));
        let stderr = std::fs::read_to_string(&err_path).unwrap();
        assert_eq!(code, Some(0), "{stderr}");
        // --log-level filters stderr: nothing below ERROR, then DEBUG and INFO lines.
        assert_eq!(stderr.contains("DEBUG"), level == "debug", "{stderr}");
        assert_eq!(stderr.contains("INFO"), level == "debug", "{stderr}");
    }
    let run = tmp.path().join("run");
    let s = summary(&run);
    assert_eq!(s["sessions"]["failed"], 0);
    // 300 means 300 ms: worker 1 started 300 ms after worker 0 (from the CSVs' create rows).
    let mut first_create = std::collections::BTreeMap::new();
    for f in session_csvs(&run) {
        let csv = read_csv(&f);
        let r = &csv.rows[0];
        assert_eq!(r[3], "PLAYER_SESSION_CREATE");
        let (w, ts): (u32, i64) = (r[1].parse().unwrap(), r[4].parse().unwrap());
        let e = first_create.entry(w).or_insert(ts);
        *e = (*e).min(ts);
    }
    let gap = first_create[&1] - first_create[&0];
    assert!(
        (250..=1000).contains(&gap),
        "worker 1 started {gap} ms after worker 0"
    );
    // 0.05 minutes = 3 s of loaded phase.
    assert_eq!(
        s["loaded_end_ms"].as_i64().unwrap() - s["warmup_end_ms"].as_i64().unwrap(),
        3000
    );
    let c = config(&run);
    assert_eq!(c["startIntervalMs"], 300);
    assert_eq!(c["loadedDurationMinutes"], 0.05);
    assert_eq!(c["debugLog"], true);
    assert_eq!(c["logLevel"], "DEBUG");
    // --debug-log: debug.log in the run directory, with a line per played event of each session.
    let debug = std::fs::read_to_string(run.join("debug.log")).unwrap();
    let sessions = session_csvs(&run).len();
    for id in 0..sessions {
        assert!(
            debug.contains(&format!("session {id} ")),
            "debug.log lacks session {id}:\n{debug}"
        );
    }
    assert!(debug.lines().all(|l| !l.contains("ERROR")), "{debug}");
    // -H reached R with every session of the second run (R logs the header it received).
    let served = std::fs::read_to_string(&r_log).unwrap();
    let with_header = served.lines().filter(|l| l.contains(" cannon")).count();
    assert!(with_header >= sessions, "{served}");
    assert_eq!(with_header, served.lines().count(), "{served}");
}

/// Bad combinations: one line on stderr naming the problem, exit status 2, no run directory.
#[test]
fn bad_shinycannon_style_lines_are_one_line_errors() {
    let tmp = TempDir::new("cannon-bad");
    let rec = fixture_recording();
    let cases: &[(&[&str], &str)] = &[
        (&["http://127.0.0.1:9/", "--start-interval", "2x"], "2x"),
        (
            &[
                "http://127.0.0.1:9/",
                "--loaded-duration",
                "5m",
                "--loaded-duration-minutes",
                "2",
            ],
            "--loaded-duration",
        ),
        (
            &["http://127.0.0.1:9/", "--target", "http://127.0.0.1:9/"],
            "--target",
        ),
        (&["--workers", "2"], "APP-URL"),
        (&["http://127.0.0.1:9/", "--log-level", "loud"], "loud"),
        (
            &["http://127.0.0.1:9/", "--loaded-duration-minutes", "-1"],
            "-1",
        ),
    ];
    for (args, needle) in cases {
        let out = Command::new(env!("CARGO_BIN_EXE_surge"))
            .current_dir(tmp.path())
            .arg("replay")
            .arg(&rec)
            .args(*args)
            .args(["--output-dir", "run"])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
        assert!(!tmp.path().join("run").exists(), "{args:?} left a run dir");
    }
}
