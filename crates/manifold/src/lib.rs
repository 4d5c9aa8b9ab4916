//! manifold: an autoscaling pool of single-threaded web app processes behind one HTTP port.
//!
//! Modules, in the order a request meets them:
//! - [`config`]: flags, TOML file and R presets merged into one [`Config`].
//! - [`server`]: accept loop with graceful drain.
//! - [`proxy`]: forwards a request (or WebSocket) to a leased worker; sticky cookie.
//! - [`pool`]: picks workers, FIFO queue, leases; `pool::supervisor` starts/stops workers
//!   (scaling, readiness, crashes, back-off, idle stop) in one task.
//! - [`worker`]: one process: spawn, readiness, output forwarding, stop and reap.
//! - [`upstream`]: connections to workers (keep-alive, TCP_NODELAY, quick ACKs).
//! - [`status`]: JSON status and Prometheus metrics, with the host's saturation.
//! - [`shutdown`]: SIGTERM / Ctrl-C; [`drain`]: what happens between the signal and the stop.

pub mod accesslog;
pub mod account;
pub mod config;
pub mod drain;
pub mod histogram;
pub mod pool;
pub mod proxy;
pub mod rss;
pub mod server;
pub mod shutdown;
pub mod status;
pub mod upstream;
pub mod worker;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

pub use config::{Cli, Config};

/// Errors that end a manifold run; each is one line for the user.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Settings were invalid.
    #[error(transparent)]
    Config(#[from] config::ConfigError),
    /// The listen address could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// --listen.
        addr: SocketAddr,
        /// OS error.
        source: std::io::Error,
    },
    /// The access log could not be opened.
    #[error(transparent)]
    AccessLog(#[from] accesslog::OpenError),
    /// The `--min` workers could not be started.
    #[error("{0}")]
    Start(String),
}

/// Starts `--min` workers, then serves on `listener` until `shutdown` resolves; then drains (new
/// sessions refused for up to `--drain-timeout`, see [`drain`]), finishes in-flight requests and
/// stops every worker. If `force` resolves during the drain, the workers are stopped at once.
/// `main` binds the listener; tests pass one bound to port 0.
///
/// Prints `manifold: listening on http://ADDR` to stderr once traffic is accepted.
///
/// # Errors
/// Invalid settings, or the `--min` workers cannot start.
pub async fn run(
    listener: tokio::net::TcpListener,
    cfg: Config,
    shutdown: impl Future<Output = ()>,
    force: impl Future<Output = ()>,
) -> Result<(), Error> {
    run_with_reload(listener, cfg, shutdown, force, None).await
}

/// [`run`], and each config received on `reloads` (SIGHUP in `main`: flags and config file read
/// again) starts a new generation of workers with its command (see `pool::reload`).
///
/// # Errors
/// As [`run`].
pub async fn run_with_reload(
    listener: tokio::net::TcpListener,
    cfg: Config,
    shutdown: impl Future<Output = ()>,
    force: impl Future<Output = ()>,
    reloads: Option<tokio::sync::mpsc::UnboundedReceiver<Config>>,
) -> Result<(), Error> {
    cfg.validate()?;
    let addr = listener.local_addr().map_err(|source| Error::Bind {
        addr: cfg.listen,
        source,
    })?;
    let log = match &cfg.access_log {
        Some(target) => Some(accesslog::AccessLog::open(target).await?),
        None => None,
    };
    let rec = Arc::new(account::Recorder::new("default".into(), log));
    let output = worker::OutputSink::start();
    let pool = pool::Pool::new(cfg.clone(), output);
    tokio::pin!(shutdown);
    let started = tokio::select! {
        r = pool.start_min() => r,
        _ = &mut shutdown => {
            pool.shutdown().await;
            return Ok(());
        }
    };
    if let Err(e) = started {
        pool.shutdown().await;
        return Err(Error::Start(e));
    }
    eprintln!(
        "manifold: listening on http://{addr} ({} worker(s) ready)",
        cfg.min
    );
    let proxy = Arc::new(proxy::Proxy::new(&cfg, pool.clone(), rec));
    if let Some(mut rx) = reloads {
        let pool = Arc::downgrade(&pool);
        tokio::spawn(async move {
            while let Some(new) = rx.recv().await {
                let Some(pool) = pool.upgrade() else { return };
                pool.reload(new.command);
            }
        });
    }
    let stop = {
        let (pool, timeout) = (pool.clone(), cfg.drain_timeout);
        async move {
            shutdown.await;
            drain::drain(&pool, timeout).await;
        }
    };
    tokio::pin!(force);
    // Bounded: --drain-timeout for the drain, then --stop-timeout shared by the requests still in
    // flight and the workers' SIGTERM → SIGKILL, whatever the clients do.
    let grace = tokio::select! {
        left = server::serve(listener, proxy, stop, cfg.stop_timeout, server::Limits {
            max_connections: cfg.max_connections,
            header_timeout: cfg.header_timeout,
        }) => left,
        _ = &mut force => {
            tracing::warn!("second signal: stopping workers without waiting for in-flight requests");
            cfg.stop_timeout
        }
    };
    pool.shutdown_within(grace).await;
    tracing::info!("all workers stopped");
    Ok(())
}
