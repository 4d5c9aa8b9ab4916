//! Proof (a), first half, and bad-input cases: every real shinyloadtest recording parses with the right
//! events and line numbers; malformed recordings are refused with file:line and exit status 2.

use crate::common;

use common::*;
use std::path::{Path, PathBuf};
use surge::recording::{EventLine, Kind, Recording};
use surge::rundir::RowEvent;

fn fixture_recordings(tmp: &Path) -> Vec<(PathBuf, Option<PathBuf>)> {
    let mut v = vec![
        (shared().join("label-recording/recording.log"), None),
        (
            shared().join("label-run/recording.log"),
            Some(shared().join("label-run")),
        ),
    ];
    for run in unzip_runs(tmp) {
        v.push((run.join("recording.log"), Some(run)));
    }
    v
}

#[test]
fn every_fixture_recording_parses_with_matching_line_numbers() {
    let tmp = TempDir::new("fixtures");
    let recs = fixture_recordings(tmp.path());
    assert_eq!(
        recs.len(),
        7,
        "label-recording, label-run and five zipped runs"
    );
    for (path, run) in recs {
        let rec = Recording::load(&path).unwrap_or_else(|e| panic!("{e}"));
        // Independent count: JSON lines are the non-comment, non-empty lines.
        let text = std::fs::read_to_string(&path).unwrap();
        let json_lines: Vec<(usize, &str)> = text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.starts_with('#') && !l.trim().is_empty())
            .collect();
        assert_eq!(rec.events.len(), json_lines.len(), "{}", path.display());
        for (ev, (i, line)) in rec.events.iter().zip(&json_lines) {
            assert_eq!(ev.line as usize, i + 1);
            assert!(line.contains(&format!("\"type\":\"{}\"", ev.kind.name())));
        }
        assert_eq!(
            rec.events.last().unwrap().kind,
            Kind::WsClose,
            "{}",
            path.display()
        );
        // shinycannon's CSVs refer to these line numbers: each X_START row names a line of type X.
        if let Some(run) = run {
            let mut checked = 0;
            for csv in session_csvs(&run) {
                for row in read_csv(&csv).rows {
                    let name = &row[3];
                    if let Some(t) = name.strip_suffix("_START") {
                        if t == "PLAYBACK_SLEEPBEFORE" {
                            continue;
                        }
                        let line: u32 = row[5].parse().unwrap();
                        let ev = rec
                            .events
                            .iter()
                            .find(|e| e.line == line)
                            .unwrap_or_else(|| {
                                panic!("{}: no event at line {line}", csv.display())
                            });
                        assert_eq!(ev.kind.name(), t, "{} line {line}", csv.display());
                        checked += 1;
                    }
                }
            }
            assert!(checked > 0, "{}: no rows checked", run.display());
        }
    }
}

/// The one vocabulary against real files: every event line of every fixture recording reads into
/// the typed `EventLine` and writes back byte for byte (so `record` and `import-har` write what
/// shinyloadtest writes), every `type` seen is a `Kind` whose name is that type, and every CSV
/// `event` of the shinycannon runs is a `RowEvent` whose name is that event.
#[test]
fn every_kind_and_row_event_in_the_fixtures_round_trips() {
    let tmp = TempDir::new("vocabulary");
    let (mut kinds, mut rows) = (std::collections::BTreeSet::new(), 0usize);
    for (path, run) in fixture_recordings(tmp.path()) {
        let text = std::fs::read_to_string(&path).unwrap();
        for line in text
            .lines()
            .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        {
            let ev: EventLine =
                serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
            assert_eq!(serde_json::to_string(&ev).unwrap(), line);
            let raw: serde_json::Value = serde_json::from_str(line).unwrap();
            let name = raw["type"].as_str().unwrap();
            assert_eq!(name.parse::<Kind>().unwrap().name(), name);
            assert_eq!(ev.kind.name(), name);
            kinds.insert(ev.kind);
        }
        for csv in run.iter().flat_map(|r| session_csvs(r)) {
            for row in read_csv(&csv).rows {
                let e = RowEvent::parse(&row[3])
                    .unwrap_or_else(|| panic!("{}: {}", csv.display(), row[3]));
                assert_eq!(e.name(), row[3]);
                rows += 1;
            }
        }
    }
    // The fixtures use every kind shinyloadtest defines.
    assert_eq!(kinds.into_iter().collect::<Vec<_>>(), Kind::ALL);
    assert!(rows > 100_000, "{rows} CSV rows checked");
}

#[test]
fn label_recording_values_are_read() {
    let rec = Recording::load(&shared().join("label-recording/recording.log")).unwrap();
    assert_eq!(rec.version.as_deref(), Some("1"));
    assert_eq!(rec.target_url.as_deref(), Some("http://127.0.0.1:5064"));
    assert_eq!(rec.target_type.as_deref(), Some("R/Shiny"));
    let first = &rec.events[0];
    assert_eq!(
        (first.kind, first.line, first.status),
        (Kind::ReqHome, 4, 200)
    );
    // 2024-08-21T16:20:29.838Z
    assert_eq!(first.begin_ms, 1_724_257_229_838);
    assert_eq!(first.end_ms, Some(1_724_257_229_903));
}

fn replay_bad(name: &str, body: &str) -> (Option<i32>, String, PathBuf) {
    let tmp = std::env::temp_dir().join(format!("surge-bad-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    let rec = tmp.join("recording.log");
    std::fs::write(&rec, body).unwrap();
    let out = surge()
        .args(["replay"])
        .arg(&rec)
        .args(["--target", "http://127.0.0.1:9/", "--output-dir"])
        .arg(tmp.join("run"))
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).to_string(),
        tmp,
    )
}

const HEAD: &str = "# version: 1\n# target_url: http://127.0.0.1:1/\n# target_type: R/Shiny\n";
const HOME: &str = r#"{"type":"REQ_HOME","begin":"2024-08-21T16:20:29.838Z","end":"2024-08-21T16:20:29.903Z","status":200,"url":"/"}"#;

#[test]
fn malformed_recordings_fail_with_file_and_line() {
    let cases = [
        ("json", format!("{HEAD}{HOME}\n{{\"type\":\"REQ_GET\",\n"), ":5: not a JSON event"),
        (
            "unknown",
            format!("{HEAD}{HOME}\n{{\"type\":\"REQ_PUT\",\"begin\":\"2024-08-21T16:20:29.838Z\"}}\n"),
            ":5: unknown event type \"REQ_PUT\"",
        ),
        (
            "nourl",
            format!("{HEAD}{{\"type\":\"REQ_GET\",\"begin\":\"2024-08-21T16:20:29.838Z\",\"status\":200}}\n"),
            ":4: REQ_GET event lacks field url",
        ),
        (
            "time",
            format!("{HEAD}{{\"type\":\"WS_CLOSE\",\"begin\":\"yesterday\"}}\n"),
            ":4: field begin: bad timestamp \"yesterday\"",
        ),
        ("empty", HEAD.to_string(), "recording has no events"),
    ];
    for (name, body, want) in cases {
        let (code, stderr, tmp) = replay_bad(name, &body);
        assert_eq!(code, Some(2), "{name}: {stderr}");
        assert_eq!(
            stderr.lines().count(),
            1,
            "{name}: one-line error, got {stderr}"
        );
        assert!(
            stderr.contains("recording.log") && stderr.contains(want),
            "{name}: {stderr}"
        );
        assert!(
            !tmp.join("run").exists(),
            "{name}: no run directory for a bad recording"
        );
        let _ = std::fs::remove_dir_all(tmp);
    }
}

/// A recording that is wrong as a whole (missing, or empty) is named as a file, without the
/// `:0` that read as a line number (`surge: error: rec.log:0: cannot read: …`).
#[test]
fn a_missing_or_empty_recording_is_named_without_a_line() {
    let (code, err, tmp) = replay_bad("empty-file", "");
    let rec = tmp.join("recording.log");
    assert_eq!(code, Some(2), "{err}");
    assert_eq!(
        err,
        format!("surge: error: {}: recording has no events\n", rec.display())
    );
    std::fs::remove_file(&rec).unwrap();
    let out = surge()
        .args(["replay"])
        .arg(&rec)
        .args(["--target", "http://127.0.0.1:9/", "--output-dir"])
        .arg(tmp.join("run"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!(
            "surge: error: {}: cannot read: No such file or directory (os error 2)\n",
            rec.display()
        )
    );
    let _ = std::fs::remove_dir_all(tmp);
}

/// `surge parametrize` on a recording with a line that is not JSON says what replay says of it,
/// word for word (`recording.log:5: not a JSON event: …`), exit 2, and writes nothing; it said
/// `recording.log: line 5: …`, a second way of naming a line for the same file.
#[test]
fn parametrize_names_a_bad_line_as_replay_does() {
    let body = format!("{HEAD}{HOME}\n{{\"type\":\"REQ_GET\",\n");
    let (code, replay_err, tmp) = replay_bad("parametrize", &body);
    assert_eq!(code, Some(2), "{replay_err}");
    let out_file = tmp.join("by-x.log");
    let out = surge()
        .arg("parametrize")
        .arg(tmp.join("recording.log"))
        .args(["x=/", "-o"])
        .arg(&out_file)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        replay_err.contains("recording.log:5: not a JSON event: "),
        "{replay_err}"
    );
    assert_eq!(err, replay_err);
    assert!(!out_file.exists());
    let _ = std::fs::remove_dir_all(tmp);
}

#[test]
fn existing_output_dir_is_not_overwritten_without_flag() {
    let tmp = TempDir::new("exists");
    let run = tmp.path().join("run");
    std::fs::create_dir_all(&run).unwrap();
    std::fs::write(run.join("keep.txt"), "x").unwrap();
    let out = surge()
        .arg("replay")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/shiny-app/recording.log"))
        .args(["--target", "http://127.0.0.1:9/", "--output-dir"])
        .arg(&run)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("already exists"));
    assert!(run.join("keep.txt").exists());
}
