//! Several apps on one port (`[[app]]` in the config file): a real R Shiny app under `/shiny/`
//! (page, assets and WebSocket under the prefix, sticky to one worker) beside a Python app under
//! `/py/`, each with its own pool; status and metrics per app.

use crate::common;

use common::*;

#[test]
fn two_apps_on_one_port_each_with_its_pool() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("apps.toml");
    let py: Vec<String> = py_worker(&[]).iter().map(|a| format!("{a:?}")).collect();
    std::fs::write(
        &cfg,
        format!(
            "stop-timeout = \"1s\"\n\n[[app]]\nprefix = \"/shiny/\"\nshiny = {:?}\nmin = 2\nmax = 2\n\n[[app]]\nname = \"py\"\nprefix = \"/py\"\nmax = 1\ncommand = [{}]\n",
            fixture("shiny").display().to_string(),
            py.join(", ")
        ),
    )
    .unwrap();
    let mut m = start(&on_free_port(&["--config", cfg.to_str().unwrap()]));
    let s = m.status();
    assert_eq!(workers(&s["apps"]["shiny"]).len(), 2, "{s}");
    assert_eq!(workers(&s["apps"]["py"]).len(), 1, "{s}");
    // The Python app sees paths without its prefix, and the prefix in a header.
    let echo: serde_json::Value = serde_json::from_str(&m.get("/py/echo?x=1").body).unwrap();
    assert_eq!(echo["path"], "/echo?x=1");
    assert_eq!(echo["headers"]["x-forwarded-prefix"], "/py");
    let r = m.get("/py");
    assert_eq!((r.status, r.header("location")), (301, Some("/py/")));
    assert_eq!(m.get("/elsewhere").status, 404);
    // The Shiny app under its prefix: page, asset and WebSocket on the cookie's worker.
    let p = shiny::open(&m.addr, "/shiny/");
    let set = p.page.header("set-cookie").unwrap().to_string();
    assert!(set.contains("; Path=/shiny/;"), "{set}");
    assert!(p.cookie.starts_with("manifold_worker_shiny="), "{set}");
    let out = shiny::output(&m.addr, "/shiny/", &p.cookie);
    assert!(out.contains(&format!("pid: {}", p.pid)), "{out}");
    let worker = p.worker;
    let s = m.wait_status("websocket finished", |s| {
        workers(&s["apps"]["shiny"])
            .iter()
            .any(|w| w["id"] == worker && w["busy"] == 0 && w["served"] == 3)
    });
    assert_eq!(workers(&s["apps"]["py"])[0]["served"], 1, "{s}");
    // Metrics: one family, a sample per app.
    let text = m.get("/__manifold__/metrics").body;
    for line in [
        "manifold_workers_ready{app=\"shiny\"} 2",
        "manifold_workers_ready{app=\"py\"} 1",
        "manifold_request_duration_seconds_count{app=\"py\",class=\"2xx\"} 1",
    ] {
        assert!(text.lines().any(|l| l == line), "{line} missing:\n{text}");
    }
    assert_eq!(
        text.matches("# TYPE manifold_workers_ready gauge").count(),
        1
    );
    let all: Vec<u32> = ["shiny", "py"]
        .iter()
        .flat_map(|a| pids(&s["apps"][*a]))
        .collect();
    m.sigterm();
    assert_eq!(m.wait().code(), Some(0), "{}", m.log());
    all.into_iter().for_each(assert_gone);
}
