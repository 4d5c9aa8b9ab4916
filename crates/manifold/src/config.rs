//! Settings: command-line flags, an optional TOML file and the R presets, merged into one [`Config`].
//!
//! Precedence is flag > file > default, so a config file can hold a deployment's settings and a flag
//! can still override one of them for a single run.
//!
//! Every setting is one row of the settings table below (`settings_table!`, see [`table`]): its
//! flag, TOML key, default, help and reload class come from that row alone.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::{Parser, Subcommand};
use serde::Deserialize;

use table::settings_table;

/// Everything that can go wrong while reading settings; each message names the flag or file involved.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The config file could not be read.
    #[error("cannot read config file {path}: {source}")]
    Read {
        /// File given with --config.
        path: PathBuf,
        /// Underlying I/O error.
        source: std::io::Error,
    },
    /// The config file is not valid TOML or has an unknown key or wrong type.
    #[error("config file {path}: {message}")]
    Parse {
        /// File given with --config.
        path: PathBuf,
        /// Parser message, including line and column.
        message: String,
    },
    /// A duration such as `30s` did not parse (the one grammar of all three programs).
    #[error("{field}: {source}")]
    Duration {
        /// Flag or key name.
        field: &'static str,
        /// What the grammar says is wrong with the value.
        source: grammar::duration::Error,
    },
    /// Two settings contradict each other, or a required one is missing.
    #[error("{0}")]
    Invalid(String),
}

/// How requests from one client are tied to a worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Sticky {
    /// A `manifold_worker` cookie sends a session's later requests (and WebSocket) to its worker.
    Cookie,
    /// Every request goes to the least-busy worker.
    None,
}

/// Command-line interface of the `manifold` binary.
#[derive(Debug, Parser)]
#[command(
    name = "manifold",
    version,
    about = "Autoscaling process pool and reverse proxy for single-threaded web apps",
    after_help = "Examples:\n  manifold plumber api.R\n  manifold shiny ./app\n  manifold --max 4 -- python3 app.py --port {port}"
)]
pub struct Cli {
    /// Shared settings.
    #[command(flatten)]
    pub opts: Options,
    /// A preset that builds the worker command for an R app.
    #[command(subcommand)]
    pub preset: Option<Preset>,
    /// Worker command after `--`; `{port}` in it is replaced by the worker's port.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// Presets that build the R command line for common apps.
#[derive(Debug, Subcommand)]
pub enum Preset {
    /// Serve a plumber API file (R package plumber).
    Plumber {
        /// The plumber file, e.g. api.R.
        file: PathBuf,
        /// Settings may also follow the preset.
        #[command(flatten)]
        opts: Box<Options>,
    },
    /// Serve a Shiny app directory (sticky sessions and WebSockets on).
    Shiny {
        /// Directory holding app.R (or ui.R + server.R).
        dir: PathBuf,
        /// Settings may also follow the preset.
        #[command(flatten)]
        opts: Box<Options>,
    },
}

// The settings table: one row per setting, the only place a setting is declared (see
// `config::table`). Columns: the help (doc comment, without its default), field: running type =
// default; reload class (`config::live::When`), value name, flag/file type => conversion
// (`table::conv`), and, where the default depends on the machine or the preset, how it is shown.
settings_table! {
    /// Address to listen on.
    listen: SocketAddr = SocketAddr::from(([127, 0, 0, 1], 3000));
        Kept, "ADDR", SocketAddr => same;
    /// Workers kept running even when idle, started before traffic is accepted.
    min: usize = 1;
        AtOnce, "N", usize => same;
    /// Most worker processes at once, all of them counted: starting, ready, draining (recycled or
    /// of an old generation) and stopping; a replacement waits until one of them has exited.
    max: usize = default_max();
        AtOnce, "N", usize => same, shown "number of CPU cores";
    /// Requests one worker takes at once.
    per_worker: usize = 1;
        AtOnce, "N", usize => same, shown "1; shiny preset: 20";
    /// Idle time after which a worker above --min is stopped.
    idle_timeout: Duration = Duration::from_secs(300);
        AtOnce, "DURATION", String => duration;
    /// Requests that may wait for a worker; more get 503 at once.
    queue_size: usize = 1000;
        AtOnce, "N", usize => same;
    /// Longest wait in the queue before 503 + Retry-After.
    queue_timeout: Duration = Duration::from_secs(30);
        AtOnce, "DURATION", String => duration;
    /// Time a new worker has to accept connections (and pass --health-path).
    ready_timeout: Duration = Duration::from_secs(60);
        NewWorkers, "DURATION", String => duration;
    /// Path that must answer 2xx before a worker counts as ready.
    health_path: Option<String> = None;
        NewWorkers, "PATH", String => some;
    /// Session affinity.
    sticky: Sticky = Sticky::None;
        AtOnce, "STICKY", Sticky => same, shown "none; shiny preset: cookie";
    /// Time a worker gets after SIGTERM before SIGKILL.
    stop_timeout: Duration = Duration::from_secs(5);
        NewWorkers, "DURATION", String => duration;
    /// On SIGTERM, keep serving existing sessions (new ones get 503, status 404) until nothing is
    /// in flight for 1s, at most this long; for hosts behind a load balancer.
    drain_timeout: Duration = Duration::ZERO;
        AtOnce, "DURATION", String => duration;
    /// Longest time a worker may take to start answering an HTTP request, and longest silence in
    /// the middle of its response body; then the client gets 504 (or the body is cut) and the
    /// worker is replaced (it may be stuck inside R). 60s is twice Heroku's 30 s router limit, so
    /// a slow but working R call is not cut; a body that keeps flowing (a download, SSE) never
    /// is; WebSockets are never cut by it; 0 turns it off.
    request_timeout: Duration = Duration::from_secs(60);
        AtOnce, "DURATION", String => duration;
    /// Close a WebSocket that was silent both ways this long; 0 keeps it open (a user reading a
    /// Shiny page sends nothing).
    ws_idle_timeout: Duration = Duration::ZERO;
        AtOnce, "DURATION", String => duration;
    /// With --health-path: probe every idle ready worker this often and replace one that fails two
    /// probes in a row (busy workers are covered by --request-timeout); 0 turns it off.
    health_interval: Duration = Duration::from_secs(10);
        AtOnce, "DURATION", String => duration;
    /// Open client connections at most, counting every accepted one (silent, mid-request, idle
    /// keep-alive or WebSocket); one more gets a prompt 503 and is closed, so file descriptors
    /// never run out. A connection that sends nothing is closed after --header-timeout.
    max_connections: usize = default_max_connections();
        Kept, "N", usize => same,
        shown "half the open-file limit (raised to its hard limit at start), the other half is for the connections to workers and their pipes";
    /// Time a client has to send a request's headers, counted from accept (a connection that
    /// sends nothing) or from the end of its previous request; a slower one is disconnected.
    header_timeout: Duration = Duration::from_secs(10);
        Kept, "DURATION", String => duration;
    /// Write one JSON line per request (time, request id, method, path, status, bytes, queue
    /// wait, upstream time, worker and generation, sticky worker, whether the response streamed
    /// holding its worker, whether it was retried) to FILE (appended; SIGUSR1
    /// reopens it, for log rotation), or `-` for stdout.
    access_log: Option<String> = None;
        Kept, "FILE|-", String => some;
    /// Keep this many idle ready workers above the busy ones (within --max), so a burst does not
    /// wait for a worker to start.
    spare: usize = 0;
        AtOnce, "N", usize => same;
    /// Recycle a worker after this many requests: a replacement is started, and once it is ready
    /// the old one finishes its requests and sticky sessions, then stops.
    max_requests: Option<u64> = None;
        NewWorkers, "N", u64 => some;
    /// Adds 0..=N to each worker's --max-requests so workers are not all recycled at once.
    max_requests_jitter: u64 = 0;
        NewWorkers, "N", u64 => same;
    /// Recycle a worker older than this.
    max_lifetime: Option<Duration> = None;
        AtOnce, "DURATION", String => some_duration;
    /// Recycle a worker whose process group (it and every helper it started) uses this much
    /// resident memory, read from /proc, e.g. 500MB, 2GiB.
    max_rss: Option<u64> = None;
        AtOnce, "SIZE", String => some_size;
    /// Take a worker out of rotation after this many of its own 5xx answers in a row (not
    /// manifold's 502/504): it is recycled (a replacement starts, then it drains and stops); 5,
    /// because an app may answer one bad request with a 500 but a worker that fails five in a
    /// row is more likely broken than its clients; 0 turns it off.
    max_5xx: u64 = 5;
        AtOnce, "N", u64 => same;
    /// Largest request body taken; a larger one gets 413 (by its Content-Length at once, or as
    /// it arrives). Every body is read whole before a worker is leased, so this bounds the disk
    /// one upload can fill.
    max_body: u64 = 100 << 20;
        AtOnce, "SIZE", String => size, shown "100MiB";
    /// Time a client has to send a whole request body, from the end of its headers; then 408.
    /// It runs before any worker is leased, so it never counts against --request-timeout and no
    /// worker is replaced for a slow client; 0 turns it off.
    body_timeout: Duration = Duration::from_secs(60);
        AtOnce, "DURATION", String => duration;
    /// Bytes of one buffered request or response body kept in memory; the rest goes to an
    /// unnamed temporary file (in $TMPDIR).
    buffer_size: u64 = 1 << 20;
        AtOnce, "SIZE", String => size, shown "1MiB";
    /// Memory all buffered bodies of one app hold together at most (requests and responses);
    /// a body that finds it spent goes to a temporary file at once.
    buffer_memory: u64 = 64 << 20;
        Kept, "SIZE", String => size, shown "64MiB";
    /// Responses up to this size are read from the worker as fast as it writes, its worker
    /// freed when it has finished, and sent to the client at the client's pace; larger ones
    /// (by Content-Length), Server-Sent Events and those marked `X-Accel-Buffering: no` stream
    /// and hold their worker until the client has read them; 0 streams every response.
    buffer_response: u64 = 64 << 20;
        AtOnce, "SIZE", String => size, shown "64MiB";
    /// Load the app once and fork each worker from it: one parent process per app (and per
    /// reload generation) loads the runtime, the packages and the app code, then forks a worker
    /// on request, so a new worker is ready in a fraction of a second (not the seconds R takes to
    /// start) and the workers share the parent's memory. For `manifold shiny` and `manifold plumber` the parent is R; a command after `--`
    /// must speak the preload protocol (docs/manifold.md, "Preloaded workers").
    preload: bool = false;
        NewWorkers, "BOOL", bool => same;
}

impl Config {
    /// Resolves parsed flags (and the file named by `--config`) into a config.
    ///
    /// # Errors
    /// Unreadable or invalid config file, bad duration, no command, or min > max.
    pub fn from_cli(cli: Cli) -> Result<Config, ConfigError> {
        let (mut opts, preset, shiny) = match cli.preset {
            None => (cli.opts, None, false),
            Some(Preset::Plumber { file, opts }) => {
                (opts.or(cli.opts), Some(RApp::Plumber(file)), false)
            }
            Some(Preset::Shiny { dir, opts }) => (opts.or(cli.opts), Some(RApp::Shiny(dir)), true),
        };
        if let Some(path) = opts.config.clone() {
            opts = opts.or(read_file(&path)?);
        }
        if shiny {
            opts = opts.or(Options {
                sticky: Some(Sticky::Cookie),
                per_worker: Some(20),
                ..Options::default()
            });
        }
        let preset = preset.filter(|_| cli.command.is_empty());
        let command = if !cli.command.is_empty() {
            cli.command
        } else if let Some(app) = &preset {
            app.command(false)
        } else {
            opts.command.clone().unwrap_or_default()
        };
        let app_tables = opts.app.take().unwrap_or_default();
        if !app_tables.is_empty() {
            let path = opts.config.clone().unwrap_or_default();
            let apps = apps::resolve(&opts, app_tables, &path)?;
            let mut c = Config::new(apps[0].cfg.command.clone());
            c.apply(opts)?;
            c.apps = apps;
            c.validate()?;
            return Ok(c);
        }
        if command.is_empty() {
            return Err(ConfigError::Invalid(
                "no worker command: give `-- COMMAND ARGS`, a preset (plumber FILE | shiny DIR) or `command` in --config".into(),
            ));
        }
        let mut c = Config::new(command);
        c.apply(opts)?;
        if let Some(app) = preset.filter(|_| c.preload) {
            c.command = app.command(true);
        }
        c.validate()?;
        Ok(c)
    }

    /// Checks relations between settings.
    ///
    /// # Errors
    /// `--max` of 0, `--per-worker` of 0, or `--min` above `--max`.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.max == 0 {
            return Err(ConfigError::Invalid("--max must be at least 1".into()));
        }
        if self.per_worker == 0 {
            return Err(ConfigError::Invalid(
                "--per-worker must be at least 1".into(),
            ));
        }
        if self.max_connections == 0 {
            return Err(ConfigError::Invalid(
                "--max-connections must be at least 1".into(),
            ));
        }
        if self.header_timeout.is_zero() {
            return Err(ConfigError::Invalid(
                "--header-timeout must be above 0".into(),
            ));
        }
        if self.min > self.max {
            return Err(ConfigError::Invalid(format!(
                "--min {} is above --max {}",
                self.min, self.max
            )));
        }
        Ok(())
    }
}

/// Number of cores, the default for `--max`.
pub fn default_max() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Raises the soft open-file limit to the hard one, as servers do (the default soft limit of 1024
/// would cap `--max-connections` at 512); `main` calls it before reading the settings. Returns
/// the soft limit now in force.
pub fn raise_open_file_limit() -> u64 {
    let mut l = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct we pass; setrlimit reads it.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut l) != 0 {
            return 0;
        }
        if l.rlim_cur < l.rlim_max {
            let want = libc::rlimit {
                rlim_cur: l.rlim_max,
                rlim_max: l.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &want) == 0 {
                l.rlim_cur = l.rlim_max;
            }
        }
    }
    l.rlim_cur
}

/// Half the soft open-file limit (at least 64), the default for `--max-connections`.
pub fn default_max_connections() -> usize {
    let mut l = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct we pass.
    let ok = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut l) } == 0;
    let soft = if ok && l.rlim_cur != libc::RLIM_INFINITY {
        l.rlim_cur as usize
    } else {
        2048
    };
    (soft / 2).max(64)
}

pub(crate) fn read_file(path: &Path) -> Result<Options, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: path.to_owned(),
        source,
    })?;
    let opts: Options = toml::from_str(&text).map_err(|e| ConfigError::Parse {
        path: path.to_owned(),
        message: e.to_string().lines().collect::<Vec<_>>().join(" "),
    })?;
    // Each value is converted here, once, so a bad one is blamed on this file and its key
    // (`queue-timeout`), not on a `--queue-timeout` the operator never typed.
    Config::new(Vec::new())
        .apply_named(opts.clone(), table::key)
        .map_err(|e| ConfigError::Parse {
            path: path.to_owned(),
            message: e.to_string(),
        })?;
    Ok(opts)
}

/// Parses `500ms`, `30s`, `5m`, `1h`: [`grammar::duration`], the one duration grammar of the three
/// programs (a bare number other than `0` is refused, with the same message everywhere).
pub fn parse_duration(field: &'static str, value: &str) -> Result<Duration, ConfigError> {
    grammar::duration::parse(value).map_err(|source| ConfigError::Duration { field, source })
}

/// Parses a size: [`grammar::size`] (bytes, or KB/MB/GB ×1000, KiB/MiB/GiB and K/M/G ×1024), the
/// one size grammar of the three programs; manifold's sizes are limits, so 0 is refused.
pub fn parse_size(field: &'static str, value: &str) -> Result<u64, ConfigError> {
    match grammar::size::parse(value) {
        Ok(0) => Err(ConfigError::Invalid(format!(
            "{field}: a size limit must be above 0"
        ))),
        Ok(n) => Ok(n),
        Err(e) => Err(ConfigError::Invalid(format!("{field}: {e}"))),
    }
}

/// Quotes a path as an R string literal.
fn r_string(path: &Path) -> String {
    let s = path.to_string_lossy();
    format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"))
}

/// An R preset's app: which kind, and where.
#[derive(Debug, Clone)]
pub enum RApp {
    /// `manifold plumber FILE`.
    Plumber(PathBuf),
    /// `manifold shiny DIR`.
    Shiny(PathBuf),
}

impl RApp {
    /// The worker command, or with `preload` the preload parent's (`worker/preload.R`).
    pub fn command(&self, preload: bool) -> Vec<String> {
        match (self, preload) {
            (RApp::Plumber(f), false) => plumber_command(f),
            (RApp::Shiny(d), false) => shiny_command(d),
            (RApp::Plumber(f), true) => r_preload_command("plumber", f),
            (RApp::Shiny(d), true) => r_preload_command("shiny", d),
        }
    }
}

/// `Rscript` line that runs the R preload parent for a plumber file or a Shiny app directory.
fn r_preload_command(kind: &str, path: &Path) -> Vec<String> {
    vec![
        "Rscript".into(),
        "-e".into(),
        format!(
            "{}\nmanifold_preload('{kind}', {})",
            r_code_only(include_str!("worker/preload.R")),
            r_string(path)
        ),
    ]
}

/// R source without its comment-only and blank lines: Rscript refuses an `-e` expression longer
/// than 10,000 bytes once it has encoded it (a space as `~+~`, a newline as `~n~`), and
/// preload.R's comments alone would pass that.
fn r_code_only(source: &str) -> String {
    source
        .lines()
        .filter(|l| {
            let t = l.trim_start();
            !t.is_empty() && !t.starts_with('#')
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `Rscript` line that serves a plumber file on `$PORT` (loopback only).
pub fn plumber_command(file: &Path) -> Vec<String> {
    vec![
        "Rscript".into(),
        "-e".into(),
        format!(
            "plumber::pr_run(plumber::pr({}), host = '127.0.0.1', port = as.integer(Sys.getenv('PORT')), docs = FALSE, quiet = TRUE)",
            r_string(file)
        ),
    ]
}

/// `Rscript` line that serves a Shiny app directory on `$PORT` (loopback only).
pub fn shiny_command(dir: &Path) -> Vec<String> {
    vec![
        "Rscript".into(),
        "-e".into(),
        format!(
            "shiny::runApp({}, host = '127.0.0.1', port = as.integer(Sys.getenv('PORT')), launch.browser = FALSE)",
            r_string(dir)
        ),
    ]
}

pub mod apps;
pub mod live;
pub mod table;
#[cfg(test)]
mod tests;
