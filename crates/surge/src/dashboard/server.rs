//! The dashboard's routes: `/` (the report page of the run directory so far, marked live),
//! `/events` (SSE: every second the counters, and the report's model and tables whenever
//! sessions have ended since the last one; `end` when the run is over), `/metrics`
//! (Prometheus) and `/report.html` (the final report, once written).

use super::View;
use crate::metrics::LiveMetrics;
use crate::report::{self, ReportArgs};
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use futures_util::Stream;
use std::convert::Infallible;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// How often the page is refreshed.
const REFRESH: Duration = Duration::from_secs(1);

/// The report's model and tables of one state of the run directory.
struct Build {
    /// (run directory, sessions ended) it was made at.
    key: (PathBuf, u64),
    /// Counts up with each build: a client sends a build once.
    id: u64,
    /// The page's `<main>` content.
    main: String,
    /// The model JSON.
    model: String,
}

struct App {
    metrics: Arc<LiveMetrics>,
    view: watch::Receiver<View>,
    started: Instant,
    build: Mutex<Option<Arc<Build>>>,
}

/// Serves until aborted.
pub(super) async fn serve(
    listener: tokio::net::TcpListener,
    metrics: Arc<LiveMetrics>,
    view: watch::Receiver<View>,
) {
    let app = Arc::new(App {
        metrics,
        view,
        started: Instant::now(),
        build: Mutex::new(None),
    });
    let router = axum::Router::new()
        .route("/", get(page))
        .route("/events", get(events))
        .route("/metrics", get(metrics_text))
        .route("/report.html", get(final_report))
        // Browsers ask for it; an empty answer keeps their consoles clean.
        .route("/favicon.ico", get(|| async { StatusCode::NO_CONTENT }))
        .with_state(app);
    if let Err(e) = axum::serve(listener, router).await {
        eprintln!("surge: dashboard: {e}");
    }
}

/// The report flags the dashboard builds with (the defaults of `surge report`).
pub(super) fn report_args(dir: &Path) -> ReportArgs {
    ReportArgs {
        verdict: Default::default(),
        runs: vec![dir.to_path_buf()],
        names: Vec::new(),
        output: PathBuf::from("report.html"),
        page_load_limit: Duration::from_secs(10),
        allow_mixed: false,
        json: false,
    }
}

/// The marker the report runtime looks for: this page is live, its updates come from /events.
const LIVE_BODY: &str = "<body data-live=\"/events\"><div id=\"live-strip\">connecting…</div>";

async fn page(State(app): State<Arc<App>>) -> Response {
    let dir = app.view.borrow().run_dir.clone();
    let waiting = match &dir {
        Some(_) => "The report appears here once the first session has ended.",
        None => "This run writes no run directory (surge bench): its counts are above, its latency histogram at /metrics.",
    };
    let built = match dir {
        Some(d) => tokio::task::spawn_blocking(move || report::build(&report_args(&d)).ok())
            .await
            .ok()
            .flatten(),
        None => None,
    };
    let html = match built {
        Some(b) => b.content.replacen("<body>", LIVE_BODY, 1),
        // No session has ended yet (or a bench run): the strip, then a reload with the first.
        None => format!(
            "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>surge live</title></head>\
             {LIVE_BODY}<main><p>{waiting}</p></main><script>{}</script></body></html>",
            report::runtime().unwrap_or("").replace("</script", "<\\/script")
        ),
    };
    ([(header::CACHE_CONTROL, "no-store")], Html(html)).into_response()
}

async fn metrics_text(State(app): State<Arc<App>>) -> Response {
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        app.metrics.encode(),
    )
        .into_response()
}

async fn final_report(State(app): State<Arc<App>>) -> Response {
    let path = app.view.borrow().report.clone();
    match path.map(std::fs::read_to_string) {
        Some(Ok(html)) => Html(html).into_response(),
        _ => (
            StatusCode::NOT_FOUND,
            [(header::CONTENT_TYPE, "application/json")],
            "{\"error\": \"no report yet: it is written when the run ends\"}",
        )
            .into_response(),
    }
}

async fn events(State(app): State<Arc<App>>) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let stream =
        futures_util::stream::unfold((app, 0u64, false), |(app, sent, ended)| async move {
            if ended {
                // The page closes its EventSource at `end`; nothing more to say.
                std::future::pending::<()>().await;
            }
            tokio::time::sleep(REFRESH).await;
            let view = app.view.borrow().clone();
            let build = latest(&app, &view).await;
            let (payload, id) = payload(&app, &view, build.as_deref(), sent);
            let ev = if view.finished {
                Event::default().event("end").data(payload)
            } else {
                Event::default().event("update").data(payload)
            };
            Some((Ok(ev), (app, id, view.finished)))
        });
    Sse::new(stream).keep_alive(KeepAlive::default())
}

/// The build for the view's run directory now: the cached one if no session ended since.
async fn latest(app: &Arc<App>, view: &View) -> Option<Arc<Build>> {
    let dir = view.run_dir.clone()?;
    let (_, done, failed) = app.metrics.sessions();
    let key = (dir.clone(), done + failed);
    let cached = app.build.lock().unwrap_or_else(|p| p.into_inner()).clone();
    if let Some(b) = &cached {
        if b.key == key {
            return cached;
        }
    }
    let made = tokio::task::spawn_blocking(move || report::build(&report_args(&dir)))
        .await
        .ok()?;
    // A directory without a finished session yet has no report: keep the last one.
    let Ok(made) = made else { return cached };
    let main = cut_main(&made.content).to_string();
    let b = Arc::new(Build {
        key,
        id: cached.as_ref().map_or(1, |c| c.id + 1),
        main,
        model: made.model,
    });
    *app.build.lock().unwrap_or_else(|p| p.into_inner()) = Some(b.clone());
    Some(b)
}

/// The page's `<main>` content.
fn cut_main(page: &str) -> &str {
    let from = page.find("<main>").map_or(0, |i| i + "<main>".len());
    let to = page.rfind("</main>").unwrap_or(page.len());
    page.get(from..to).unwrap_or("")
}

/// One SSE message: the counters, and the build when this client has not had it.
fn payload(app: &App, view: &View, build: Option<&Build>, sent: u64) -> (String, u64) {
    let (users, done, failed) = app.metrics.sessions();
    let (requests, errors) = app.metrics.bench_counts();
    let mut v = serde_json::json!({
        "what": view.what,
        "elapsed_s": app.started.elapsed().as_secs_f64(),
        "users": users,
        "sessions_done": done,
        "sessions_failed": failed,
        "requests": requests,
        "request_errors": errors,
        "finished": view.finished,
        "report": view.report.as_ref().map(|_| "/report.html"),
    });
    let Some(b) = build.filter(|b| b.id != sent) else {
        return (v.to_string(), sent);
    };
    v["main"] = b.main.clone().into();
    // The model is JSON already: spliced in as it is rather than parsed and written again.
    let mut text = v.to_string();
    text.pop();
    text.push_str(",\"model\":");
    text.push_str(&b.model);
    text.push('}');
    (text, b.id)
}
