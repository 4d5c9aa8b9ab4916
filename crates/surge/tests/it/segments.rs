//! One plan spread over several surge processes (issue 13): 4 processes with `--segment 1/4..4/4`
//! and one `--start-at`, merged with `surge merge`, equal one single-process run of the same plan:
//! the same sessions (worker × iteration), every user's first session at its planned start (within
//! 20 ms), and merged percentiles equal to those computed here from all sessions' raw rows; a late
//! start; failures merged. `surge bench --rate` segments are in segments_bench.rs, bad input in
//! segments_bad_input.rs. Target: the Python fixture app (tests/fixtures/sse-app) on loopback.

use crate::common;
use crate::segments_support;

use common::*;
use segments_support::*;
use std::collections::BTreeSet;
use std::path::Path;

#[test]
fn four_segments_merged_equal_one_run() {
    let _serial = serial();
    let (_app, target) = start_sse_app("normal");
    let tmp = TempDir::new("segments");
    let rec = write_recording(tmp.path(), false);
    let rec = rec.to_str().unwrap();
    // The plan runs as 4 segments + 1 single process; a start-schedule miss on a loaded host
    // (another process holding the CPUs for > 20 ms) gets one more attempt, a second miss fails.
    let mut attempt = 0;
    let (start_ms, at, dir) = loop {
        attempt += 1;
        let dir = tmp.path().join(format!("attempt{attempt}"));
        let (start_ms, at) = run_plan(rec, &target, &dir);
        let mut all: Vec<(String, Sess)> = vec![];
        for n in ["seg1", "seg2", "seg3", "seg4", "single"] {
            all.extend(
                sessions(&dir.join(n))
                    .into_iter()
                    .map(|s| (n.to_string(), s)),
            );
        }
        match schedule_misses(&all, start_ms) {
            misses if misses.is_empty() => break (start_ms, at, dir),
            misses if attempt == 1 => {
                eprintln!("start schedule missed, one more attempt: {misses:?}")
            }
            misses => panic!("start schedule missed twice: {misses:?}"),
        }
    };
    let d = |n: &str| dir.join(n).to_str().unwrap().to_string();
    let (segs, single, merged): (Vec<String>, _, _) = (
        (1..=4).map(|k| d(&format!("seg{k}"))).collect(),
        d("single"),
        d("merged"),
    );
    for (k, out) in segs.iter().enumerate() {
        let s = summary(Path::new(out));
        assert_eq!(s["segment"], format!("{}/4", k + 1));
        assert_eq!(s["segment_users"], 2);
        assert_eq!(s["late_start_ms"], 0);
        assert_eq!(s["started_at_ms"], start_ms);
    }

    let (code, stdout, stderr) = run(&[
        "merge", &segs[0], &segs[1], &segs[2], &segs[3], "-o", &merged,
    ]);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    let (m, one) = (sessions(Path::new(&merged)), sessions(Path::new(&single)));
    let parts: Vec<Sess> = segs.iter().flat_map(|d| sessions(Path::new(d))).collect();

    // Same sessions as the single run (and as the segments together), each user in its segment.
    let spans = |v: &[Sess]| -> Vec<(u32, u32, i64, String)> {
        let last = |s: &Sess| s.rows.last().unwrap().clone();
        v.iter()
            .map(|s| (s.worker, s.iteration, last(s).1 - s.rows[0].1, last(s).0))
            .collect()
    };
    assert_eq!(
        worker_iterations(&m),
        worker_iterations(&one),
        "merged {:?} vs single {:?}",
        spans(&m),
        spans(&one)
    );
    assert_eq!(worker_iterations(&m), worker_iterations(&parts));
    assert_eq!(m.len(), parts.len());
    assert_eq!(
        worker_iterations(&one).len(),
        2 * USERS as usize,
        "plan: 2 sessions per user"
    );
    for s in &m {
        let seg = format!("\"segment\":\"{}/4\"", s.worker % 4 + 1);
        assert!(
            s.comments[1].contains(&seg) && s.comments[1].contains("\"merged\":true"),
            "{:?}",
            s.comments
        );
    }
    // Session ids 0..n, renumbered in start order.
    let mut by_id: Vec<(u32, i64)> = m.iter().map(|s| (s.id, s.rows[0].1)).collect();
    by_id.sort();
    let ids: Vec<u32> = by_id.iter().map(|x| x.0).collect();
    assert_eq!(ids, (0..m.len() as u32).collect::<Vec<_>>());
    assert!(
        by_id.windows(2).all(|w| w[0].1 <= w[1].1),
        "not in start order: {by_id:?}"
    );

    // Each user's first session starts at its planned time, in the merged and the single run.
    let named = |n: &str, v: Vec<Sess>| {
        v.into_iter()
            .map(|s| (n.to_string(), s))
            .collect::<Vec<_>>()
    };
    let mut both = named("merged", sessions(Path::new(&merged)));
    both.extend(named("single", one));
    assert_eq!(schedule_misses(&both, start_ms), Vec::<String>::new());

    // summary.json: counts and every percentile equal those of all sessions' raw rows.
    let sm = summary(Path::new(&merged));
    assert_eq!(sm["merged_segments"], 4);
    assert_eq!(sm["started_at_ms"], start_ms);
    assert_eq!(sm["start_at"], at);
    assert_eq!(sm["users"], USERS);
    assert_eq!(sm["sessions"]["started"], parts.len());
    assert_eq!(sm["sessions"]["failed"], 0);
    let d = durations(&parts);
    for (k, v) in &d {
        let got = match k.as_str() {
            "overall" => &sm["overall"],
            "session" => &sm["session_duration"],
            kind => &sm["events"][kind],
        };
        assert_summary_eq(k, got, v);
    }
    assert!(d["REQ_GET"].len() == 3 * parts.len() && d["session"].len() == parts.len());

    // shinyloadtest's reader (vroom over sessions/*.csv, its column types, comment "#") sees one
    // run: every row, and one session per file with a session id of its own.
    let rows: usize = m.iter().map(|s| s.rows.len()).sum();
    assert_eq!(
        shinyloadtest_read(Path::new(&merged)),
        [rows, m.len(), m.len(), m.len()]
    );

    // surge report reads the segments directly as the merged run.
    let report = |dirs: &[&str]| -> serde_json::Value {
        let out = tmp.path().join("r.json");
        let mut a = vec!["report"];
        a.extend(dirs);
        a.extend(["--json", "-o", out.to_str().unwrap()]);
        let (code, _, err) = run(&a);
        assert_eq!(code, Some(0), "{err}");
        serde_json::from_str(&std::fs::read_to_string(out).unwrap()).unwrap()
    };
    let direct = report(&[&segs[2], &segs[0], &segs[3], &segs[1]]);
    let from_merged = report(&[&merged]);
    assert_eq!(direct["runs"].as_array().unwrap().len(), 1);
    assert_eq!(
        direct["runs"][0]["summary"],
        from_merged["runs"][0]["summary"]
    );
    assert_eq!(
        direct["runs"][0]["summary"]["outcome"]["sessions"]["started"],
        parts.len()
    );
}

#[test]
fn late_start_is_reported_and_started_users_run_at_once() {
    let _serial = serial();
    let (_app, target) = start_sse_app("normal");
    let tmp = TempDir::new("segments-late");
    let rec = write_recording(tmp.path(), false);
    let out = tmp.path().join("late");
    let start_ms = now_ms() - 3000;
    let at = rfc3339(start_ms);
    let (rec, out_dir) = (rec.to_str().unwrap(), out.to_str().unwrap());
    let flags = [
        "--users",
        "4",
        "--start-interval",
        "2s",
        "--segment",
        "1/2",
        "--start-at",
        &at,
    ];
    let args = replay(rec, &target, out_dir, &flags);
    let (code, _, stderr) = run(&args);
    assert_eq!(code, Some(0), "{stderr}");
    let late: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("late start"))
        .collect();
    assert_eq!(late.len(), 1, "{stderr}");
    assert!(late[0].contains(&at), "{}", late[0]);
    let s = summary(&out);
    assert!(s["late_start_ms"].as_u64().unwrap() >= 3000, "{s}");
    assert_eq!(s["started_at_ms"], start_ms);
    // Segment 1/2 of 4 users 2 s apart: users 0 (due 3 s ago: starts at once) and 2 (due in 1 s).
    let ss = sessions(&out);
    let first = |w: u32| {
        ss.iter()
            .find(|s| s.worker == w && s.iteration == 0)
            .unwrap()
            .rows[0]
            .1
    };
    assert!(
        first(0) - start_ms >= 3000 && first(0) - start_ms < 3500,
        "user 0 at +{}",
        first(0) - start_ms
    );
    let off = first(2) - (start_ms + 4000);
    assert!((-1..=20).contains(&off), "user 2 started {off} ms off plan");
    assert_eq!(
        worker_iterations(&ss)
            .iter()
            .map(|x| x.0)
            .collect::<BTreeSet<_>>(),
        [0, 2].into()
    );
}

#[test]
fn merged_failures_equal_one_run() {
    let _serial = serial();
    // The JSON API never answers: every session fails at the same line with a timeout.
    let (_app, target) = start_sse_app("hang");
    let tmp = TempDir::new("segments-fail");
    let rec = write_recording(tmp.path(), false);
    let d = |n: &str| tmp.path().join(n).to_str().unwrap().to_string();
    let plan = [
        "--users",
        "4",
        "--start-interval",
        "10ms",
        "--think-time",
        "none",
        "--message-timeout",
        "300ms",
    ];
    let replay_failing = |out: &str, extra: &[&str]| {
        let flags = [&plan[..], extra].concat();
        let args = replay(rec.to_str().unwrap(), &target, out, &flags);
        let outcome = replay_with(&owned(&args[1..]));
        let text = surge::replay::replay_text(&outcome.summary, Path::new(out));
        assert_eq!(
            outcome.exit_code(),
            1,
            "a failed check is exit status 1: {text}"
        );
    };
    replay_failing(&d("one"), &[]);
    replay_failing(&d("f1"), &["--segment", "1/2"]);
    replay_failing(&d("f2"), &["--segment", "2/2"]);
    let merged = merge_in_process(&[&d("f2"), &d("f1"), "-o", &d("merged")]);
    assert_eq!(merged.as_ref().ok(), Some(&0), "{merged:?}");
    let (m, one) = (
        summary(Path::new(&d("merged"))),
        summary(Path::new(&d("one"))),
    );
    assert_eq!(m["sessions"], one["sessions"]);
    assert_eq!(m["sessions"]["failed"], 4);
    assert_eq!(m["failures_by_kind"], one["failures_by_kind"]);
    assert_eq!(m["failures_by_kind"]["timeout"], 4);
    let key = |v: &serde_json::Value| -> Vec<(String, u64, String, u64)> {
        (v["failures"].as_array().unwrap().iter())
            .map(|f| {
                (
                    f["kind"].to_string(),
                    f["line"].as_u64().unwrap(),
                    f["url"].to_string(),
                    f["count"].as_u64().unwrap(),
                )
            })
            .collect()
    };
    assert_eq!(key(&m), key(&one));
    assert_eq!(
        (m["ok"].as_bool(), m["checks"][0]["ok"].as_bool()),
        (Some(false), Some(false))
    );
}

/// `surge merge` keeps what the server said: an app that sends `Server-Timing` on every answer
/// (queue 3 ms, app 7 ms), the plan as 2 segments. Every segment's `timing/` file is in the
/// merged run under its session's new name (one per merged session CSV, rows unchanged), and
/// the report of the merged run splits every line as the report of the two segments does.
#[test]
fn merge_keeps_each_segments_server_timing() {
    let port = start_http(|_| Some("200 OK\r\nServer-Timing: queue;dur=3, app;dur=7"));
    let target = format!("http://127.0.0.1:{port}");
    let tmp = TempDir::new("segments-timing");
    let rec = write_recording(tmp.path(), false);
    let d = |n: &str| tmp.path().join(n).to_str().unwrap().to_string();
    let plan = [
        "--users",
        "4",
        "--start-interval",
        "0s",
        "--think-time",
        "none",
    ];
    for (out, seg) in [("s1", "1/2"), ("s2", "2/2")] {
        let flags = [&plan[..], &["--segment", seg]].concat();
        let out = d(out);
        let args = replay(rec.to_str().unwrap(), &target, &out, &flags);
        assert_eq!(replay_with(&owned(&args[1..])).exit_code(), 0);
    }
    let merged = merge_in_process(&[&d("s1"), &d("s2"), "-o", &d("merged")]);
    assert_eq!(merged.as_ref().ok(), Some(&0), "{merged:?}");
    let names = |dir: &str, sub: &str| -> BTreeSet<String> {
        std::fs::read_dir(Path::new(dir).join(sub))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".csv"))
            .collect()
    };
    let (m, s1, s2) = (d("merged"), d("s1"), d("s2"));
    assert_eq!(names(&m, "timing"), names(&m, "sessions"));
    assert_eq!(
        names(&m, "timing").len(),
        names(&s1, "timing").len() + names(&s2, "timing").len()
    );
    let rows = |dir: &str| -> Vec<String> {
        let mut v: Vec<String> = names(dir, "timing")
            .iter()
            .flat_map(|n| {
                let text = std::fs::read_to_string(Path::new(dir).join("timing").join(n)).unwrap();
                text.lines().skip(1).map(str::to_string).collect::<Vec<_>>()
            })
            .collect();
        v.sort();
        v
    };
    // What the server said, as it said it (the report cuts it to the measured time).
    assert!(
        rows(&m).iter().all(|r| r.ends_with(",3.000,7.000")),
        "{:?}",
        rows(&m)
    );
    let mut both = [rows(&s1), rows(&s2)].concat();
    both.sort();
    assert_eq!(rows(&m), both, "the rows as the segments wrote them");
    let split = |runs: Vec<std::path::PathBuf>| {
        let model = report_model(&report_args(runs, &[]));
        let mut n = std::collections::BTreeMap::new();
        for run in model["runs"].as_array().unwrap() {
            for s in run["timing"].as_array().unwrap() {
                *n.entry(s["line"].as_u64().unwrap()).or_insert(0) += s["n"].as_u64().unwrap();
            }
        }
        n
    };
    let merged_split = split(vec![m.clone().into()]);
    assert_eq!(merged_split.len(), 4, "every line split: {merged_split:?}");
    assert!(merged_split.values().all(|&n| n == 4), "{merged_split:?}");
    assert_eq!(merged_split, split(vec![s1.into(), s2.into()]));
}
