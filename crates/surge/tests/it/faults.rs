//! Unlucky runs of surge (issue 23): each with its exact outcome — exit status, the one error
//! line naming the file, and what is (not) left in the run directory.

use crate::common;
#[path = "../../../../tests/mounts.rs"]
mod mounts;
use crate::segments_support;

use std::path::PathBuf;
use std::time::Duration;

use common::*;
use mounts::Tmpfs;
use segments_support::*;

/// A replay whose run directory fills its disk: the run stops at the first session CSV it cannot
/// write, exits 2 with one line naming that file, logs the failure once (not once per session),
/// and leaves no empty, cut or temporary file (every CSV left is whole; summary.json, if there,
/// is whole JSON).
#[test]
fn a_full_disk_stops_the_replay_with_one_line_naming_the_file() {
    let tmp = TempDir::new("surge-full-disk");
    let Some(disk) = Tmpfs::mount(&tmp.path().join("full"), "24k") else {
        eprintln!("skipped: cannot mount a tmpfs here (needs root)");
        return;
    };
    let (_app, target) = start_sse_app("normal");
    let rec = write_recording(tmp.path(), false);
    let run = disk.0.join("run");
    let out = surge()
        .args(["replay", rec.to_str().unwrap(), &target, "--users", "40"])
        .args([
            "--start-interval",
            "0",
            "--loaded-duration",
            "1s",
            "--think-time",
            "none",
        ])
        .arg("--output-dir")
        .arg(&run)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    let last = stderr.lines().last().unwrap();
    let sessions = format!("{}/sessions/", run.display());
    assert!(
        last.starts_with(&format!("surge: error: {sessions}"))
            && last.ends_with(".csv: No space left on device (os error 28)"),
        "{last}"
    );
    let lost = stderr.matches("No space left on device").count();
    assert_eq!(
        lost, 2,
        "the failure is logged once, then the error line:\n{stderr}"
    );
    for f in common::files_under(&run) {
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        let bytes = std::fs::read(&f).unwrap();
        assert!(!name.starts_with('.'), "temporary file left: {f:?}");
        assert!(!bytes.is_empty(), "empty file left: {f:?}");
        if name == "summary.json" {
            serde_json::from_slice::<serde_json::Value>(&bytes).expect("whole summary.json");
        } else if name.ends_with(".csv") && f.starts_with(run.join("sessions")) {
            assert!(bytes.ends_with(b"\n"), "cut CSV: {f:?}");
            let rows = read_csv(&f).rows;
            let last = rows.last().map(|r| r[3].as_str());
            assert!(
                matches!(last, Some("PLAYBACK_DONE" | "PLAYBACK_FAIL")),
                "a whole session ends with its verdict row: {f:?} {last:?}"
            );
        }
    }
}

/// A loopback server that misbehaves on every connection: `BlackHole` accepts and never answers;
/// `HalfClose` reads the request, then closes its side without a byte.
#[derive(Clone, Copy)]
enum Bad {
    BlackHole,
    HalfClose,
}

fn bad_server(mode: Bad) -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", l.local_addr().unwrap());
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for mut c in l.incoming().flatten() {
            if let Bad::HalfClose = mode {
                use std::io::Read;
                let mut buf = [0u8; 4096];
                let _ = c.read(&mut buf);
                let _ = c.shutdown(std::net::Shutdown::Write);
            }
            held.push(c);
        }
    });
    url
}

/// Runs surge with `args`, killed (and the test failed) if it has not ended within 60 s; its
/// exit code and stdout + stderr.
fn surge_bounded(args: &[&str]) -> (Option<i32>, String) {
    let out = tempfile_path(args);
    let mut child = surge()
        .args(args)
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let ended = wait_until(std::time::Duration::from_secs(60), || {
        child.try_wait().unwrap().is_some()
    });
    if !ended {
        let _ = child.kill();
        panic!("surge {args:?} hung");
    }
    let mut err = String::new();
    use std::io::Read;
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    let stdout = std::fs::read_to_string(&out).unwrap();
    let _ = std::fs::remove_file(&out);
    (child.wait().unwrap().code(), format!("{stdout}{err}"))
}

/// A file for a child's stdout, unique per process and arguments.
fn tempfile_path(args: &[&str]) -> PathBuf {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    args.hash(&mut h);
    std::env::temp_dir().join(format!(
        "surge-faults-{}-{:x}.out",
        std::process::id(),
        h.finish()
    ))
}

/// A black-hole target (accepts, never answers) and a half-closing one (closes after reading the
/// request): replay fails every session with its reason (`timeout` after --message-timeout,
/// `closed`), ends by itself and exits 1; bench counts every request as no answer and exits 1.
#[test]
fn black_hole_and_half_closing_targets_fail_with_their_reason() {
    let tmp = TempDir::new("surge-bad-targets");
    let rec = write_recording(tmp.path(), false);
    let rec = rec.to_str().unwrap();
    for (mode, kind, words, bench_error) in [
        (
            Bad::BlackHole,
            "timeout",
            "no response within 1s (--message-timeout): GET /",
            "timeout",
        ),
        (
            Bad::HalfClose,
            "closed",
            "connection closed before message completed: GET /",
            "connection closed",
        ),
    ] {
        let url = bad_server(mode);
        let run = tmp.path().join(kind);
        let r = run.to_str().unwrap();
        let (code, err) = surge_bounded(&[
            "replay",
            rec,
            &url,
            "--users",
            "2",
            "--message-timeout",
            "1s",
            "--output-dir",
            r,
        ]);
        assert_eq!(code, Some(1), "{err}");
        let summary: serde_json::Value =
            serde_json::from_slice(&std::fs::read(run.join("summary.json")).unwrap()).unwrap();
        let failures = summary["failures"].as_array().unwrap();
        assert_eq!(failures.len(), 1, "{failures:?}");
        assert_eq!(failures[0]["kind"], kind);
        assert_eq!(failures[0]["count"], 2);
        let reason = failures[0]["reason"].as_str().unwrap();
        assert!(
            reason.starts_with("REQ_HOME line 4: ") && reason.ends_with(words),
            "{reason}"
        );

        let (code, err) = surge_bounded(&["bench", &url, "-n", "4", "-c", "2", "--timeout", "1s"]);
        assert_eq!(code, Some(1), "{err}");
        assert!(
            err.contains("4 of 4 requests (100.0%) were not ok (no answer: 4"),
            "{err}"
        );
        let errors = err.split("Errors:").nth(1).unwrap_or_default();
        assert!(
            errors
                .lines()
                .any(|l| l.split_whitespace().collect::<Vec<_>>()
                    == ["4"]
                        .into_iter()
                        .chain(bench_error.split(' '))
                        .collect::<Vec<_>>()),
            "bench counts 4 × {bench_error}: {err}"
        );
    }
}

/// A recording with a 10 MB line (its URL): the failing request's reason is cut to its first 500
/// characters with the whole size (`…(N bytes)`) wherever it goes, so stdout, stderr,
/// summary.json and the session CSV stay small (each used to get the whole 10 MB).
#[test]
fn a_ten_megabyte_recording_line_is_cut_in_every_output() {
    let tmp = TempDir::new("surge-huge-line");
    let (_app, target) = start_sse_app("normal");
    let url = format!("/{}", "a".repeat(10 << 20));
    let rec = tmp.path().join("huge.log");
    std::fs::write(
        &rec,
        format!(
            "# version: 1\n# target_url: http://127.0.0.1:1/\n# target_type: surge/http\n\
             {{\"type\":\"REQ_HOME\",\"begin\":\"2026-01-01T00:00:00.000Z\",\"end\":\"2026-01-01T00:00:00.005Z\",\"status\":200,\"url\":\"{url}\"}}\n"
        ),
    )
    .unwrap();
    let run = tmp.path().join("run");
    let (code, out) = surge_bounded(&[
        "replay",
        rec.to_str().unwrap(),
        &target,
        "--users",
        "2",
        "--message-timeout",
        "5s",
        "--output-dir",
        run.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(1), "{}", &out[..out.len().min(2000)]);
    assert!(out.len() < 16 << 10, "stdout + stderr: {} bytes", out.len());
    // The reason is cut after 500 characters and ends with its whole size, more than the URL's.
    let cut_at = |text: &str| -> Option<usize> {
        let (_, rest) = text.split_once(&format!("/{}", "a".repeat(100)))?;
        let (kept, size) = rest.split_once("…(")?;
        if kept.len() > 500 || kept.bytes().any(|b| b != b'a') {
            return None;
        }
        let size: usize = size.split_once(" bytes)")?.0.parse().ok()?;
        (size > url.len()).then_some(size)
    };
    assert!(cut_at(&out).is_some(), "{}", &out[..out.len().min(2000)]);
    let files = common::files_under(&run);
    let mut csvs = 0;
    for f in &files {
        if f == &run.join("recording.log") {
            continue; // the run's copy of what was replayed, whole by design
        }
        let size = std::fs::metadata(f).unwrap().len();
        assert!(size < 16 << 10, "{f:?}: {size} bytes");
        let text = std::fs::read_to_string(f).unwrap();
        let name = f.file_name().unwrap().to_string_lossy();
        if name == "summary.json" {
            let v: serde_json::Value = serde_json::from_str(&text).unwrap();
            let reason = v["failures"][0]["reason"].as_str().unwrap();
            assert!(
                cut_at(reason).is_some() && reason.chars().count() < 600,
                "{reason}"
            );
        } else if name.ends_with(".csv") && f.starts_with(run.join("sessions")) {
            csvs += 1;
            assert!(cut_at(&text).is_some(), "{f:?}: {text}");
        }
    }
    assert_eq!(csvs, 2, "one CSV per session: {files:?}");
}

/// `surge record -o recording.log` stopped before any request came through it (Ctrl-C before
/// the browser was opened, or the browser at another address) leaves an existing recording.log
/// as it was, exits 1 and says so in one line. It replaced the recording with its three header
/// lines, which `surge replay` refuses ("recording has no events"), and exited 0. A session that
/// records is in place from its first event on (flushed as it goes), exit 0.
#[test]
fn a_recording_of_nothing_keeps_the_previous_recording() {
    let tmp = TempDir::new("surge-record-nothing");
    let (_app, target) = start_sse_app("normal");
    let out = tmp.path().join("recording.log");
    std::fs::copy(write_recording(tmp.path(), false), &out).unwrap();
    let before = std::fs::read(&out).unwrap();
    let partial = tmp.path().join("recording.log.partial");
    let record = |name: &str| {
        let errors = tmp.path().join(name);
        let mut child = surge()
            .args(record_argv(&target, &out, &[]))
            .stdout(std::process::Stdio::piped())
            .stderr(std::fs::File::create(&errors).unwrap())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(child.stdout.take().unwrap()),
            &mut line,
        )
        .unwrap();
        let proxy = (line.split_whitespace())
            .find(|w| w.starts_with("http://127.0.0.1:"))
            .unwrap_or_else(|| panic!("no URL in {line:?}"))
            .to_string();
        (Proc(child), proxy, errors)
    };

    let (mut rec, proxy, errors) = record("nothing.err");
    assert_eq!(interrupt(&mut rec, Duration::from_secs(10)), Some(1));
    assert_eq!(
        std::fs::read_to_string(&errors).unwrap(),
        format!(
            "surge record: nothing recorded (no request came through {proxy}); {} left as it was\n",
            out.display()
        )
    );
    assert_eq!(
        std::fs::read(&out).unwrap(),
        before,
        "the recording was replaced"
    );
    assert!(!partial.exists(), "recording.log.partial left behind");

    let (mut rec, proxy, _) = record("one.err");
    assert_eq!(http_get(&proxy, "/app.js").0, 200);
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(
        text.starts_with("# version: 1\n") && text.contains("\"url\":\"/app.js\""),
        "the first event is not in recording.log while recording: {text}"
    );
    assert_eq!(interrupt(&mut rec, Duration::from_secs(10)), Some(0));
    assert!(!partial.exists(), "recording.log.partial left behind");
    let recording = surge::recording::Recording::load(&out).unwrap();
    assert_eq!(recording.events.len(), 1);
}

/// surge with its stdout a pipe whose reader is gone (`surge replay … | head -1` once head has
/// exited, a pager quit early): replay and bench end with their own exit status (0 here) and
/// replay's results are all on disk, instead of a panic ("failed printing to stdout: Broken
/// pipe", exit 101) at the summary.
#[test]
fn a_closed_stdout_keeps_the_exit_status() {
    let tmp = TempDir::new("surge-closed-stdout");
    let (_app, target) = start_sse_app("normal");
    let rec = write_recording(tmp.path(), false);
    let run = tmp.path().join("run");
    let closed = |mut cmd: std::process::Command| {
        let mut child = cmd
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(!err.contains("panicked"), "{err}");
        (out.status.code(), err)
    };
    let mut replay = replay_cmd(&rec, &target, 2, &run);
    replay.arg("--think-time").arg("none");
    assert_eq!(closed(replay).0, Some(0));
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("summary.json")).unwrap()).unwrap();
    let sessions = &summary["sessions"];
    assert!(sessions["completed"].as_u64().unwrap() >= 2, "{summary}");
    assert_eq!(sessions["completed"], sessions["started"], "{summary}");
    let mut bench = surge();
    bench.args(["bench", &target, "-n", "5", "-c", "1"]);
    assert_eq!(closed(bench).0, Some(0));
}

/// surge with its stderr a pipe whose reader is gone (`surge … 2>&1 | head` once head has
/// exited, a log collector that stopped): a replay logging at info (every session start and
/// end), and a report (its "read … / wrote …" lines), end with their own exit status (0) and
/// write their results, instead of panicking ("failed printing to stderr", exit 101; in a
/// replay also inside the tasks that log).
#[test]
fn a_closed_stderr_keeps_the_exit_status() {
    let tmp = TempDir::new("surge-closed-stderr");
    let (_app, target) = start_sse_app("normal");
    let rec = write_recording(tmp.path(), false);
    let run = tmp.path().join("run");
    let closed = |mut cmd: std::process::Command| {
        let mut child = cmd
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stderr.take());
        child.wait().unwrap().code()
    };
    let mut replay = replay_cmd(&rec, &target, 3, &run);
    replay.args(["--log-level", "info", "--start-interval", "0"]);
    assert_eq!(closed(replay), Some(0));
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["sessions"]["completed"], 3, "{summary}");
    let html = tmp.path().join("report.html");
    let mut report = surge();
    report.arg("report").arg(&run).arg("-o").arg(&html);
    assert_eq!(closed(report), Some(0));
    assert!(std::fs::metadata(&html).unwrap().len() > 0);
}
