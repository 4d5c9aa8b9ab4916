//! `surge capacity`: how many users an app holds within its SLOs. Steps the load up (concurrent
//! users, or a session arrival rate with `--open`), each step an ordinary replay run directory
//! (`step-NN/`) long enough for its percentiles to settle; stops at the first step that breaks an
//! SLO or the failure rate, then bisects between the last good and the first bad step, and
//! prints one answer line. The target is never driven past breaking for longer than one step:
//! after the first bad step every step is below it.
//!
//! Flags → plan → run: [`CapacityPlan::from_args`] checks the flags and reads the recording (the
//! SLOs name its lines and event types; a step's sessions are judged against it), then
//! [`run`] (or [`run_scaling`]) takes the plan and a stop signal, creates the output directory
//! and runs the steps.
//!
//! Modules: `slo` (parsing and measuring a step), `search` (the step sequence and capacity.json),
//! `scaling` (one search per `--workers` count).

pub mod explain;
pub mod predict;
pub mod scaling;
pub mod search;
pub mod slo;

use crate::checks;
use crate::timefmt::parse_duration;
use std::path::PathBuf;
use std::time::Duration;

pub use crate::capfile::{CapacityResult, StepResult, CAPACITY_JSON};
pub use scaling::{run_scaling, Scaling};
pub use search::{run, CapacityError};
pub use slo::{Metric, Slo};

/// A checked capacity search: the flags, and the recording as the report reads it.
#[derive(Debug)]
pub struct CapacityPlan {
    /// The flags, checked.
    pub args: CapacityArgs,
    /// The recording's lines, for pairing each step's session rows into events.
    rec: crate::report::lines::Lines,
}

impl CapacityArgs {
    /// The first step's load: --start, else 1.
    pub fn start_load(&self) -> f64 {
        self.start.unwrap_or(1.0)
    }

    /// Whether the search starts with a prediction: a closed search of one server (not --open
    /// or --workers) with neither --no-predict nor --start.
    pub fn predicts(&self) -> bool {
        self.predict_only
            || (!self.no_predict && self.start.is_none() && !self.open && self.workers.is_empty())
    }
}

impl CapacityPlan {
    /// Checks the flags (numbers, combinations, SLOs against the recording's lines) and reads
    /// the recording; writes nothing.
    ///
    /// # Errors
    /// A flag is wrong, or the recording (or `--data`) cannot be read.
    pub fn from_args(args: CapacityArgs) -> Result<CapacityPlan, CapacityError> {
        let rec = search::check(&args)?;
        Ok(CapacityPlan { args, rec })
    }
}

/// Command-line options of `surge capacity`.
#[derive(clap::Args, Debug, Clone)]
pub struct CapacityArgs {
    /// recording.log to replay (from `surge record`, `surge import-har` or shinyloadtest)
    pub recording: PathBuf,
    /// Base URL of the app under test, e.g. http://127.0.0.1:3838/
    #[arg(value_name = "APP-URL")]
    pub app_url: String,
    /// Objective every step must meet, METRIC:pNN<DURATION with METRIC page_load, session, all,
    /// until@LINE (home page start to the end of recording line LINE) or an event type, e.g.
    /// 'page_load:p95<2s' (repeatable; at least one)
    #[arg(long = "slo", required = true, value_name = "SLO")]
    pub slos: Vec<Slo>,
    /// Highest acceptable share of failed sessions in a step (0.01 or 1%)
    #[arg(long, value_parser = checks::parse_rate, default_value = "1%")]
    pub max_failure_rate: f64,
    /// Step the session arrival rate (sessions/s, open model) instead of concurrent users
    #[arg(long)]
    pub open: bool,
    /// Load of the first step: users, or sessions/s with --open (default 1). Given, the search
    /// starts there and doubles (by --growth) without a prediction, as --no-predict
    #[arg(long, value_name = "LOAD")]
    pub start: Option<f64>,
    /// Each step multiplies the load by this until a step breaks (at least +1 user)
    #[arg(long, default_value_t = 2.0)]
    pub growth: f64,
    /// Highest load tried: the answer is "holds at least" this when no step breaks
    #[arg(long, default_value_t = 1000.0)]
    pub max_load: f64,
    /// Bisection stops when good and bad steps are this close (share of the good load; at least
    /// 1 user)
    #[arg(long, value_parser = checks::parse_rate, default_value = "5%")]
    pub resolution: f64,
    /// Sessions judged per step (after its warm-up: each user's first session, or an open
    /// step's first 10%); 100 puts a p95 on its 5 slowest sessions
    #[arg(long, default_value_t = 100)]
    pub step_sessions: u32,
    /// Longest step: a step ends at --step-sessions or after this, whichever comes first
    #[arg(long, value_parser = parse_duration, default_value = "5m")]
    pub step_max: Duration,
    /// replay's per-session flags (think time, timeout, -H, TLS, --data, --capture, sign-in),
    /// passed as given to every step
    #[command(flatten)]
    pub session: crate::replay::SessionArgs,
    /// Directory for the steps and capacity.json (default: capacity-<time>)
    #[arg(long)]
    pub output_dir: Option<PathBuf>,
    /// Replace the directory if it exists
    #[arg(long)]
    pub overwrite_output: bool,
    /// manifold in front of the app, http://host:port: its workers are polled into each step's
    /// manifold.csv and the answer adds the users one ready worker holds
    #[arg(long, value_name = "URL")]
    pub manifold: Option<String>,
    /// Repeat the search with manifold at each of these worker counts (e.g. 1,2,4; needs
    /// --manifold-cmd and --manifold) and print the scaling table
    #[arg(long, value_delimiter = ',', value_name = "N,N,...")]
    pub workers: Vec<u32>,
    /// Shell command starting manifold for one worker count, {workers} replaced by the count,
    /// e.g. 'manifold shiny app/ --listen 127.0.0.1:9000 --min {workers} --max {workers}';
    /// started before each search (ready when --manifold shows that many ready workers), stopped
    /// after it
    #[arg(long, value_name = "CMD")]
    pub manifold_cmd: Option<String>,
    /// With --workers: the workers this many concurrent users need, from the largest count's
    /// users per worker
    #[arg(long, value_name = "USERS")]
    pub audience: Option<u32>,
    /// Live dashboard and Prometheus metrics during the search
    #[command(flatten)]
    pub dashboard: crate::dashboard::DashboardArgs,
    /// Skip the prediction: no run of one user alone, the search starts at --start and grows by
    /// --growth (the search before predictions)
    #[arg(long, conflicts_with = "predict_only")]
    pub no_predict: bool,
    /// Accepted for old command lines: predicting is the default (see --no-predict)
    #[arg(long, hide = true, conflicts_with = "no_predict")]
    pub predict: bool,
    /// Stop after the prediction (no load beyond the one user)
    #[arg(long, conflicts_with = "start")]
    pub predict_only: bool,
    /// Requests the server works on at once, for the prediction: 1 is one single-threaded
    /// process (an R process); a server with N slots per process, e.g. manifold's --per-worker,
    /// or N processes, says N
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub slots: u32,
}
