//! The one percentile definition of a run directory, nearest rank over the exact values (what
//! summary.json, the terminal, the report and `capacity` state, so one run's p95 is one number),
//! and the latency histograms (HdrHistogram) `bench` keeps for its millions of µs values.

use hdrhistogram::Histogram;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A histogram of non-negative integer values (µs for bench, ms for replay), 3 significant digits.
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new(3).expect("3 significant figures is valid")
}

/// Percentiles of one histogram, already divided into the printed unit.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Default, PartialEq)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[schemars(deny_unknown_fields)]
pub struct Summary {
    /// Values recorded.
    #[cfg_attr(test, ts(type = "number"))]
    pub count: u64,
    /// Their mean.
    pub mean: f64,
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 95th percentile.
    pub p95: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    #[serde(rename = "p99.9")]
    pub p999: f64,
    /// Largest value.
    pub max: f64,
}

/// Nearest-rank percentile `p` (0..=100) of sorted, non-empty `v`: the smallest value with at
/// least p% of the values at or below it. The one definition every run-directory figure uses.
/// (The rank is rounded up after dropping float noise: p99.9 of 1000 values is the 999th.)
pub fn rank<T: Copy>(v: &[T], p: f64) -> T {
    let idx = ((p / 100.0) * v.len() as f64 - 1e-9).ceil() as usize;
    v[idx.clamp(1, v.len()) - 1]
}

/// The summary of exact values (ms), nearest rank; the mean rounded to µs as from a histogram.
pub fn exact(values: &[u32]) -> Summary {
    if values.is_empty() {
        return Summary::default();
    }
    let mut v = values.to_vec();
    v.sort_unstable();
    let q = |p: f64| f64::from(rank(&v, p));
    let sum: u64 = v.iter().map(|&x| u64::from(x)).sum();
    Summary {
        count: v.len() as u64,
        mean: (sum as f64 / v.len() as f64 * 1000.0).round() / 1000.0,
        p50: q(50.0),
        p90: q(90.0),
        p95: q(95.0),
        p99: q(99.0),
        p999: q(99.9),
        max: f64::from(v[v.len() - 1]),
    }
}

/// Summarises `h`, dividing every value by `div` (e.g. 1000 for µs -> ms).
pub fn summarize(h: &Histogram<u64>, div: f64) -> Summary {
    if h.is_empty() {
        return Summary::default();
    }
    let q = |p: f64| h.value_at_quantile(p) as f64 / div;
    Summary {
        count: h.len(),
        mean: (h.mean() / div * 1000.0).round() / 1000.0,
        p50: q(0.50),
        p90: q(0.90),
        p95: q(0.95),
        p99: q(0.99),
        p999: q(0.999),
        max: h.max() as f64 / div,
    }
}

/// A histogram in HdrHistogram's standard compressed form (V2 + deflate), base64: bench's
/// `--json` carries it so `surge merge` adds segments' histograms exactly.
pub fn encode(h: &Histogram<u64>) -> String {
    use base64::Engine as _;
    let mut bytes = Vec::new();
    hdrhistogram::serialization::Serializer::serialize(
        &mut hdrhistogram::serialization::V2DeflateSerializer::new(),
        h,
        &mut bytes,
    )
    .expect("serializing into memory");
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Text that is not an `encode`d histogram.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    /// Not base64 at all.
    #[error("not base64: {0}")]
    Base64(#[from] base64::DecodeError),
    /// Base64, but not a serialized histogram.
    #[error("not an HdrHistogram: {0:?}")]
    Histogram(hdrhistogram::serialization::DeserializeError),
}

/// The histogram of `encode`'s text; an error says why it is not one.
pub fn decode(text: &str) -> Result<Histogram<u64>, DecodeError> {
    use base64::Engine as _;
    let bytes = base64::engine::general_purpose::STANDARD.decode(text.trim())?;
    hdrhistogram::serialization::Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .map_err(DecodeError::Histogram)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_of_uniform_values() {
        let mut h = new_histogram();
        for v in 1..=1000u64 {
            h.record(v).unwrap();
        }
        let s = summarize(&h, 1.0);
        assert_eq!(s.count, 1000);
        assert_eq!(s.p50, 500.0);
        assert_eq!(s.p99, 990.0);
        assert_eq!(s.max, 1000.0);
    }

    #[test]
    fn exact_percentiles_are_nearest_rank() {
        let v: Vec<u32> = (1..=1000).rev().collect();
        let s = exact(&v);
        assert_eq!((s.count, s.p50, s.p90, s.p99), (1000, 500.0, 900.0, 990.0));
        assert_eq!((s.p999, s.max, s.mean), (999.0, 1000.0, 500.5));
        assert_eq!(rank(&[7], 0.0), 7);
        assert_eq!(exact(&[]), Summary::default());
        // Past HdrHistogram's exact range (2048 at 3 digits) the two differ; exact does not.
        assert_eq!(exact(&[123_457]).p50, 123_457.0);
    }

    #[test]
    fn encoded_histograms_add_up_exactly() {
        let (mut a, mut b, mut all) = (new_histogram(), new_histogram(), new_histogram());
        for v in 1..=20_000u64 {
            let x = v * v % 1_000_003;
            (if v % 2 == 0 { &mut a } else { &mut b })
                .record(x)
                .unwrap();
            all.record(x).unwrap();
        }
        let mut merged = decode(&encode(&a)).unwrap();
        merged.add(decode(&encode(&b)).unwrap()).unwrap();
        assert_eq!(merged, all);
        assert_eq!(summarize(&merged, 1.0), summarize(&all, 1.0));
        assert!(decode("bm90IGEgaGlzdG9ncmFt").is_err());
    }
}
