//! Live metrics of a run, for `--dashboard`'s `/metrics` (Prometheus) and its page: users active,
//! sessions done/failed, event latencies by type, bench requests, manifold's workers. Filled by
//! lock-free hooks (atomics only: bench calls one per request on every lane) and encoded by
//! prometheus-client at each scrape, so a run without `--dashboard` pays nothing but an `Option`
//! check.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric, MetricEncoder};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Mutex;

/// Upper bounds (seconds) of every latency histogram: 1 ms to 60 s, a few per decade.
pub const BUCKETS: [f64; 16] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 3.0, 5.0, 10.0, 30.0, 60.0,
];

/// A Prometheus histogram of atomics (per-bucket counts, sum in µs): observing never locks.
#[derive(Debug, Default)]
pub struct AtomicHistogram {
    buckets: [AtomicU64; BUCKETS.len() + 1],
    sum_us: AtomicU64,
    count: AtomicU64,
}

impl AtomicHistogram {
    /// Records one duration in microseconds.
    pub fn observe_us(&self, us: u64) {
        let s = us as f64 / 1e6;
        let i = BUCKETS
            .iter()
            .position(|b| s <= *b)
            .unwrap_or(BUCKETS.len());
        self.buckets[i].fetch_add(1, Ordering::Relaxed);
        self.sum_us.fetch_add(us, Ordering::Relaxed);
        self.count.fetch_add(1, Ordering::Relaxed);
    }

    /// Observations so far.
    pub fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }

    /// (upper bound, count in that bucket alone) pairs, `+Inf` last; the encoder makes them
    /// cumulative.
    fn buckets(&self) -> Vec<(f64, u64)> {
        let bounds = BUCKETS.iter().copied().chain([f64::INFINITY]);
        (bounds.zip(&self.buckets))
            .map(|(b, c)| (b, c.load(Ordering::Relaxed)))
            .collect()
    }
}

impl EncodeMetric for AtomicHistogram {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        let sum = self.sum_us.load(Ordering::Relaxed) as f64 / 1e6;
        encoder.encode_histogram::<prometheus_client::encoding::NoLabelSet>(
            sum,
            self.count(),
            &self.buckets(),
            None,
        )
    }

    fn metric_type(&self) -> MetricType {
        MetricType::Histogram
    }
}

/// manifold's pool as last polled (`--manifold`).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PoolSample {
    /// Workers taking requests.
    pub ready: u32,
    /// Of them, serving at least one request.
    pub busy: u32,
    /// Workers spawned, not yet accepting.
    pub starting: u32,
    /// Requests waiting for a worker.
    pub queue: u32,
    /// manifold's 0–1 saturation.
    pub saturation: f64,
}

/// Everything `/metrics` shows; shared by the run (hooks) and the dashboard (scrapes).
#[derive(Debug, Default)]
pub struct LiveMetrics {
    users: AtomicU32,
    done: AtomicU64,
    failed: AtomicU64,
    /// Event durations by event type (recording.log's names).
    events: Vec<(&'static str, AtomicHistogram)>,
    bench: AtomicHistogram,
    bench_errors: AtomicU64,
    pool: Mutex<Option<PoolSample>>,
}

impl LiveMetrics {
    /// Empty metrics for these event types (all present from the start, so every scrape lists
    /// the same series; a replay passes recording.log's vocabulary, bench none).
    pub fn new(event_types: &[&'static str]) -> LiveMetrics {
        LiveMetrics {
            events: (event_types.iter())
                .map(|t| (*t, AtomicHistogram::default()))
                .collect(),
            ..Default::default()
        }
    }

    /// Users in their loop of sessions now.
    pub fn set_users(&self, n: u32) {
        self.users.store(n, Ordering::Relaxed);
    }

    /// One event of type `name` took `ms`.
    pub fn event(&self, name: &str, ms: u64) {
        if let Some((_, h)) = self.events.iter().find(|(t, _)| *t == name) {
            h.observe_us(ms.saturating_mul(1000));
        }
    }

    /// One session ended (its events already recorded with [`LiveMetrics::event`]).
    pub fn session(&self, ok: bool) {
        let c = if ok { &self.done } else { &self.failed };
        c.fetch_add(1, Ordering::Relaxed);
    }

    /// One bench request answered in `us` (or failed).
    pub fn bench_request(&self, us: Option<u64>) {
        match us {
            Some(us) => self.bench.observe_us(us),
            None => {
                self.bench_errors.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// manifold's pool as just polled.
    pub fn set_pool(&self, s: PoolSample) {
        *self.pool.lock().unwrap_or_else(|p| p.into_inner()) = Some(s);
    }

    /// (users, sessions done, sessions failed) now.
    pub fn sessions(&self) -> (u32, u64, u64) {
        let l = |a: &AtomicU64| a.load(Ordering::Relaxed);
        (
            self.users.load(Ordering::Relaxed),
            l(&self.done),
            l(&self.failed),
        )
    }

    /// (requests answered, requests failed) of a bench run.
    pub fn bench_counts(&self) -> (u64, u64) {
        (
            self.bench.count(),
            self.bench_errors.load(Ordering::Relaxed),
        )
    }

    /// The OpenMetrics text of `/metrics`.
    pub fn encode(self: &std::sync::Arc<Self>) -> String {
        let mut reg = Registry::default();
        reg.register_collector(Box::new(self.clone()));
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &reg).expect("writing to a String");
        out
    }
}

/// A gauge or counter value as prometheus-client encodes it.
fn gauge(e: &mut DescriptorEncoder, name: &str, help: &str, v: f64) -> std::fmt::Result {
    e.encode_descriptor(name, help, None, MetricType::Gauge)?
        .encode_gauge(&v)
}

impl Collector for LiveMetrics {
    fn encode(&self, mut e: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let (users, done, failed) = self.sessions();
        gauge(
            &mut e,
            "surge_users_active",
            "Simulated users in their loop of sessions",
            f64::from(users),
        )?;
        let mut m = e.encode_descriptor(
            "surge_sessions",
            "Sessions ended, by outcome (done or failed)",
            None,
            MetricType::Counter,
        )?;
        for (outcome, n) in [("done", done), ("failed", failed)] {
            m.encode_family(&[("outcome", outcome)])?
                .encode_counter::<prometheus_client::encoding::NoLabelSet, _, u64>(&n, None)?;
        }
        let mut m = e.encode_descriptor(
            "surge_event_duration_seconds",
            "Replayed event durations by event type (recording.log's type)",
            None,
            MetricType::Histogram,
        )?;
        for (t, h) in &self.events {
            h.encode(m.encode_family(&[("type", *t)])?)?;
        }
        if self.bench.count() + self.bench_errors.load(Ordering::Relaxed) > 0 {
            self.bench.encode(e.encode_descriptor(
                "surge_bench_request_duration_seconds",
                "surge bench: answered requests' latency",
                None,
                MetricType::Histogram,
            )?)?;
            let errors = self.bench_errors.load(Ordering::Relaxed);
            e.encode_descriptor(
                "surge_bench_errors",
                "surge bench: failed requests",
                None,
                MetricType::Counter,
            )?
            .encode_counter::<prometheus_client::encoding::NoLabelSet, _, u64>(&errors, None)?;
        }
        let pool = *self.pool.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(p) = pool {
            let mut m = e.encode_descriptor(
                "surge_manifold_workers",
                "manifold's workers as last polled, by state (ready, busy, starting)",
                None,
                MetricType::Gauge,
            )?;
            for (state, n) in [
                ("ready", p.ready),
                ("busy", p.busy),
                ("starting", p.starting),
            ] {
                m.encode_family(&[("state", state)])?
                    .encode_gauge(&f64::from(n))?;
            }
            gauge(
                &mut e,
                "surge_manifold_queue",
                "Requests waiting in manifold's queue",
                f64::from(p.queue),
            )?;
            gauge(
                &mut e,
                "surge_manifold_saturation",
                "manifold's saturation (0 idle, 1 full)",
                p.saturation,
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// The text a scrape gets: counters, and cumulative buckets ending at the count.
    #[test]
    fn encoded_text() {
        let m = Arc::new(LiveMetrics::new(&["REQ_HOME"]));
        for ms in [1, 2, 40, 40, 7000] {
            m.event("REQ_HOME", ms);
        }
        m.session(true);
        m.session(false);
        let t = m.encode();
        assert!(
            t.contains("surge_sessions_total{outcome=\"done\"} 1"),
            "{t}"
        );
        assert!(t.contains("le=\"0.05\",type=\"REQ_HOME\"} 4"), "{t}");
        assert!(t.contains("le=\"+Inf\",type=\"REQ_HOME\"} 5"), "{t}");
        assert!(!t.contains("surge_bench"), "{t}");
    }
}
