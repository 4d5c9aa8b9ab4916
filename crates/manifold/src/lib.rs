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
pub mod router;
pub mod rss;
pub mod server;
pub mod shutdown;
pub mod status;
pub mod upstream;
pub mod worker;

use std::future::Future;
use std::io::Write;
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
    #[error(transparent)]
    Start(#[from] pool::StartError),
    /// manifold's temp directory for its workers could not be created.
    #[error("cannot create the workers' temp directory in {}: {source}", std::env::temp_dir().display())]
    TempDir {
        /// OS error.
        source: std::io::Error,
    },
    /// A task starting workers panicked (a bug).
    #[error("starting workers failed: {0}")]
    StartTask(#[from] tokio::task::JoinError),
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
/// again) applies its settings and starts a new generation of workers with its command (see
/// `pool::reload`; `config::live` says which setting applies when).
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
    if let Some(log) = &log {
        log.reopen_on_sigusr1();
    }
    let output = worker::OutputSink::start();
    let tmp = worker::tmpdir::TempRoot::create().map_err(|source| Error::TempDir { source })?;
    // Whatever way the run ends, its workers' temp directories go with it.
    let _tmp = tmp.guard();
    let apps = app_list(&cfg);
    let pools: Vec<Arc<pool::Pool>> = apps
        .iter()
        .map(|a| pool::Pool::new(a.cfg.clone(), output.clone(), tmp.clone()))
        .collect();
    tokio::pin!(shutdown);
    let started = tokio::select! {
        r = start_all(&pools) => r,
        _ = &mut shutdown => {
            stop_all(&pools, None).await;
            return Ok(());
        }
    };
    if let Err(e) = started {
        stop_all(&pools, None).await;
        return Err(e);
    }
    let ready: usize = apps.iter().map(|a| a.cfg.min).sum();
    // Not eprintln!: it panics when stderr is gone (`manifold … 2>&1 | head`, a log collector
    // that exited), and a server must outlive its log reader, as the worker lines' writer does.
    let _ = writeln!(
        std::io::stderr(),
        "manifold: listening on http://{addr} ({ready} worker(s) ready)"
    );
    let router = Arc::new(router::Router::new(routes(&apps, &pools, log)));
    if let Some(rx) = reloads {
        tokio::spawn(reload_loop(
            rx,
            cfg.clone(),
            apps.clone(),
            pools.iter().map(Arc::downgrade).collect(),
        ));
    }
    let stop = {
        let pools = pools.clone();
        async move {
            shutdown.await;
            let mut set = tokio::task::JoinSet::new();
            for p in pools {
                // Read now: a reload may have changed it.
                let timeout = p.cfg().drain_timeout;
                set.spawn(async move { drain::drain(&p, timeout).await });
            }
            while set.join_next().await.is_some() {}
        }
    };
    tokio::pin!(force);
    // Bounded: --drain-timeout for the drain, then --stop-timeout shared by the requests still in
    // flight and the workers' SIGTERM → SIGKILL, whatever the clients do.
    let limits = server::Limits {
        max_connections: cfg.max_connections,
        header_timeout: cfg.header_timeout,
    };
    let grace = {
        let pools = pools.clone();
        move || stop_grace(&pools)
    };
    let grace = tokio::select! {
        left = server::serve(listener, router, stop, grace, limits) => left,
        _ = &mut force => {
            tracing::warn!("second signal: stopping workers without waiting for in-flight requests");
            stop_grace(&pools)
        }
    };
    stop_all(&pools, Some(grace)).await;
    tracing::info!("all workers stopped");
    Ok(())
}

/// The apps to serve: the `[[app]]` entries, or this config alone at `/`.
fn app_list(cfg: &Config) -> Vec<config::apps::App> {
    if cfg.apps.is_empty() {
        vec![config::apps::App {
            name: "default".into(),
            prefix: "/".into(),
            cfg: cfg.clone(),
        }]
    } else {
        cfg.apps.clone()
    }
}

/// One route per app, each with its own recorder (the access log is shared).
fn routes(
    apps: &[config::apps::App],
    pools: &[Arc<pool::Pool>],
    log: Option<accesslog::AccessLog>,
) -> Vec<router::Route> {
    apps.iter()
        .zip(pools)
        .map(|(a, p)| {
            let rec = Arc::new(account::Recorder::new(a.name.clone(), log.clone()));
            let mut proxy = proxy::Proxy::new(p.clone(), rec);
            if a.prefix != "/" {
                proxy = proxy.mount(&a.prefix, &a.name);
            }
            router::Route {
                name: a.name.clone(),
                prefix: a.prefix.clone(),
                proxy: Arc::new(proxy),
            }
        })
        .collect()
}

/// Starts every pool's `--min` workers at once; the first failure is the error.
async fn start_all(pools: &[Arc<pool::Pool>]) -> Result<(), Error> {
    let mut set = tokio::task::JoinSet::new();
    for p in pools {
        let p = p.clone();
        set.spawn(async move { p.start_min().await });
    }
    while let Some(r) = set.join_next().await {
        r??;
    }
    Ok(())
}

/// `--stop-timeout` as it is now (the longest of the apps'): the share of the shutdown bound for
/// in-flight requests and the workers' SIGTERM → SIGKILL.
fn stop_grace(pools: &[Arc<pool::Pool>]) -> std::time::Duration {
    pools
        .iter()
        .map(|p| p.cfg().stop_timeout)
        .max()
        .unwrap_or_default()
}

/// Stops every pool's workers (within `grace` if given).
async fn stop_all(pools: &[Arc<pool::Pool>], grace: Option<std::time::Duration>) {
    let mut set = tokio::task::JoinSet::new();
    for p in pools {
        let p = p.clone();
        set.spawn(async move {
            match grace {
                Some(g) => p.shutdown_within(g).await,
                None => p.shutdown().await,
            }
        });
    }
    while set.join_next().await.is_some() {}
}

/// Each reloaded config is applied to each app (matched by name): its settings and a new
/// generation of workers. What cannot change without a restart (the listening process's
/// settings, the set of apps and their prefixes) is logged as kept.
async fn reload_loop(
    mut rx: tokio::sync::mpsc::UnboundedReceiver<Config>,
    running: Config,
    apps: Vec<config::apps::App>,
    pools: Vec<std::sync::Weak<pool::Pool>>,
) {
    use config::live::{changes, When};
    while let Some(new) = rx.recv().await {
        for c in changes(&running, &new)
            .into_iter()
            .filter(|c| c.when == When::Kept)
        {
            tracing::warn!(setting = c.flag, running = %c.old, ignored = %c.new, "reload: {}", c.when.as_str());
        }
        let fresh = app_list(&new);
        for a in fresh
            .iter()
            .filter(|f| !apps.iter().any(|a| a.name == f.name))
        {
            tracing::warn!(app = %a.name, "reload: a new app needs a restart; not started");
        }
        for (app, pool) in apps.iter().zip(&pools) {
            let Some(pool) = pool.upgrade() else { return };
            match fresh.iter().find(|a| a.name == app.name) {
                Some(a) => {
                    if a.prefix != app.prefix {
                        tracing::warn!(app = %app.name, running = %app.prefix, ignored = %a.prefix, "reload: prefix kept (needs a restart)");
                    }
                    pool.reload(a.cfg.clone());
                }
                None => {
                    tracing::warn!(app = %app.name, "reload: app not in the new config; kept as is")
                }
            }
        }
    }
}
