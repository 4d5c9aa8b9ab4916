//! `surge bench`: the client loop of a one-URL load test. One task per connection, each owning its
//! connection and its own histogram, dealt to `--threads` single-threaded event loops (`lanes`).
//! HTTP/1.1 goes through `h1` (the request serialized once, written as is for every exchange);
//! `--http2` uses hyper's h2c client with a reused request template.
//! Closed model by default; `--rate` is an open model whose latency is measured from each request's
//! intended send time (no coordinated omission), so requests are woken by a sub-millisecond timer
//! (`timer`).

mod conn;
mod error;
mod flags;
mod lanes;
mod plan;
mod print;
mod progress;
mod report;
mod schedule;
mod timer;

pub use error::BenchError;
pub use flags::{BenchArgs, RateError};
pub use print::bench_text;
pub use report::{merge, BenchReport, MergeError as BenchMergeError};

use crate::stats;
use conn::{fold, ConnStats};
use plan::{make_plan, Plan};
use progress::{progress_bar, progress_pos};
use report::bench_report;
use std::future::Future;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// A checked bench run: flags parsed, the request built once, an https target's certificate
/// probed. [`run`] takes it with a stop future, so a test (or another program) runs a benchmark
/// in-process; `main.rs` owns the flags, Ctrl-C and the printing. The schedule's clock starts
/// when the plan is made.
pub struct BenchPlan {
    plan: Arc<Plan>,
    args: BenchArgs,
    /// Draw the progress bar on stderr (main: a terminal, and no `--json`).
    pub progress: bool,
}

impl BenchPlan {
    /// Checks `args` and builds the run; prints the `--insecure` warning; one TLS probe
    /// connection (a refused certificate is an error here, not one per request).
    pub async fn from_args(args: &BenchArgs) -> Result<BenchPlan, BenchError> {
        let plan = make_plan(args)?;
        if plan.dialer.insecure() {
            eprintln!(
                "surge bench: warning: --insecure: the certificate of {} is not verified",
                plan.endpoint.authority()
            );
        }
        let alpn = if plan.http2 {
            crate::net::Alpn::H2
        } else {
            crate::net::Alpn::Http1
        };
        plan.dialer.probe(&plan.endpoint, alpn).await?;
        Ok(BenchPlan {
            plan: Arc::new(plan),
            args: args.clone(),
            progress: false,
        })
    }

    /// Feeds `live` (`--dashboard`'s metrics) with every request.
    pub fn with_live(mut self, live: Option<Arc<crate::metrics::LiveMetrics>>) -> BenchPlan {
        if let Some(p) = Arc::get_mut(&mut self.plan) {
            p.live = live;
        }
        self
    }
}

/// Runs the benchmark until its duration or request count is reached, or `stop` resolves (then
/// requests in flight finish and the partial result is returned). Prints nothing but the
/// late-start line and the countdown to `--start-at`; installs no signal handler.
pub async fn run(bench: BenchPlan, stop: impl Future<Output = ()>) -> BenchReport {
    let BenchPlan {
        plan,
        args,
        progress,
    } = bench;
    if let Some(line) = plan.start.late_line("requests whose send time has passed") {
        eprintln!("{line}");
    }
    let mut lanes = lanes::start(&plan, plan.lanes);
    // The connections wait for t0 on their own; this only tells the person watching.
    let countdown = {
        let plan = plan.clone();
        tokio::spawn(async move {
            let stop = plan.clone();
            plan.start
                .count_down(|| stop.stop.load(Ordering::Relaxed))
                .await
        })
    };
    let mut ended = 0;
    let bar = progress.then(|| progress_bar(&args));
    let mut all = ConnStats {
        hist: Some(stats::new_histogram()),
        ..Default::default()
    };
    tokio::pin!(stop);
    let health = crate::health::Monitor::start();
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    loop {
        tokio::select! {
            r = lanes.recv() => match r {
                Some(r) => {
                    ended += 1;
                    match r {
                        Ok(s) => fold(&mut all, s),
                        Err(e) => *all.errors.entry(e.to_string()).or_insert(0) += 1,
                    }
                }
                None => break,
            },
            _ = tick.tick() => {
                if let Some(b) = &bar { b.set_position(progress_pos(&plan)); }
            }
            // A completed future must not be polled again: the branch is off once it fired.
            () = &mut stop, if !plan.stop.load(Ordering::Relaxed) => {
                plan.stop.store(true, Ordering::Relaxed)
            }
        }
    }
    countdown.abort();
    if ended < plan.lanes {
        let lost = (plan.lanes - ended) as u64;
        *all.errors
            .entry("lane: thread died without its statistics".into())
            .or_insert(0) += lost;
    }
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let mut report = bench_report(&args, &plan, all);
    report.generator = Some(health.finish().await);
    report
}
