//! Command lines and inputs surge must refuse before anything is sent (issue 30): a placeholder
//! nothing fills, a journey weight that is not one, an `--expect-status` that is not an HTTP
//! status. Each is the real binary: exit status 2, one stderr line naming what and where, no run
//! directory, and no request to the app.

use crate::common;

use common::*;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

/// An app that answers 200 to anything (the app a placeholder sent as it is would pass), with a
/// count of the requests it got; its base URL.
fn yes_app() -> (String, Arc<AtomicU32>) {
    let seen = Arc::new(AtomicU32::new(0));
    let s = seen.clone();
    let port = start_http(move |_| {
        s.fetch_add(1, Ordering::SeqCst);
        Some("200 OK")
    });
    (format!("http://127.0.0.1:{port}/"), seen)
}

/// A surge/http recording of `urls` (REQ_HOME first, then REQ_GETs), one event per line from 4.
fn recording(dir: &Path, name: &str, urls: &[&str]) -> PathBuf {
    let mut text =
        "# version: 1\n# target_url: http://127.0.0.1:1/\n# target_type: surge/http\n".to_string();
    for (i, url) in urls.iter().enumerate() {
        let kind = if i == 0 { "REQ_HOME" } else { "REQ_GET" };
        text.push_str(&format!(
            "{{\"type\":\"{kind}\",\"begin\":\"2026-01-01T00:00:00.{i}00Z\",\"end\":\"2026-01-01T00:00:00.{i}10Z\",\"status\":200,\"url\":\"{url}\"}}\n"
        ));
    }
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// Exit 2 and exactly one stderr line, which it returns.
fn one_line(what: &str, out: &Output) -> String {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{what}: {err}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "{what}: one line: {err}");
    lines[0].to_string()
}

/// Runs `cmd`, which must be refused at once: a command that took its input instead (a
/// recorder that listens, say) is killed after 10 s and fails the test rather than hanging it.
fn refused_at_once(cmd: &mut std::process::Command, what: &str) -> Output {
    let mut child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let t = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t.elapsed() > std::time::Duration::from_secs(10) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: taken, still running after 10 s");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// A recording's `${dat}` that the `--data` header does not name (its column is `date`), or a
/// `${date}` with no `--data` at all, or a `-H` header's `${day}`: the run stops before the
/// first user with exit 2 and one line naming the placeholder, its line and the columns there
/// are; the app (which answers 200 to anything) gets no request. Spelled right, the same run
/// sends each row's value.
#[test]
fn a_placeholder_nothing_fills_stops_the_run_before_any_request() {
    let tmp = TempDir::new("surge-unfilled");
    let (url, seen) = yes_app();
    let typo = recording(tmp.path(), "typo.log", &["/", "/day/${dat}"]);
    let right = recording(tmp.path(), "right.log", &["/", "/day/${date}?t=${TICKET}"]);
    let csv = tmp.path().join("days.csv");
    std::fs::write(&csv, "date,user\n2015-01-01,a\n2015-01-02,b\n").unwrap();
    let (typo_s, right_s, csv_s) = (
        typo.display().to_string(),
        right.display().to_string(),
        csv.display().to_string(),
    );
    let capture = ["--capture", "TICKET=t=(\\w+)"];
    let cases: [(&str, &Path, Vec<&str>, Vec<String>); 3] = [
        (
            "typo in the header",
            &typo,
            vec!["--data", &csv_s],
            vec![
                format!("{typo_s}:5: placeholder ${{dat}} has no value"),
                format!("the columns of --data {csv_s} are date, user"),
            ],
        ),
        (
            "no --data",
            &right,
            capture.to_vec(),
            vec![
                format!("{right_s}:5: placeholder ${{date}} has no value"),
                "no --data file given".into(),
                "--capture names TICKET".into(),
            ],
        ),
        (
            "a -H header",
            &right,
            [&["--data", &csv_s, "-H", "X-Day: ${day}"], &capture[..]].concat(),
            vec!["-H 'X-Day: ${day}': placeholder ${day} has no value".into()],
        ),
    ];
    for (what, rec, flags, want) in cases {
        let run = tmp.path().join("run");
        let out = replay_cmd(rec, &url, 2, &run).args(flags).output().unwrap();
        let line = one_line(what, &out);
        assert!(line.starts_with("surge: error: "), "{what}: {line}");
        assert!(
            line.ends_with("it would be sent as it is"),
            "{what}: {line}"
        );
        for w in &want {
            assert!(line.contains(w.as_str()), "{what}: {line:?} lacks {w:?}");
        }
        assert!(!run.exists(), "{what}: no run directory");
        assert_eq!(seen.load(Ordering::SeqCst), 0, "{what}: no request sent");
    }
    // Spelled right, the check lets the run go: every session sends its row's date.
    let run = tmp.path().join("run-right");
    let fixed = recording(tmp.path(), "fixed.log", &["/", "/day/${date}"]);
    let out = replay_cmd(&fixed, &url, 2, &run)
        .args(["--data", &csv_s, "--start-interval", "0"])
        .args(["--think-time", "none"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(summary(&run)["sessions"]["failed"].as_u64(), Some(0));
    assert!(
        seen.load(Ordering::SeqCst) >= 4,
        "the run sent its requests"
    );
}

/// Journey weights that are not whole numbers of at least 1 (`-1`, `abc`, `1.5`, empty, `0`)
/// are refused with exit 2 and one line naming the spec and the weight (they used to be read as
/// a missing file `j2.log:abc`); a file whose name holds a colon is still a file.
#[test]
fn a_journey_weight_that_is_not_one_is_refused_with_one_line() {
    let tmp = TempDir::new("surge-weights");
    let (url, seen) = yes_app();
    let j1 = recording(tmp.path(), "j1.log", &["/"]);
    let j2 = recording(tmp.path(), "j2.log", &["/"]);
    let (j1, j2) = (j1.display().to_string(), j2.display().to_string());
    let run = tmp.path().join("run");
    for w in ["-1", "abc", "1.5", "", "0"] {
        let spec = format!("{j2}:{w}");
        let out = surge()
            .args(["replay", &format!("{j1}:70"), &spec, &url])
            .arg("--output-dir")
            .arg(&run)
            .output()
            .unwrap();
        let line = one_line(&spec, &out);
        let want = format!(
            "surge: error: {spec}: the weight {w:?} is not a whole number of at least 1 (FILE:WEIGHT"
        );
        assert!(line.starts_with(&want), "{line:?}\nwanted {want:?}");
        assert!(!run.exists());
    }
    assert_eq!(seen.load(Ordering::SeqCst), 0, "nothing sent");
    // A recording named `a:b.log` is a file, not `a` with weight `b.log`.
    let colon = recording(tmp.path(), "a:b.log", &["/"]);
    let out = surge()
        .args([
            "replay",
            &format!("{}:3", colon.display()),
            &format!("{j1}:1"),
        ])
        .args([&url, "--think-time", "none", "--output-dir"])
        .arg(&run)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(summary(&run)["journeys"]["a:b"]["weight"], 3);
}

/// `surge bench --expect-status` with a code outside 100..=599 (`999`, `0`, `abc`, `20x` in a
/// list) is refused with exit 2 and one line naming it (999 and 0 used to be accepted, making
/// every answer not ok).
#[test]
fn an_expect_status_that_is_not_an_http_status_is_refused() {
    let (url, seen) = yes_app();
    for codes in ["999", "0", "abc", "200,20x", "99"] {
        let out = surge()
            .args(["bench", "-n", "1", "--expect-status", codes, &url])
            .output()
            .unwrap();
        let line = one_line(codes, &out);
        let bad = codes.rsplit(',').next().unwrap();
        assert!(
            line.starts_with("surge: error: invalid value")
                && line.contains(&format!(
                    "{bad:?} is not an HTTP status (a number from 100 to 599)"
                )),
            "{line}"
        );
    }
    assert_eq!(seen.load(Ordering::SeqCst), 0, "nothing sent");
    let out = surge()
        .args(["bench", "-n", "2", "--expect-status", "200,599", &url])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A target whose host name does not resolve (a typo in the URL; `.invalid` never resolves):
/// replay and bench stop before the run with exit 2 and one line naming the host and the way
/// out (`--resolve`), and replay writes no run directory. replay ran its users, failed every
/// session as `connect_error` and exited 1, as for an app that is down; bench counted each
/// request as `connect: Uncategorized`. Aimed at a real address with `--resolve`, the same
/// host name replays.
#[test]
fn a_target_host_that_does_not_resolve_is_one_line_before_the_run() {
    let tmp = TempDir::new("surge-unresolved");
    let (url, seen) = yes_app();
    let rec = recording(tmp.path(), "rec.log", &["/", "/a"]);
    let host = "surge-test-no-such-host.invalid";
    let port = url.trim_end_matches('/').rsplit(':').next().unwrap();
    let target = format!("http://{host}:{port}/");
    let want = |line: &str| {
        assert!(
            line.starts_with(&format!(
                "surge: error: cannot resolve the target's host {host}: "
            )) && line.ends_with(&format!(
                "(check the URL, or give its address with --resolve {host}:{port}:ADDR)"
            )),
            "{line}"
        );
    };
    let run = tmp.path().join("run");
    let out = replay_cmd(&rec, &target, 2, &run).output().unwrap();
    want(&one_line("replay", &out));
    assert!(!run.exists(), "a run directory was written");
    let out = surge()
        .args(["bench", &target, "-n", "3", "-c", "1"])
        .output()
        .unwrap();
    want(&one_line("bench", &out));
    assert_eq!(seen.load(Ordering::SeqCst), 0);

    let resolve = format!("{host}:{port}:127.0.0.1");
    let out = replay_cmd(&rec, &target, 1, &run)
        .args(["--resolve", &resolve])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(seen.load(Ordering::SeqCst), 2);
}

/// `surge record --listen` reads an address as `--dashboard` does (and manifold's `--listen`,
/// cranwhales' `--addr`): `:8600` and `localhost:8600` are refused at once, in clap's words,
/// exit 2, before the target is asked anything and with no recording written. `:8600` got
/// "failed to lookup address information: Name or service not known" after the target's
/// detection, and `localhost:8600` was taken, where the other programs refuse it.
#[test]
fn record_listen_reads_an_address_as_the_other_programs_do() {
    let tmp = TempDir::new("surge-record-listen");
    let (url, seen) = yes_app();
    let out = tmp.path().join("recording.log");
    for addr in [":8600", "localhost:8600", "8600"] {
        let res = refused_at_once(
            surge()
                .args(["record", "--target", &url, "--listen", addr, "-o"])
                .arg(&out),
            addr,
        );
        assert_eq!(
            one_line(addr, &res),
            format!(
                "surge: error: invalid value '{addr}' for '--listen <ADDR>': invalid socket address syntax"
            )
        );
        let dash = refused_at_once(
            surge().args(["bench", &url, "-n", "1", "--dashboard", addr]),
            addr,
        );
        assert_eq!(
            one_line(addr, &dash),
            format!(
                "surge: error: invalid value '{addr}' for '--dashboard <ADDR>': invalid socket address syntax"
            )
        );
    }
    assert!(!out.exists());
    assert_eq!(seen.load(Ordering::SeqCst), 0);
}

/// A `--stages` item whose duration is a bare number says why, as every other duration flag
/// does (`"2": a duration needs a unit, e.g. 2s or 500ms`), exit 2, no run directory; it said
/// only `has a bad duration`.
#[test]
fn a_stage_duration_without_a_unit_says_why() {
    let tmp = TempDir::new("surge-stages");
    let (url, seen) = yes_app();
    let rec = recording(tmp.path(), "rec.log", &["/", "/a"]);
    let run = tmp.path().join("run");
    let out = surge()
        .arg("replay")
        .arg(&rec)
        .arg(&url)
        .args(["--stages", "2:2, 1s:0", "--output-dir"])
        .arg(&run)
        .output()
        .unwrap();
    assert_eq!(
        one_line("stages", &out),
        "surge: error: invalid value '2:2, 1s:0' for '--stages <STAGES>': --stages \"2:2, 1s:0\": \
         \"2:2\" has a bad duration: \"2\": a duration needs a unit, e.g. 2s or 500ms"
    );
    assert!(!run.exists());
    assert_eq!(seen.load(Ordering::SeqCst), 0);
}

/// `surge record --target-type` takes only what its help names (auto, R/Shiny, surge/http):
/// `shiny` is one line, exit 2, nothing written and the app never asked. It was written to the
/// header as given, and the recorder took the Shiny app for plain HTTP (its live values not
/// turned into placeholders), so the recording did not replay.
#[test]
fn record_target_type_takes_only_the_named_types() {
    let tmp = TempDir::new("surge-target-type");
    let (url, seen) = yes_app();
    let out = tmp.path().join("recording.log");
    let res = refused_at_once(
        surge()
            .args(["record", "--target", &url, "--target-type", "shiny"])
            .args(["--listen", "127.0.0.1:0", "-o"])
            .arg(&out),
        "--target-type shiny",
    );
    assert_eq!(
        one_line("shiny", &res),
        "surge: error: invalid value 'shiny' for '--target-type <TARGET_TYPE>' \
         [possible values: auto, R/Shiny, surge/http]"
    );
    assert!(!out.exists());
    assert!(!tmp.path().join("recording.log.partial").exists());
    assert_eq!(seen.load(Ordering::SeqCst), 0);
}
