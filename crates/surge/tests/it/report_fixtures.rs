//! `surge report` on the real shinycannon runs in ../shared/data/shinyloadtest: every number the
//! report states is checked against a count made here, straight from the CSV files.

use crate::common;

use common::{fresh_dir, report_args, report_model, shared, unzip_run};
use serde_json::Value;
use std::{
    collections::HashMap,
    path::{Path, PathBuf},
    process::Command,
};
use surge::report::{build, ReportError};

/// Unzips a fixture run into a fresh directory of its own; returns the run directory.
fn unzip(name: &str, tag: &str) -> PathBuf {
    let zip = shared().join("runs").join(format!("{name}.zip"));
    unzip_run(&zip, &fresh_dir(&format!("report-{tag}-{name}")))
}

/// What the CSV files say, counted without the report's code.
#[derive(Debug, Default)]
struct Counted {
    sessions: usize,
    events: usize,
    done: usize,
    failed: usize,
    /// Durations per event type (completed START/END pairs), ms.
    durations: HashMap<String, Vec<i64>>,
    /// Per worker: first timestamp, last timestamp.
    workers: HashMap<u32, (i64, i64)>,
    start: i64,
}

fn count(dir: &Path) -> Counted {
    let mut c = Counted {
        start: i64::MAX,
        ..Default::default()
    };
    for f in std::fs::read_dir(dir.join("sessions")).unwrap() {
        let p = f.unwrap().path();
        if p.extension().is_none_or(|x| x != "csv") {
            continue;
        }
        c.sessions += 1;
        let text = std::fs::read_to_string(&p).unwrap();
        let mut open: HashMap<(String, String), i64> = HashMap::new();
        for line in text.lines().filter(|l| !l.starts_with('#')).skip(1) {
            let f: Vec<&str> = line.split(',').collect();
            let (worker, ev, ts, ln) = (
                f[1].parse::<u32>().unwrap(),
                f[3],
                f[4].parse::<i64>().unwrap(),
                f[5],
            );
            c.start = c.start.min(ts);
            let w = c.workers.entry(worker).or_insert((ts, ts));
            w.0 = w.0.min(ts);
            w.1 = w.1.max(ts);
            match ev {
                "PLAYBACK_DONE" => c.done += 1,
                "PLAYBACK_FAIL" => c.failed += 1,
                "PLAYBACK_SLEEPBEFORE_START" | "PLAYBACK_SLEEPBEFORE_END" => {}
                _ => {
                    if let Some(t) = ev.strip_suffix("_START") {
                        c.events += 1;
                        open.insert((t.to_string(), ln.to_string()), ts);
                    } else if let Some(t) = ev.strip_suffix("_END") {
                        let s = open.remove(&(t.to_string(), ln.to_string())).unwrap();
                        c.durations.entry(t.to_string()).or_default().push(ts - s);
                    }
                }
            }
        }
    }
    c
}

/// Nearest-rank percentile, written out again here.
fn pct(v: &mut [i64], p: f64) -> i64 {
    v.sort_unstable();
    let k = ((p / 100.0) * v.len() as f64).ceil() as usize;
    v[k.max(1) - 1]
}

fn model(runs: Vec<PathBuf>, names: &[&str]) -> Value {
    report_model(&report_args(runs, names))
}

fn check_run(run: &Value, c: &Counted, what: &str) {
    let s = &run["summary"];
    let n = &s["outcome"]["sessions"];
    assert_eq!(n["started"], c.sessions, "{what}: sessions");
    assert_eq!(s["events"], c.events, "{what}: events");
    assert_eq!(n["completed"], c.done, "{what}: completed");
    assert_eq!(n["failed"], c.failed, "{what}: failed");
    assert_eq!(s["workers"], c.workers.len(), "{what}: workers");
    // Columns are complete: one entry per session, one per event.
    assert_eq!(
        run["sessions"]["id"].as_array().unwrap().len(),
        c.sessions,
        "{what}"
    );
    let n: u64 = run["sessions"]["n"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert_eq!(n as usize, c.events, "{what}: per-session event counts");
    assert_eq!(
        run["events"]["line"].as_array().unwrap().len(),
        c.events,
        "{what}"
    );
    // Homepage class = REQ_HOME events: same percentiles as computed here.
    let mut home = c.durations["REQ_HOME"].clone();
    let cls = &s["classes"][0];
    assert_eq!(cls[0], home.len(), "{what}: homepage count");
    assert_eq!(cls[1], pct(&mut home, 50.0), "{what}: homepage p50");
    assert_eq!(cls[3], pct(&mut home, 99.0), "{what}: homepage p99");
    assert_eq!(cls[4], *home.iter().max().unwrap(), "{what}: homepage max");
    // Warm-up ends when the last user started.
    let warm = c.workers.values().map(|w| w.0).max().unwrap() - c.start;
    assert_eq!(run["warmup_end_ms"], warm, "{what}: warm-up end");
    let cool = c.workers.values().map(|w| w.1).min().unwrap() - c.start;
    assert_eq!(run["cooldown_start_ms"], cool, "{what}: cool-down start");
}

/// Each real fixture run: the report states the sessions, events, outcomes and latencies the
/// CSV files hold.
#[test]
fn every_fixture_run_states_its_counts() {
    for name in [
        "sliders",
        "widgets",
        "upload-dt",
        "scaling_case_study_run1",
        "scaling_case_study_run5",
    ] {
        let dir = unzip(name, "counts");
        let c = count(&dir);
        let m = model(vec![dir.clone()], &[]);
        check_run(&m["runs"][0], &c, name);
        assert_eq!(m["runs"][0]["name"], name);
        let _ = std::fs::remove_dir_all(dir.parent().unwrap());
    }
    let label = shared().join("label-run");
    let c = count(&label);
    let m = model(vec![label], &[]);
    check_run(&m["runs"][0], &c, "label-run");
    // label-run's first session fails on its first WebSocket reply (line 16).
    assert_eq!(
        m["runs"][0]["summary"]["outcome"]["failures"][0]["reason"],
        "failed at recording line 16 (WS_RECV)"
    );
}

/// All assets of the sliders recording are JS/CSS; that class's max is the slowest REQ_GET.
#[test]
fn asset_class_matches_req_get() {
    let dir = unzip("sliders", "assets");
    let c = count(&dir);
    let m = model(vec![dir.clone()], &[]);
    let mut gets = c.durations["REQ_GET"].clone();
    let cls = &m["runs"][0]["summary"]["classes"][1];
    assert_eq!(cls[0], gets.len());
    assert_eq!(cls[2], pct(&mut gets, 90.0));
    assert_eq!(cls[4], *gets.iter().max().unwrap());
    // Sliders has two failed sessions, both at line 22.
    assert_eq!(
        m["runs"][0]["summary"]["outcome"]["failures"][0]["count"],
        2
    );
    let _ = std::fs::remove_dir_all(dir.parent().unwrap());
}

/// Comparing the case study's run 1 and run 5: both runs, same recording, same data as alone.
#[test]
fn compares_two_runs_of_one_recording() {
    let r1 = unzip("scaling_case_study_run1", "cmp");
    let r5 = unzip("scaling_case_study_run5", "cmp");
    let m = model(vec![r1.clone(), r5.clone()], &["run1", "run5"]);
    assert_eq!(m["same_recording"], true);
    assert_eq!(m["recordings"].as_array().unwrap().len(), 1);
    assert_eq!(m["runs"][0]["name"], "run1");
    assert_eq!(m["runs"][1]["name"], "run5");
    check_run(&m["runs"][0], &count(&r1), "run1");
    check_run(&m["runs"][1], &count(&r5), "run5");
    // 5 users vs 1: more sessions in the same loaded time.
    assert!(
        m["runs"][1]["summary"]["outcome"]["sessions"]["started"].as_u64()
            > m["runs"][0]["summary"]["outcome"]["sessions"]["started"].as_u64()
    );
    let _ = std::fs::remove_dir_all(r1.parent().unwrap());
    let _ = std::fs::remove_dir_all(r5.parent().unwrap());
}

/// Runs of different recordings are refused, naming both, unless --allow-mixed, which the
/// report then states.
#[test]
fn different_recordings_are_refused_or_flagged() {
    let a = unzip("sliders", "mixed");
    let b = unzip("widgets", "mixed");
    let err = build(&report_args(vec![a.clone(), b.clone()], &[]))
        .err()
        .unwrap();
    assert!(matches!(err, ReportError::MixedRecordings { .. }), "{err}");
    let msg = err.to_string();
    assert!(
        msg.contains("\"sliders\"") && msg.contains("\"widgets\"") && msg.contains("--allow-mixed"),
        "{msg}"
    );
    let mut a2 = report_args(vec![a.clone(), b.clone()], &[]);
    a2.allow_mixed = true;
    let m = report_model(&a2);
    assert_eq!(m["same_recording"], false);
    assert_eq!(m["recordings"].as_array().unwrap().len(), 2);
    assert_eq!(m["runs"][1]["recording"], 1);
    let _ = std::fs::remove_dir_all(a.parent().unwrap());
    let _ = std::fs::remove_dir_all(b.parent().unwrap());
}

/// The HTML file: summary numbers in the static tables, data and runtime inline, nothing
/// fetched from outside. Without the runtime (no `make web`) the command must say so.
#[test]
fn html_report_via_the_binary() {
    let r1 = unzip("scaling_case_study_run1", "html");
    let r5 = unzip("scaling_case_study_run5", "html");
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-html.html");
    let _ = std::fs::remove_file(&out);
    let o = Command::new(env!("CARGO_BIN_EXE_surge"))
        .arg("report")
        .args([&r1, &r5])
        .args([
            "--name",
            "run1",
            "--name",
            "run5",
            "--page-load-limit",
            "5s",
            "-o",
        ])
        .arg(&out)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    if surge::report::runtime().is_err() {
        assert!(!o.status.success());
        assert!(
            stderr.contains("report runtime not built: run `make web`"),
            "{stderr}"
        );
        assert!(!out.exists());
        return;
    }
    assert!(o.status.success(), "{stderr}");
    let html = std::fs::read_to_string(&out).unwrap();
    let (c1, c5) = (count(&r1), count(&r5));
    for (i, c) in [(0, &c1), (1, &c5)] {
        assert!(html.contains(&format!(
            "data-run=\"{i}\" data-k=\"sessions\" data-v=\"{}\"",
            c.sessions
        )));
        assert!(html.contains(&format!(
            "data-run=\"{i}\" data-k=\"events\" data-v=\"{}\"",
            c.events
        )));
    }
    assert!(html.contains("Page loads over 5.00 s"));
    assert!(html.contains("class=\"ratio"), "comparison ratios");
    assert!(html.contains("id=\"surge-data\"") && html.contains("echarts"));
    // Self-contained: no external scripts, styles or fetches.
    for bad in [
        "<script src",
        "<link ",
        "http://cdn",
        "https://cdn",
        "@import",
    ] {
        assert!(!html.contains(bad), "report refers outside itself: {bad}");
    }
    assert!(stderr.contains("wrote"), "{stderr}");
    let _ = std::fs::remove_dir_all(r1.parent().unwrap());
    let _ = std::fs::remove_dir_all(r5.parent().unwrap());
}
