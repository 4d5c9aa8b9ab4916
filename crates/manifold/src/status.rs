//! `/__manifold__/status` (JSON) and `/__manifold__/metrics` (Prometheus text), both from one
//! [`Snapshot`] so the two views never disagree.

use std::fmt::Write;

use crate::pool::{Snapshot, State};

/// A rendered status view: its bytes and their content type (the proxy makes the response).
pub struct Page {
    /// The rendered view.
    pub body: Vec<u8>,
    /// Its `Content-Type`.
    pub content_type: &'static str,
}

/// The pool state as JSON.
pub fn json(s: &Snapshot) -> Page {
    Page {
        body: serde_json::to_vec_pretty(s).expect("snapshot serialises"),
        content_type: "application/json",
    }
}

/// The pool state in Prometheus text format.
pub fn metrics(s: &Snapshot) -> Page {
    Page {
        body: render_metrics(s).into_bytes(),
        content_type: "text/plain; version=0.0.4",
    }
}

/// Renders the metrics text (gauges for now, counters for lifetime totals).
pub fn render_metrics(s: &Snapshot) -> String {
    let mut o = String::new();
    let count = |st: State| s.workers.iter().filter(|w| w.state == st).count();
    let busy: usize = s.workers.iter().map(|w| w.busy).sum();
    let gauges = [
        (
            "manifold_workers_starting",
            "Workers starting",
            count(State::Starting) as u64,
        ),
        (
            "manifold_workers_ready",
            "Workers taking requests",
            count(State::Ready) as u64,
        ),
        (
            "manifold_workers_stopping",
            "Workers being stopped",
            count(State::Stopping) as u64,
        ),
        (
            "manifold_requests_in_flight",
            "Requests being served",
            busy as u64,
        ),
        (
            "manifold_queue_length",
            "Requests waiting for a worker",
            s.queue as u64,
        ),
        ("manifold_workers_max", "Configured --max", s.max as u64),
    ];
    for (name, help, v) in gauges {
        let _ = writeln!(o, "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {v}");
    }
    let t = &s.totals;
    let counters = [
        (
            "manifold_requests_served_total",
            "Requests a worker finished",
            t.served,
        ),
        (
            "manifold_queue_full_total",
            "Requests refused: queue full",
            t.queue_full,
        ),
        (
            "manifold_queue_timeouts_total",
            "Requests that timed out in the queue",
            t.queue_timeouts,
        ),
        (
            "manifold_bad_gateway_total",
            "Requests answered 502",
            t.bad_gateway,
        ),
        (
            "manifold_worker_starts_total",
            "Worker processes started",
            t.worker_starts,
        ),
        (
            "manifold_worker_crashes_total",
            "Ready workers that died",
            t.worker_crashes,
        ),
        (
            "manifold_worker_start_failures_total",
            "Workers that never became ready",
            t.start_failures,
        ),
        (
            "manifold_worker_idle_stops_total",
            "Idle workers stopped",
            t.idle_stops,
        ),
        (
            "manifold_output_lines_dropped_total",
            "Worker output lines not forwarded",
            s.output_lines_dropped,
        ),
    ];
    for (name, help, v) in counters {
        let _ = writeln!(o, "# HELP {name} {help}\n# TYPE {name} counter\n{name} {v}");
    }
    let _ = writeln!(
        o,
        "# HELP manifold_worker_served_total Requests finished per worker\n# TYPE manifold_worker_served_total counter"
    );
    for w in &s.workers {
        let _ = writeln!(
            o,
            "manifold_worker_served_total{{worker=\"{}\"}} {}",
            w.id, w.served
        );
    }
    o
}
