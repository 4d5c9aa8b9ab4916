//! The flags of `surge bench` and `--max-error-rate`'s parser.

use crate::timefmt::parse_duration;
use std::path::PathBuf;
use std::time::Duration;

/// Command-line options of `surge bench`.
#[derive(clap::Args, Debug, Clone)]
pub struct BenchArgs {
    /// URL to load (http://host:port/path)
    pub url: String,
    /// Concurrent connections
    #[arg(short = 'c', long, default_value_t = 50)]
    pub connections: usize,
    /// Threads, each running its share of the connections on its own event loop (default: the
    /// CPUs this process may use)
    #[arg(short = 't', long)]
    pub threads: Option<usize>,
    /// Total requests to send (default: run for --duration)
    #[arg(short = 'n', long)]
    pub requests: Option<u64>,
    /// How long to run (default 10s when -n is not given)
    #[arg(short = 'd', long, value_parser = parse_duration)]
    pub duration: Option<Duration>,
    /// Open model: requests per second in total, latency measured from the intended send time
    #[arg(long)]
    pub rate: Option<f64>,
    /// Send only segment K of N of the --rate schedule: requests K-1, K-1+N, ... at their
    /// planned times (`surge merge` joins the segments' --json results)
    #[arg(long, value_name = "K/N")]
    pub segment: Option<String>,
    /// Start the schedule at this instant (RFC 3339), e.g. on every generator host
    #[arg(long, value_name = "TIME")]
    pub start_at: Option<String>,
    /// HTTP method
    #[arg(short = 'm', long, default_value = "GET")]
    pub method: String,
    /// Extra request header 'Name: value' (repeatable)
    #[arg(short = 'H', long = "header")]
    pub headers: Vec<String>,
    /// File whose contents are sent as the request body
    #[arg(long)]
    pub body: Option<PathBuf>,
    /// Open a new connection for every request
    #[arg(long)]
    pub no_keepalive: bool,
    /// Speak HTTP/2: over cleartext with prior knowledge for http://, via ALPN "h2" for https://
    #[arg(long)]
    pub http2: bool,
    /// Per-request timeout
    #[arg(long, value_parser = parse_duration, default_value = "30s")]
    pub timeout: Duration,
    /// Statuses that count as ok (comma-separated, e.g. 200,204; default: any 2xx or 3xx)
    #[arg(long, value_name = "CODES", value_delimiter = ',', value_parser = parse_status)]
    pub expect_status: Vec<u16>,
    /// Share of requests that may be not ok (errors or other statuses) before the run fails
    /// with exit 1, e.g. 1% or 0.01 (default 0: any one fails it)
    #[arg(long, value_parser = parse_rate, default_value = "0")]
    pub max_error_rate: f64,
    /// Print the result as JSON
    #[arg(long)]
    pub json: bool,
    /// TLS and address flags for an https:// URL
    #[command(flatten)]
    pub tls: crate::net::TlsArgs,
}

/// A `--max-error-rate` that is not a rate.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("'{0}' is not a rate between 0 and 1 (or 0% and 100%)")]
pub struct RateError(String);

/// `--max-error-rate`: `1%`, `0.5%` or a fraction `0.01`, within 0..=1.
fn parse_rate(s: &str) -> Result<f64, RateError> {
    let (num, scale) = match s.strip_suffix('%') {
        Some(n) => (n, 100.0),
        None => (s, 1.0),
    };
    let v = num
        .trim()
        .parse::<f64>()
        .ok()
        .map(|v| v / scale)
        .filter(|v| (0.0..=1.0).contains(v))
        .ok_or_else(|| RateError(s.to_string()))?;
    Ok(v)
}

/// An `--expect-status` code that is not an HTTP status.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0:?} is not an HTTP status (a number from 100 to 599)")]
pub struct StatusError(String);

/// One `--expect-status` code (clap splits the list at commas): 100 to 599, as HTTP defines
/// them; `999` or `0` would make every answer count as not ok.
pub fn parse_status(s: &str) -> Result<u16, StatusError> {
    (s.trim().parse::<u16>().ok())
        .filter(|c| (100..=599).contains(c))
        .ok_or_else(|| StatusError(s.to_string()))
}
