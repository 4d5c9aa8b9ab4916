//! `surge explain` on a real R Shiny app behind manifold (issue 33's test of Deliver 2): the
//! case study's journey in small (tests/fixtures/shiny-plots: a first plot that costs the most,
//! then a second plot shown and redrawn), one R worker. explain names the first plot's output
//! as the costliest, and its time alone is within 20% of what the R process logged for that
//! output in the same run (a ratio of two measurements of the same work, not a time limit).
//! Needs R shiny and the manifold binary beside surge's: `make test-surge-explain-r`.

use crate::common::{fresh_dir, wait_port, Proc};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// The manifold binary the workspace built beside surge's.
fn manifold_bin() -> PathBuf {
    let bin = Path::new(env!("CARGO_BIN_EXE_surge")).with_file_name("manifold");
    assert!(
        bin.is_file(),
        "{} missing: cargo build -p manifold (make test-surge-explain-r builds it)",
        bin.display()
    );
    bin
}

/// `manifold shiny APP` with one R worker on a free port, R's output log at `log`; returns it
/// once its worker is ready, and its base URL.
fn start_manifold(app: &Path, log: &Path) -> (Proc, String) {
    let port = crate::common::free_port();
    let child = Command::new(manifold_bin())
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .args(["--min", "1", "--max", "1", "shiny"])
        .arg(app)
        .env("SURGE_OUTPUT_LOG", log)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("manifold starts");
    let p = Proc(child);
    assert!(wait_port(port, Duration::from_secs(60)), "manifold listens");
    let url = format!("http://127.0.0.1:{port}/");
    // Ready: its R worker answers the page (manifold holds the request until the worker is up).
    let (status, _) = crate::common::http_get(&url, "/");
    assert_eq!(status, 200, "the R worker answers through manifold");
    (p, url)
}

/// R's log: (output, session token, ms) per rendered output, in the order R rendered them.
fn r_log(path: &Path) -> Vec<(String, String, f64)> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    (text.lines())
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            Some((
                f.first()?.to_string(),
                f.get(1)?.to_string(),
                f.get(2)?.parse().ok()?,
            ))
        })
        .collect()
}

/// R's log once it has at least `n` lines (R writes a line after it sent the output, so it may
/// trail the message surge got), or as it is after 20 s.
fn wait_log(path: &Path, n: usize) -> Vec<(String, String, f64)> {
    let until = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let v = r_log(path);
        if v.len() >= n || std::time::Instant::now() > until {
            return v;
        }
        // why: R appends to a plain file; there is no event to wait on.
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
#[ignore = "needs R shiny and the manifold binary: make test-surge-explain-r"]
fn explain_names_the_first_plot_and_agrees_with_r() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/shiny-plots");
    let dir = fresh_dir("r-explain");
    let log = dir.join("outputs.log");
    let (_manifold, url) = start_manifold(&fixture, &log);
    let out = dir.join("out");
    let rec = fixture.join("recording.log");
    // One session first, as a deployed app has had: the R process's first plot pays for loading
    // the graphics device (here 824 ms alone against 430 ms of R code, cold), which is not the
    // output's cost.
    crate::common::replay_in_process(&rec, &url, 1, &dir.join("warm"), &["--think-time", "none"]);
    let warm = wait_log(&log, 3).len();
    assert_eq!(warm, 3, "the warm-up session's three outputs");
    let a = crate::common::explain_args(&[
        rec.to_str().unwrap(),
        &url,
        "--users",
        "3",
        "--think-time",
        "none",
        "--output-dir",
        out.to_str().unwrap(),
    ]);
    let plan = surge::capacity::explain::ExplainPlan::from_args(a).unwrap();
    let e = crate::common::block_on(surge::capacity::explain::run(plan, std::future::pending()))
        .unwrap();
    eprintln!(
        "{}",
        surge::capacity::explain::rank::table(&e.rows, e.users)
    );
    assert_eq!(e.sessions[0], 1, "the one alone completed: {e:#?}");
    assert!(e.sessions[1] >= 3, "the loaded sessions completed: {e:#?}");
    let top = &e.rows[0];
    assert!(
        top.label.contains("allTraffic") && !top.label.contains("whales"),
        "the first plot is the costliest: {:#?}",
        e.rows
    );
    // After the warm-up, R's first session is the one alone (explain runs it before the loaded
    // run).
    let logged = wait_log(&log, warm + 3 * (1 + e.sessions[1])).split_off(warm);
    let solo_token = &logged.first().expect("R logged its outputs").1;
    let r_ms: Vec<f64> = (logged.iter())
        .filter(|(o, t, _)| o == "allTraffic" && t == solo_token)
        .map(|x| x.2)
        .collect();
    assert_eq!(r_ms.len(), 1, "one first plot alone: {logged:?}");
    let ratio = top.solo_ms / r_ms[0];
    eprintln!(
        "allTraffic alone: surge {:.1} ms, R {:.1} ms (ratio {ratio:.3})",
        top.solo_ms, r_ms[0]
    );
    assert!(
        (0.8..=1.2).contains(&ratio),
        "surge {:.1} ms vs R {:.1} ms",
        top.solo_ms,
        r_ms[0]
    );
    // Every session's outputs reached R: the one alone and at least 3 loaded, three outputs
    // each (a session still open when the run ended may have logged fewer).
    let mut per: std::collections::BTreeMap<&String, usize> = Default::default();
    logged
        .iter()
        .for_each(|x| *per.entry(&x.1).or_default() += 1);
    assert!(per.len() >= 4, "{logged:?}");
    assert!(per.values().filter(|&&n| n == 3).count() >= 4, "{logged:?}");
}
