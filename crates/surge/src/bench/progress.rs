//! The progress bar on stderr (a terminal, no `--json`): elapsed time of a `-d` run, requests of
//! a `-n` one.

use super::{BenchArgs, Plan};
use std::sync::atomic::Ordering;
use std::time::Duration;

/// Where the bar stands: ms elapsed, or requests done.
pub(super) fn progress_pos(plan: &Plan) -> u64 {
    match plan.deadline {
        Some(_) => plan.t0.elapsed().as_millis() as u64,
        None => plan.done.load(Ordering::Relaxed),
    }
}

/// The bar for this run's length.
pub(super) fn progress_bar(args: &BenchArgs) -> indicatif::ProgressBar {
    let (len, tmpl) = match args.requests {
        Some(n) if args.duration.is_none() => (n, "{bar:40} {pos}/{len} requests {per_sec}"),
        _ => (
            args.duration.unwrap_or(Duration::from_secs(10)).as_millis() as u64,
            "{bar:40} {elapsed}",
        ),
    };
    let b = indicatif::ProgressBar::new(len);
    if let Ok(s) = indicatif::ProgressStyle::with_template(tmpl) {
        b.set_style(s);
    }
    b
}
