//! The flags of `surge replay` and turning the `-H` ones into headers.

use super::ThinkTime;
use crate::checks::{self, Threshold};
use crate::timefmt::parse_duration;
use hyper::header::{HeaderName, HeaderValue};
use std::path::PathBuf;
use std::time::Duration;

/// Command-line options of `surge replay` (names follow shinycannon where it has one).
#[derive(clap::Args, Debug, Clone)]
pub struct ReplayArgs {
    /// recording.log to replay (from `surge record`, `surge import-har` or shinyloadtest)
    pub recording: PathBuf,
    /// Base URL of the app under test, e.g. http://127.0.0.1:3838/
    #[arg(long)]
    pub target: String,
    /// Number of simulated users (shinycannon's --workers)
    #[arg(long, alias = "workers", default_value_t = 1)]
    pub users: u32,
    /// Delay between user starts (default: recording length / users)
    #[arg(long, value_parser = parse_duration)]
    pub start_interval: Option<Duration>,
    /// How long to keep all users looping after the last one started
    #[arg(long, value_parser = parse_duration, default_value = "0s")]
    pub loaded_duration: Duration,
    /// Run directory (default: test-logs-<time>)
    #[arg(long)]
    pub output_dir: Option<PathBuf>,
    /// Replace the run directory if it exists
    #[arg(long)]
    pub overwrite_output: bool,
    /// Extra request header, 'Name: value' (repeatable)
    #[arg(short = 'H', long = "header")]
    pub headers: Vec<String>,
    /// Pauses between actions: recorded, none, or x<factor> (x0.5 = twice as fast)
    #[arg(long, default_value = "recorded")]
    pub think_time: ThinkTime,
    /// Fail a session when an expected message has not arrived within this time
    #[arg(long, value_parser = parse_duration, default_value = "30s")]
    pub message_timeout: Duration,
    /// Highest acceptable share of failed sessions (0.05 or 5%); above it exit status is 1
    #[arg(long, value_parser = checks::parse_rate, default_value = "0")]
    pub max_failure_rate: f64,
    /// Latency check, [SCOPE:]pNN<DURATION (SCOPE: all, session or an event type); exit 1 if missed
    #[arg(long = "threshold")]
    pub thresholds: Vec<Threshold>,
    /// Print summary.json to stdout instead of the text summary
    #[arg(long)]
    pub json: bool,
}

/// The `-H 'Name: value'` flags as headers; a malformed one is an error naming it.
pub(super) fn parse_headers(flags: &[String]) -> anyhow::Result<Vec<(HeaderName, HeaderValue)>> {
    let mut headers = Vec::new();
    for h in flags {
        let (k, v) = h
            .split_once(':')
            .ok_or_else(|| anyhow::anyhow!("-H \"{h}\": expected 'Name: value'"))?;
        headers.push((
            HeaderName::from_bytes(k.trim().as_bytes())
                .map_err(|e| anyhow::anyhow!("-H \"{h}\": {e}"))?,
            HeaderValue::from_str(v.trim()).map_err(|e| anyhow::anyhow!("-H \"{h}\": {e}"))?,
        ));
    }
    Ok(headers)
}
