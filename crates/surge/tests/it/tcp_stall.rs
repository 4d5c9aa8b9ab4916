//! surge must time the server, not its own TCP stack. R's httpuv answers in two writes (head, then
//! body) with Nagle on, so a keep-alive client that delays its ACK adds ~40 ms to every asset
//! (`src/net.rs`). Against a real shinydashboard app recorded in Chromium (≥ 20 asset GETs), the
//! replayed REQ_GET median, computed here from the session CSVs, stays under 10 ms; so do the asset
//! times `surge record` writes (its upstream client) and `surge bench`'s p90 on one asset.

use crate::common;

use common::*;
use std::time::Duration;
use surge::recording::{Kind, Recording};

/// Durations (ms) of every REQ_GET in a run, from its CSVs' `REQ_GET_START`/`_END` rows.
fn req_get_durations(run: &std::path::Path) -> Vec<i64> {
    let mut out = Vec::new();
    for f in session_csvs(run) {
        let mut start = std::collections::HashMap::new();
        for r in read_csv(&f).rows {
            let (event, ts, line) = (&r[3], r[4].parse::<i64>().unwrap(), r[5].clone());
            match event.as_str() {
                "REQ_GET_START" => {
                    start.insert(line, ts);
                }
                "REQ_GET_END" => out.push(ts - start.remove(&line).expect("END after START")),
                _ => {}
            }
        }
    }
    out
}

fn median(v: &mut [i64]) -> f64 {
    v.sort_unstable();
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2] as f64
    } else {
        (v[n / 2 - 1] + v[n / 2]) as f64 / 2.0
    }
}

#[test]
fn shiny_assets_replay_without_delayed_ack_stalls() {
    let (_r, port) = start_shiny_app("shiny-dashboard", &[]);
    let target = format!("http://127.0.0.1:{port}/");
    let tmp = TempDir::new("tcp-stall");
    let rec_path = tmp.path().join("recording.log");
    let (mut recorder, proxy) = record_in_process(&target, &rec_path, &[]);
    drive_browser("page", &proxy, None);
    assert!(recorder.wait(Duration::from_secs(20)).is_some());
    let rec = Recording::load(&rec_path).unwrap();
    let gets = rec.events.iter().filter(|e| e.kind == Kind::ReqGet).count();
    assert!(gets >= 20, "the dashboard page fetched only {gets} assets");

    // Two users, each on one keep-alive connection for all its sessions: the reused-connection case.
    let run = tmp.path().join("run");
    let s = replay_clean(
        &rec_path,
        &target,
        2,
        &run,
        &["--start-interval", "100ms", "--loaded-duration", "2s"],
    );
    let completed = s["sessions"]["completed"].as_u64().unwrap() as usize;
    let mut d = req_get_durations(&run);
    assert_eq!(
        d.len(),
        completed * gets,
        "every session replayed every asset"
    );
    let m = median(&mut d);
    eprintln!("replayed REQ_GET median {m} ms over {} requests", d.len());
    assert!(
        m < 10.0,
        "replayed REQ_GET median {m} ms over {} requests (a delayed-ACK stall is ~40 ms)",
        d.len()
    );

    // `surge record`'s upstream side: one user replayed through a second recorder re-records the
    // session over one keep-alive connection; the recorded asset times are the upstream's.
    let rec2_path = tmp.path().join("rerecorded.log");
    let (mut recorder2, proxy2) = record_in_process(&target, &rec2_path, &[]);
    replay_clean(
        &rec_path,
        &proxy2,
        1,
        &tmp.path().join("run2"),
        &["--loaded-duration", "0s"],
    );
    assert!(recorder2.wait(Duration::from_secs(20)).is_some());
    let rec2 = Recording::load(&rec2_path).unwrap();
    let mut d2: Vec<i64> = rec2
        .events
        .iter()
        .filter(|e| e.kind == Kind::ReqGet)
        .map(|e| e.end_ms.unwrap() - e.begin_ms)
        .collect();
    assert_eq!(d2.len(), gets);
    let m2 = median(&mut d2);
    eprintln!("re-recorded REQ_GET median {m2} ms");
    assert!(m2 < 10.0, "recorded REQ_GET median {m2} ms: {d2:?}");

    // surge bench on one asset over one keep-alive connection.
    let asset = rec
        .events
        .iter()
        .find(|e| e.kind == Kind::ReqGet && e.url.ends_with(".css"))
        .map(|e| e.url.to_string())
        .expect("a stylesheet in the recording");
    let url = format!("http://127.0.0.1:{port}{asset}");
    let (code, b) = bench_in_process(&["-c", "1", "-n", "200", "--json", &url]);
    assert_eq!(code, Some(0));
    assert_eq!(b["ok"].as_u64(), Some(200), "{b}");
    let p90 = b["latency_ms"]["p90"].as_f64().unwrap();
    assert!(p90 < 10.0, "bench p90 {p90} ms on {asset}");
}
