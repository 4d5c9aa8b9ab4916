//! `surge report` on broken run directories: one error naming the file, line and field, and no
//! report file written.

use crate::common;

use common::{fresh_dir, report_args, report_model};
use std::{
    path::{Path, PathBuf},
    process::Command,
};
use surge::report::build;

const HEAD: &str = "# surge test\n# {}\nsession_id,worker_id,iteration,event,timestamp,input_line_number,comment\n";
const REC: &str = "# version: 1\n# target_url: http://127.0.0.1:1\n# target_type: R/Shiny\n\
{\"type\":\"REQ_HOME\",\"begin\":\"2024-01-01T00:00:00.000Z\",\"end\":\"2024-01-01T00:00:00.100Z\",\"status\":200,\"url\":\"/\"}\n\
{\"type\":\"REQ_GET\",\"begin\":\"2024-01-01T00:00:00.200Z\",\"end\":\"2024-01-01T00:00:00.250Z\",\"status\":200,\"url\":\"/app.js\"}\n";

/// A run directory with the given recording and session files.
fn run_dir(tag: &str, rec: &str, sessions: &[(&str, &str)]) -> PathBuf {
    let dir = fresh_dir(&format!("report-bad-{tag}"));
    std::fs::create_dir(dir.join("sessions")).unwrap();
    std::fs::write(dir.join("recording.log"), rec).unwrap();
    for (name, body) in sessions {
        std::fs::write(dir.join("sessions").join(name), format!("{HEAD}{body}")).unwrap();
    }
    dir
}

fn err(dir: &Path) -> String {
    match build(&report_args(vec![dir.to_path_buf()], &[])) {
        Ok(_) => panic!("{} should be refused", dir.display()),
        Err(e) => e.to_string(),
    }
}

const GOOD: &str = "0,0,0,PLAYER_SESSION_CREATE,1000,0,\n0,0,0,REQ_HOME_START,1000,4,\n0,0,0,REQ_HOME_END,1100,4,\n\
0,0,0,REQ_GET_START,1100,5,\n0,0,0,REQ_GET_END,1150,5,\n0,0,0,PLAYBACK_DONE,1150,0,\n";

/// A well-formed hand-made run is accepted and counted (the baseline for the cases below).
#[test]
fn small_valid_run() {
    let d = run_dir("valid", REC, &[("0_0_0.csv", GOOD)]);
    let mut a = report_args(vec![d], &["mine"]);
    a.page_load_limit = std::time::Duration::from_millis(120);
    let m = report_model(&a);
    let s = &m["runs"][0]["summary"];
    assert_eq!(s["outcome"]["sessions"]["started"], 1);
    assert_eq!(s["events"], 2);
    // Page load = home start (1000) to the asset's end (1150); over the 120 ms page-load limit.
    assert_eq!(s["page_load"][1], 150);
    assert_eq!(s["over_limit"], 1);
    assert_eq!(m["recordings"][0]["label"][1], "/app.js");
}

#[test]
fn not_a_run_directory() {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-bad-empty");
    std::fs::create_dir_all(&d).unwrap();
    let e = err(&d);
    assert!(
        e.contains("report-bad-empty") && e.contains("no sessions/ folder"),
        "{e}"
    );
}

#[test]
fn bad_timestamp_names_file_line_and_field() {
    let body = GOOD.replace("REQ_HOME_END,1100", "REQ_HOME_END,soon");
    let d = run_dir("ts", REC, &[("0_0_0.csv", &body)]);
    let e = err(&d);
    assert!(
        e.contains("0_0_0.csv:6:") && e.contains("field timestamp") && e.contains("soon"),
        "{e}"
    );
}

#[test]
fn end_without_start() {
    let body = GOOD.replace("0,0,0,REQ_GET_START,1100,5,\n", "");
    let d = run_dir("end", REC, &[("0_0_0.csv", &body)]);
    let e = err(&d);
    assert!(
        e.contains("0_0_0.csv:") && e.contains("REQ_GET_END without a matching REQ_GET_START"),
        "{e}"
    );
}

#[test]
fn unknown_event() {
    let body = GOOD.replace("PLAYBACK_DONE", "PLAYBACK_MAYBE");
    let d = run_dir("unknown", REC, &[("0_0_0.csv", &body)]);
    let e = err(&d);
    assert!(
        e.contains("0_0_0.csv:9:") && e.contains("unknown event \"PLAYBACK_MAYBE\""),
        "{e}"
    );
}

#[test]
fn line_number_outside_the_recording() {
    let body = GOOD.replace("REQ_GET_START,1100,5", "REQ_GET_START,1100,99");
    let d = run_dir("line", REC, &[("0_0_0.csv", &body)]);
    let e = err(&d);
    assert!(
        e.contains("field input_line_number: 99") && e.contains("recording.log"),
        "{e}"
    );
}

#[test]
fn wrong_columns() {
    let d = run_dir("cols", REC, &[]);
    std::fs::write(d.join("sessions/0_0_0.csv"), "a,b,c\n1,2,3\n").unwrap();
    let e = err(&d);
    assert!(
        e.contains("0_0_0.csv") && e.contains("unexpected columns"),
        "{e}"
    );
}

#[test]
fn malformed_recording_line() {
    let rec = format!("{REC}{{\"type\": oops}}\n");
    let d = run_dir("rec", &rec, &[("0_0_0.csv", GOOD)]);
    let e = err(&d);
    assert!(
        e.contains("recording.log:6:") && e.contains("not a JSON event"),
        "{e}"
    );
}

#[test]
fn no_session_files() {
    let d = run_dir("nofiles", REC, &[]);
    let e = err(&d);
    assert!(e.contains("no session files"), "{e}");
}

/// Through the binary: exit code non-zero, one line, and the output file is not created.
#[test]
fn binary_exits_nonzero_and_writes_nothing() {
    let body = GOOD.replace("REQ_HOME_END,1100", "REQ_HOME_END,soon");
    let d = run_dir("bin", REC, &[("0_0_0.csv", &body)]);
    let out = d.join("out.html");
    let o = Command::new(env!("CARGO_BIN_EXE_surge"))
        .arg("report")
        .arg(&d)
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    assert!(!o.status.success());
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(!out.exists());
    // More names than runs.
    let o = Command::new(env!("CARGO_BIN_EXE_surge"))
        .args(["report", "--name", "a", "--name", "b"])
        .arg(&d)
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("2 --name given for 1 run directories"));
}

/// The report reads the recording with the one parser in lenient mode: a line without what only
/// replay needs (this REQ_GET has no url, which `surge replay` refuses) is still shown.
#[test]
fn report_reads_recordings_leniently() {
    let rec = REC.replace(",\"url\":\"/app.js\"", "");
    let d = run_dir("lenient", &rec, &[("0_0_0.csv", GOOD)]);
    let strict = surge::recording::Recording::load(&d.join("recording.log")).unwrap_err();
    assert!(
        strict
            .to_string()
            .ends_with(":5: REQ_GET event lacks field url"),
        "{strict}"
    );
    let m = report_model(&report_args(vec![d], &[]));
    assert_eq!(m["runs"][0]["summary"]["events"], 2);
    assert_eq!(m["recordings"][0]["kind"][1], "REQ_GET");
    assert_eq!(m["recordings"][0]["label"][1], "");
}

/// `--page-load-limit` takes the one duration grammar; `--threshold`, its old name, still works;
/// a bare number is refused (which unit would it be?).
#[test]
fn page_load_limit_flag() {
    let d = run_dir("limit", REC, &[("0_0_0.csv", GOOD)]);
    let out = d.join("model.json");
    let run = |flag: &str, value: &str| {
        Command::new(env!("CARGO_BIN_EXE_surge"))
            .arg("report")
            .arg(&d)
            .args([flag, value, "--json", "-o"])
            .arg(&out)
            .output()
            .unwrap()
    };
    for (flag, value, ms) in [
        ("--page-load-limit", "120ms", 120),
        ("--page-load-limit", "1.5s", 1500),
        ("--threshold", "2s", 2000),
    ] {
        let o = run(flag, value);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let m: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
        assert_eq!(m["page_load_limit_ms"], ms, "{flag} {value}");
        assert_eq!(m["runs"][0]["summary"]["over_limit"], u64::from(ms < 150));
    }
    let o = run("--page-load-limit", "10");
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("a duration needs a unit"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}
