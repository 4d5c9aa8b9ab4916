//! `--dashboard ADDR` on replay, capacity and bench: while the run goes, a web page with the
//! report's own charts refreshed every second (Server-Sent Events), linking to the final
//! one-file report when the run ends, and Prometheus text at `/metrics` on the same port. The
//! run feeds [`LiveMetrics`] through its hooks and tells the dashboard which run directory to
//! show; the page is rebuilt from that directory with the report's reader, so live and final
//! charts are the same code.
//!
//! Modules: `server` (routes, the SSE stream, the live payload).

mod server;

use crate::metrics::LiveMetrics;
use crate::timefmt::parse_duration;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// The dashboard flags, flattened into replay, capacity and bench.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct DashboardArgs {
    /// Serve a live dashboard at this address while the run goes, e.g. 127.0.0.1:8700: the
    /// report's charts refreshed every second, and Prometheus text at /metrics (users active,
    /// sessions done/failed, latency histograms by event type, bench requests)
    #[arg(long, value_name = "ADDR")]
    pub dashboard: Option<SocketAddr>,
    /// With --dashboard: keep serving the final state and the report this long after the run
    /// (a last Prometheus scrape, the page's link to the report); Ctrl-C ends it sooner
    #[arg(long, value_parser = parse_duration, default_value = "5s", value_name = "DURATION")]
    pub dashboard_linger: Duration,
}

/// What the page shows now.
#[derive(Debug, Clone, Default)]
struct View {
    /// The run directory being written (a capacity search: its current step).
    run_dir: Option<PathBuf>,
    /// Title line of the live strip (`surge replay`, `capacity step 3: 8 users`).
    what: String,
    /// The final report, once the run has ended (served at /report.html).
    report: Option<PathBuf>,
    /// The run has ended.
    finished: bool,
}

/// A running dashboard: its metrics (hand them to the run) and the view it serves.
pub struct Dashboard {
    /// The live metrics the run fills.
    pub metrics: Arc<LiveMetrics>,
    view: watch::Sender<View>,
    linger: Duration,
    server: tokio::task::JoinHandle<()>,
    /// The bound address (port 0 resolved).
    pub addr: SocketAddr,
}

/// `--dashboard`'s address could not be bound (in use, not local, no permission).
#[derive(Debug, thiserror::Error)]
#[error("--dashboard {addr}: {err}")]
pub struct DashboardError {
    /// The address asked for.
    pub addr: SocketAddr,
    /// Why binding it failed.
    pub err: std::io::Error,
}

impl Dashboard {
    /// Binds `--dashboard`'s address and starts serving; None without the flag. `event_types`
    /// are the histogram labels (recording.log's types; none for bench).
    pub async fn start(
        args: &DashboardArgs,
        event_types: &[&'static str],
    ) -> Result<Option<Dashboard>, DashboardError> {
        let Some(addr) = args.dashboard else {
            return Ok(None);
        };
        let bind = |err| DashboardError { addr, err };
        let listener = (tokio::net::TcpListener::bind(addr).await).map_err(bind)?;
        let addr = listener.local_addr().map_err(bind)?;
        let metrics = Arc::new(LiveMetrics::new(event_types));
        let (view, rx) = watch::channel(View::default());
        let server = tokio::spawn(server::serve(listener, metrics.clone(), rx));
        eprintln!("surge: dashboard at http://{addr}/ (Prometheus: http://{addr}/metrics)");
        Ok(Some(Dashboard {
            metrics,
            view,
            linger: args.dashboard_linger,
            server,
            addr,
        }))
    }

    /// Shows `run_dir` (being written) under the title `what`.
    pub fn show(&self, run_dir: &Path, what: &str) {
        self.view.send_modify(|v| {
            v.run_dir = Some(run_dir.to_path_buf());
            v.what = what.to_string();
        });
    }

    /// Titles a run without a run directory (bench).
    pub fn show_title(&self, what: &str) {
        self.view.send_modify(|v| v.what = what.to_string());
    }

    /// The run has ended: writes the report of `report_of` (a run or capacity directory) as
    /// its report.html, tells the page, serves for `--dashboard-linger` (or until `stop`: a
    /// signal, at once when one stopped the run), stops.
    pub async fn finish(
        self,
        report_of: Option<&Path>,
        stop: impl std::future::Future<Output = ()>,
    ) {
        let report = match report_of {
            Some(dir) => write_report(dir).await,
            None => None,
        };
        self.view.send_modify(|v| {
            v.report = report;
            v.finished = true;
        });
        tokio::select! {
            _ = tokio::time::sleep(self.linger) => {}
            () = stop => {}
        }
        self.server.abort();
    }
}

/// Writes `dir/report.html` (the same file `surge report DIR -o DIR/report.html` makes); None,
/// said on stderr, when it cannot be made.
async fn write_report(dir: &Path) -> Option<PathBuf> {
    let dir = dir.to_path_buf();
    let out = dir.join("report.html");
    let made = tokio::task::spawn_blocking(move || {
        let args = server::report_args(&dir);
        let built = crate::report::build(&args).map_err(|e| e.to_string())?;
        crate::rundir::write_atomic(&out, built.content.as_bytes())
            .map_err(|e| format!("{}: {e}", out.display()))?;
        Ok::<_, String>(out)
    })
    .await;
    match made {
        Ok(Ok(p)) => {
            eprintln!("surge: wrote {}", p.display());
            Some(p)
        }
        Ok(Err(e)) => {
            eprintln!("surge: dashboard: no final report: {e}");
            None
        }
        Err(_) => None,
    }
}
