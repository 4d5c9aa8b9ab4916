//! The open model's schedule: which requests of the plan this process sends (`--segment`), when
//! (`--start-at`, rate), and what happens to those it could not send in time.

use super::error::BenchError;
use super::{BenchArgs, Plan};
use crate::segment::{self, Segment, Start};
use std::time::Duration;
use tokio::time::Instant;

/// The open model's share (`--segment`) and the plan's start (`--start-at`, else now), checked.
pub(super) fn schedule(args: &BenchArgs) -> Result<(Option<Segment>, Start), BenchError> {
    match args.rate {
        Some(r) if !(r > 0.0 && r.is_finite()) => {
            return Err(BenchError::Usage(format!(
                "--rate {r}: must be a positive number"
            )))
        }
        None if args.segment.is_some() => return Err(BenchError::Usage(
            "--segment needs --rate: only the open model's schedule splits exactly into segments"
                .into(),
        )),
        _ => {}
    }
    let (segment, start_at) =
        segment::parse_flags(args.segment.as_deref(), args.start_at.as_deref())?;
    Ok((segment, Start::at(start_at)))
}

/// What the open model does with a connection's k-th slot of the schedule.
pub(super) enum Slot {
    /// Past the plan's end (-d or -n): the connection is done.
    End,
    /// Send it at this intended time (at once if that has passed: counted late).
    Send(Instant),
    /// Due so long ago that the run is over `--timeout` past the schedule's end: not sent, an error.
    Behind,
}

/// Error kind of scheduled requests never sent (generator too far behind).
pub(super) const BEHIND: &str = "not sent: generator more than --timeout behind schedule";

/// Connection `id` owns slots id, id+C, id+2C, ... of this segment's share; slot m is request
/// `segment.nth(m)` of the plan, due at t0 + that / rate. Every scheduled request is sent or
/// counted, so a generator that falls behind shows up in latency and errors, not in a shorter run.
pub(super) fn open_slot(plan: &Plan, rate: f64, id: usize, k: u64) -> Slot {
    let g = plan.segment.nth(k * plan.conns as u64 + id as u64);
    let intended = plan.t0 + Duration::from_secs_f64(g as f64 / rate);
    if plan.deadline.is_some_and(|d| intended >= d) || plan.limit.is_some_and(|n| g >= n) {
        Slot::End
    } else if plan.cutoff.is_some_and(|c| Instant::now() >= c) {
        Slot::Behind
    } else {
        Slot::Send(intended)
    }
}

/// The closed model's run is over (-d reached); the open model ends with its schedule instead.
pub(super) fn closed_over(plan: &Plan, now: Instant) -> bool {
    plan.rate.is_none() && plan.deadline.is_some_and(|d| now >= d)
}
