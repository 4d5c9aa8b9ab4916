//! `surge bench --rate` spread over segments (issue 13): merged counts and histograms equal one
//! run, checked against the server's own counter; the open model accounts for every scheduled
//! request; Ctrl-C ends the wait for `--start-at`. Target: the Python fixture app on loopback.

use crate::common;
use crate::segments_support;

use common::*;
use segments_support::*;
use std::time::Duration;

#[test]
fn bench_segments_merge_exactly() {
    let _serial = serial();
    let (_app, target) = start_sse_app("normal");
    let tmp = TempDir::new("segments-bench");
    let home = || -> u64 {
        let (_, body) = http_get(&target, "/stats");
        serde_json::from_slice::<serde_json::Value>(&body).unwrap()["home"]
            .as_u64()
            .unwrap()
    };
    let at = rfc3339((now_ms() / 100 + 15) * 100);
    let plan = [
        "--rate",
        "150",
        "-d",
        "1s",
        "-c",
        "20",
        "--json",
        "--start-at",
        &at,
    ];
    let log = |i: usize| tmp.path().join(format!("b{i}.json"));
    let before = home();
    let procs: Vec<Proc> = (1..=2)
        .map(|k| {
            let seg = format!("{k}/2");
            let mut a = vec!["bench", target.as_str(), "--segment", &seg];
            a.extend(plan);
            spawn(&a, &log(k))
        })
        .collect();
    for (i, p) in procs.into_iter().enumerate() {
        let (code, out) = finish(p, &log(i + 1));
        assert_eq!(code, Some(0), "{out}");
    }
    let sent_by_segments = home() - before;
    // Each log: the countdown's announcement (stderr), then the --json result (stdout).
    let seg: Vec<serde_json::Value> = (1..=2)
        .map(|k| {
            let text = std::fs::read_to_string(log(k)).unwrap();
            let (before, json) = text.split_at(text.find("\n{").map_or(0, |i| i + 1));
            assert!(
                before.starts_with("surge: waiting for --start-at "),
                "{text}"
            );
            // As `--json > seg-K.json` leaves it: stdout only, what `merge` reads below.
            std::fs::write(log(k), json).unwrap();
            serde_json::from_str(json).unwrap()
        })
        .collect();
    // Each segment sent exactly its share of the 150 slots (every other request).
    assert_eq!(
        (seg[0]["requests"].as_u64(), seg[1]["requests"].as_u64()),
        (Some(75), Some(75))
    );
    let merged = tmp.path().join("merged.json");
    let (code, _, err) = run(&[
        "merge",
        log(1).to_str().unwrap(),
        log(2).to_str().unwrap(),
        "-o",
        merged.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{err}");
    let m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&merged).unwrap()).unwrap();
    assert_eq!(m["merged_segments"], 2);
    assert_eq!(
        m["requests"].as_u64(),
        Some(sent_by_segments),
        "server counted {sent_by_segments}"
    );
    assert_eq!(m["ok"], 150);

    // One process, the same plan: the same count.
    let before = home();
    let (code, out, err) = run(&[&["bench", target.as_str()][..], &plan[..7]].concat());
    assert_eq!(code, Some(0), "{err}");
    let one: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(one["requests"], m["requests"]);
    assert_eq!(home() - before, 150);

    // The merged percentiles are those of every request's latency: the segments' histograms
    // decoded and added here.
    let mut all = surge::stats::new_histogram();
    for s in &seg {
        all.add(surge::stats::decode(s["histogram_us"].as_str().unwrap()).unwrap())
            .unwrap();
    }
    assert_eq!(all.len(), 150);
    let want = serde_json::to_value(surge::stats::summarize(&all, 1000.0)).unwrap();
    assert_eq!(m["latency_ms"], want);
    // A segment's result merged alone, or with another plan's, is refused.
    let out = tmp.path().join("m2.json");
    refused(
        &[
            "merge",
            log(1).to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ],
        "segment 2/2 missing",
        &out,
    );
}

#[test]
fn ctrl_c_ends_the_wait_for_start_at() {
    let _serial = serial();
    let (_app, target) = start_sse_app("normal");
    let tmp = TempDir::new("segments-int");
    let rec = write_recording(tmp.path(), false);
    let at = rfc3339(now_ms() + 60_000);
    let run_dir = tmp.path().join("run");
    let (rec, out) = (rec.to_str().unwrap(), run_dir.to_str().unwrap());
    let flags = ["--users", "2", "--segment", "2/2", "--start-at", &at];
    let cases: [(Vec<&str>, i32); 2] = [
        (bench_segment(&target, "1/2", &["--start-at", &at]), 130),
        (replay(rec, &target, out, &flags), 130),
    ];
    for (i, (args, want)) in cases.iter().enumerate() {
        let log = tmp.path().join(format!("int{i}.txt"));
        let mut p = spawn(args, &log);
        // Ready: the plan is made and the wait announced (its Ctrl-C handler is set up with it).
        let waiting = || {
            let out = std::fs::read_to_string(&log).unwrap_or_default();
            out.contains("surge: waiting for --start-at")
        };
        assert!(
            wait_until(Duration::from_secs(30), waiting),
            "{args:?}: no wait"
        );
        let code = interrupt(&mut p, Duration::from_secs(5));
        let out = std::fs::read_to_string(&log).unwrap();
        assert_eq!(code, Some(*want), "{args:?}: {out}");
        assert!(!out.contains("panicked"), "{out}");
    }
    // The interrupted replay still wrote its summary: nothing ran, and it says so.
    let s = summary(&run_dir);
    assert_eq!(
        (
            s["interrupted"].as_bool(),
            s["sessions"]["started"].as_u64()
        ),
        (Some(true), Some(0))
    );
}

#[test]
fn open_model_accounts_for_every_scheduled_request() {
    let _serial = serial();
    // The API never answers: each request times out (200 ms) and the one connection falls ever
    // further behind its 20 req/s schedule; what is still unsent 200 ms after the schedule's end
    // is counted, not dropped.
    let (_app, target) = start_sse_app("hang");
    let url = format!("{target}api/items");
    let args = [
        &url,
        "--rate",
        "20",
        "-d",
        "1s",
        "-c",
        "1",
        "--timeout",
        "200ms",
        "--json",
    ];
    let (code, r) = bench_in_process(&args);
    assert_eq!(code, Some(1), "{r}");
    let errs = r["errors"].as_object().unwrap();
    let (timeouts, behind) = (
        errs["timeout"].as_u64().unwrap(),
        errs[BEHIND].as_u64().unwrap(),
    );
    assert_eq!(
        (r["requests"].as_u64(), r["ok"].as_u64()),
        (Some(20), Some(0)),
        "{r}"
    );
    assert_eq!(timeouts + behind, 20, "{errs:?}");
    // ~1.2 s of 200 ms timeouts back to back: about 6 sent, the rest never.
    assert!((4..=7).contains(&timeouts), "{errs:?}");
}
