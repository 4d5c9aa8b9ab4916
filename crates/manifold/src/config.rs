//! Settings: command-line flags, an optional TOML file and the R presets, merged into one [`Config`].
//!
//! Precedence is flag > file > default, so a config file can hold a deployment's settings and a flag
//! can still override one of them for a single run.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::{Parser, Subcommand};
use serde::Deserialize;

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
    /// A duration such as `30s` did not parse.
    #[error("{field}: invalid duration {value:?} (use e.g. 500ms, 30s, 5m)")]
    Duration {
        /// Flag or key name.
        field: &'static str,
        /// Value as given.
        value: String,
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

/// Flags shared by the plain form and the presets. All optional so a file and defaults can fill gaps.
#[derive(Debug, Default, Clone, clap::Args, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Options {
    /// Address to listen on [default: 127.0.0.1:3000].
    #[arg(long)]
    pub listen: Option<SocketAddr>,
    /// Workers kept running even when idle, started before traffic is accepted [default: 1].
    #[arg(long)]
    pub min: Option<usize>,
    /// Most workers at once [default: number of CPU cores].
    #[arg(long)]
    pub max: Option<usize>,
    /// Requests one worker takes at once [default: 1; shiny preset: 20].
    #[arg(long)]
    pub per_worker: Option<usize>,
    /// Idle time after which a worker above --min is stopped [default: 300s].
    #[arg(long, value_name = "DURATION")]
    pub idle_timeout: Option<String>,
    /// Requests that may wait for a worker; more get 503 at once [default: 1000].
    #[arg(long)]
    pub queue_size: Option<usize>,
    /// Longest wait in the queue before 503 + Retry-After [default: 30s].
    #[arg(long, value_name = "DURATION")]
    pub queue_timeout: Option<String>,
    /// Time a new worker has to accept connections (and pass --health-path) [default: 60s].
    #[arg(long, value_name = "DURATION")]
    pub ready_timeout: Option<String>,
    /// Path that must answer 2xx before a worker counts as ready [default: none].
    #[arg(long)]
    pub health_path: Option<String>,
    /// Session affinity [default: none; shiny preset: cookie].
    #[arg(long, value_enum)]
    pub sticky: Option<Sticky>,
    /// Time a worker gets after SIGTERM before SIGKILL [default: 5s].
    #[arg(long, value_name = "DURATION")]
    pub stop_timeout: Option<String>,
    /// On SIGTERM, keep serving existing sessions (new ones get 503, status 404) until nothing is
    /// in flight for 1s, at most this long; for hosts behind a load balancer [default: 0s].
    #[arg(long, value_name = "DURATION")]
    pub drain_timeout: Option<String>,
    /// Longest time a worker may take to start answering an HTTP request, and longest silence in
    /// the middle of its response body; then the client gets 504 (or the body is cut) and the
    /// worker is replaced (it may be stuck inside R). 60s is twice Heroku's 30 s router limit, so
    /// a slow but working R call is not cut; a body that keeps flowing (a download, SSE) never
    /// is; WebSockets are never cut by it; 0 turns it off [default: 60s].
    #[arg(long, value_name = "DURATION")]
    pub request_timeout: Option<String>,
    /// Close a WebSocket that was silent both ways this long; 0 keeps it open (a user reading a
    /// Shiny page sends nothing) [default: 0s].
    #[arg(long, value_name = "DURATION")]
    pub ws_idle_timeout: Option<String>,
    /// With --health-path: probe every idle ready worker this often and replace one that fails two
    /// probes in a row (busy workers are covered by --request-timeout); 0 turns it off
    /// [default: 10s].
    #[arg(long, value_name = "DURATION")]
    pub health_interval: Option<String>,
    /// Open client connections at most; one more gets a prompt 503 and is closed, so file
    /// descriptors never run out [default: half the open-file limit, the other half is for the
    /// connections to workers and their pipes].
    #[arg(long)]
    pub max_connections: Option<usize>,
    /// Time a client has to send a request's headers; a slower one is disconnected [default: 10s].
    #[arg(long, value_name = "DURATION")]
    pub header_timeout: Option<String>,
    /// Write one JSON line per request (time, request id, method, path, status, bytes, queue
    /// wait, upstream time, worker and generation, sticky worker) to FILE (appended), or `-` for
    /// stdout [default: none].
    #[arg(long, value_name = "FILE|-")]
    pub access_log: Option<String>,
    /// Keep this many idle ready workers above the busy ones (within --max), so a burst does not
    /// wait for a worker to start [default: 0].
    #[arg(long, value_name = "N")]
    pub spare: Option<usize>,
    /// Recycle a worker after this many requests: a replacement is started, and once it is ready
    /// the old one finishes its requests and sticky sessions, then stops [default: none].
    #[arg(long)]
    pub max_requests: Option<u64>,
    /// Adds 0..=N to each worker's --max-requests so workers are not all recycled at once
    /// [default: 0].
    #[arg(long, value_name = "N")]
    pub max_requests_jitter: Option<u64>,
    /// Recycle a worker older than this [default: none].
    #[arg(long, value_name = "DURATION")]
    pub max_lifetime: Option<String>,
    /// Recycle a worker whose process group (it and every helper it started) uses this much
    /// resident memory, read from /proc, e.g. 500MB, 2GiB [default: none].
    #[arg(long, value_name = "SIZE")]
    pub max_rss: Option<String>,
    /// TOML file with the same settings (kebab-case keys, plus `command = [..]`); read again on
    /// SIGHUP, which applies every pool setting and starts a new generation of workers.
    #[arg(long)]
    #[serde(skip)]
    pub config: Option<PathBuf>,
    /// Worker command (config file only; on the command line it follows `--`).
    #[arg(skip)]
    pub command: Option<Vec<String>>,
    /// Several apps on one port (config file only: `[[app]]` tables, see `config::apps`).
    #[arg(skip)]
    pub app: Option<Vec<toml::Table>>,
    /// Show debug logs and error causes.
    #[arg(short, long)]
    #[serde(skip)]
    pub verbose: bool,
}

impl Options {
    /// Fills every unset field of `self` from `other`.
    pub(crate) fn or(self, other: Options) -> Options {
        Options {
            listen: self.listen.or(other.listen),
            min: self.min.or(other.min),
            max: self.max.or(other.max),
            per_worker: self.per_worker.or(other.per_worker),
            idle_timeout: self.idle_timeout.or(other.idle_timeout),
            queue_size: self.queue_size.or(other.queue_size),
            queue_timeout: self.queue_timeout.or(other.queue_timeout),
            ready_timeout: self.ready_timeout.or(other.ready_timeout),
            health_path: self.health_path.or(other.health_path),
            sticky: self.sticky.or(other.sticky),
            stop_timeout: self.stop_timeout.or(other.stop_timeout),
            drain_timeout: self.drain_timeout.or(other.drain_timeout),
            request_timeout: self.request_timeout.or(other.request_timeout),
            ws_idle_timeout: self.ws_idle_timeout.or(other.ws_idle_timeout),
            health_interval: self.health_interval.or(other.health_interval),
            max_connections: self.max_connections.or(other.max_connections),
            header_timeout: self.header_timeout.or(other.header_timeout),
            access_log: self.access_log.or(other.access_log),
            spare: self.spare.or(other.spare),
            max_requests: self.max_requests.or(other.max_requests),
            max_requests_jitter: self.max_requests_jitter.or(other.max_requests_jitter),
            max_lifetime: self.max_lifetime.or(other.max_lifetime),
            max_rss: self.max_rss.or(other.max_rss),
            config: self.config.or(other.config),
            command: self.command.or(other.command),
            app: self.app.or(other.app),
            verbose: self.verbose || other.verbose,
        }
    }
}

/// The resolved settings the pool and proxy run with.
#[derive(Debug, Clone)]
pub struct Config {
    /// Listen address (the binary binds it; tests pass their own listener).
    pub listen: SocketAddr,
    /// Workers kept running.
    pub min: usize,
    /// Upper bound on workers.
    pub max: usize,
    /// Concurrent requests per worker.
    pub per_worker: usize,
    /// Idle time before a worker above `min` is stopped.
    pub idle_timeout: Duration,
    /// Longest queue.
    pub queue_size: usize,
    /// Longest wait in the queue.
    pub queue_timeout: Duration,
    /// Time allowed for a worker to become ready.
    pub ready_timeout: Duration,
    /// Optional readiness path.
    pub health_path: Option<String>,
    /// Session affinity.
    pub sticky: Sticky,
    /// SIGTERM → SIGKILL grace period.
    pub stop_timeout: Duration,
    /// Longest drain after SIGTERM (zero: stop accepting at once).
    pub drain_timeout: Duration,
    /// Longest wait for a worker's response head, and longest silence in its body (zero: none).
    pub request_timeout: Duration,
    /// Longest silence on a WebSocket (zero: none).
    pub ws_idle_timeout: Duration,
    /// Health probe period for idle ready workers (zero, or no health path: none).
    pub health_interval: Duration,
    /// Open client connections at most.
    pub max_connections: usize,
    /// Longest wait for a request head.
    pub header_timeout: Duration,
    /// Access log target (`-` for stdout).
    pub access_log: Option<String>,
    /// Idle ready workers kept above the busy ones.
    pub spare: usize,
    /// Requests before a worker is recycled.
    pub max_requests: Option<u64>,
    /// Random extra requests per worker (0..=N).
    pub max_requests_jitter: u64,
    /// Age at which a worker is recycled.
    pub max_lifetime: Option<Duration>,
    /// Process group RSS (bytes) at which a worker is recycled.
    pub max_rss: Option<u64>,
    /// Program and arguments; `{port}` is substituted per worker.
    pub command: Vec<String>,
    /// Debug logging.
    pub verbose: bool,
    /// `[[app]]` entries of the config file; empty: one app (this config) at `/`.
    pub apps: Vec<apps::App>,
}

impl Config {
    /// A config for `command` with every default; tests and embedders start from this.
    pub fn new(command: Vec<String>) -> Config {
        Config {
            listen: "127.0.0.1:3000".parse().expect("static address"),
            min: 1,
            max: default_max(),
            per_worker: 1,
            idle_timeout: Duration::from_secs(300),
            queue_size: 1000,
            queue_timeout: Duration::from_secs(30),
            ready_timeout: Duration::from_secs(60),
            health_path: None,
            sticky: Sticky::None,
            stop_timeout: Duration::from_secs(5),
            drain_timeout: Duration::ZERO,
            request_timeout: Duration::from_secs(60),
            ws_idle_timeout: Duration::ZERO,
            health_interval: Duration::from_secs(10),
            max_connections: default_max_connections(),
            header_timeout: Duration::from_secs(10),
            access_log: None,
            spare: 0,
            max_requests: None,
            max_requests_jitter: 0,
            max_lifetime: None,
            max_rss: None,
            command,
            verbose: false,
            apps: Vec::new(),
        }
    }

    /// Resolves parsed flags (and the file named by `--config`) into a config.
    ///
    /// # Errors
    /// Unreadable or invalid config file, bad duration, no command, or min > max.
    pub fn from_cli(cli: Cli) -> Result<Config, ConfigError> {
        let (mut opts, preset_command, shiny) = match cli.preset {
            None => (cli.opts, None, false),
            Some(Preset::Plumber { file, opts }) => {
                (opts.or(cli.opts), Some(plumber_command(&file)), false)
            }
            Some(Preset::Shiny { dir, opts }) => {
                (opts.or(cli.opts), Some(shiny_command(&dir)), true)
            }
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
        let command = if !cli.command.is_empty() {
            cli.command
        } else if let Some(c) = preset_command {
            c
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
        c.validate()?;
        Ok(c)
    }

    /// Sets every field `opts` gives (the others keep their value).
    ///
    /// # Errors
    /// A duration or size that does not parse.
    pub(crate) fn apply(&mut self, opts: Options) -> Result<(), ConfigError> {
        let c = self;
        c.verbose = opts.verbose;
        if let Some(v) = opts.listen {
            c.listen = v;
        }
        if let Some(v) = opts.min {
            c.min = v;
        }
        if let Some(v) = opts.max {
            c.max = v;
        }
        if let Some(v) = opts.per_worker {
            c.per_worker = v;
        }
        if let Some(v) = opts.queue_size {
            c.queue_size = v;
        }
        if let Some(v) = opts.max_connections {
            c.max_connections = v;
        }
        c.health_path = opts.health_path;
        c.access_log = opts.access_log;
        c.max_requests = opts.max_requests;
        c.spare = opts.spare.unwrap_or(0);
        c.max_requests_jitter = opts.max_requests_jitter.unwrap_or(0);
        if let Some(v) = &opts.max_lifetime {
            c.max_lifetime = Some(parse_duration("--max-lifetime", v)?);
        }
        if let Some(v) = &opts.max_rss {
            c.max_rss = Some(parse_size("--max-rss", v)?);
        }
        if let Some(v) = opts.sticky {
            c.sticky = v;
        }
        let durations = [
            ("--idle-timeout", opts.idle_timeout, &mut c.idle_timeout),
            ("--queue-timeout", opts.queue_timeout, &mut c.queue_timeout),
            ("--ready-timeout", opts.ready_timeout, &mut c.ready_timeout),
            ("--stop-timeout", opts.stop_timeout, &mut c.stop_timeout),
            ("--drain-timeout", opts.drain_timeout, &mut c.drain_timeout),
            (
                "--request-timeout",
                opts.request_timeout,
                &mut c.request_timeout,
            ),
            (
                "--ws-idle-timeout",
                opts.ws_idle_timeout,
                &mut c.ws_idle_timeout,
            ),
            (
                "--header-timeout",
                opts.header_timeout,
                &mut c.header_timeout,
            ),
            (
                "--health-interval",
                opts.health_interval,
                &mut c.health_interval,
            ),
        ];
        for (field, value, slot) in durations {
            if let Some(v) = value {
                *slot = parse_duration(field, &v)?;
            }
        }
        Ok(())
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
    toml::from_str(&text).map_err(|e| ConfigError::Parse {
        path: path.to_owned(),
        message: e.to_string().lines().collect::<Vec<_>>().join(" "),
    })
}

/// Parses `500ms`, `30s`, `5m`, `1h` (humantime syntax).
pub fn parse_duration(field: &'static str, value: &str) -> Result<Duration, ConfigError> {
    humantime::parse_duration(value.trim()).map_err(|_| ConfigError::Duration {
        field,
        value: value.to_owned(),
    })
}

/// Parses a size: bytes, or a number with KB/MB/GB (×1000) or KiB/MiB/GiB (×1024), also K/M/G
/// (×1024).
pub fn parse_size(field: &'static str, value: &str) -> Result<u64, ConfigError> {
    let v = value.trim();
    let split = v
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(v.len());
    let (num, unit) = v.split_at(split);
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "kb" => 1000,
        "mb" => 1000 * 1000,
        "gb" => 1000 * 1000 * 1000,
        "k" | "kib" => 1 << 10,
        "m" | "mib" => 1 << 20,
        "g" | "gib" => 1 << 30,
        _ => 0,
    };
    match num.parse::<f64>() {
        Ok(n) if mult > 0 && n > 0.0 => Ok((n * mult as f64) as u64),
        _ => Err(ConfigError::Invalid(format!(
            "{field}: invalid size {:?} (use e.g. 500MB, 2GiB)",
            value.chars().take(40).collect::<String>()
        ))),
    }
}

/// Quotes a path as an R string literal.
fn r_string(path: &Path) -> String {
    let s = path.to_string_lossy();
    format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"))
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
#[cfg(test)]
mod tests;
