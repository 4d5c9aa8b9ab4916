//! Every request accounted for: the access log has one line per request the client made, with the
//! same request id, status and body size the client saw; the latency histograms count exactly the
//! requests served, by status class; request ids reach the worker and come back. Real Python
//! workers, real file.

use crate::common;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::thread;

use common::*;

/// Reads the access log until it has `n` lines (the writer is a task; bounded wait).
fn log_lines(path: &std::path::Path, n: usize) -> Vec<serde_json::Value> {
    let mut lines: Vec<serde_json::Value> = Vec::new();
    poll_until(DEADLINE, || {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        lines = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        lines.len() >= n
    });
    lines
}

/// The value of a metrics line `name{labels} value`.
fn metric(text: &str, series: &str) -> u64 {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .map_or(0, |v| v.parse::<f64>().unwrap() as u64)
}

#[test]
fn access_log_and_histograms_match_what_clients_saw() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("access.jsonl");
    let m = InProc::start(&base(&[
        "--min",
        "2",
        "--max",
        "2",
        "--access-log",
        log.to_str().unwrap(),
    ]));
    let paths = ["/hello", "/nope", "/sleep?ms=20", "/echo", "/pid"];
    // Two clients at once, 40 requests each; every fifth carries its own id.
    let clients: Vec<_> = (0..2)
        .map(|c| {
            let addr = m.addr.clone();
            thread::spawn(move || {
                (0..40)
                    .map(|i| {
                        let path = paths[i % paths.len()];
                        let own = format!("client-{c}-{i}");
                        let hdrs: Vec<(&str, &str)> = if i % 5 == 3 {
                            vec![("X-Request-Id", own.as_str())]
                        } else {
                            vec![]
                        };
                        let r = request(&addr, "GET", path, &hdrs, "");
                        (path, hdrs.first().map(|h| h.1.to_string()), r)
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let mut seen: Vec<(&str, Option<String>, Resp)> = Vec::new();
    for c in clients {
        seen.extend(c.join().unwrap());
    }
    // One crash: a 502 is accounted for as well. A POST, so it is not retried (a GET would go
    // once more and crash the other worker too, see errors.rs).
    let crash = request(&m.addr, "POST", "/crash", &[], "");
    assert_eq!(crash.status, 502);
    seen.push(("/crash", None, crash));
    let mut ids = HashSet::new();
    for (path, own, r) in &seen {
        let id = r.header("x-request-id").expect("X-Request-Id returned");
        if let Some(own) = own {
            assert_eq!(id, own, "a client's own id is kept");
        }
        assert!(ids.insert(id.to_string()), "ids are unique: {id}");
        assert!(r.header("x-request-start").unwrap().starts_with("t="));
        if *path == "/echo" {
            let v: serde_json::Value = serde_json::from_str(&r.body).unwrap();
            assert_eq!(
                v["headers"]["x-request-id"], id,
                "the worker saw the same id"
            );
            assert!(v["headers"]["x-request-start"]
                .as_str()
                .unwrap()
                .starts_with("t="));
        }
    }
    let lines = log_lines(&log, seen.len());
    assert_eq!(lines.len(), seen.len(), "one line per request");
    let by_id: HashMap<&str, &serde_json::Value> = lines
        .iter()
        .map(|l| (l["request_id"].as_str().unwrap(), l))
        .collect();
    assert_eq!(by_id.len(), seen.len());
    let mut classes: BTreeMap<String, u64> = BTreeMap::new();
    for (path, _, r) in &seen {
        let l = by_id[r.header("x-request-id").unwrap()];
        assert_eq!(l["status"], r.status, "{l}");
        assert_eq!(l["bytes"], r.body.len() as u64, "{l}");
        assert_eq!(l["path"], *path);
        let method = if *path == "/crash" { "POST" } else { "GET" };
        assert_eq!(l["method"], method);
        assert_eq!(l["retried"], false, "{l}");
        assert_eq!(l["streamed"], false, "{l}");
        assert_eq!(l["app"], "default");
        assert_eq!(l["generation"], 1);
        assert!(l["worker"].as_u64().is_some(), "{l}");
        assert!(l["queue_wait_s"].as_f64().unwrap() <= l["duration_s"].as_f64().unwrap());
        // Server-Timing says what the log says: queue wait and time in the worker, with the id.
        let st = r.header("server-timing").expect("Server-Timing returned");
        let queue = format!(
            "queue;dur={:.3}",
            l["queue_wait_s"].as_f64().unwrap() * 1000.0
        );
        assert!(st.starts_with(&queue), "{st} vs {l}");
        if let Some(up) = l["upstream_s"].as_f64() {
            let id = r.header("x-request-id").unwrap();
            let app = format!(", app;dur={:.3};desc=\"{id}\"", up * 1000.0);
            assert!(st.ends_with(&app), "{st} vs {l}");
        }
        if *path == "/sleep?ms=20" {
            assert!(l["upstream_s"].as_f64().unwrap() >= 0.020, "{l}");
        }
        *classes.entry(format!("{}xx", r.status / 100)).or_default() += 1;
    }
    let text = m.get("/__manifold__/metrics").body;
    let mut total = 0;
    for (class, n) in &classes {
        for name in [
            "manifold_request_duration_seconds",
            "manifold_queue_wait_seconds",
        ] {
            let series = format!("{name}_count{{app=\"default\",class=\"{class}\"}}");
            assert_eq!(metric(&text, &series), *n, "{series}\n{text}");
            let inf = format!("{name}_bucket{{app=\"default\",class=\"{class}\",le=\"+Inf\"}}");
            assert_eq!(metric(&text, &inf), *n, "{inf}");
        }
        total += n;
    }
    assert_eq!(total, 81);
    assert_eq!(classes["2xx"], 64);
    assert_eq!(classes["4xx"], 16);
    assert_eq!(classes["5xx"], 1);
    // Worker memory and age gauges: a ready Python worker's group holds megabytes. The crashed
    // worker may still be listed while it is reaped (its memory gone): a ready one is read, and
    // the metrics after it.
    let mut ready = None;
    let found = poll_until(std::time::Duration::from_secs(10), || {
        ready = workers(&m.status())
            .into_iter()
            .find(|w| w["state"] == "ready" && w["rss_bytes"].as_u64() > Some(1_000_000));
        ready.is_some()
    });
    assert!(found, "no ready worker with its memory: {}", m.status());
    let w = ready.unwrap();
    let text = m.get("/__manifold__/metrics").body;
    let series = format!(
        "manifold_worker_rss_bytes{{worker=\"{}\",generation=\"1\"}}",
        w["id"]
    );
    let rss = metric(&text, &series);
    assert!(rss > 1_000_000, "{series} = {rss}\n{text}");
    assert!(text.contains("# TYPE manifold_worker_age_seconds gauge"));
}

/// An access log that cannot be opened is a one-line error naming the file, before any worker
/// starts.
#[test]
fn unwritable_access_log_is_a_clear_error() {
    let (code, log) = run_to_exit(&base(&["--access-log", "/nonexistent/dir/a.log"]));
    assert_eq!(code, Some(1));
    assert!(
        log.contains(
            "manifold: error: cannot open access log /nonexistent/dir/a.log: No such file"
        ),
        "{log}"
    );
}
