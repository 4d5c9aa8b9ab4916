//! Service-level objectives of `surge capacity` (`--slo 'page_load:p95<2s'`) and measuring one
//! step against them. Values come from the step's sessions as its replay returned them, paired
//! into events by the report's reader ([`crate::report::load::session_of`]) and its nearest-rank
//! percentiles, so a step's numbers are the ones `surge report` shows for that step's directory.

use crate::checks::{Stat, Threshold};
use crate::recording::Kind;
use crate::report::lines::Lines;
use crate::report::load::Session;
use crate::report::stats;
use crate::rundir::Ended;
use crate::stats::rank;
use std::fmt;
use std::str::FromStr;

/// What an SLO measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    /// Page load: home + its assets, request times summed without pauses (as the report's).
    PageLoad,
    /// Whole completed sessions.
    Session,
    /// Every event.
    All,
    /// Events of one type (`WS_RECV`, `REQ_GET`, ...).
    Kind(Kind),
    /// `until@LINE`: from the home page's start to the end of recording line LINE (e.g. the
    /// WS_RECV bringing the first plot), the event times summed without the replay's pauses, as
    /// page load is; a session that did not reach the line is not counted (it failed).
    Until(u32),
}

impl fmt::Display for Metric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Metric::PageLoad => f.write_str("page_load"),
            Metric::Session => f.write_str("session"),
            Metric::All => f.write_str("all"),
            Metric::Kind(k) => f.write_str(k.name()),
            Metric::Until(line) => write!(f, "until@{line}"),
        }
    }
}

/// One `--slo`: METRIC:STAT<LIMIT, e.g. `page_load:p95<2s`, `WS_RECV:p99<3s`, `session:max<1m`.
#[derive(Debug, Clone, PartialEq)]
pub struct Slo {
    /// What is measured.
    pub metric: Metric,
    /// Which statistic of it (`pNN`, `max`, `mean`).
    pub stat: Stat,
    /// The statistic must stay below this (ms).
    pub limit_ms: f64,
    /// As given.
    pub text: String,
}

/// A `--slo` that does not parse: its text and what is wrong.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("--slo \"{text}\": {why}; expected METRIC:pNN<DURATION, METRIC page_load, session, all, until@LINE or an event type (e.g. page_load:p95<2s)")]
pub struct SloError {
    /// As given.
    pub text: String,
    /// What is wrong (`no metric`, `unknown metric "X"`, ...).
    pub why: String,
}

impl FromStr for Slo {
    type Err = SloError;
    fn from_str(s: &str) -> Result<Slo, SloError> {
        let bad = |why: &str| SloError {
            text: s.to_string(),
            why: why.to_string(),
        };
        let (m, rest) = s.split_once(':').ok_or_else(|| bad("no metric"))?;
        let metric = match m.trim() {
            "page_load" => Metric::PageLoad,
            "session" => Metric::Session,
            "all" => Metric::All,
            u if u.starts_with("until@") => Metric::Until(
                u["until@".len()..]
                    .parse()
                    .map_err(|_| bad("until@ needs a recording line number, e.g. until@12"))?,
            ),
            k => {
                Metric::Kind(Kind::parse(k).ok_or_else(|| bad(&format!("unknown metric \"{k}\"")))?)
            }
        };
        let t: Threshold = rest
            .parse()
            .map_err(|_| bad("not a statistic below a duration"))?;
        Ok(Slo {
            metric,
            stat: t.stat,
            limit_ms: t.limit_ms,
            text: s.trim().to_string(),
        })
    }
}

impl Slo {
    /// `page_load p95`: how the answer line names it.
    pub fn name(&self) -> String {
        let stat = match self.stat {
            Stat::Quantile(q) => format!("p{}", (q * 1000.0).round() / 10.0),
            Stat::Max => "max".into(),
            Stat::Mean => "mean".into(),
        };
        format!("{} {stat}", self.metric)
    }

    /// The statistic of `v` (ms); None when there are no values.
    fn of(&self, mut v: Vec<i64>) -> Option<f64> {
        if v.is_empty() {
            return None;
        }
        v.sort_unstable();
        Some(match self.stat {
            Stat::Quantile(q) => rank(&v, q * 100.0) as f64,
            Stat::Max => v[v.len() - 1] as f64,
            Stat::Mean => v.iter().sum::<i64>() as f64 / v.len() as f64,
        })
    }
}

/// The sessions a step is judged on, and what they measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Measured {
    /// Sessions judged (after the step's warm-up).
    pub sessions: usize,
    /// Of them failed (plus arrivals dropped at `--max-users` in an open step).
    pub failed: usize,
    /// Each SLO's value (ms), None when nothing was measured.
    pub values: Vec<Option<f64>>,
}

/// Measures a step's run: sessions for which `keep` holds (warm-up left out), with
/// `dropped` arrivals counted as failures.
pub fn measure(
    sessions: &[Session],
    rec: &Lines,
    slos: &[Slo],
    keep: &dyn Fn(&Session) -> bool,
    dropped: usize,
) -> Measured {
    let kept: Vec<&Session> = sessions.iter().filter(|s| keep(s)).collect();
    let failed = kept.iter().filter(|s| s.outcome != Ended::Done).count() + dropped;
    let values = (slos.iter())
        .map(|slo| slo.of(values_of(rec, &kept, slo.metric)))
        .collect();
    Measured {
        sessions: kept.len() + dropped,
        failed,
        values,
    }
}

/// Every value of `metric` in the kept sessions (ms).
fn values_of(rec: &Lines, kept: &[&Session], metric: Metric) -> Vec<i64> {
    let mut v = Vec::new();
    for s in kept {
        match metric {
            Metric::PageLoad => v.extend(stats::page_load(s, rec)),
            Metric::Session if s.outcome == Ended::Done => v.push(s.end - s.start),
            Metric::Session => {}
            Metric::Until(line) => v.extend(until(s, rec, line)),
            Metric::All | Metric::Kind(_) => {
                for e in s.events.iter().filter(|e| !e.failed) {
                    let kind = rec.get(e.line).map(|l| l.kind);
                    if metric == Metric::All || kind.map(Metric::Kind) == Some(metric) {
                        v.push(e.end - e.start);
                    }
                }
            }
        }
    }
    v
}

/// A session's time from its home page's start to the end of recording line `line`: the
/// durations of the events between summed (the replay's pauses left out, as page load's);
/// None when it did not get there.
fn until(s: &Session, rec: &Lines, line: u32) -> Option<i64> {
    let first = (s.events.iter())
        .position(|e| rec.get(e.line).map(|l| l.kind) == Some(Kind::ReqHome))
        .unwrap_or(0);
    let mut total = 0;
    for e in &s.events[first..] {
        if e.failed {
            return None;
        }
        total += e.end - e.start;
        if e.line == line {
            return Some(total);
        }
    }
    None
}

/// `1.41 s`, `450 ms`: a latency as the answer line prints it.
pub fn fmt_ms(ms: f64) -> String {
    if ms < 1000.0 {
        format!("{} ms", ms.round())
    } else {
        let s = format!("{:.2}", ms / 1000.0);
        format!("{} s", s.trim_end_matches('0').trim_end_matches('.'))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_slos_and_names_them() {
        let s: Slo = "page_load:p95<2s".parse().unwrap();
        assert_eq!(
            (s.metric, s.limit_ms, s.name()),
            (Metric::PageLoad, 2000.0, "page_load p95".into())
        );
        let s: Slo = "until@12:p95<2s".parse().unwrap();
        assert_eq!(
            (s.metric, s.name()),
            (Metric::Until(12), "until@12 p95".into())
        );
        assert!("until@x:p95<2s".parse::<Slo>().is_err());
        let s: Slo = "WS_RECV:p99.9<3s".parse().unwrap();
        assert_eq!(
            (s.metric, s.name()),
            (Metric::Kind(Kind::WsRecv), "WS_RECV p99.9".into())
        );
        for bad in [
            "p95<2s",
            "pageload:p95<2s",
            "page_load:p95>2s",
            "page_load:q95<2s",
            "page_load:p95<2x",
        ] {
            let e = bad.parse::<Slo>().unwrap_err().to_string();
            assert!(
                e.starts_with(&format!("--slo \"{bad}\": ")) && !e.contains('\n'),
                "{e}"
            );
        }
        assert_eq!(
            (
                fmt_ms(1410.0),
                fmt_ms(2200.0),
                fmt_ms(450.4),
                fmt_ms(3000.0)
            ),
            (
                "1.41 s".into(),
                "2.2 s".into(),
                "450 ms".into(),
                "3 s".into()
            )
        );
    }
}
