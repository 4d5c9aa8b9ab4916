//! The flags of `surge replay` and turning the `-H` ones into headers.

use super::ThinkTime;
use crate::checks::{self, Threshold};
use crate::logging::LogLevel;
use crate::timefmt::{parse_duration, parse_interval, parse_minutes};
use hyper::header::{HeaderName, HeaderValue};
use std::path::PathBuf;
use std::time::Duration;

/// Command-line options of `surge replay`. shinycannon's command line works unchanged
/// (`RECORDING APP-URL --workers N --loaded-duration-minutes X --start-interval MS ...`), next to
/// surge's own spellings (`--target`, `--users`, `--loaded-duration 5m`, `--start-interval 2s`).
#[derive(clap::Args, Debug, Clone)]
pub struct ReplayArgs {
    /// recording.log to replay (from `surge record`, `surge import-har` or shinyloadtest); with
    /// more recordings, FILE:WEIGHT (browse.log:70): a weighted mix of journeys
    #[arg(value_name = "RECORDING[:WEIGHT]")]
    pub recording: PathBuf,
    /// More FILE:WEIGHT recordings of the mix (each session plays one, split by weight), then the
    /// base URL of the app under test, e.g. http://127.0.0.1:3838/ (or --target)
    #[arg(value_name = "MORE... APP-URL")]
    pub app_url: Vec<String>,
    /// Base URL of the app under test (instead of APP-URL)
    #[arg(long, value_name = "URL")]
    pub target: Option<String>,
    /// Number of simulated users (shinycannon's --workers)
    #[arg(long, visible_alias = "workers", default_value_t = 1)]
    pub users: u32,
    /// Delay between user starts: 2s, 500ms; a bare number is shinycannon's milliseconds (5000);
    /// 0 starts all users at once (default: recording length / users)
    #[arg(long, value_parser = parse_interval)]
    pub start_interval: Option<Duration>,
    /// Load shape as concurrent users per stage, linear between stage ends, e.g. '2m:50, 5m:50,
    /// 1m:0' (users above a falling target finish their session and stop)
    #[arg(long, value_name = "STAGES", value_parser = super::shape::parse_stages,
          conflicts_with_all = ["users", "start_interval", "arrival_rate", "segment"])]
    pub stages: Option<super::shape::Stages>,
    /// Open model: new single-session users at this rate (2/s, 30/m) during --loaded-duration,
    /// whatever the app's speed; bounded by --max-users
    #[arg(long, value_name = "RATE", value_parser = super::shape::parse_rate,
          conflicts_with_all = ["users", "start_interval", "segment"])]
    pub arrival_rate: Option<f64>,
    /// With --arrival-rate: most users at once; arrivals beyond it are dropped and counted
    #[arg(long, default_value_t = 1000, requires = "arrival_rate")]
    pub max_users: u32,
    /// How long to keep all users looping after the last one started, e.g. 5m (default 0)
    #[arg(long, value_parser = parse_duration, conflicts_with = "loaded_duration_minutes")]
    pub loaded_duration: Option<Duration>,
    /// The same in minutes, possibly fractional: a bare number is shinycannon's minutes (2, 0.5)
    #[arg(long, value_name = "MINUTES", value_parser = parse_minutes, allow_negative_numbers = true)]
    pub loaded_duration_minutes: Option<Duration>,
    /// Run only segment K of N of this plan: users K-1, K-1+N, K-1+2N, ... (ids and start times
    /// stay the plan's; `surge merge` joins the segments' run directories)
    #[arg(long, value_name = "K/N")]
    pub segment: Option<String>,
    /// Start the plan at this instant (RFC 3339, e.g. 2026-05-01T12:00:00Z): every generator of
    /// a segmented run waits for it; a late start is reported
    #[arg(long, value_name = "TIME")]
    pub start_at: Option<String>,
    /// Run directory (default: test-logs-<time>)
    #[arg(long)]
    pub output_dir: Option<PathBuf>,
    /// Replace the run directory if it exists
    #[arg(long)]
    pub overwrite_output: bool,
    /// Highest acceptable share of failed sessions (0.05 or 5%); above it exit status is 1
    #[arg(long, value_parser = checks::parse_rate, default_value = "0")]
    pub max_failure_rate: f64,
    /// Latency check, [SCOPE:]pNN<DURATION (SCOPE: all, session or an event type); exit 1 if missed
    #[arg(long = "threshold")]
    pub thresholds: Vec<Threshold>,
    /// After SIGINT or SIGTERM no session starts; sessions still running get this long to end
    /// before they are cut (PLAYBACK_FAIL, kind interrupted); keep it below the grace period of
    /// whatever sends SIGTERM (docker stop: 10s, Kubernetes: 30s)
    #[arg(long, value_parser = parse_duration, default_value = "0s", value_name = "DURATION")]
    pub stop_grace: Duration,
    /// Print summary.json to stdout instead of the text summary
    #[arg(long)]
    pub json: bool,
    /// Also write every log line, down to debug, into debug.log in the run directory
    #[arg(long)]
    pub debug_log: bool,
    /// Least severe log line printed on stderr
    #[arg(long, value_enum, ignore_case = true, default_value_t = LogLevel::Warn)]
    pub log_level: LogLevel,
    /// What each session sends and how: shared with every `surge capacity` step
    #[command(flatten)]
    pub session: SessionArgs,
    /// manifold in front of the app, http://host:port: its workers (ready, busy, starting),
    /// queue and saturation are polled every second into manifold.csv, charted by the report
    #[arg(long, value_name = "URL")]
    pub manifold: Option<String>,
}

/// The flags of how each session plays and what it sends (pauses, timeout, headers, TLS, data,
/// captures, sign-in): one struct flattened into `replay` and `capacity`, so every capacity step
/// gets all of them as given, never a hand-copied subset.
#[derive(clap::Args, Debug, Clone)]
pub struct SessionArgs {
    /// Extra request header, 'Name: value' (repeatable)
    #[arg(short = 'H', long = "header")]
    pub headers: Vec<String>,
    /// Pauses between actions: recorded, none, or x<factor> (x0.5 = twice as fast)
    #[arg(long, default_value = "recorded")]
    pub think_time: ThinkTime,
    /// Fail a session when an expected message has not arrived within this time
    #[arg(long, value_parser = parse_duration, default_value = "30s")]
    pub message_timeout: Duration,
    /// TLS and address flags for an https:// target
    #[command(flatten)]
    pub tls: crate::net::TlsArgs,
    /// Fill ${column} placeholders (URLs, -H headers, POST bodies, WS_SEND messages) from this
    /// CSV: the header row names the columns, each session takes one row (see --data-mode)
    #[arg(long, value_name = "FILE")]
    pub data: Option<PathBuf>,
    /// Which --data row a session takes: sequential (session i takes row i, wrapping), random,
    /// or unique (never reused; no session starts once the rows run out)
    #[arg(long, value_enum, default_value_t = crate::data::DataMode::Sequential)]
    pub data_mode: crate::data::DataMode,
    /// Take a value from a live response and send it as ${NAME} later in the same session:
    /// NAME=REGEX (group 1, else the match; every HTTP response and WebSocket message, the latest
    /// match wins), NAME@LINE=REGEX (only the response of that recording line; no match fails the
    /// session), or json:/pointer instead of REGEX (repeatable)
    #[arg(long = "capture", value_name = "NAME[@LINE]=REGEX")]
    pub captures: Vec<crate::capture::Capture>,
    /// Fail a session (kind `content`) when the response or received WebSocket message of
    /// recording line LINE does not match REGEX (repeatable)
    #[arg(long = "expect", value_name = "LINE~REGEX")]
    pub expects: Vec<crate::expect::ContentCheck>,
    /// Sign-in flags (shinycannon's SHINYCANNON_* variables need none)
    #[command(flatten)]
    pub signin: crate::signin::SignInArgs,
}

/// A flag of `surge replay` that is wrong on its own or with another: one line naming it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct FlagError(String);

impl ReplayArgs {
    /// The app's base URL, from APP-URL or --target.
    pub fn app_url(&self) -> Result<&str, FlagError> {
        let positional = self.app_url.last().filter(|u| u.contains("://"));
        match (positional, &self.target) {
            (Some(u), Some(_)) => Err(FlagError(format!(
                "the app's URL is given twice: {u} (after the recordings) and --target"
            ))),
            (Some(u), None) => Ok(u),
            (None, Some(t)) => Ok(t),
            (None, None) => Err(FlagError(
                "no app to replay against: give its URL after the recording (APP-URL) or as --target URL".into(),
            )),
        }
    }

    /// Whether the app's URL came after the recordings (else `--target`).
    pub fn url_is_positional(&self) -> bool {
        self.app_url.last().is_some_and(|u| u.contains("://"))
    }

    /// The recordings of the run, each `FILE[:WEIGHT]` as given.
    pub fn recordings(&self) -> Vec<String> {
        let mut out = vec![self.recording.display().to_string()];
        let n = self.app_url.len() - usize::from(self.url_is_positional());
        out.extend(self.app_url[..n].iter().cloned());
        out
    }

    /// The loaded phase: --loaded-duration or --loaded-duration-minutes (default 0).
    pub fn loaded_duration(&self) -> Duration {
        self.loaded_duration
            .or(self.loaded_duration_minutes)
            .unwrap_or(Duration::ZERO)
    }
}

/// The `-H 'Name: value'` flags as headers; a malformed one is an error naming it.
pub(super) fn parse_headers(flags: &[String]) -> Result<Vec<(HeaderName, HeaderValue)>, FlagError> {
    let mut headers = Vec::new();
    for h in flags {
        let bad = |why: String| FlagError(format!("-H \"{h}\": {why}"));
        let (k, v) = h
            .split_once(':')
            .ok_or_else(|| bad("expected 'Name: value'".into()))?;
        headers.push((
            HeaderName::from_bytes(k.trim().as_bytes()).map_err(|e| bad(e.to_string()))?,
            HeaderValue::from_str(v.trim()).map_err(|e| bad(e.to_string()))?,
        ));
    }
    Ok(headers)
}
