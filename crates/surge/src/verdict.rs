//! The regression verdict of two runs, without I/O: the `--max-regression METRIC:STAT:MARGIN`
//! grammar ([`Spec`]), a metric's values ([`Samples`]) and the judgement ([`judge`]) that
//! `surge compare` and `surge report --max-regression` both state, so they give one answer.
//!
//! A metric regressed when the new run's statistic exceeds the base's by more than the margin
//! *and* beyond run-to-run noise: even the low end of a seeded bootstrap interval (95%,
//! two-sided) of the difference is over the margin. The margin says how much slower is
//! acceptable; the interval how much of the difference noise could explain. (With only a low end
//! above zero, a pair of runs of one unchanged app failed in the test suite on a busy 2-core
//! host: a shift of a few percent between runs is real there, but it is not the app's.) Both runs are resampled with
//! replacement; a sample of more than [`RESAMPLE_CAP`] values is resampled at that size and its
//! spread scaled back by √(m/n) (the m-out-of-n bootstrap), so a bench result of millions of
//! requests is judged in the same time as a small replay.

use crate::recording::Kind;
use serde::Serialize;
use std::fmt;
use std::str::FromStr;

/// Fewest values each run must have for a regression: the bootstrap of a percentile of a handful
/// of values is far narrower than the real noise (the p95 of 3 values is their largest).
pub const MIN_VALUES: u64 = 20;

/// Values drawn per resample at most (see the module doc).
pub const RESAMPLE_CAP: u64 = 10_000;

/// What a `--max-regression` compares: a set of durations each run has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    /// `page_load`: per session, the home page and its assets (as the report's page load).
    PageLoad,
    /// `session`: per completed session, first row to last.
    Session,
    /// `events`: every replayed event (request or message) of every session.
    Events,
    /// `lineN`: the events of recording.log line N.
    Line(u32),
    /// `REQ_HOME`, `WS_RECV`, …: the events of one type.
    Kind(Kind),
    /// `latency`: a bench result's request latencies (`surge bench --json`).
    Latency,
}

impl fmt::Display for Metric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Metric::PageLoad => f.write_str("page_load"),
            Metric::Session => f.write_str("session"),
            Metric::Events => f.write_str("events"),
            Metric::Line(n) => write!(f, "line{n}"),
            Metric::Kind(k) => f.write_str(k.name()),
            Metric::Latency => f.write_str("latency"),
        }
    }
}

/// Which statistic of a metric's values is compared.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Stat {
    /// `p50`, `p90`, `p95`, `p99`: nearest-rank percentile (the run directory's one definition).
    Percentile(u8),
    /// `mean`.
    Mean,
}

impl fmt::Display for Stat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Stat::Percentile(p) => write!(f, "p{p}"),
            Stat::Mean => f.write_str("mean"),
        }
    }
}

/// How much slower the new run may be.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Margin {
    /// `10%`: relative to the base run's statistic.
    Percent(f64),
    /// `50ms`, `1s`: an absolute duration (ms).
    Ms(f64),
}

impl Margin {
    /// The allowed increase in ms over a base statistic of `base` ms.
    pub fn allowed(self, base: f64) -> f64 {
        match self {
            Margin::Percent(p) => base * p / 100.0,
            Margin::Ms(ms) => ms,
        }
    }
}

impl fmt::Display for Margin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Margin::Percent(p) => write!(f, "{p}%"),
            Margin::Ms(ms) => write!(f, "{ms}ms"),
        }
    }
}

/// One `--max-regression METRIC:STAT:MARGIN`, e.g. `page_load:p95:10%` or `line7:mean:50ms`.
#[derive(Debug, Clone, PartialEq)]
pub struct Spec {
    /// What is compared.
    pub metric: Metric,
    /// Which statistic of it.
    pub stat: Stat,
    /// How much worse it may get.
    pub margin: Margin,
}

impl fmt::Display for Spec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.metric, self.stat, self.margin)
    }
}

/// A `--max-regression` that is not `METRIC:STAT:MARGIN`; the message quotes the text (escaped,
/// cut) and names the part at fault.
#[derive(Debug, thiserror::Error)]
#[error("--max-regression {text}: {what}")]
pub struct SpecError {
    /// The spec as given, escaped and cut.
    pub text: String,
    /// Which part is wrong and what is expected.
    pub what: String,
}

impl FromStr for Spec {
    type Err = SpecError;

    fn from_str(s: &str) -> Result<Spec, SpecError> {
        let err = |what: String| SpecError {
            text: quoted(s),
            what,
        };
        let parts: Vec<&str> = s.split(':').collect();
        let [metric, stat, margin] = parts[..] else {
            return Err(err(
                "expected METRIC:STAT:MARGIN, e.g. page_load:p95:10%".into()
            ));
        };
        let metric = parse_metric(metric.trim()).ok_or_else(|| {
            err(format!(
                "unknown metric {}: expected page_load, session, events, lineN (a recording line), an event type (REQ_HOME, WS_RECV, …) or latency (bench)",
                quoted(metric)
            ))
        })?;
        let stat = match stat.trim() {
            "p50" => Stat::Percentile(50),
            "p90" => Stat::Percentile(90),
            "p95" => Stat::Percentile(95),
            "p99" => Stat::Percentile(99),
            "mean" => Stat::Mean,
            other => {
                return Err(err(format!(
                    "unknown statistic {}: expected p50, p90, p95, p99 or mean",
                    quoted(other)
                )))
            }
        };
        let margin = parse_margin(margin.trim()).ok_or_else(|| {
            err(format!(
                "margin {}: expected a percentage (10%) or a duration (50ms, 1s)",
                quoted(margin)
            ))
        })?;
        Ok(Spec {
            metric,
            stat,
            margin,
        })
    }
}

/// `s` in quotes, escaped and cut, for an error line.
fn quoted(s: &str) -> String {
    format!("\"{}\"", grammar::echo::echo(s.as_bytes(), 80))
}

fn parse_metric(s: &str) -> Option<Metric> {
    match s {
        "page_load" => Some(Metric::PageLoad),
        "session" => Some(Metric::Session),
        "events" => Some(Metric::Events),
        "latency" => Some(Metric::Latency),
        _ => {
            if let Some(n) = s.strip_prefix("line") {
                return n.parse().ok().filter(|&n| n > 0).map(Metric::Line);
            }
            Kind::parse(s).map(Metric::Kind)
        }
    }
}

fn parse_margin(s: &str) -> Option<Margin> {
    if let Some(p) = s.strip_suffix('%') {
        let p: f64 = p.trim().parse().ok()?;
        return (p.is_finite() && p >= 0.0).then_some(Margin::Percent(p));
    }
    let d = crate::timefmt::parse_duration(s).ok()?;
    Some(Margin::Ms(d.as_secs_f64() * 1000.0))
}

/// A metric's values in one run (ms), sorted, each with how many times it occurred (a bench
/// histogram's buckets, or 1 per value of a run directory).
#[derive(Debug, Clone, Default)]
pub struct Samples {
    values: Vec<f64>,
    /// Running count: `cum[i]` values are at or below `values[i]`.
    cum: Vec<u64>,
}

impl Samples {
    /// From individual values (ms).
    pub fn of(mut v: Vec<f64>) -> Samples {
        v.sort_by(f64::total_cmp);
        let cum = (1..=v.len() as u64).collect();
        Samples { values: v, cum }
    }

    /// From `(value ms, count)` pairs in ascending value order (a histogram's buckets).
    pub fn weighted(pairs: impl IntoIterator<Item = (f64, u64)>) -> Samples {
        let mut s = Samples::default();
        let mut total = 0;
        for (v, c) in pairs.into_iter().filter(|p| p.1 > 0) {
            total += c;
            s.values.push(v);
            s.cum.push(total);
        }
        s
    }

    /// How many values.
    pub fn len(&self) -> u64 {
        self.cum.last().copied().unwrap_or(0)
    }

    /// No values.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The value of rank `k` (0-based) in ascending order.
    fn at(&self, k: u64) -> f64 {
        let i = self.cum.partition_point(|&c| c <= k);
        self.values[i.min(self.values.len() - 1)]
    }

    /// The statistic of all values (non-empty).
    pub fn stat(&self, stat: Stat) -> f64 {
        match stat {
            Stat::Percentile(p) => self.at(rank_index(self.len(), p)),
            Stat::Mean => {
                let mut prev = 0;
                let mut sum = 0.0;
                for (v, &c) in self.values.iter().zip(&self.cum) {
                    sum += v * (c - prev) as f64;
                    prev = c;
                }
                sum / self.len() as f64
            }
        }
    }

    /// The statistic of `m` values drawn with replacement.
    fn resampled(&self, stat: Stat, m: u64, rng: &mut SplitMix) -> f64 {
        let n = self.len();
        let mut draw: Vec<f64> = (0..m).map(|_| self.at(rng.below(n))).collect();
        match stat {
            Stat::Percentile(p) => {
                let k = rank_index(m, p) as usize;
                *draw.select_nth_unstable_by(k, f64::total_cmp).1
            }
            Stat::Mean => draw.iter().sum::<f64>() / m as f64,
        }
    }
}

/// 0-based index of the nearest-rank percentile `p` of `n` values ([`crate::stats::rank`]).
fn rank_index(n: u64, p: u8) -> u64 {
    let r = ((f64::from(p) / 100.0) * n as f64 - 1e-9).ceil() as u64;
    r.clamp(1, n) - 1
}

/// The seeded generator of the resamples (SplitMix64): the same seed gives the same interval.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0).
    fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next()) * u128::from(n)) >> 64) as u64
    }
}

/// How the noise interval is drawn: `--resamples` and `--seed`.
#[derive(Debug, Clone, Copy)]
pub struct Bootstrap {
    /// Resamples of each run.
    pub resamples: usize,
    /// The generator's seed (a verdict is reproducible).
    pub seed: u64,
}

/// The verdict's flags, shared by `surge compare` and `surge report`.
#[derive(clap::Args, Debug, Clone)]
pub struct VerdictArgs {
    /// A metric that must not get slower: METRIC:STAT:MARGIN, e.g. page_load:p95:10% (repeatable).
    /// METRIC: page_load, session, events, lineN, an event type (REQ_HOME, WS_RECV, …) or
    /// latency (bench); STAT: p50, p90, p95, p99 or mean; MARGIN: a percentage or a duration.
    #[arg(long = "max-regression", value_name = "METRIC:STAT:MARGIN", value_parser = parse_spec)]
    pub max_regression: Vec<Spec>,
    /// Seed of the bootstrap's resamples (the same seed gives the same verdict).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Bootstrap resamples per metric.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u32).range(100..=100_000))]
    pub resamples: u32,
}

impl Default for VerdictArgs {
    fn default() -> VerdictArgs {
        VerdictArgs {
            max_regression: Vec::new(),
            seed: 1,
            resamples: 1000,
        }
    }
}

impl VerdictArgs {
    /// The bootstrap these flags ask for.
    pub fn bootstrap(&self) -> Bootstrap {
        Bootstrap {
            resamples: self.resamples as usize,
            seed: self.seed,
        }
    }
}

/// clap's parser of `--max-regression`.
fn parse_spec(s: &str) -> Result<Spec, SpecError> {
    s.parse()
}

/// One metric judged: both runs' statistic, the difference with its noise interval, and whether
/// it is a regression. `surge compare --json` writes a list of these.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Verdict {
    /// The spec, normalised (`page_load:p95:10%`).
    pub spec: String,
    /// The base run's statistic (ms).
    pub base_ms: f64,
    /// The new run's statistic (ms).
    pub new_ms: f64,
    /// `new_ms - base_ms`.
    pub diff_ms: f64,
    /// The allowed increase (the margin in ms).
    pub allowed_ms: f64,
    /// The 95% bootstrap interval of the difference: low end.
    pub low_ms: f64,
    /// The 95% bootstrap interval of the difference: high end.
    pub high_ms: f64,
    /// Values in the base run.
    pub base_n: u64,
    /// Values in the new run.
    pub new_n: u64,
    /// Over the margin even at the low end of the noise interval.
    pub regression: bool,
}

impl Verdict {
    /// One line: `page_load:p95:10%: 120.0 ms → 150.0 ms (+25.0%, noise interval +18.0..+32.0 ms): regression`.
    pub fn line(&self) -> String {
        let pct = if self.base_ms > 0.0 {
            format!("{:+.1}%, ", self.diff_ms / self.base_ms * 100.0)
        } else {
            String::new()
        };
        let why = if self.regression {
            "regression"
        } else if self.base_n.min(self.new_n) < MIN_VALUES {
            "ok (too few values to judge)"
        } else if self.diff_ms > self.allowed_ms {
            "ok (over the margin but within the noise)"
        } else {
            "ok"
        };
        format!(
            "{}: {:.1} ms → {:.1} ms ({pct}allowed +{:.1} ms, 95% interval {:+.1}..{:+.1} ms; n {} / {}): {why}",
            self.spec,
            self.base_ms,
            self.new_ms,
            self.allowed_ms,
            self.low_ms,
            self.high_ms,
            self.base_n,
            self.new_n
        )
    }
}

/// Judges `spec` on its values in the base and the new run (both non-empty).
pub fn judge(spec: &Spec, base: &Samples, new: &Samples, boot: Bootstrap) -> Verdict {
    let (b, n) = (base.stat(spec.stat), new.stat(spec.stat));
    let allowed = spec.margin.allowed(b);
    let mut rng = SplitMix(boot.seed);
    let side = |s: &Samples, est: f64, rng: &mut SplitMix| {
        let m = s.len().min(RESAMPLE_CAP);
        let scale = (m as f64 / s.len() as f64).sqrt();
        est + (s.resampled(spec.stat, m, rng) - est) * scale
    };
    let mut diffs: Vec<f64> = (0..boot.resamples.max(1))
        .map(|_| side(new, n, &mut rng) - side(base, b, &mut rng))
        .collect();
    diffs.sort_by(f64::total_cmp);
    let q = |p: f64| diffs[((p * diffs.len() as f64) as usize).min(diffs.len() - 1)];
    let (low, high) = (q(0.025), q(0.975));
    Verdict {
        spec: spec.to_string(),
        base_ms: b,
        new_ms: n,
        diff_ms: n - b,
        allowed_ms: allowed,
        low_ms: low,
        high_ms: high,
        base_n: base.len(),
        new_n: new.len(),
        regression: n - b > allowed && low > allowed && base.len().min(new.len()) >= MIN_VALUES,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_and_bad_ones_name_the_part() {
        let s: Spec = "page_load:p95:10%".parse().unwrap();
        assert_eq!(s.metric, Metric::PageLoad);
        assert_eq!(s.stat, Stat::Percentile(95));
        assert_eq!(s.margin, Margin::Percent(10.0));
        let s: Spec = "line7:mean:50ms".parse().unwrap();
        assert_eq!((s.metric, s.margin), (Metric::Line(7), Margin::Ms(50.0)));
        let s: Spec = "WS_RECV:p99:1s".parse().unwrap();
        assert_eq!(s.metric, Metric::Kind(Kind::WsRecv));
        for (bad, part) in [
            ("page_load:p95", "METRIC:STAT:MARGIN"),
            ("pageload:p95:10%", "unknown metric"),
            ("page_load:p97:10%", "unknown statistic"),
            ("page_load:p95:ten", "margin"),
            ("line0:p95:10%", "unknown metric"),
        ] {
            let e = bad.parse::<Spec>().unwrap_err().to_string();
            assert!(e.contains(part), "{bad}: {e}");
            assert!(!e.contains('\n'), "{e}");
        }
    }

    #[test]
    fn weighted_and_plain_samples_agree() {
        let plain = Samples::of(vec![3.0, 1.0, 2.0, 2.0]);
        let w = Samples::weighted([(1.0, 1), (2.0, 2), (3.0, 1)]);
        for stat in [Stat::Percentile(50), Stat::Percentile(99), Stat::Mean] {
            assert_eq!(plain.stat(stat), w.stat(stat));
        }
        assert_eq!(plain.stat(Stat::Percentile(50)), 2.0);
        assert_eq!(plain.stat(Stat::Mean), 2.0);
    }

    fn noisy(base: f64, n: usize, seed: u64) -> Samples {
        let mut r = SplitMix(seed);
        Samples::of(
            (0..n)
                .map(|_| base + (r.below(1000) as f64) / 100.0)
                .collect(),
        )
    }

    #[test]
    fn a_real_slowdown_is_a_regression_and_noise_is_not() {
        let boot = Bootstrap {
            resamples: 500,
            seed: 1,
        };
        let spec: Spec = "events:p95:10%".parse().unwrap();
        let same = judge(&spec, &noisy(50.0, 400, 1), &noisy(50.0, 400, 2), boot);
        assert!(!same.regression, "{}", same.line());
        let slow = judge(&spec, &noisy(50.0, 400, 1), &noisy(60.0, 400, 2), boot);
        assert!(slow.regression, "{}", slow.line());
        // Few values: a big difference can be noise.
        let few = judge(&spec, &noisy(50.0, 3, 1), &noisy(60.0, 3, 2), boot);
        assert!(!few.regression, "{}", few.line());
        // The same seed gives the same interval.
        assert_eq!(
            judge(&spec, &noisy(50.0, 400, 1), &noisy(60.0, 400, 2), boot),
            slow
        );
    }
}
