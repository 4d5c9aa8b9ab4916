//! `surge replay`: many simulated users, each replaying the recorded session in a loop, shinycannon
//! semantics (user w starts at w × interval; users loop until the loaded duration ends, then finish
//! their current session). One task per user; the parsed recording is shared, per-user state is a
//! few small buffers (target: ≤ 50 KB per user at 10,000 users).
//!
//! Modules, along the run: `flags`, `think` (pauses), `user` (one user's loop of sessions),
//! `player` (one session) and `stream` (SSE in the background), `aggregate` (results as
//! sessions end), `summary` (summary.json), `print` (text), `progress`.

mod aggregate;
mod flags;
mod player;
mod print;
mod progress;
mod stream;
mod summary;
mod think;
mod user;

use crate::logging;
use crate::output;
use crate::recording::Recording;
use crate::segment::{self, Segment, Start};
use crate::target::Target;
use crate::timefmt;
use bytes::Bytes;
use hyper::header::{HeaderName, HeaderValue};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU32;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::Instant;

pub(crate) use aggregate::Aggregate;
pub use flags::ReplayArgs;
pub use print::replay_text;
pub(crate) use summary::{from_aggregate, Head};
pub use summary::{FailureCount, Plan, RunSummary, SessionCounts, Split};
pub use think::ThinkTime;

/// Everything users share, read-only except the counters and the aggregate.
struct Shared {
    rec: Recording,
    bodies: Vec<Option<Bytes>>,
    target: Target,
    headers: Vec<(HeaderName, HeaderValue)>,
    think: ThinkTime,
    message_timeout: Duration,
    out_dir: PathBuf,
    comment_lines: String,
    /// The plan's start (`--start-at` or now); user w starts at t0 + w × interval.
    start: Start,
    t0: Instant,
    segment: Option<Segment>,
    start_at: Option<i64>,
    interval: Duration,
    loaded_end: Instant,
    next_session: AtomicU32,
    running: AtomicU32,
    done: AtomicU32,
    failed: AtomicU32,
    agg: Mutex<Aggregate>,
}

/// Exit status: all good.
pub const EXIT_OK: u8 = 0;
/// Exit status: a check failed (failure rate or threshold).
pub const EXIT_CHECKS: u8 = 1;
/// Exit status: interrupted by Ctrl-C (results written so far are consistent).
pub const EXIT_INTERRUPTED: u8 = 130;

/// Runs a replay; returns the process exit status.
pub async fn run(args: ReplayArgs) -> anyhow::Result<u8> {
    let url = args.app_url()?;
    let flag = if args.app_url.is_some() {
        "APP-URL"
    } else {
        "--target"
    };
    let target = Target::parse(url).map_err(|e| anyhow::anyhow!("{flag} {e}"))?;
    let target = (target.with_tls(&args.tls, args.message_timeout)).map_err(anyhow::Error::msg)?;
    let rec = Recording::load(&args.recording)?;
    if args.users == 0 {
        anyhow::bail!("--users must be at least 1");
    }
    let (segment, start_at) =
        segment::parse_flags(args.segment.as_deref(), args.start_at.as_deref())
            .map_err(anyhow::Error::msg)?;
    let users: Vec<u32> = match segment {
        Some(s) => s.users(args.users).collect(),
        None => (0..args.users).collect(),
    };
    if users.is_empty() {
        anyhow::bail!(
            "--segment {}: the plan has {} users, so this segment has none (use at most {} segments)",
            args.segment.as_deref().unwrap_or_default(),
            args.users,
            args.users
        );
    }
    let bodies = load_bodies(&rec)?;
    let headers = flags::parse_headers(&args.headers)?;
    let out_dir = args.output_dir.clone().unwrap_or_else(|| {
        PathBuf::from(format!(
            "test-logs-{}",
            timefmt::format_iso(timefmt::now_ms()).replace(':', "-")
        ))
    });
    target.probe().await.map_err(anyhow::Error::msg)?;
    output::prepare_dir(&out_dir, args.overwrite_output).map_err(anyhow::Error::msg)?;
    output::copy_recording(&rec, &out_dir).map_err(anyhow::Error::msg)?;
    let debug_log = args.debug_log.then(|| out_dir.join(logging::DEBUG_LOG));
    logging::init(args.log_level, debug_log.as_deref()).map_err(anyhow::Error::msg)?;

    let interval = args.start_interval.unwrap_or_else(|| {
        Duration::from_millis((rec.duration_ms() / i64::from(args.users)).max(0) as u64)
    });
    let comment_lines = comment_lines(&args, url, &out_dir, interval, segment, start_at);
    tracing::info!(
        "{} users, one every {interval:?}, loaded phase {:?} after the last start; target {url}",
        args.users,
        args.loaded_duration()
    );
    let start = Start::at(start_at);
    if let Some(line) = start.late_line("users whose start time has passed") {
        eprintln!("{line}");
    }
    // Users wait for t0 on their own; this only tells the person watching (ends at t0, or with
    // the runtime when the run is interrupted first).
    tokio::spawn(async move { start.count_down(|| false).await });
    let t0 = start.t0;
    let warmup = interval * (args.users - 1);
    let sh = Arc::new(Shared {
        rec,
        bodies,
        target,
        headers,
        think: args.think_time,
        message_timeout: args.message_timeout,
        out_dir: out_dir.clone(),
        comment_lines,
        start,
        t0,
        segment,
        start_at,
        interval,
        loaded_end: t0 + warmup + args.loaded_duration(),
        next_session: AtomicU32::new(0),
        running: AtomicU32::new(0),
        done: AtomicU32::new(0),
        failed: AtomicU32::new(0),
        agg: Mutex::new(Aggregate::new()),
    });
    let interrupted = run_users(&sh, &users).await;

    let summary = summary::summarize(&sh, &args, interrupted);
    let json = serde_json::to_string_pretty(&summary)?;
    std::fs::write(out_dir.join("summary.json"), format!("{json}\n"))?;
    if args.json {
        println!("{json}");
    } else {
        print!("{}", print::replay_text(&summary, &out_dir));
    }
    Ok(if interrupted {
        EXIT_INTERRUPTED
    } else if summary.ok {
        EXIT_OK
    } else {
        EXIT_CHECKS
    })
}

/// The request bodies of the recording's events (`datafile`s), read once for all users.
fn load_bodies(rec: &Recording) -> anyhow::Result<Vec<Option<Bytes>>> {
    let mut bodies = Vec::with_capacity(rec.events.len());
    for ev in &rec.events {
        bodies.push(match &ev.datafile {
            Some(p) => Some(Bytes::from(std::fs::read(p).map_err(|e| {
                anyhow::anyhow!(
                    "{}:{}: datafile {}: {e}",
                    rec.path.display(),
                    ev.line,
                    p.display()
                )
            })?)),
            None => None,
        });
    }
    Ok(bodies)
}

/// The two `#` lines heading every session CSV: the command line and the run's settings in
/// shinycannon's JSON shape. A segment adds `segment` ("K/N") and `startAt`, which `surge merge` and `surge report` read.
fn comment_lines(
    args: &ReplayArgs,
    url: &str,
    out_dir: &Path,
    interval: Duration,
    segment: Option<Segment>,
    start_at: Option<i64>,
) -> String {
    let argv: Vec<String> = std::env::args().skip(2).collect();
    let mut config = serde_json::json!({
        "tool": format!("surge {}", env!("CARGO_PKG_VERSION")),
        "appUrl": url,
        "recordingPath": args.recording.display().to_string(),
        "outputDir": out_dir.display().to_string(),
        "overwriteOutput": args.overwrite_output,
        "workers": args.users,
        "startIntervalMs": interval.as_millis() as u64,
        "loadedDurationMinutes": args.loaded_duration().as_secs_f64() / 60.0,
        "debugLog": args.debug_log,
        "logLevel": args.log_level.name(),
        "thinkTime": args.think_time.name(),
        "messageTimeoutMs": args.message_timeout.as_millis() as u64,
    });
    if let Some(s) = segment {
        config["segment"] = s.to_string().into();
    }
    if let Some(ms) = start_at {
        config["startAt"] = timefmt::format_iso(ms).into();
    }
    format!("# {}\n# {}\n", argv.join(" "), config)
}

/// Starts every user (and the progress line and the Ctrl-C watcher) and waits for all of
/// them; true if the run was interrupted.
async fn run_users(sh: &Arc<Shared>, users: &[u32]) -> bool {
    let (stop_tx, stop_rx) = watch::channel(false);
    let stop_tx = Arc::new(stop_tx);
    let sigint = {
        let stop_tx = stop_tx.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                eprintln!("surge: interrupted, finishing partial results");
                let _ = stop_tx.send(true);
            }
        })
    };
    let progress = tokio::spawn(progress::progress(sh.clone(), users.len() as u32));
    let mut workers = tokio::task::JoinSet::new();
    for &w in users {
        workers.spawn(user::worker(sh.clone(), w, stop_rx.clone()));
    }
    while workers.join_next().await.is_some() {}
    progress.abort();
    sigint.abort();
    let interrupted = *stop_rx.borrow();
    interrupted
}
