//! `surge explain RECORDING URL`: why it is slow. First one user alone (`solo/`: each line's
//! time with nothing else running, the server's compute), then `--users` at once (`loaded/`);
//! each request or output is ranked by what it costs a session (its time alone × how often a
//! session asks for it), with its loaded p50/p95 and the share of that p95 spent waiting behind
//! other sessions. A Shiny message that names no output (`frozen`, `custom`, …) hands its wait to
//! the output message after it in the same step, which is named by its outputs with
//! "(after frozen)" ([`steps`]: the rule). Printed as a table; `explain.json` in the output
//! directory and in `loaded/` (so `surge report loaded/` shows the ranking as a chart).
//!
//! Flags → plan ([`ExplainPlan::from_args`], checked, no I/O beyond reading the recording) →
//! [`run`] → [`Explained`].

pub mod rank;
pub mod steps;

use crate::capacity::predict::{replay_sessions, RunError};
use crate::replay::{ReplayArgs, ReplayError};
use crate::report::lines::{self, Lines};
use crate::timefmt::parse_duration;
use serde::{Deserialize, Serialize};
use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub use rank::Row;

/// The file `surge explain` writes (and `surge report` reads from a run directory).
pub const EXPLAIN_JSON: &str = "explain.json";

/// Command-line options of `surge explain`.
#[derive(clap::Args, Debug, Clone)]
pub struct ExplainArgs {
    /// recording.log to replay (from `surge record`, `surge import-har` or shinyloadtest)
    pub recording: PathBuf,
    /// Base URL of the app under test, e.g. http://127.0.0.1:3838/
    #[arg(value_name = "APP-URL")]
    pub app_url: String,
    /// Users of the loaded run (after the one alone)
    #[arg(long, default_value_t = 8)]
    pub users: u32,
    /// How long the loaded run keeps its users looping after the last one started (default 0:
    /// each user plays the recording once)
    #[arg(long, value_parser = parse_duration)]
    pub loaded_duration: Option<Duration>,
    /// replay's per-session flags (think time, timeout, -H, TLS, --data, --capture, sign-in),
    /// passed as given to both runs
    #[command(flatten)]
    pub session: crate::replay::SessionArgs,
    /// Directory for solo/, loaded/ and explain.json (default: explain-<time>)
    #[arg(long)]
    pub output_dir: Option<PathBuf>,
    /// Replace the directory if it exists
    #[arg(long)]
    pub overwrite_output: bool,
    /// Print explain.json instead of the table
    #[arg(long)]
    pub json: bool,
}

/// Why `surge explain` could not run: one line naming the flag or file.
#[derive(Debug, thiserror::Error)]
pub enum ExplainError {
    /// A flag's value is wrong.
    #[error("{0}")]
    Usage(String),
    /// A run could not be made or read.
    #[error(transparent)]
    Run(#[from] RunError),
    /// The recording cannot be read.
    #[error(transparent)]
    Report(#[from] crate::report::ReportError),
    /// The recording is not one.
    #[error(transparent)]
    Replay(#[from] ReplayError),
    /// A file or directory could not be written.
    #[error("{path}: {err}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What the OS said.
        err: std::io::Error,
    },
}

/// A checked `surge explain`.
#[derive(Debug)]
pub struct ExplainPlan {
    /// The flags, checked.
    pub args: ExplainArgs,
    rec: Lines,
}

impl ExplainPlan {
    /// Checks the flags and reads the recording; writes nothing.
    ///
    /// # Errors
    /// `--users 0`, or the recording cannot be read.
    pub fn from_args(args: ExplainArgs) -> Result<ExplainPlan, ExplainError> {
        if args.users == 0 {
            return Err(ExplainError::Usage("--users must be at least 1".into()));
        }
        crate::recording::Recording::load(&args.recording).map_err(ReplayError::from)?;
        let rec = lines::read(&args.recording)?;
        Ok(ExplainPlan { args, rec })
    }
}

/// What `surge explain` found: explain.json.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Explained {
    /// The recording replayed.
    pub recording: String,
    /// The app's URL.
    pub target: String,
    /// Users of the loaded run.
    pub users: u32,
    /// Sessions completed alone and loaded.
    pub sessions: [usize; 2],
    /// Requests and outputs, costliest per session first.
    pub rows: Vec<Row>,
    /// The output directory.
    pub dir: PathBuf,
}

impl Explained {
    /// The headline: `GET /slow costs 100 ms per session alone; at 8 users 62% of its p95 is waiting`.
    pub fn headline(&self) -> String {
        let Some(r) = self.rows.first() else {
            return "no request or output completed alone".into();
        };
        let wait = r.waiting_share.map_or(String::new(), |w| {
            format!(
                "; at {} users {:.0}% of its p95 is waiting",
                self.users,
                w * 100.0
            )
        });
        format!(
            "{} {} costs {:.0} ms per session alone{wait}",
            r.kind, r.label, r.cost_ms
        )
    }
}

/// The replay flags of one of the two runs.
fn run_args(a: &ExplainArgs, users: u32, loaded: Option<Duration>, dir: &Path) -> ReplayArgs {
    crate::capacity::predict::closed_args(
        (&a.recording, &a.app_url),
        users,
        loaded,
        dir,
        &a.session,
        None,
    )
}

/// Runs one user alone, then the loaded run, ranks the lines and writes explain.json (in the
/// output directory and in `loaded/`). Installs no logger and no signal handler.
///
/// # Errors
/// The output directory exists (without --overwrite-output) or cannot be written, a run cannot
/// start, or the one user alone completed no session.
pub async fn run(
    plan: ExplainPlan,
    stop: impl Future<Output = ()> + Send + 'static,
) -> Result<Explained, ExplainError> {
    let a = &plan.args;
    let dir = prepare(a)?;
    let stop = crate::capacity::search::stop_watch(stop);
    let solo_args = run_args(a, 1, None, &dir.join("solo"));
    let (solo, _) = replay_sessions(
        &solo_args,
        &plan.rec,
        "surge explain: one user alone",
        &stop,
    )
    .await?;
    if !solo.iter().any(|s| s.outcome == crate::rundir::Ended::Done) {
        return Err(ExplainError::Usage(format!(
            "the one user alone did not complete a session (see {})",
            dir.join("solo").display()
        )));
    }
    let load_args = run_args(a, a.users, a.loaded_duration, &dir.join("loaded"));
    let (loaded, _) =
        replay_sessions(&load_args, &plan.rec, "surge explain: loaded", &stop).await?;
    let done = |v: &[crate::report::load::Session]| {
        v.iter()
            .filter(|s| s.outcome == crate::rundir::Ended::Done)
            .count()
    };
    let explained = Explained {
        recording: a.recording.display().to_string(),
        target: a.app_url.clone(),
        users: a.users,
        sessions: [done(&solo), done(&loaded)],
        rows: rank::rank_lines(&plan.rec, &solo, &loaded),
        dir: dir.clone(),
    };
    let json = serde_json::to_string_pretty(&explained).expect("explain serialises");
    for path in [
        dir.join(EXPLAIN_JSON),
        dir.join("loaded").join(EXPLAIN_JSON),
    ] {
        crate::rundir::write_atomic(&path, format!("{json}\n").as_bytes())
            .map_err(|err| ExplainError::Io { path, err })?;
    }
    Ok(explained)
}

/// Reads `dir/explain.json` if there is one (a run directory `surge explain` made).
pub fn read(dir: &Path) -> Option<Explained> {
    let text = std::fs::read_to_string(dir.join(EXPLAIN_JSON)).ok()?;
    serde_json::from_str(&text).ok()
}

/// The output directory, created empty.
fn prepare(a: &ExplainArgs) -> Result<PathBuf, ExplainError> {
    let dir = a.output_dir.clone().unwrap_or_else(|| {
        let t = crate::timefmt::format_iso(crate::timefmt::now_ms()).replace(':', "-");
        PathBuf::from(format!("explain-{t}"))
    });
    let io = |err| ExplainError::Io {
        path: dir.clone(),
        err,
    };
    if dir.exists() {
        if !a.overwrite_output {
            return Err(ExplainError::Usage(format!(
                "output directory {} already exists (use --overwrite-output)",
                dir.display()
            )));
        }
        std::fs::remove_dir_all(&dir).map_err(io)?;
    }
    std::fs::create_dir_all(&dir).map_err(io)?;
    Ok(dir)
}
