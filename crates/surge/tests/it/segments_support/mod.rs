//! Helpers of the segment tests (segments.rs, segments_bench.rs, segments_bad_input.rs): the
//! plan, its recording, surge processes run to their end, session CSVs read independently and
//! percentiles computed from raw rows.
#![allow(dead_code)]

use crate::common::*;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The plan: 8 users 50 ms apart, loaded 1325 ms; a session lasts ~1 s (recorded gaps), so every
/// user runs exactly 2 sessions, with >= 300 ms to spare on either side of the loaded end (its
/// first session ends by 1.35 s, its second from 2 s on; the loaded phase ends at 1.675 s).
pub const PLAN: [&str; 6] = [
    "--users",
    "8",
    "--start-interval",
    "50ms",
    "--loaded-duration",
    "1325ms",
];
pub const USERS: u32 = 8;
pub const BEHIND: &str = "not sent: generator more than --timeout behind schedule";
pub const INTERVAL_MS: i64 = 50;

/// A plain-HTTP recording of the fixture app: home, script, two API calls, 1 s in all.
pub fn write_recording(dir: &Path, extra_line: bool) -> PathBuf {
    let mut text = String::from(
        "# version: 1\n# target_url: http://127.0.0.1:1/\n# target_type: surge/http\n\
         {\"type\":\"REQ_HOME\",\"begin\":\"2026-01-01T00:00:00.000Z\",\"end\":\"2026-01-01T00:00:00.005Z\",\"status\":200,\"url\":\"/\"}\n\
         {\"type\":\"REQ_GET\",\"begin\":\"2026-01-01T00:00:00.250Z\",\"end\":\"2026-01-01T00:00:00.252Z\",\"status\":200,\"url\":\"/app.js\"}\n\
         {\"type\":\"REQ_GET\",\"begin\":\"2026-01-01T00:00:00.500Z\",\"end\":\"2026-01-01T00:00:00.503Z\",\"status\":200,\"url\":\"/api/items?page=1\"}\n\
         {\"type\":\"REQ_GET\",\"begin\":\"2026-01-01T00:00:01.000Z\",\"end\":\"2026-01-01T00:00:01.003Z\",\"status\":200,\"url\":\"/api/items?page=2\"}\n",
    );
    if extra_line {
        text.push_str("{\"type\":\"REQ_GET\",\"begin\":\"2026-01-01T00:00:01.010Z\",\"end\":\"2026-01-01T00:00:01.012Z\",\"status\":200,\"url\":\"/app.js\"}\n");
    }
    let path = dir.join(if extra_line {
        "other.log"
    } else {
        "recording.log"
    });
    std::fs::write(&path, text).unwrap();
    path
}

/// The tests of this file run one at a time: the start-schedule check is about milliseconds, and
/// on a 2-core machine the other tests' processes would delay its wake-ups.
pub static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

pub fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// `ms` (Unix) as RFC 3339 UTC with milliseconds, computed with GNU date (independent of surge).
pub fn rfc3339(ms: i64) -> String {
    let out = Command::new("date")
        .args(["-u", "-d", &format!("@{}.{:03}", ms / 1000, ms % 1000)])
        .arg("+%Y-%m-%dT%H:%M:%S.%3NZ")
        .output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// Spawns surge with `args`, stdout and stderr into `log`.
pub fn spawn(args: &[&str], log: &Path) -> Proc {
    let f = std::fs::File::create(log).unwrap();
    Proc(
        surge()
            .args(args)
            .stdout(f.try_clone().unwrap())
            .stderr(f)
            .spawn()
            .unwrap(),
    )
}

/// Waits (bounded) for a spawned surge; returns its exit code and what it printed.
pub fn finish(mut p: Proc, log: &Path) -> (Option<i32>, String) {
    let code = wait_exit(&mut p, Duration::from_secs(60));
    (code, std::fs::read_to_string(log).unwrap())
}

/// Runs surge to its end; returns (exit code, stdout, stderr).
pub fn run(args: &[&str]) -> (Option<i32>, String, String) {
    let out = surge().args(args).output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `surge replay REC --target TARGET --output-dir OUT` and `flags`.
pub fn replay<'a>(rec: &'a str, target: &'a str, out: &'a str, flags: &[&'a str]) -> Vec<&'a str> {
    let mut a = vec!["replay", rec, "--target", target, "--output-dir", out];
    a.extend(flags);
    a
}

/// [`replay`] of [`PLAN`] and `extra`.
pub fn replay_args<'a>(
    rec: &'a str,
    target: &'a str,
    out: &'a str,
    extra: &[&'a str],
) -> Vec<&'a str> {
    replay(rec, target, out, &[&PLAN[..], extra].concat())
}

/// `surge bench TARGET` at 10 requests/s for 1 s, segment `seg` of it, and `extra`.
pub fn bench_segment<'a>(target: &'a str, seg: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut a = vec![
        "bench",
        target,
        "--rate",
        "10",
        "-d",
        "1s",
        "--segment",
        seg,
    ];
    a.extend(extra);
    a
}

/// `cp -r from to`.
pub fn copy_dir(from: &Path, to: &Path) {
    let st = Command::new("cp").arg("-r").arg(from).arg(to).status();
    assert!(st.unwrap().success());
}

/// A session CSV read independently: (worker, iteration, comment lines, rows).
pub struct Sess {
    pub id: u32,
    pub worker: u32,
    pub iteration: u32,
    pub comments: Vec<String>,
    pub rows: Vec<(String, i64)>,
}

pub fn sessions(run: &Path) -> Vec<Sess> {
    session_csvs(run)
        .iter()
        .map(|f| {
            let c = read_csv(f);
            let r0 = &c.rows[0];
            Sess {
                id: r0[0].parse().unwrap(),
                worker: r0[1].parse().unwrap(),
                iteration: r0[2].parse().unwrap(),
                comments: c.comments,
                rows: c
                    .rows
                    .iter()
                    .map(|r| (r[3].clone(), r[4].parse().unwrap()))
                    .collect(),
            }
        })
        .collect()
}

pub fn worker_iterations(s: &[Sess]) -> BTreeSet<(u32, u32)> {
    s.iter().map(|s| (s.worker, s.iteration)).collect()
}

/// Nearest-rank percentile (summary.json's definition, `surge::stats::rank`), computed here independently.
pub fn pct(sorted: &[u64], q: f64) -> f64 {
    let rank = ((q * sorted.len() as f64).ceil() as usize).max(1);
    sorted[rank - 1] as f64
}

/// Per event type, "overall" and "session": every duration (ms) found in the rows.
pub fn durations(all: &[Sess]) -> BTreeMap<String, Vec<u64>> {
    let mut d: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for s in all {
        let mut open: Option<(&str, i64)> = None;
        for (ev, ts) in &s.rows {
            if let Some(k) = ev.strip_suffix("_START") {
                if !k.starts_with("PLAYBACK_SLEEPBEFORE") {
                    open = Some((k, *ts));
                }
            } else if let (Some(k), Some((o, t))) = (ev.strip_suffix("_END"), open) {
                if k == o {
                    d.entry(k.to_string()).or_default().push((ts - t) as u64);
                    d.entry("overall".into()).or_default().push((ts - t) as u64);
                    open = None;
                }
            }
        }
        if s.rows.last().unwrap().0 == "PLAYBACK_DONE" {
            let span = s.rows.last().unwrap().1 - s.rows[0].1;
            d.entry("session".into()).or_default().push(span as u64);
        }
    }
    for v in d.values_mut() {
        v.sort();
    }
    d
}

/// summary.json's numbers for one set of durations equal those computed from the rows.
pub fn assert_summary_eq(name: &str, got: &serde_json::Value, v: &[u64]) {
    assert!(
        *v.last().unwrap() < 2048,
        "{name}: durations beyond HdrHistogram's exact range"
    );
    let mean = v.iter().sum::<u64>() as f64 / v.len() as f64;
    let want = [
        ("count", v.len() as f64),
        ("p50", pct(v, 0.5)),
        ("p90", pct(v, 0.9)),
        ("p95", pct(v, 0.95)),
        ("p99", pct(v, 0.99)),
        ("p99.9", pct(v, 0.999)),
        ("max", *v.last().unwrap() as f64),
        ("mean", (mean * 1000.0).round() / 1000.0),
    ];
    for (k, w) in want {
        let g = got[k].as_f64().unwrap();
        assert!(
            (g - w).abs() < 1e-9,
            "{name} {k}: summary.json {g}, from the rows {w}"
        );
    }
}

/// Reads a run's sessions the way shinyloadtest's `read_log_dir` does (real R, vroom); returns
/// [rows, files, distinct (session, worker, iteration), distinct session ids].
pub fn shinyloadtest_read(run: &Path) -> [usize; 4] {
    let script = format!(
        "files <- list.files('{}', pattern = '*.csv', full.names = TRUE)
         df <- vroom::vroom(files, col_types = vroom::cols(session_id = vroom::col_integer(),
           worker_id = vroom::col_integer(), iteration = vroom::col_integer(),
           event = vroom::col_character(), timestamp = vroom::col_double(),
           input_line_number = vroom::col_integer(), comment = vroom::col_character()),
           comment = '#', progress = FALSE)
         stopifnot(!anyNA(df$session_id), !anyNA(df$timestamp), !anyNA(df$event))
         cat(nrow(df), length(files), nrow(unique(df[c('session_id', 'worker_id', 'iteration')])),
             length(unique(df$session_id)))",
        run.join("sessions").display()
    );
    let out = Command::new("Rscript")
        .args(["-e", &script])
        .output()
        .expect("Rscript not found: install r-base-core and r-cran-vroom (make deps)");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "R: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let n: Vec<usize> = text
        .split_whitespace()
        .map(|x| x.parse().unwrap())
        .collect();
    n.try_into().unwrap()
}

/// Runs the plan in `dir` as `seg1`..`seg4` (`--segment K/4`) and `single`, all with one
/// `--start-at` ~2 s ahead; returns that instant (Unix ms and as given).
pub fn run_plan(rec: &str, target: &str, dir: &Path) -> (i64, String) {
    std::fs::create_dir_all(dir).unwrap();
    let start_ms = (now_ms() / 100 + 20) * 100; // ~2 s ahead, a round instant
    let at = rfc3339(start_ms);
    let log = |i: usize| dir.join(format!("out{i}.txt"));
    let mut procs = Vec::new();
    for k in 1..=5 {
        let out = dir.join(if k < 5 {
            format!("seg{k}")
        } else {
            "single".into()
        });
        let seg = format!("{k}/4");
        let extra = if k < 5 {
            vec!["--segment", &seg, "--start-at", &at]
        } else {
            vec!["--start-at", &at]
        };
        procs.push(spawn(
            &replay_args(rec, target, out.to_str().unwrap(), &extra),
            &log(k),
        ));
    }
    for (i, p) in procs.into_iter().enumerate() {
        let (code, out) = finish(p, &log(i + 1));
        assert_eq!(code, Some(0), "process {}: {out}", i + 1);
        assert!(
            !out.contains("late start"),
            "process {} started late: {out}",
            i + 1
        );
    }
    (start_ms, at)
}

/// Users whose first session did not start within 20 ms after its planned time (w × interval
/// from the plan's start; 1 ms earlier is ms rounding).
pub fn schedule_misses(sessions: &[(String, Sess)], start_ms: i64) -> Vec<String> {
    let mut misses = Vec::new();
    for (run, s) in sessions.iter().filter(|(_, s)| s.iteration == 0) {
        let off = s.rows[0].1 - (start_ms + i64::from(s.worker) * INTERVAL_MS);
        if !(-1..=20).contains(&off) {
            misses.push(format!(
                "{run}: user {} started {off} ms off plan",
                s.worker
            ));
        }
    }
    misses
}

/// Checks a bad invocation: exit status 2, one stderr line containing `want`, and `out` not
/// created.
pub fn refused(args: &[&str], want: &str, out: &Path) {
    let (code, stdout, stderr) = run(args);
    assert_eq!(code, Some(2), "{args:?}: {stdout}{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{args:?}: {stderr}");
    assert!(
        stderr.contains(want),
        "{args:?}: want {want:?}, got {stderr}"
    );
    assert!(!out.exists(), "{args:?} created {}", out.display());
}
