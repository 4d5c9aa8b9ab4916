//! Segment directories given to `surge report` directly (`surge replay --segment K/N` on several
//! hosts, not yet merged): the segments of one plan are joined in memory into one run by the
//! run directory's one join ([`crate::rundir::join`]), as `surge merge` joins them on disk. Directories that are
//! not segments stay runs of their own.

use super::load::Run;
use super::ReportError;
use crate::segment::{self, Tag};
use std::io::{BufRead, BufReader};
use std::path::Path;

/// The segment tag of a run directory: from its first session CSV's `#` lines (all of a run's
/// CSVs share them); None for a whole run, a merged run or a shinycannon run.
pub fn tag_of(dir: &Path) -> Result<Option<Tag>, ReportError> {
    let sessions = dir.join("sessions");
    let files =
        crate::rundir::csv::session_files(dir).map_err(|e| ReportError::io(&sessions, e))?;
    let first = files.into_iter().next();
    let Some(first) = first else { return Ok(None) };
    let file = std::fs::File::open(&first).map_err(|e| ReportError::io(&first, e))?;
    let head: Vec<String> = BufReader::new(file)
        .lines()
        .take(2)
        .map_while(Result::ok)
        .collect();
    match Tag::from_csv_head(&head.join("\n")) {
        None => Ok(None),
        Some(Ok(t)) => Ok(Some(t)),
        Some(Err(msg)) => Err(ReportError::Input {
            at: first.display().to_string(),
            msg: msg.to_string(),
        }),
    }
}

/// Joins the segments of each plan into one run, in the place of its first segment; an
/// incomplete set, segments of different plans mixed up, or different recordings are errors.
pub fn join(runs: Vec<(Run, Option<Tag>)>) -> Result<Vec<Run>, ReportError> {
    let mut groups: Vec<Vec<(Run, Option<Tag>)>> = Vec::new();
    for (run, tag) in runs {
        let same_plan = |g: &Vec<(Run, Option<Tag>)>| match (&g[0].1, &tag) {
            (Some(a), Some(b)) => a.plan == b.plan,
            _ => false,
        };
        match groups.iter_mut().find(|g| same_plan(g)) {
            Some(g) => g.push((run, tag)),
            None => groups.push(vec![(run, tag)]),
        }
    }
    groups.into_iter().map(join_group).collect()
}

fn join_group(group: Vec<(Run, Option<Tag>)>) -> Result<Run, ReportError> {
    if group[0].1.is_none() {
        return Ok(group.into_iter().next().expect("non-empty").0);
    }
    let tags: Vec<(String, Tag)> = (group.iter())
        .map(|(r, t)| (r.dir.display().to_string(), t.clone().expect("a segment")))
        .collect();
    segment::check_set(&tags)?;
    let name = joined_name(&group);
    let mut sessions = Vec::new();
    let mut runs = group.into_iter();
    let (mut first, tag) = runs.next().expect("non-empty");
    let index = |t: &Option<Tag>| t.as_ref().map_or(0, |t| t.segment.index);
    sessions.extend(first.sessions.drain(..).map(|s| (index(&tag), s)));
    for (r, t) in runs {
        if r.recording.text != first.recording.text {
            return Err(ReportError::Usage(format!(
                "segments {} and {} replayed different recordings",
                first.dir.display(),
                r.dir.display()
            )));
        }
        sessions.extend(r.sessions.into_iter().map(|s| (index(&t), s)));
        first.timing.extend(r.timing);
    }
    let joined = crate::rundir::join::in_start_order(sessions, |s| (s.start, s.id));
    first.sessions = (joined.into_iter().enumerate())
        .map(|(i, mut s)| {
            s.id = i as u32;
            s
        })
        .collect();
    first.name = name;
    Ok(first)
}

/// `run (4 segments)` for `run-1` .. `run-4`: the names' common prefix, or the first name.
fn joined_name(group: &[(Run, Option<Tag>)]) -> String {
    let first = &group[0].0.name;
    let common = (group[1..].iter()).fold(first.len(), |n, (r, _)| {
        (first.chars().zip(r.name.chars()))
            .take_while(|(a, b)| a == b)
            .map(|(a, _)| a.len_utf8())
            .sum::<usize>()
            .min(n)
    });
    let prefix = first[..common].trim_end_matches(|c: char| !c.is_alphanumeric());
    let base = if prefix.is_empty() { first } else { prefix };
    format!("{base} ({} segments)", group.len())
}
