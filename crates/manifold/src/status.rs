//! `/__manifold__/status` (JSON) and `/__manifold__/metrics` (Prometheus text), both from one
//! [`Snapshot`] and one [`Capacity`] reading, so the two views never disagree.
//!
//! [`Capacity`] is this host's saturation for a load balancer or an autoscaler: manifold's own
//! slots and queue plus the host's load average, folded into one 0..1 `saturation` number.

use std::fmt::Write;

use serde::Serialize;

use crate::pool::{Snapshot, State, WorkerStatus};

/// A rendered status view: its HTTP status, bytes and content type (the proxy makes the response).
pub struct Page {
    /// `200`, or `404` for the status JSON while draining.
    pub status: u16,
    /// The rendered view.
    pub body: Vec<u8>,
    /// Its `Content-Type`.
    pub content_type: &'static str,
}

/// The host's CPU count and load averages, read once per status request.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HostLoad {
    /// CPUs this process may use (affinity and cgroup quota included).
    pub cpus: usize,
    /// 1, 5 and 15 minute load averages; `None` where the OS does not tell.
    pub load: Option<[f64; 3]>,
}

impl HostLoad {
    /// Reads the load averages (`getloadavg`) and the usable CPU count.
    pub fn read() -> HostLoad {
        let mut l = [0f64; 3];
        // SAFETY: `l` has room for the 3 values asked for.
        let n = unsafe { libc::getloadavg(l.as_mut_ptr(), 3) };
        HostLoad {
            cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
            load: (n == 3).then_some(l),
        }
    }
}

/// How full this host is; the `capacity` object of the status JSON.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Capacity {
    /// Requests and open WebSockets being served.
    pub busy: usize,
    /// Requests the pool can serve at once: `--max` × `--per-worker`.
    pub slots: usize,
    /// busy / slots (sticky sessions may push it above 1).
    pub busy_ratio: f64,
    /// Queue length / `--queue-size`.
    pub queue_ratio: f64,
    /// Workers starting or ready.
    pub workers: usize,
    /// workers / `--max`.
    pub workers_ratio: f64,
    /// CPUs manifold may use.
    pub cpus: usize,
    /// Host load averages over 1, 5 and 15 minutes (every process on the host counts).
    pub load1: Option<f64>,
    /// See `load1`.
    pub load5: Option<f64>,
    /// See `load1`.
    pub load15: Option<f64>,
    /// load1 / cpus.
    pub load_ratio: Option<f64>,
}

impl Capacity {
    /// Computes the ratios from a pool snapshot and the host's load.
    pub fn new(s: &Snapshot, host: HostLoad) -> Capacity {
        let ratio = |a: usize, b: usize| if b == 0 { 0.0 } else { a as f64 / b as f64 };
        let busy = s.workers.iter().map(|w| w.busy).sum();
        let slots = s.max * s.per_worker;
        let workers = s
            .workers
            .iter()
            .filter(|w| w.state != State::Stopping)
            .count();
        let load = host.load;
        Capacity {
            busy,
            slots,
            busy_ratio: ratio(busy, slots),
            queue_ratio: ratio(s.queue, s.queue_size),
            workers,
            workers_ratio: ratio(workers, s.max),
            cpus: host.cpus,
            load1: load.map(|l| l[0]),
            load5: load.map(|l| l[1]),
            load15: load.map(|l| l[2]),
            load_ratio: load.map(|l| l[0] / host.cpus.max(1) as f64),
        }
    }

    /// One number from 0 (idle) to 1 (full): 1 while requests wait in the queue, else the larger
    /// of busy_ratio (manifold's slots) and load_ratio (the host's CPUs), capped at 1.
    pub fn saturation(&self, queue: usize) -> f64 {
        if queue > 0 {
            return 1.0;
        }
        self.busy_ratio
            .max(self.load_ratio.unwrap_or(0.0))
            .clamp(0.0, 1.0)
    }
}

/// The status document: the snapshot's keys plus `saturation` and `capacity`.
#[derive(Serialize)]
struct StatusDoc<'a> {
    #[serde(flatten)]
    snapshot: &'a Snapshot,
    saturation: f64,
    capacity: &'a Capacity,
}

/// The pool state as JSON: `200`, or `404` while draining (HAProxy's `http-check
/// disable-on-404` reads that as "no new sessions, keep the sticky ones").
pub fn json(s: &Snapshot, c: &Capacity) -> Page {
    let doc = StatusDoc {
        snapshot: s,
        saturation: c.saturation(s.queue),
        capacity: c,
    };
    Page {
        status: if s.draining { 404 } else { 200 },
        body: serde_json::to_vec_pretty(&doc).expect("snapshot serialises"),
        content_type: "application/json",
    }
}

/// The pool state in Prometheus text format (always `200`: a scrape is not a health check);
/// `extra` (the proxy's latency histograms) is appended as is.
pub fn metrics(s: &Snapshot, c: &Capacity, extra: &str) -> Page {
    let mut body = render_metrics(s, c);
    body.push_str(extra);
    Page {
        status: 200,
        body: body.into_bytes(),
        content_type: "text/plain; version=0.0.4",
    }
}

/// Renders the metrics text (gauges for the current state, counters for lifetime totals).
pub fn render_metrics(s: &Snapshot, c: &Capacity) -> String {
    let mut o = String::new();
    for (name, help, v) in gauges(s, c) {
        let _ = writeln!(o, "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {v}");
    }
    render_counters(&mut o, s);
    o
}

/// (name, help, value) of every gauge: the current state.
fn gauges(s: &Snapshot, c: &Capacity) -> Vec<(&'static str, &'static str, f64)> {
    let count = |st: State| s.workers.iter().filter(|w| w.state == st).count() as f64;
    let mut gauges = vec![
        (
            "manifold_workers_starting",
            "Workers starting",
            count(State::Starting),
        ),
        (
            "manifold_workers_ready",
            "Workers taking requests",
            count(State::Ready),
        ),
        (
            "manifold_workers_draining",
            "Workers finishing their sessions before they stop (recycled or old generation)",
            count(State::Draining),
        ),
        (
            "manifold_workers_stopping",
            "Workers being stopped",
            count(State::Stopping),
        ),
        (
            "manifold_requests_in_flight",
            "Requests being served",
            c.busy as f64,
        ),
        (
            "manifold_queue_length",
            "Requests waiting for a worker",
            s.queue as f64,
        ),
        (
            "manifold_queue_size",
            "Configured --queue-size",
            s.queue_size as f64,
        ),
        ("manifold_workers_max", "Configured --max", s.max as f64),
        (
            "manifold_capacity_slots",
            "Requests the pool serves at once (--max x --per-worker)",
            c.slots as f64,
        ),
        (
            "manifold_saturation",
            "0..1: 1 while requests queue, else max(busy/slots, load1/cpus)",
            c.saturation(s.queue),
        ),
        (
            "manifold_draining",
            "1 after SIGTERM: no new sessions taken",
            f64::from(u8::from(s.draining)),
        ),
        ("manifold_host_cpus", "CPUs manifold may use", c.cpus as f64),
    ];
    if let (Some(l1), Some(l5), Some(l15)) = (c.load1, c.load5, c.load15) {
        gauges.push(("manifold_host_load1", "Host load average, 1 minute", l1));
        gauges.push(("manifold_host_load5", "Host load average, 5 minutes", l5));
        gauges.push(("manifold_host_load15", "Host load average, 15 minutes", l15));
    }
    gauges
}

/// Lifetime totals, and served per worker.
fn render_counters(o: &mut String, s: &Snapshot) {
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
            "manifold_request_timeouts_total",
            "Requests answered 504: no response within --request-timeout (worker replaced)",
            t.request_timeouts,
        ),
        (
            "manifold_health_replacements_total",
            "Workers replaced after failing the health probe",
            t.health_replacements,
        ),
        (
            "manifold_connect_retries_total",
            "Requests sent to a worker once more instead of a 502",
            t.connect_retries,
        ),
        (
            "manifold_recycles_total",
            "Workers recycled (--max-requests, --max-lifetime, --max-rss)",
            t.recycles,
        ),
        (
            "manifold_reloads_total",
            "Reloads (SIGHUP) that put a new generation in service",
            t.reloads,
        ),
        (
            "manifold_output_lines_dropped_total",
            "Worker output lines not forwarded",
            s.output_lines_dropped,
        ),
        (
            "manifold_access_log_lines_dropped_total",
            "Access log lines not written (writer behind or write failed)",
            s.access_log_lines_dropped,
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
    render_worker_gauges(o, s);
}

/// A per-worker gauge: name, help, value.
type WorkerGauge = (&'static str, &'static str, fn(&WorkerStatus) -> f64);

/// Gauges labelled by worker and generation: memory and age.
fn render_worker_gauges(o: &mut String, s: &Snapshot) {
    let per_worker: [WorkerGauge; 2] = [
        (
            "manifold_worker_rss_bytes",
            "Resident memory of the worker's process group",
            |w| w.rss_bytes as f64,
        ),
        (
            "manifold_worker_age_seconds",
            "Seconds since the worker started",
            |w| w.uptime_s,
        ),
    ];
    for (name, help, f) in per_worker {
        let _ = writeln!(o, "# HELP {name} {help}\n# TYPE {name} gauge");
        for w in &s.workers {
            let _ = writeln!(
                o,
                "{name}{{worker=\"{}\",generation=\"{}\"}} {}",
                w.id,
                w.generation,
                f(w)
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pool::Totals;

    fn worker(id: u64, state: State, busy: usize) -> WorkerStatus {
        WorkerStatus {
            id,
            pid: Some(100 + id as u32),
            port: 4000 + id as u16,
            generation: 1,
            state,
            rss_bytes: 1000,
            recycle: None,
            busy,
            served: 0,
            uptime_s: 1.0,
            idle_s: 0.0,
        }
    }

    fn snapshot(workers: Vec<WorkerStatus>, queue: usize) -> Snapshot {
        Snapshot {
            workers,
            queue,
            queue_size: 10,
            min: 1,
            max: 4,
            per_worker: 2,
            spare: 0,
            request_timeout_s: 60.0,
            totals: Totals::default(),
            output_lines_dropped: 0,
            access_log_lines_dropped: 0,
            settings: Default::default(),
            last_error: None,
            generation: 1,
            draining: false,
            preload: Vec::new(),
        }
    }

    const HOST: HostLoad = HostLoad {
        cpus: 4,
        load: Some([1.0, 2.0, 3.0]),
    };

    #[test]
    fn ratios_and_saturation() {
        let s = snapshot(
            vec![
                worker(1, State::Ready, 2),
                worker(2, State::Ready, 1),
                worker(3, State::Stopping, 0),
            ],
            0,
        );
        let c = Capacity::new(&s, HOST);
        assert_eq!((c.busy, c.slots, c.workers), (3, 8, 2));
        assert_eq!((c.busy_ratio, c.workers_ratio), (3.0 / 8.0, 0.5));
        assert_eq!((c.load1, c.load_ratio), (Some(1.0), Some(0.25)));
        // busy/slots (0.375) beats load1/cpus (0.25).
        assert_eq!(c.saturation(s.queue), 0.375);
        // A loaded host counts even when manifold itself is idle.
        let busy_host = HostLoad {
            cpus: 2,
            load: Some([1.5, 0.0, 0.0]),
        };
        assert_eq!(Capacity::new(&s, busy_host).saturation(0), 0.75);
        // Waiting requests: full, whatever the ratios say; load above the CPU count caps at 1.
        let q = snapshot(vec![worker(1, State::Ready, 1)], 3);
        let c = Capacity::new(&q, HOST);
        assert_eq!((c.saturation(q.queue), c.queue_ratio), (1.0, 0.3));
        let hot = HostLoad {
            cpus: 1,
            load: Some([7.0, 0.0, 0.0]),
        };
        assert_eq!(Capacity::new(&s, hot).saturation(0), 1.0);
        // No load average known: the slots alone decide.
        let c = Capacity::new(
            &s,
            HostLoad {
                cpus: 4,
                load: None,
            },
        );
        assert_eq!((c.load_ratio, c.saturation(0)), (None, 0.375));
    }

    #[test]
    fn json_and_metrics_agree() {
        let mut s = snapshot(vec![worker(1, State::Ready, 2)], 0);
        let c = Capacity::new(&s, HOST);
        let m = render_metrics(&s, &c);
        for line in [
            "manifold_saturation 0.25",
            "manifold_capacity_slots 8",
            "manifold_requests_in_flight 2",
            "manifold_host_load15 3",
            "manifold_host_cpus 4",
            "manifold_draining 0",
            "manifold_queue_size 10",
        ] {
            assert!(m.lines().any(|l| l == line), "{line} missing:\n{m}");
        }
        let doc = StatusDoc {
            snapshot: &s,
            saturation: c.saturation(0),
            capacity: &c,
        };
        let v = serde_json::to_value(&doc).unwrap();
        assert_eq!(v["saturation"], 0.25);
        assert_eq!(v["capacity"]["slots"], 8);
        assert_eq!(v["capacity"]["load5"], 2.0);
        assert_eq!(v["draining"], false);
        assert_eq!(v["queue_size"], 10);
        assert_eq!(json(&s, &c).status, 200);
        s.draining = true;
        assert_eq!(json(&s, &c).status, 404);
        assert!(render_metrics(&s, &c).contains("\nmanifold_draining 1\n"));
    }
}
