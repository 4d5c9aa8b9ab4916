//! `cranwhales serve`: the JSON API and the embedded web UI, one process. Stored days are served
//! from memory; days not stored yet are fetched on demand, once, off the serving threads.
//!
//! [`open`] prepares everything (store, sample days, routes); [`run`] serves a listener it is
//! given until its shutdown future resolves, then drains. `main` binds; tests run the same server
//! in-process on port 0.
//!
//! Modules: `http` (accept loop, connection cap, drain), `gate` (request heads checked exactly,
//! header and write timeouts), `api` (handlers), `assets` (embedded UI), `cache` (built
//! bodies + ETag + gzip), `fetch` (single-flight on-demand ingest), `limit` (per-client rate
//! limit), `db` (store handles on blocking threads), `error` (the one error envelope), `insight` (packages and trends across the stored days, and the caches of
//! every cross-day answer), `context` (several packages, ranks, top lists, the calendar), `badge`
//! (README badges), `watch` (days
//! stored by other processes), `follow` (`--follow`: new days from the source), `wire` (the API's own shapes; TypeScript types are generated from
//! them and `crate::summary`).

mod api;
mod assets;
mod badge;
mod breakdown;
mod cache;
mod context;
mod db;
mod error;
mod fetch;
mod follow;
mod gate;
mod http;
mod insight;
mod limit;
mod watch;
pub mod wire;

use std::future::Future;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use axum::routing::{any, get};
use axum::Router;

use crate::ingest::{self, IngestError};
use crate::progress::Silent;
use crate::source::{Source, SourceConfig, DEFAULT_BASE_URL, DEFAULT_CACHE_DIR};
use crate::store::DEFAULT_DB;

use crate::date::Day;
use crate::follow::{self as following, FollowArgs};

/// Options of `cranwhales serve`.
#[derive(Debug, Clone, clap::Args)]
pub struct ServeArgs {
    /// SQLite database file (created if missing).
    #[arg(long, default_value = DEFAULT_DB)]
    pub db: PathBuf,
    /// Address to listen on (port 0 picks a free port; the URL is printed).
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub addr: SocketAddr,
    /// Base URL of the daily logs ({base}/{YYYY}/{YYYY-MM-DD}.csv.gz).
    #[arg(long, default_value = DEFAULT_BASE_URL)]
    pub source_url: String,
    /// Where downloaded logs are kept so a day is never downloaded twice.
    #[arg(long, default_value = DEFAULT_CACHE_DIR)]
    pub cache_dir: PathBuf,
    /// Days (*.csv.gz) ingested when the store is empty [default: data/sample, looked up from the
    /// current directory and the binary's location].
    #[arg(long)]
    pub sample_dir: Option<PathBuf>,
    /// Do not ingest sample days into an empty store.
    #[arg(long)]
    pub no_sample: bool,
    /// On-demand ingests running at once (more wait in a queue).
    #[arg(long, default_value_t = 2)]
    pub max_ingests: usize,
    /// New days one client address may have fetched at once...
    #[arg(long, default_value_t = 5)]
    pub fetch_burst: u32,
    /// ...and per minute after that.
    #[arg(long, default_value_t = 6)]
    pub fetch_per_minute: u32,
    /// Give up on a download that sends nothing for this long (1s to 1h).
    #[arg(long, default_value = crate::source::DEFAULT_STALL, value_parser = crate::source::parse_stall)]
    pub stall_timeout: Duration,
    /// Connections open at once.
    #[arg(long, default_value_t = 10_000)]
    pub max_connections: usize,
    /// Time a client has to send a request head (slow and idle clients are dropped; 1s to 1h).
    #[arg(long, default_value = "10s", value_parser = io_timeout)]
    pub header_timeout: Duration,
    /// Time a response may wait for a client that stopped reading before the connection closes
    /// (1s to 1h).
    #[arg(long, default_value = "30s", value_parser = io_timeout)]
    pub write_timeout: Duration,
    /// Largest request head (request line + headers; bytes, or e.g. 64KiB); larger ones get 431.
    #[arg(long, default_value = "64KiB", value_parser = grammar::size::parse)]
    pub max_header_bytes: u64,
    /// Time requests in flight (and progress streams) may take to finish after SIGTERM/Ctrl-C.
    #[arg(long, default_value = "25s", value_parser = grammar::duration::parse)]
    pub drain_timeout: Duration,
    /// Time between looks for days stored by other processes (`cranwhales ingest`; 10ms to 1m).
    #[arg(long, default_value = "1s", value_parser = store_poll)]
    pub store_poll: Duration,
    /// Follow mode: new days stored as the source publishes them.
    #[command(flatten)]
    pub follow: FollowArgs,
}

/// `--header-timeout` / `--write-timeout`: 1s to 1h.
fn io_timeout(s: &str) -> Result<Duration, grammar::duration::Error> {
    grammar::duration::parse_in(s, Duration::from_secs(1), Duration::from_secs(3600))
}

/// `--store-poll`: 10ms to 1m (a look is one `PRAGMA data_version`).
fn store_poll(s: &str) -> Result<Duration, grammar::duration::Error> {
    grammar::duration::parse_in(s, Duration::from_millis(10), Duration::from_secs(60))
}

/// Shared state of every request.
pub struct App {
    db: Arc<db::Db>,
    fetcher: Arc<fetch::Fetcher>,
    limiter: Arc<limit::RateLimit>,
    assets: assets::Assets,
    /// Summaries by (day, count).
    summaries: Arc<cache::Cache<(Day, u32)>>,
    /// Whale details by (day, ip_id).
    whales: cache::Cache<(Day, u64)>,
    /// The day list (one entry), dropped after each ingest.
    days: Arc<cache::Cache<()>>,
    /// Package and trend answers, dropped after each ingest.
    insight: Arc<insight::Insight>,
    /// Where the follower is (`--follow`), for `/api/days`.
    follow: Arc<following::Shared>,
}

/// A server ready to run: routes over an open store, the connection limits, and the watcher of
/// the store.
pub struct Server {
    router: Router,
    limits: http::Limits,
    stored: usize,
    watch: watch::Watch,
    poll: Duration,
    /// The follower, when `--follow` is on.
    follower: Option<(follow::Server, following::Schedule, Arc<following::Shared>)>,
}

impl Server {
    /// Days in the store when the server was opened.
    pub fn stored_days(&self) -> usize {
        self.stored
    }
}

/// Opens the store (creating it, and ingesting the sample days into an empty one) and builds the
/// routes; nothing listens yet.
pub async fn open(args: &ServeArgs) -> anyhow::Result<Server> {
    if let Some(parent) = args.db.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("creating {}", parent.display()))?;
    }
    let db = db::Db::open(&args.db).with_context(|| format!("opening {}", args.db.display()))?;
    // Partial downloads left by a process that is gone (kill -9, a fetch cut by the drain).
    crate::partial::remove_stale_at_start(&args.cache_dir);
    if let Some(why) = db.read_only() {
        eprintln!(
            "cranwhales: {}: read-only ({why}): serving its stored days; days not stored cannot be fetched",
            args.db.display()
        );
    } else if !args.no_sample {
        ingest_samples(&db, args).await?;
    }
    let (router, stored, watch, follower) = app(db, args).await?;
    let limits = http::Limits {
        max_connections: args.max_connections,
        header_timeout: args.header_timeout,
        max_header_bytes: usize::try_from(args.max_header_bytes).unwrap_or(usize::MAX),
        write_timeout: args.write_timeout,
        drain_timeout: args.drain_timeout,
    };
    Ok(Server {
        router,
        limits,
        stored,
        watch,
        poll: args.store_poll,
        follower,
    })
}

/// Serves on `listener` until `shutdown` resolves; then stops accepting, lets requests in flight
/// and progress streams finish within `--drain-timeout`, cuts the rest and returns.
pub async fn run(
    listener: tokio::net::TcpListener,
    server: Server,
    shutdown: impl Future<Output = ()>,
) -> anyhow::Result<()> {
    let drain = server.limits.drain_timeout;
    let shutdown = async {
        shutdown.await;
        tracing::info!(
            "stopping: no new connections; finishing requests in flight (up to {})",
            grammar::duration::format(drain)
        );
    };
    let watching = tokio::spawn(server.watch.run(server.poll));
    // Its own task: a day being stored never holds up a request (readers keep answering).
    let following = server.follower.map(|(target, schedule, shared)| {
        tracing::info!(
            "following the source: a look every {}, errors back off up to {}",
            grammar::duration::format(schedule.every),
            grammar::duration::format(schedule.cap)
        );
        tokio::spawn(following::run(
            target,
            schedule,
            shared,
            std::future::pending(),
        ))
    });
    let drained = http::serve(listener, server.router, server.limits, shutdown).await;
    watching.abort();
    if let Some(f) = following {
        f.abort();
    }
    if drained.cut > 0 {
        tracing::warn!(
            "drain timeout: cut {} of {} open connections",
            drained.cut,
            drained.open
        );
    } else {
        tracing::info!("stopped: {} open connections finished", drained.open);
    }
    Ok(())
}

/// What [`app`] builds: the routes, the days stored, the store's watcher, the follower.
type Built = (
    Router,
    usize,
    watch::Watch,
    Option<(follow::Server, following::Schedule, Arc<following::Shared>)>,
);

/// Builds the router and state; returns it with the number of stored days, the store's watcher
/// and the follower (`--follow`).
async fn app(db: Arc<db::Db>, args: &ServeArgs) -> anyhow::Result<Built> {
    let stored = db.read(|s| Ok(s.days()?)).await?;
    let known = stored.iter().filter_map(|d| Day::parse(&d.date)).collect();
    let days = Arc::new(cache::Cache::new(16 << 20));
    let days2 = days.clone();
    let days3 = days.clone();
    let follow_on = args.follow.follow && db.read_only().is_none();
    let shared = following::Shared::new(
        follow_on,
        Box::new(move || {
            days3.remove(&());
        }),
    );
    let insight = Arc::new(insight::Insight::new());
    let insight2 = insight.clone();
    let source = SourceConfig {
        base_url: args.source_url.clone(),
        cache_dir: args.cache_dir.clone(),
        stall: args.stall_timeout,
    };
    let fetcher = fetch::Fetcher::new(
        db.clone(),
        source,
        args.max_ingests,
        args.stall_timeout,
        known,
        Box::new(move |_day| {
            days2.remove(&());
            insight2.invalidate();
        }),
    );
    let assets = assets::Assets::load();
    if !assets.has_ui() {
        tracing::warn!("web UI not built into this binary (run `make web` and rebuild)");
    }
    let state = Arc::new(App {
        db,
        fetcher,
        limiter: Arc::new(limit::RateLimit::new(
            args.fetch_burst,
            args.fetch_per_minute,
        )),
        assets,
        summaries: Arc::new(cache::Cache::new(64 << 20)),
        whales: cache::Cache::new(256 << 20),
        days,
        insight,
        follow: shared.clone(),
    });
    let follower = follow_on.then(|| {
        let target = follow::Server {
            fetcher: state.fetcher.clone(),
        };
        (target, args.follow.schedule(), shared)
    });
    let watch = watch::Watch::new(state.clone())?;
    let router = Router::new()
        .route("/api/days", get(api::days))
        .route("/api/days/{date}", get(api::day))
        .route("/api/days/{date}/progress", get(api::progress))
        .route("/api/days/{date}/whales/{ip_id}", get(api::whale))
        .route("/api/packages", get(insight::suggest))
        .route("/api/packages/{name}", get(context::packages))
        .route("/api/packages/{name}/breakdown", get(breakdown::breakdown))
        .route("/api/packages/{name}/releases", get(breakdown::releases))
        .route("/api/packages/{name}/kinds", get(breakdown::kinds))
        .route("/api/trends", get(insight::trends))
        .route("/api/top", get(context::top))
        .route("/api/calendar", get(context::calendar))
        .route("/badge/{package}", get(badge::badge))
        .route("/api", any(api::not_found))
        .route("/api/{*rest}", any(api::not_found))
        .method_not_allowed_fallback(error::method_not_allowed)
        .fallback(assets::serve)
        .with_state(state);
    Ok((router, stored.len(), watch, follower))
}

/// On an empty store, ingests the bundled sample days so the app has something to show offline.
async fn ingest_samples(db: &Arc<db::Db>, args: &ServeArgs) -> anyhow::Result<()> {
    if !db.read(|s| Ok(s.days()?)).await?.is_empty() {
        return Ok(());
    }
    let Some(dir) = args.sample_dir.clone().or_else(find_sample_dir) else {
        eprintln!("cranwhales: empty store and no data/sample directory found; days will be fetched on demand");
        return Ok(());
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .with_context(|| format!("reading sample dir {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with(".csv.gz"))
        .collect();
    files.sort();
    let cfg = SourceConfig::default();
    for file in files {
        eprintln!(
            "cranwhales: empty store: ingesting sample {}",
            file.display()
        );
        let (db, cfg) = (db.clone(), cfg.clone());
        tokio::task::spawn_blocking(move || {
            let source = Source::File(file.clone());
            db.write(|store| ingest::ingest(store, &source, &cfg, &Silent))
                .map_err(IngestError::from)
                .and_then(|r| r)
                .with_context(|| format!("ingesting {}", file.display()))
        })
        .await??;
    }
    Ok(())
}

/// `data/sample` next to the current directory or above the binary (target/*/cranwhales).
fn find_sample_dir() -> Option<PathBuf> {
    let mut candidates = vec![PathBuf::from("data/sample")];
    if let Ok(exe) = std::env::current_exe() {
        candidates.extend(exe.ancestors().skip(1).map(|a| a.join("data/sample")));
    }
    candidates.push(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/sample"));
    candidates.into_iter().find(|p| p.is_dir())
}
