//! summary.json pinned: its JSON Schema (schemas/surge-summary.schema.json) is generated from the
//! Rust type and committed; a real replay against a misbehaving app on loopback (one answer fine,
//! one 500, one connection closed, one that never answers) writes a summary that validates against
//! it and counts each failure by kind, grouped by kind + line with the URL as detail.

use crate::common;

use common::{fresh_dir, replay_in_process, start_four_way_app};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

fn schema_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../schemas/surge-summary.schema.json")
}

/// The committed schema is the one the Rust type generates. After changing `RunSummary`, run
/// `SURGE_WRITE_SCHEMA=1 cargo test -p surge --test it summary_json::` and commit the file.
#[test]
fn committed_schema_is_generated_from_the_rust_type() {
    let generated = schemars::schema_for!(surge::replay::RunSummary);
    let text = format!("{}\n", serde_json::to_string_pretty(&generated).unwrap());
    if std::env::var_os("SURGE_WRITE_SCHEMA").is_some() {
        std::fs::write(schema_path(), &text).unwrap();
    }
    let committed = std::fs::read_to_string(schema_path()).unwrap_or_default();
    assert!(
        committed == text,
        "{} is not what RunSummary generates: run SURGE_WRITE_SCHEMA=1 cargo test -p surge --test it summary_json::",
        schema_path().display()
    );
}

const RECORDING: &str = "# version: 1\n# target_url: http://127.0.0.1:1\n# target_type: surge/http\n\
{\"type\":\"REQ_HOME\",\"begin\":\"2026-01-01T00:00:00.000Z\",\"end\":\"2026-01-01T00:00:00.010Z\",\"status\":200,\"url\":\"/\"}\n\
{\"type\":\"REQ_GET\",\"begin\":\"2026-01-01T00:00:00.020Z\",\"end\":\"2026-01-01T00:00:00.030Z\",\"status\":200,\"url\":\"/api/items?page=1\"}\n";

#[test]
fn failures_are_counted_by_kind_and_the_summary_validates() {
    let port = start_four_way_app();
    let dir = fresh_dir("summary-json");
    let rec = dir.join("recording.log");
    std::fs::write(&rec, RECORDING).unwrap();
    let run = dir.join("run");
    // Four users starting together, one session each (no loaded phase).
    let o = replay_in_process(
        &rec,
        &format!("http://127.0.0.1:{port}/"),
        4,
        &run,
        &[
            "--start-interval",
            "0",
            "--think-time",
            "none",
            "--message-timeout",
            "1s",
            "--threshold",
            "REQ_HOME:p99<10s",
        ],
    );
    // What `surge replay` prints.
    let stdout = surge::replay::replay_text(&o.summary, &run);
    assert_eq!(o.exit_code(), 1, "{stdout}");
    assert!(
        stdout.contains("Failures by kind: timeout 1, wrong_status 1, closed 1"),
        "{stdout}"
    );

    let text = std::fs::read_to_string(run.join("summary.json")).unwrap();
    let s: Value = serde_json::from_str(&text).unwrap();
    let schema: Value =
        serde_json::from_str(&std::fs::read_to_string(schema_path()).unwrap()).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator.iter_errors(&s).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "summary.json vs schema: {errors:?}");
    // A field the schema does not know is refused (the schema pins the shape, not just types).
    let mut extra = s.clone();
    extra["sessions"]["lost"] = json!(1);
    assert!(!validator.is_valid(&extra));

    assert_eq!(
        s["sessions"],
        json!({"started": 4, "completed": 1, "failed": 3, "unwritten": 0})
    );
    assert_eq!(
        s["failures_by_kind"],
        json!({"timeout": 1, "wrong_status": 1, "closed": 1})
    );
    let mut groups: Vec<(String, u64, String, String, u64)> = s["failures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["kind"].as_str().unwrap().to_string(),
                f["line"].as_u64().unwrap(),
                f["event"].as_str().unwrap().to_string(),
                f["url"].as_str().unwrap().to_string(),
                f["count"].as_u64().unwrap(),
            )
        })
        .collect();
    groups.sort();
    let g = |kind: &str| {
        (
            kind.to_string(),
            5,
            "REQ_GET".to_string(),
            "/api/items?page=1".to_string(),
            1,
        )
    };
    assert_eq!(groups, [g("closed"), g("timeout"), g("wrong_status")]);
    assert_eq!(s["events"]["REQ_HOME"]["count"], 4);

    // The CSVs keep shinycannon's readable reason in the PLAYBACK_FAIL comment, after the
    // failure's kind (`kind=<kind> `, what the report counts failures by).
    let mut comments: Vec<String> = std::fs::read_dir(run.join("sessions"))
        .unwrap()
        .filter_map(|e| {
            let csv = std::fs::read_to_string(e.unwrap().path()).unwrap();
            let fail = csv.lines().find(|l| l.contains(",PLAYBACK_FAIL,"))?;
            Some(fail.splitn(7, ',').nth(6).unwrap().to_string())
        })
        .collect();
    comments.sort();
    assert_eq!(comments.len(), 3);
    assert!(
        comments[0].starts_with("kind=closed REQ_GET line 5: request to 127.0.0.1:"),
        "{comments:?}"
    );
    assert!(
        comments[1].starts_with(
            "kind=timeout REQ_GET line 5: no response within 1s (--message-timeout): GET /api/items?page=1"
        ),
        "{comments:?}"
    );
    assert_eq!(
        comments[2],
        "kind=wrong_status REQ_GET line 5: status 500; expected 200: GET /api/items?page=1"
    );
}
