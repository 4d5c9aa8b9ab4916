//! Pass/fail checks of a replay: `--max-failure-rate` and `--threshold '[SCOPE:]p95<2s'`; any failed
//! check makes surge exit with status 1.

use crate::recording::Kind;
use crate::timefmt::parse_duration;
use schemars::JsonSchema;
use serde::Serialize;
use std::str::FromStr;

/// Which statistic a threshold looks at.
#[derive(Debug, Clone, PartialEq)]
pub enum Stat {
    /// `pNN`: the quantile NN/100 (`p95` → 0.95).
    Quantile(f64),
    /// `max`: the slowest.
    Max,
    /// `mean`: the average.
    Mean,
}

/// What a threshold measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Every event (`all`, the default).
    All,
    /// Whole completed sessions (`session`).
    Session,
    /// Events of one type (`REQ_HOME`, `WS_RECV`, ...).
    Kind(Kind),
}

/// A `--threshold` or `--max-failure-rate` that does not parse; the message quotes it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CheckError {
    /// A scope that is not `all`, `session` or an event type.
    #[error("unknown scope \"{0}\" (all, session or an event type such as REQ_GET)")]
    Scope(String),
    /// A threshold whose scope is wrong.
    #[error("threshold \"{text}\": {err}")]
    ThresholdScope {
        /// The threshold as given.
        text: String,
        /// Its scope's error.
        err: Box<CheckError>,
    },
    /// A threshold not of the form `[SCOPE:]pNN<DURATION`.
    #[error("threshold \"{0}\": expected [SCOPE:]pNN<DURATION, e.g. p95<2s")]
    Threshold(String),
    /// A failure rate that is not a number or percentage.
    #[error("failure rate \"{0}\": expected e.g. 0.05 or 5%")]
    Rate(String),
    /// A failure rate outside 0..=1.
    #[error("failure rate \"{0}\": must be between 0 and 1 (or 0%..100%)")]
    RateRange(String),
}

impl FromStr for Scope {
    type Err = CheckError;
    fn from_str(s: &str) -> Result<Scope, CheckError> {
        match s {
            "all" => Ok(Scope::All),
            "session" => Ok(Scope::Session),
            k => (Kind::parse(k).map(Scope::Kind)).ok_or_else(|| CheckError::Scope(k.to_string())),
        }
    }
}

/// A latency threshold such as `p95<2s`, `REQ_HOME:p99<500ms`, `session:max<60s`.
#[derive(Debug, Clone, PartialEq)]
pub struct Threshold {
    /// Which latencies are looked at.
    pub scope: Scope,
    /// Which statistic of them.
    pub stat: Stat,
    /// The statistic must stay below this (ms).
    pub limit_ms: f64,
    /// As the user wrote it, to name the check in the output and summary.json.
    pub text: String,
}

impl FromStr for Threshold {
    type Err = CheckError;
    fn from_str(s: &str) -> Result<Self, CheckError> {
        let bad = || CheckError::Threshold(s.to_string());
        let (scope, rest) = match s.split_once(':') {
            Some((a, b)) => (
                a.trim().parse().map_err(|e| CheckError::ThresholdScope {
                    text: s.to_string(),
                    err: Box::new(e),
                })?,
                b,
            ),
            None => (Scope::All, s),
        };
        let (stat, limit) = rest.split_once('<').ok_or_else(bad)?;
        let stat = match stat.trim() {
            "max" => Stat::Max,
            "mean" | "avg" => Stat::Mean,
            p => {
                let n: f64 = p
                    .strip_prefix('p')
                    .ok_or_else(bad)?
                    .parse()
                    .map_err(|_| bad())?;
                if !(0.0..=100.0).contains(&n) {
                    return Err(bad());
                }
                Stat::Quantile(n / 100.0)
            }
        };
        let limit = parse_duration(limit.trim()).map_err(|_| bad())?;
        Ok(Threshold {
            scope,
            stat,
            limit_ms: limit.as_secs_f64() * 1000.0,
            text: s.to_string(),
        })
    }
}

/// Outcome of one check, as printed and stored in summary.json.
#[derive(Serialize, JsonSchema, Debug, Clone)]
#[schemars(deny_unknown_fields)]
pub struct CheckResult {
    /// The check as given (`p95<2s`, `failure_rate<=0.05`).
    pub check: String,
    /// The measured value (ms, or a rate).
    pub value: f64,
    /// The limit (ms, or a rate).
    pub limit: f64,
    /// The check passed.
    pub ok: bool,
}

impl Threshold {
    /// Evaluates against durations in ms (none pass: nothing was slow), with the run
    /// directory's percentiles (nearest rank, as summary.json states them).
    pub fn eval(&self, values: &[u32]) -> CheckResult {
        let mut v = values.to_vec();
        v.sort_unstable();
        let value = match (self.stat.clone(), v.last()) {
            (_, None) => 0.0,
            (Stat::Quantile(q), _) => f64::from(crate::stats::rank(&v, q * 100.0)),
            (Stat::Max, Some(&max)) => f64::from(max),
            (Stat::Mean, _) => crate::stats::exact(&v).mean,
        };
        CheckResult {
            check: self.text.clone(),
            value,
            limit: self.limit_ms,
            ok: value < self.limit_ms,
        }
    }
}

/// Parses `--max-failure-rate` as a fraction (`0.05`) or percentage (`5%`).
pub fn parse_rate(s: &str) -> Result<f64, CheckError> {
    let v = match s.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map(|x| x / 100.0),
        None => s.trim().parse::<f64>(),
    }
    .map_err(|_| CheckError::Rate(s.to_string()))?;
    if !(0.0..=1.0).contains(&v) {
        return Err(CheckError::RateRange(s.to_string()));
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_thresholds() {
        let t: Threshold = "p95<2s".parse().unwrap();
        assert_eq!(
            (t.scope, t.stat.clone(), t.limit_ms),
            (Scope::All, Stat::Quantile(0.95), 2000.0)
        );
        let t: Threshold = "REQ_HOME:max<250ms".parse().unwrap();
        assert_eq!(
            (t.scope, t.stat.clone(), t.limit_ms),
            (Scope::Kind(Kind::ReqHome), Stat::Max, 250.0)
        );
        let e = "REQ_HOM:p99<1s".parse::<Threshold>().unwrap_err();
        assert!(e.to_string().contains("unknown scope \"REQ_HOM\""), "{e}");
        let t: Threshold = "session:max<1m".parse().unwrap();
        assert_eq!((t.scope, t.limit_ms), (Scope::Session, 60_000.0));
        assert!("p95>2s".parse::<Threshold>().is_err());
        assert!("q95<2s".parse::<Threshold>().is_err());
        assert_eq!(parse_rate("5%").unwrap(), 0.05);
        assert!(parse_rate("2").is_err());
    }

    #[test]
    fn evaluates_against_durations() {
        let v: Vec<u32> = (1..=100).map(|v| v * 10).collect();
        let t: Threshold = "p90<901ms".parse().unwrap();
        assert!(t.eval(&v).ok);
        let t: Threshold = "p91<901ms".parse().unwrap();
        assert!(!t.eval(&v).ok);
        assert_eq!(t.eval(&[]).value, 0.0);
    }
}
