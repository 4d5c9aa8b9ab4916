//! Latency histograms (HdrHistogram) and the percentile summary both `bench` and `replay` print.

use hdrhistogram::Histogram;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A histogram of non-negative integer values (µs for bench, ms for replay), 3 significant digits.
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new(3).expect("3 significant figures is valid")
}

/// Percentiles of one histogram, already divided into the printed unit.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Default, PartialEq)]
#[schemars(deny_unknown_fields)]
pub struct Summary {
    /// Values recorded.
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

/// The histogram of `encode`'s text; an error says why it is not one.
pub fn decode(text: &str) -> Result<Histogram<u64>, String> {
    use base64::Engine as _;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .map_err(|e| format!("not base64: {e}"))?;
    hdrhistogram::serialization::Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .map_err(|e| format!("not an HdrHistogram: {e:?}"))
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
