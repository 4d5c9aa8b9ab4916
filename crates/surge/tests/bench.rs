//! `surge bench` against a real nginx on loopback: request counts agree with nginx's own access log,
//! the open model keeps to its schedule, and a refused port gives errors by kind and exit status 1.

mod common;

use common::*;
use std::process::{Command, Stdio};
use std::time::Duration;

struct Nginx {
    _proc: Proc,
    port: u16,
    dir: TempDir,
}

fn start_nginx() -> Nginx {
    let dir = TempDir::new("nginx");
    let d = dir.path();
    std::fs::create_dir_all(d.join("www")).unwrap();
    std::fs::create_dir_all(d.join("logs")).unwrap();
    std::fs::write(d.join("www/index.html"), "x".repeat(1000)).unwrap();
    let port = free_port();
    let p = d.display();
    std::fs::write(
        d.join("nginx.conf"),
        format!(
            "worker_processes 1; daemon off; pid {p}/nginx.pid; error_log {p}/logs/error.log;\n\
             events {{ worker_connections 1024; }}\n\
             http {{ access_log {p}/logs/access.log; client_body_temp_path {p}/cb; proxy_temp_path {p}/px;\n\
             fastcgi_temp_path {p}/fc; uwsgi_temp_path {p}/uw; scgi_temp_path {p}/sc;\n\
             server {{ listen 127.0.0.1:{port}; root {p}/www; }} }}\n"
        ),
    )
    .unwrap();
    let child = Command::new("nginx")
        .arg("-p")
        .arg(d)
        .arg("-c")
        .arg(d.join("nginx.conf"))
        .stderr(Stdio::null())
        .spawn()
        .expect("nginx not installed (apt nginx-light)");
    let proc_ = Proc(child);
    assert!(
        wait_port(port, Duration::from_secs(10)),
        "nginx did not start"
    );
    Nginx {
        _proc: proc_,
        port,
        dir,
    }
}

fn bench(args: &[&str]) -> (Option<i32>, serde_json::Value) {
    let out = surge()
        .arg("bench")
        .args(args)
        .arg("--json")
        .output()
        .unwrap();
    let v = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    (out.status.code(), v)
}

fn access_lines(n: &Nginx) -> usize {
    // nginx writes its log line after the response; give it a moment to flush.
    std::thread::sleep(Duration::from_millis(200));
    std::fs::read_to_string(n.dir.path().join("logs/access.log"))
        .unwrap()
        .lines()
        .count()
}

#[test]
fn closed_model_counts_match_nginx_access_log() {
    let n = start_nginx();
    let url = format!("http://127.0.0.1:{}/index.html", n.port);
    let (code, r) = bench(&["-c", "8", "-n", "3000", &url]);
    assert_eq!(code, Some(0));
    assert_eq!(r["ok"], 3000);
    assert_eq!(r["status_codes"]["200"], 3000);
    assert_eq!(r["bytes_received"], 3000 * 1000);
    assert_eq!(access_lines(&n), 3000);
    let l = &r["latency_ms"];
    assert!(l["p50"].as_f64().unwrap() <= l["p99"].as_f64().unwrap());
    assert!(l["p99"].as_f64().unwrap() <= l["max"].as_f64().unwrap());
}

#[test]
fn open_model_keeps_rate_and_measures_from_intended_time() {
    let n = start_nginx();
    let url = format!("http://127.0.0.1:{}/index.html", n.port);
    let (code, r) = bench(&["-c", "4", "--rate", "400", "-d", "2s", &url]);
    assert_eq!(code, Some(0));
    assert_eq!(r["model"], "open");
    let ok = r["ok"].as_u64().unwrap();
    // 400 req/s for 2 s = 800 scheduled sends.
    assert!((760..=800).contains(&ok), "sent {ok}");
    assert_eq!(access_lines(&n) as u64, ok);
    assert!(r["late_starts"].as_u64().unwrap() < 40, "{r}");
}

#[test]
fn refused_port_reports_errors_by_kind() {
    let url = format!("http://127.0.0.1:{}/", free_port());
    let (code, r) = bench(&["-c", "2", "-d", "500ms", &url]);
    assert_eq!(code, Some(1));
    assert_eq!(r["ok"], 0);
    let errs = r["errors"].as_object().unwrap();
    assert!(
        errs.keys().any(|k| k.contains("ConnectionRefused")),
        "{errs:?}"
    );
}

#[test]
fn bad_arguments_exit_2_with_one_line() {
    let out = surge()
        .args(["bench", "https://example.org/"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("only http://"));
}
