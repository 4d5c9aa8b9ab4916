//! A weighted mix of journeys: `surge replay browse.log:70 export.log:30 URL` against a loopback
//! app. Each session plays one journey; the run directory (PLAYER_SESSION_CREATE's
//! `journey=<name>`), summary.json's `journeys`, and the app's own request counts all split by
//! the weights within ±5% over ≥ 200 sessions; two `--segment`s merged by `surge merge` give the
//! same split.

use crate::common;

use common::*;
use std::path::Path;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

fn recording(path: &Path, page: &str) {
    let text = format!(
        "# version: 1\n# target_url: http://127.0.0.1:1/\n# target_type: surge/http\n\
{{\"type\":\"REQ_HOME\",\"begin\":\"2026-01-01T00:00:00.000Z\",\"end\":\"2026-01-01T00:00:00.005Z\",\"status\":200,\"url\":\"/\"}}\n\
{{\"type\":\"REQ_GET\",\"begin\":\"2026-01-01T00:00:00.040Z\",\"end\":\"2026-01-01T00:00:00.045Z\",\"status\":200,\"url\":\"/{page}\"}}\n"
    );
    std::fs::write(path, text).unwrap();
}

/// (browse, export) sessions as the run directory's CSVs say.
fn csv_split(run: &Path) -> (u64, u64) {
    let (mut b, mut e) = (0, 0);
    for f in session_csvs(run) {
        let csv = read_csv(&f);
        let create = &csv.rows[0];
        assert_eq!(create[3], "PLAYER_SESSION_CREATE");
        match create[6].as_str() {
            "journey=browse" => b += 1,
            "journey=export" => e += 1,
            other => panic!("{}: journey comment {other:?}", f.display()),
        }
    }
    (b, e)
}

fn assert_split(what: &str, browse: u64, export: u64) {
    let total = browse + export;
    assert!(total >= 200, "{what}: {total} sessions");
    let share = browse as f64 / total as f64;
    assert!(
        (share - 0.7).abs() <= 0.05,
        "{what}: browse {browse} of {total} ({share:.3})"
    );
}

fn journey_counts(s: &serde_json::Value) -> (u64, u64) {
    let n = |j: &str| s["journeys"][j]["sessions"]["started"].as_u64().unwrap();
    (n("browse"), n("export"))
}

#[test]
fn a_mix_splits_sessions_and_figures_by_weight_and_merges() {
    let hits = Arc::new([AtomicU32::new(0), AtomicU32::new(0)]);
    let h = hits.clone();
    let port = start_http(move |path| {
        match path {
            "/browse" => h[0].fetch_add(1, Ordering::Relaxed),
            "/export" => h[1].fetch_add(1, Ordering::Relaxed),
            _ => 0,
        };
        Some("200 OK")
    });
    let tmp = TempDir::new("mix");
    let (browse, export) = (tmp.path().join("browse.log"), tmp.path().join("export.log"));
    recording(&browse, "browse");
    recording(&export, "export");
    let target = format!("http://127.0.0.1:{port}/");
    let run = tmp.path().join("run");
    let (b70, e30) = (
        format!("{}:70", browse.display()),
        format!("{}:30", export.display()),
    );
    let plan = [
        "--users",
        "20",
        "--start-interval",
        "0",
        "--loaded-duration",
        "1500ms",
    ];
    let mut argv = owned(&[&b70, &e30, &target]);
    argv.extend(owned(&plan));
    argv.extend(owned(&["--output-dir", run.to_str().unwrap()]));
    let outcome = replay_with(&argv);
    // What `surge replay` prints, after an exit status 0.
    let stdout = surge::replay::replay_text(&outcome.summary, &run);
    assert_eq!(outcome.exit_code(), 0, "{stdout}");
    assert!(stdout.contains("journey browse (weight 70): "), "{stdout}");
    let s = summary(&run);
    let started = s["sessions"]["started"].as_u64().unwrap();
    let (b, e) = journey_counts(&s);
    assert_eq!(b + e, started);
    assert_split("summary.json", b, e);
    assert_eq!(csv_split(&run), (b, e), "the CSVs agree with summary.json");
    // The app saw each journey's own request as often as that journey's sessions ran.
    assert_eq!(u64::from(hits[0].load(Ordering::Relaxed)), b);
    assert_eq!(u64::from(hits[1].load(Ordering::Relaxed)), e);
    let j = &s["journeys"]["browse"];
    assert_eq!(j["weight"], 70);
    assert_eq!(j["events"]["REQ_GET"]["count"].as_u64(), Some(b));
    assert_eq!(
        s["events"]["REQ_GET"]["count"].as_u64(),
        Some(b + e),
        "the total is the sum of the journeys"
    );
    assert!(run.join("journeys/export/recording.log").is_file());
    // The report splits the same figures by journey: its model's rows equal summary.json's, and
    // the page has a row per journey.
    let m = common::report_model(&common::report_args(vec![run.clone()], &[]));
    let rows = m["runs"][0]["journeys"].as_array().unwrap();
    let names: Vec<&str> = rows.iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["browse", "export"]);
    for r in rows {
        let js = &s["journeys"][r["name"].as_str().unwrap()];
        assert_eq!(r["sessions"][0], js["sessions"]["started"]);
        assert_eq!(r["sessions"][2], js["sessions"]["failed"]);
        assert_eq!(r["weight"], js["weight"]);
        assert_eq!(r["events"]["p95"], js["overall"]["p95"]);
        assert_eq!(r["session"]["p50"], js["session_duration"]["p50"]);
    }
    let html = tmp.path().join("mix.html");
    let out = report_in_process(&[run.to_str().unwrap(), "-o", html.to_str().unwrap()]);
    assert!(out.is_ok(), "{out:?}");
    let page = std::fs::read_to_string(&html).unwrap();
    for name in ["browse", "export"] {
        assert!(
            page.contains(&format!("data-journey=\"{name}\"")),
            "{name} row in the report"
        );
    }

    // Two segments of the same plan, merged: the same split, the journeys kept.
    let mut dirs = Vec::new();
    let segments: Vec<_> = (1..=2)
        .map(|k| {
            let dir = tmp.path().join(format!("seg{k}"));
            dirs.push(dir.clone());
            let mut argv = owned(&[&b70, &e30, "--target", &target]);
            argv.extend(owned(&plan));
            argv.extend(owned(&["--segment", &format!("{k}/2")]));
            argv.extend(owned(&["--output-dir", dir.to_str().unwrap()]));
            spawn_replay_with(argv)
        })
        .collect();
    for mut seg in segments {
        let outcome = seg.wait(Duration::from_secs(60)).map(Result::unwrap);
        assert_eq!(outcome.map(|o| o.exit_code()), Some(0));
    }
    let merged = tmp.path().join("merged");
    let mut argv: Vec<&str> = dirs.iter().map(|d| d.to_str().unwrap()).collect();
    argv.extend(["-o", merged.to_str().unwrap()]);
    let out = merge_in_process(&argv);
    assert_eq!(out.as_ref().ok(), Some(&0), "{out:?}");
    let s = summary(&merged);
    let (b, e) = journey_counts(&s);
    assert_eq!(b + e, s["sessions"]["started"].as_u64().unwrap());
    assert_split("merged summary.json", b, e);
    assert_eq!(csv_split(&merged), (b, e));
    let j = &s["journeys"]["export"];
    assert_eq!(j["events"]["REQ_GET"]["count"].as_u64(), Some(e));
    assert!(merged.join("journeys/export/recording.log").is_file());
}
