//! Bad segment invocations (issue 13): each is refused with exit 2 and one stderr line, and
//! creates no output.

use crate::common;
use crate::segments_support;

use common::*;
use segments_support::*;

#[test]
fn bad_segments_are_refused_with_one_line() {
    let _serial = serial();
    let (_app, target) = start_sse_app("normal");
    let tmp = TempDir::new("segments-bad");
    let rec = write_recording(tmp.path(), false);
    let other = write_recording(tmp.path(), true);
    let p = |n: &str| tmp.path().join(n);
    let s = |n: &str| p(n).to_str().unwrap().to_string();
    let rec = rec.to_str().unwrap();
    let out = p("out");
    let o = out.to_str().unwrap();
    for (seg, want) in [
        ("0/4", "K must be 1..=4"),
        ("5/4", "K must be 1..=4"),
        ("x", "expected K/N"),
        ("1/0", "N must be"),
    ] {
        refused(
            &replay(rec, &target, o, &["--segment", seg]),
            &format!("--segment: segment \"{seg}\": {want}"),
            &out,
        );
        refused(&bench_segment(&target, seg, &[]), "--segment", &out);
    }
    refused(
        &replay(rec, &target, o, &["--start-at", "soon"]),
        "--start-at: start time \"soon\"",
        &out,
    );
    // A start decades ahead (a typo in the year) is refused, not waited for in silence.
    let far = "a plan may start at most 24h 00m 00s ahead";
    refused(
        &replay(rec, &target, o, &["--start-at", "2099-01-01T00:00:00Z"]),
        far,
        &out,
    );
    refused(
        &[
            "bench",
            &target,
            "--rate",
            "5",
            "-n",
            "1",
            "--start-at",
            "2099-01-01T00:00:00Z",
        ],
        far,
        &out,
    );
    refused(
        &replay(rec, &target, o, &["--users", "2", "--segment", "3/3"]),
        "this segment has none",
        &out,
    );
    refused(
        &["bench", &target, "-d", "1s", "--segment", "1/2"],
        "--segment needs --rate",
        &out,
    );
    refused(
        &[
            "bench",
            &target,
            "--rate",
            "5",
            "-n",
            "1",
            "--start-at",
            "2026-13-01T00:00:00Z",
        ],
        "--start-at",
        &out,
    );

    // Real segment runs of two plans and two recordings (each user runs one short session).
    let quick = ["--start-interval", "10ms", "--think-time", "none"];
    let replay_ok = |rec: &str, users: &str, seg: &str, dir: &str| {
        let mut flags = vec!["--users", users, "--segment", seg];
        flags.extend(quick);
        let (code, _, err) = run(&replay(rec, &target, dir, &flags));
        assert_eq!(code, Some(0), "{err}");
    };
    replay_ok(rec, "2", "1/2", &s("a1"));
    replay_ok(rec, "2", "2/2", &s("a2"));
    replay_ok(rec, "3", "2/2", &s("b2"));
    replay_ok(other.to_str().unwrap(), "2", "2/2", &s("c2"));
    let whole = s("whole");
    let flags = ["--users", "2", "--think-time", "none"];
    let (code, _, err) = run(&replay(rec, &target, &whole, &flags));
    assert_eq!(code, Some(0), "{err}");
    std::fs::create_dir_all(p("dup")).unwrap();
    copy_dir(&p("a1"), &p("dup/a1"));

    let merge = |inputs: &[String]| {
        let mut a = vec!["merge".to_string()];
        a.extend(inputs.iter().cloned());
        a.extend(["-o".into(), o.to_string()]);
        a
    };
    std::fs::create_dir_all(p("empty")).unwrap();
    copy_dir(&p("a2"), &p("killed"));
    std::fs::remove_file(p("killed/summary.json")).unwrap();
    let cases: [(Vec<String>, String); 8] = [
        (
            vec![s("a1")],
            format!("segment 2/2 missing (got 1 of 2: {})", s("a1")),
        ),
        (
            vec![s("a1"), s("dup/a1")],
            format!("segment 1/2 given twice: {} and {}", s("a1"), s("dup/a1")),
        ),
        (
            vec![s("a1"), s("b2")],
            "are segments of different plans: users 3 vs 2".into(),
        ),
        (
            vec![s("a1"), s("c2")],
            "replayed different recordings (recording.log has 7 vs 8 lines)".into(),
        ),
        (
            vec![s("a1"), whole.clone()],
            format!("{whole}: not a segment of a plan"),
        ),
        (
            vec![s("a1"), s("nothing")],
            format!("{}: no such run directory or file", s("nothing")),
        ),
        (
            vec![s("a1"), s("empty")],
            format!("{}: not a run directory", s("empty")),
        ),
        (
            vec![s("a1"), s("killed")],
            "a segment without summary.json was stopped before it finished".into(),
        ),
    ];
    for (inputs, want) in &cases {
        let a = merge(inputs);
        refused(
            &a.iter().map(String::as_str).collect::<Vec<_>>(),
            want,
            &out,
        );
    }
    // Merged once, a merged run is no segment, and an existing output is never overwritten.
    let ok = merge(&[s("a2"), s("a1")]);
    let (code, _, err) = run(&ok.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(code, Some(0), "{err}");
    let both = session_csvs(&p("a1")).len() + session_csvs(&p("a2")).len();
    assert_eq!(session_csvs(&out).len(), both);
    let again = ["merge", &s("a1"), &s("a2"), "-o", o];
    let (code, _, err) = run(&again);
    assert_eq!(
        (
            code,
            err.contains("already exists (use --overwrite-output)")
        ),
        (Some(2), true),
        "{err}"
    );
    let remerge = ["merge", o, &s("a2"), "-o", &s("out2")];
    refused(&remerge, "already a merged run", &p("out2"));
    // surge report refuses an incomplete set of segments too.
    let rep = ["report", &s("a1"), &s("b2"), "-o", &s("r.html")];
    let (code, _, err) = run(&rep);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("segment 2/2 missing") && !p("r.html").exists(),
        "{err}"
    );
}
