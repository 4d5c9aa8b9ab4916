//! Latency histograms for `/metrics`, by status class: lock-free fixed buckets (one atomic add per
//! observation), so recording every request costs nothing measurable. Why not hdrhistogram: these
//! are Prometheus histograms (cumulative `le` buckets, `_sum`, `_count`), which need only fixed
//! bounds, and an atomic array needs no lock on the request path.

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Upper bounds in seconds: from 0.5 ms (manifold's own answers) to 60 s (the request timeout).
pub const BOUNDS: [f64; 16] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
    60.0,
];

/// Status classes kept apart: 1xx … 5xx.
pub const CLASSES: [&str; 5] = ["1xx", "2xx", "3xx", "4xx", "5xx"];

/// One histogram per status class.
pub struct Histogram {
    /// Per class: one count per bound plus +Inf (not cumulative).
    buckets: [[AtomicU64; BOUNDS.len() + 1]; CLASSES.len()],
    /// Per class: sum of observations in microseconds.
    sum_us: [AtomicU64; CLASSES.len()],
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram {
            buckets: std::array::from_fn(|_| std::array::from_fn(|_| AtomicU64::new(0))),
            sum_us: std::array::from_fn(|_| AtomicU64::new(0)),
        }
    }
}

/// The class index of an HTTP status (unknown codes count as 5xx).
pub fn class(status: u16) -> usize {
    match status {
        100..=199 => 0,
        200..=299 => 1,
        300..=399 => 2,
        400..=499 => 3,
        _ => 4,
    }
}

impl Histogram {
    /// Records one observation for a response with `status`.
    pub fn observe(&self, status: u16, d: Duration) {
        let c = class(status);
        let s = d.as_secs_f64();
        let i = BOUNDS.iter().position(|b| s <= *b).unwrap_or(BOUNDS.len());
        self.buckets[c][i].fetch_add(1, Ordering::Relaxed);
        self.sum_us[c].fetch_add(d.as_micros() as u64, Ordering::Relaxed);
    }

    /// Observations of one class.
    pub fn count(&self, class: usize) -> u64 {
        self.buckets[class]
            .iter()
            .map(|b| b.load(Ordering::Relaxed))
            .sum()
    }

    /// Appends the Prometheus text of this histogram; `labels` (e.g. `app="x",`) precede
    /// `class`. Classes never seen are left out.
    pub fn render(&self, o: &mut String, name: &str, labels: &str) {
        for (c, class) in CLASSES.iter().enumerate() {
            if self.count(c) == 0 {
                continue;
            }
            let mut cum = 0;
            for (i, b) in self.buckets[c].iter().enumerate() {
                cum += b.load(Ordering::Relaxed);
                let le = BOUNDS.get(i).map_or("+Inf".to_string(), |b| b.to_string());
                let _ = writeln!(
                    o,
                    "{name}_bucket{{{labels}class=\"{class}\",le=\"{le}\"}} {cum}"
                );
            }
            let sum = self.sum_us[c].load(Ordering::Relaxed) as f64 / 1e6;
            let _ = writeln!(o, "{name}_sum{{{labels}class=\"{class}\"}} {sum}");
            let _ = writeln!(o, "{name}_count{{{labels}class=\"{class}\"}} {cum}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_cumulative_by_class() {
        let h = Histogram::default();
        h.observe(200, Duration::from_micros(300));
        h.observe(204, Duration::from_millis(7));
        h.observe(503, Duration::from_secs(100));
        let mut o = String::new();
        h.render(&mut o, "x", "app=\"a\",");
        let has = |l: &str| assert!(o.lines().any(|x| x == l), "{l} missing:\n{o}");
        has("x_bucket{app=\"a\",class=\"2xx\",le=\"0.0005\"} 1");
        has("x_bucket{app=\"a\",class=\"2xx\",le=\"0.005\"} 1");
        has("x_bucket{app=\"a\",class=\"2xx\",le=\"0.01\"} 2");
        has("x_bucket{app=\"a\",class=\"2xx\",le=\"+Inf\"} 2");
        has("x_count{app=\"a\",class=\"2xx\"} 2");
        has("x_sum{app=\"a\",class=\"2xx\"} 0.0073");
        has("x_bucket{app=\"a\",class=\"5xx\",le=\"60\"} 0");
        has("x_count{app=\"a\",class=\"5xx\"} 1");
        assert!(!o.contains("4xx"));
        assert_eq!(
            (h.count(1), h.count(4), class(101), class(999)),
            (2, 1, 0, 4)
        );
    }
}
