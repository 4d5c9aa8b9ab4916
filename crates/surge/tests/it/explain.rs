//! `surge explain` and `surge capacity`'s prediction against servers whose costs are known: the
//! FIFO-slot servers of `server_timing` and `capacity`, on loopback.

use crate::capacity::{recording as one_request, start_slots};
use crate::common::{capacity_plan, fresh_dir, report_args, report_model, surge};
use crate::server_timing::{recording, start_known};
use std::time::Duration;

/// A page whose second request takes 100 ms of compute and the others 5–10 ms, on 4 slots: alone,
/// explain learns each line's time (the slow one within 20% of 100 ms) and ranks the slow line
/// first by cost per session; with 8 users on the 4 slots, its p95 is mostly waiting. The JSON
/// file and the report's chart say the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explain_ranks_the_slow_line_first_and_sees_its_waiting() {
    let _timed = crate::server_timing::TIMED.lock().await;
    let (url, _) = start_known(4, Duration::ZERO);
    let dir = fresh_dir("explain-known");
    let rec = recording(
        &dir,
        &["/home?ms=5", "/slow?ms=100", "/fast?ms=10", "/fast2?ms=10"],
    );
    let out = dir.join("out");
    let a = crate::common::explain_args(&[
        rec.to_str().unwrap(),
        &url,
        "--users",
        "8",
        "--think-time",
        "none",
        "--loaded-duration",
        "2s",
        "--output-dir",
        out.to_str().unwrap(),
    ]);
    let plan = surge::capacity::explain::ExplainPlan::from_args(a).unwrap();
    let e = surge::capacity::explain::run(plan, std::future::pending())
        .await
        .unwrap();
    let top = &e.rows[0];
    assert!(top.label.contains("/slow"), "{:#?}", e.rows);
    // One solo session is one sample a line: a first request can pay the machine's hiccup (CI
    // saw 65 ms for a 5 ms line), so the bounds are the compute it cannot beat and the ranking.
    assert!(
        top.solo_ms >= 100.0 && top.solo_ms < 250.0,
        "alone {:.1} ms",
        top.solo_ms
    );
    assert_eq!(top.cost_ms, top.solo_ms);
    assert_eq!(e.rows.len(), 4);
    for r in &e.rows[1..] {
        assert!(r.cost_ms < top.cost_ms, "{r:?}");
    }
    let p95 = top.loaded_p95_ms.unwrap();
    let share = top.waiting_share.unwrap();
    assert!(p95 > top.solo_ms, "8 users on 4 slots queue: p95 {p95}");
    assert!(
        (share - (p95 - top.solo_ms) / p95).abs() < 1e-9 && share > 0.0,
        "{share}"
    );
    assert!(e.headline().starts_with("REQ_GET "), "{}", e.headline());
    // explain.json beside the runs and in loaded/, which the report shows as a chart.
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("explain.json")).unwrap()).unwrap();
    assert_eq!(json["rows"][0]["label"], top.label.as_str());
    let m = report_model(&report_args(vec![out.join("loaded")], &[]));
    assert_eq!(
        m["runs"][0]["explain"]["rows"][0]["label"],
        top.label.as_str()
    );
    let mut args = report_args(vec![out.join("loaded")], &[]);
    args.json = false;
    let page = surge::report::build(&args).unwrap().content;
    assert!(page.contains("<section id=\"explain\">"));
    assert!(
        page.contains("<section id=\"timing\">"),
        "the server's Server-Timing split too"
    );
}

/// The binary prints the ranking and the headline; `--users 0` is a usage error (exit 2).
#[test]
fn explain_prints_its_table_and_refuses_zero_users() {
    let (url, _) = start_known(4, Duration::ZERO);
    let dir = fresh_dir("explain-cli");
    let rec = recording(&dir, &["/home?ms=5", "/slow?ms=60"]);
    let out = dir.join("out");
    let o = surge()
        .args([
            "explain",
            rec.to_str().unwrap(),
            &url,
            "--users",
            "4",
            "--think-time",
            "none",
        ])
        .args(["--output-dir", out.to_str().unwrap()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{text}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let first = text.lines().nth(1).unwrap();
    assert!(first.starts_with("1 ") && first.contains("/slow"), "{text}");
    assert!(
        text.contains("costs") && text.contains("explain.json"),
        "{text}"
    );
    let o = surge()
        .args(["explain", rec.to_str().unwrap(), &url, "--users", "0"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("--users must be at least 1"), "{err}");
}

/// 4 slots × 50 ms, no think time, SLO page_load p95 < 500 ms (the knee test's server, whose knee
/// is 36 users): one user alone gives D = 50 ms, Z = 0, so N* = 4 and the SLO is predicted to
/// break at (L·D/m + Z)/D_max = 500/12.5 = 40. The prediction is within ±25% of the knee the
/// search finds (predicting is the default), and that search takes no more steps than the
/// unguided one from `--start 4` (both counted; --start means no prediction). `--predict-only`
/// stops after the one user.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn predicted_knee_is_within_25_percent_and_saves_steps() {
    let _timed = crate::server_timing::TIMED.lock().await;
    let url = start_slots(4, Duration::from_millis(50));
    let dir = fresh_dir("capacity-predict");
    let rec = one_request(&dir);
    let search = |out: &str, extra: &[&str]| {
        let mut v = vec![
            rec.to_str().unwrap().to_string(),
            url.clone(),
            "--slo".into(),
            "page_load:p95<500ms".into(),
            "--think-time".into(),
            "none".into(),
            "--step-sessions".into(),
            "100".into(),
            "--step-max".into(),
            "20s".into(),
            "--output-dir".into(),
            dir.join(out).to_str().unwrap().to_string(),
        ];
        v.extend(extra.iter().map(|s| s.to_string()));
        let refs: Vec<&str> = v.iter().map(String::as_str).collect();
        capacity_plan(&refs)
    };
    let only = surge::capacity::run(
        search("only", &["--predict-only", "--slots", "4"]),
        std::future::pending(),
    )
    .await
    .unwrap();
    assert_eq!(only.exit_code(), 0);
    assert!(only.steps.is_empty());
    let p = only.prediction.clone().unwrap();
    assert!(
        (p.demand_ms - 50.0).abs() <= 10.0 && p.think_ms < 5.0,
        "{p:?}"
    );
    assert!(
        (p.saturation - 4.0).abs() < 0.5 && (p.knee - 40.0).abs() <= 6.0,
        "{p:?}"
    );
    assert!(
        only.answer.starts_with("predicted knee "),
        "{}",
        only.answer
    );
    assert!(dir.join("only/solo").is_dir() && !dir.join("only/step-01").exists());

    // Predicting is what capacity does without --no-predict or --start.
    let guided = surge::capacity::run(search("guided", &["--slots", "4"]), std::future::pending())
        .await
        .unwrap();
    let found = guided.holds.expect("an answer");
    let predicted = guided.prediction.as_ref().unwrap().knee.floor();
    assert!(
        (predicted - found).abs() <= 0.25 * found,
        "predicted {predicted}, found {found}: {:#?}",
        guided.steps
    );
    assert_eq!(
        guided.steps[0].load, predicted,
        "the search starts at the prediction"
    );
    assert!(
        guided
            .answer
            .contains(&format!("; predicted {predicted:.0}, found {found:.0} (")),
        "{}",
        guided.answer
    );
    let steps = guided.steps.len();
    let taken = format!(
        ") in {steps} step{} after one user alone",
        if steps == 1 { "" } else { "s" }
    );
    assert!(guided.answer.ends_with(&taken), "{}", guided.answer);
    assert!(dir.join("guided/solo").is_dir());
    let plain = surge::capacity::run(search("plain", &["--start", "4"]), std::future::pending())
        .await
        .unwrap();
    assert!(plain.prediction.is_none() && !dir.join("plain/solo").exists());
    let (g, u) = (guided.steps.len(), plain.steps.len());
    eprintln!(
        "steps: guided {g} (found {found}), from --start 4: {u} (found {:?})",
        plain.holds
    );
    assert!(g <= u, "guided {g} steps vs {u}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("guided/capacity.json")).unwrap())
            .unwrap();
    assert_eq!(json["prediction"]["slots"], 4);
}

/// The prediction's flags: `--predict` (from when it was opt-in) is still accepted; `--no-predict`
/// with `--predict` or `--predict-only`, and `--predict-only` with `--open`, are one-line usage
/// errors (exit 2) before anything runs; `--open` and `--start` searches do not predict.
#[test]
fn prediction_flags_old_and_new() {
    let dir = fresh_dir("capacity-predict-flags");
    let rec = one_request(&dir);
    let base = |extra: &[&str]| {
        let mut v = vec![
            rec.to_str().unwrap().to_string(),
            "http://127.0.0.1:9/".into(),
            "--slo".into(),
            "page_load:p95<500ms".into(),
        ];
        v.extend(extra.iter().map(|s| s.to_string()));
        v
    };
    let plan = |extra: &[&str]| {
        let v = base(extra);
        let refs: Vec<&str> = v.iter().map(String::as_str).collect();
        capacity_plan(&refs).args
    };
    assert!(plan(&[]).predicts());
    assert!(plan(&["--predict"]).predicts());
    assert!(!plan(&["--no-predict"]).predicts());
    assert!(!plan(&["--start", "4"]).predicts());
    assert!(!plan(&["--open"]).predicts());
    for (extra, want) in [
        (&["--no-predict", "--predict"][..], "--predict"),
        (&["--no-predict", "--predict-only"][..], "--predict-only"),
        (
            &["--predict-only", "--open"][..],
            "--predict-only: a closed search of one server",
        ),
    ] {
        let o = surge().arg("capacity").args(base(extra)).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{extra:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains(want), "{extra:?}: {err}");
    }
}
