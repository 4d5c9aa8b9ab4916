//! A weighted mix of journeys: `surge replay browse.log:70 export.log:30 URL` replays several
//! recordings in one run, each session playing one of them. The pick is deterministic and
//! interleaved: the plan's session i (a segment's sessions keep their plan-wide index) takes the
//! bucket of `(i × STRIDE) mod total weight`, so every block of `total` sessions splits exactly by
//! the weights. Sessions say their journey in their CSV (`journey=<name>` on the
//! PLAYER_SESSION_CREATE row), and summary.json splits every figure by journey.

use crate::recording::Recording;
use crate::rundir::{Aggregate, Ended, FailureCount, JourneySummary, RowEvent};
use crate::segment::Segment;
use bytes::Bytes;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Spreads consecutive sessions over the buckets (a prime: coprime with any sane total).
const STRIDE: u64 = 7919;

/// One recording of the mix.
#[derive(Debug)]
pub struct Journey {
    /// Its name: the file's stem (`browse` for browse.log), made unique.
    pub name: Arc<str>,
    /// Its share of sessions (`:WEIGHT`, default 1).
    pub weight: u32,
    /// The recording.
    pub rec: Recording,
    /// Request bodies of its events (`datafile`s), read once.
    pub bodies: Vec<Option<Bytes>>,
}

/// `FILE[:WEIGHT]`: the path and weight. A spec that names a file is that file (a name may hold
/// `:`); otherwise what follows the last `:` is the weight, a whole number of at least 1, when it
/// looks like one (digits, a sign, a point: `-1`, `1.5`, or nothing) or when what precedes it is
/// a file (`j2.log:abc`); anything else is a file name with a colon (loading says if it is missing).
pub fn parse_spec(spec: &str) -> Result<(PathBuf, u32), SpecError> {
    let whole = || Ok((PathBuf::from(spec), 1));
    let Some((file, w)) = spec.rsplit_once(':') else {
        return whole();
    };
    if Path::new(spec).exists() {
        return whole();
    }
    let numeric = w.is_empty()
        || (w.bytes().any(|b| b.is_ascii_digit())
            && w.bytes()
                .all(|b| b.is_ascii_digit() || b"+-.,eE_".contains(&b)));
    if !numeric && !Path::new(file).exists() {
        return whole();
    }
    let not_weight = || {
        usage(
            spec,
            &format!("the weight {w:?} is not a whole number of at least 1 (FILE:WEIGHT, e.g. browse.log:70)"),
        )
    };
    if w.is_empty() || !w.bytes().all(|b| b.is_ascii_digit()) {
        return Err(not_weight());
    }
    let weight: u32 = w.parse().map_err(|_| usage(spec, "weight too large"))?;
    if weight == 0 {
        return Err(not_weight());
    }
    Ok((PathBuf::from(file), weight))
}

fn usage(spec: &str, what: &str) -> SpecError {
    SpecError(format!("{spec}: {what}"))
}

/// A `FILE:WEIGHT` spec whose weight is not a whole number of at least 1 (a usage error).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct SpecError(String);

/// A name for each journey: file stems, with `-2`, `-3` … when two are the same.
pub fn names(paths: &[PathBuf]) -> Vec<Arc<str>> {
    let mut out: Vec<Arc<str>> = Vec::new();
    for p in paths {
        let stem = p
            .file_stem()
            .map_or("journey".into(), |s| s.to_string_lossy());
        let mut name = stem.to_string();
        let mut n = 1;
        while out.iter().any(|o| **o == *name) {
            n += 1;
            name = format!("{stem}-{n}");
        }
        out.push(name.into());
    }
    out
}

/// The journey (index into the weights) of the plan's session `sid` (this process's count; see
/// the module doc).
pub fn pick(weights: &[u32], sid: u32, segment: Option<Segment>) -> usize {
    if weights.len() < 2 {
        return 0;
    }
    let total: u64 = weights.iter().map(|&w| u64::from(w)).sum();
    let (k, of) = segment.map_or((0, 1), |s| (u64::from(s.index - 1), u64::from(s.count)));
    let i = u64::from(sid) * of + k;
    let stride = if total % STRIDE == 0 { 1 } else { STRIDE };
    let mut pos = (i * stride) % total;
    for (n, &w) in weights.iter().enumerate() {
        if pos < u64::from(w) {
            return n;
        }
        pos -= u64::from(w);
    }
    weights.len() - 1
}

/// The per-journey part of summary.json (empty for a run of one recording): each journey's
/// aggregate (filled as its sessions ended) says its [`crate::rundir::Outcome`].
pub(crate) fn summaries(
    journeys: &[Journey],
    aggs: &[Aggregate],
) -> BTreeMap<String, JourneySummary> {
    if journeys.len() < 2 {
        return BTreeMap::new();
    }
    (journeys.iter().zip(aggs))
        .map(|(j, a)| {
            let s = JourneySummary {
                recording: j.rec.path.display().to_string(),
                weight: j.weight,
                outcome: a.outcome(),
            };
            (j.name.to_string(), s)
        })
        .collect()
}

/// The journey a session CSV row names (`journey=<name>` on PLAYER_SESSION_CREATE), given the
/// row without its session_id: `worker,iteration,event,timestamp,line,comment`.
pub(crate) fn of_row(row: &str) -> Option<&str> {
    let name = row.splitn(6, ',').nth(5)?.strip_prefix("journey=")?;
    // A `--data` run's row follows: `journey=<name> data=<row>`.
    Some(match name.rsplit_once(" data=") {
        Some((n, r)) if !r.is_empty() && r.bytes().all(|b| b.is_ascii_digit()) => n,
        _ => name,
    })
}

/// A segment's summary.json whose `journeys.NAME.failures` cannot be read back.
#[derive(Debug, thiserror::Error)]
#[error("summary.json: journeys.{journey}.failures: {err}")]
pub struct JourneyFailuresError {
    /// The journey's name.
    pub journey: String,
    /// What serde said.
    pub err: serde_json::Error,
}

/// summary.json's `journeys` of a merged run: histograms and counts from every session's rows
/// (`(journey, rows, how it ended)`), names, recordings and weights from the first segment's
/// summary, failures summed from every segment's.
pub(crate) fn merged<'a>(
    segment_summaries: &[&serde_json::Value],
    sessions: impl Iterator<Item = (Option<&'a str>, &'a [(RowEvent, i64)], Ended)>,
) -> Result<BTreeMap<String, JourneySummary>, JourneyFailuresError> {
    let Some(first) = segment_summaries
        .first()
        .and_then(|s| s["journeys"].as_object())
    else {
        return Ok(BTreeMap::new());
    };
    let mut aggs: BTreeMap<&str, Aggregate> = first
        .keys()
        .map(|k| (k.as_str(), Aggregate::new()))
        .collect();
    for (name, rows, ended) in sessions {
        if let Some(a) = name.and_then(|n| aggs.get_mut(n)) {
            a.add_session(rows.iter().copied(), ended);
        }
    }
    let mut out = BTreeMap::new();
    for (name, mut a) in aggs {
        for s in segment_summaries {
            let list = s["journeys"][name]["failures"].clone();
            let list: Vec<FailureCount> =
                serde_json::from_value(list).map_err(|err| JourneyFailuresError {
                    journey: name.to_string(),
                    err,
                })?;
            list.into_iter().for_each(|f| a.add_failure(f));
        }
        let j = &first[name];
        let s = JourneySummary {
            recording: j["recording"].as_str().unwrap_or_default().to_string(),
            weight: j["weight"].as_u64().unwrap_or(1) as u32,
            outcome: a.outcome(),
        };
        out.insert(name.to_string(), s);
    }
    Ok(out)
}

/// Copies every journey after the first into `journeys/<name>/` of the run directory (the first
/// is the run's recording.log, as for a single recording).
pub fn copy_journeys(
    journeys: &[Journey],
    out_dir: &Path,
) -> Result<(), crate::rundir::OutputError> {
    for j in journeys.iter().skip(1) {
        let dir = out_dir.join("journeys").join(&*j.name);
        std::fs::create_dir_all(&dir).map_err(|err| crate::rundir::OutputError::Io {
            doing: "creating",
            path: dir.clone(),
            err,
        })?;
        crate::rundir::copy_recording(&j.rec, &dir)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_names_and_an_exact_interleaved_split() {
        let (p, w) = parse_spec("browse.log:70").unwrap();
        assert_eq!((p, w), (PathBuf::from("browse.log"), 70));
        assert_eq!(parse_spec("x.log").unwrap().1, 1);
        assert!(parse_spec("x.log:0").is_err());
        let n = names(&["a/b.log".into(), "c/b.log".into()]);
        assert_eq!((&*n[0], &*n[1]), ("b", "b-2"));
        let js = [70, 30];
        let picks: Vec<usize> = (0..100).map(|i| pick(&js, i, None)).collect();
        assert_eq!(picks.iter().filter(|&&p| p == 0).count(), 70);
        // Interleaved: the first 10 sessions already mix both journeys.
        assert!(
            picks[..10].contains(&0) && picks[..10].contains(&1),
            "{picks:?}"
        );
        // Two segments together take the plan's picks.
        let s1 = Some(Segment { index: 1, count: 2 });
        let s2 = Some(Segment { index: 2, count: 2 });
        assert_eq!(pick(&js, 3, s1), picks[6]);
        assert_eq!(pick(&js, 3, s2), picks[7]);
    }
}
