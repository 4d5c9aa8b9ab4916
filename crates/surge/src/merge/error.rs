//! Why segments cannot be merged: one typed error per problem, each a line naming the file (and
//! line) at fault, so the person merging knows which host's segment to look at.

use crate::segment::{Segment, SegmentError};
use std::path::PathBuf;

/// A `surge merge` of run directories that cannot be done (nothing is written then).
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    /// The inputs or the output are not usable as given (exists, is an input, missing, mixed).
    #[error("{0}")]
    Usage(String),
    /// A bench `--json` file that cannot be read or is not one.
    #[error("{name}: {why}")]
    BenchInput {
        /// The file as given.
        name: String,
        /// What is wrong.
        why: String,
    },
    /// Bench results that are not the segments of one plan.
    #[error(transparent)]
    Bench(#[from] crate::bench::BenchMergeError),
    /// No recording.log or no sessions/.
    #[error("{0}: not a run directory (expected recording.log and sessions/ from surge replay)")]
    NotRunDir(String),
    /// A file or directory could not be read or written.
    #[error("{}: {err}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What the OS said.
        err: std::io::Error,
    },
    /// A segment without summary.json.
    #[error("{}: {err} (a segment without summary.json was stopped before it finished: kill -9, out of memory, a deadline)", path.display())]
    NoSummary {
        /// Where it should be.
        path: PathBuf,
        /// What the OS said.
        err: std::io::Error,
    },
    /// A summary.json that is not JSON, or whose `failures` are not surge's.
    #[error("{}: {err}", path.display())]
    Json {
        /// The file (and field).
        path: PathBuf,
        /// serde's reason.
        err: serde_json::Error,
    },
    /// A segment's per-journey figures cannot be read back (names the file and field).
    #[error(transparent)]
    Journeys(#[from] crate::replay::JourneyFailuresError),
    /// sessions/ without CSVs.
    #[error("{}: no session files (*.csv)", .0.display())]
    NoSessions(PathBuf),
    /// A CSV whose second `#` line is not surge's JSON config.
    #[error("{}: no JSON config in its second # line (not written by surge replay)", .0.display())]
    NoConfig(PathBuf),
    /// The output of an earlier merge given as a segment.
    #[error("{0}: already a merged run (merge the segments themselves)")]
    AlreadyMerged(String),
    /// A run that is not a `--segment` run.
    #[error("{0}: not a segment of a plan (its sessions name no segment: run surge replay with --segment K/N)")]
    NotSegment(String),
    /// A CSV whose segment tag is wrong.
    #[error("{}: {err}", path.display())]
    Tag {
        /// The CSV.
        path: PathBuf,
        /// What is wrong with its tag.
        err: SegmentError,
    },
    /// Two CSVs of one directory from different runs.
    #[error("{}: its # lines differ from {}'s (sessions of different runs in one directory)", path.display(), first.display())]
    CommentsDiffer {
        /// The CSV that differs.
        path: PathBuf,
        /// The directory's first CSV.
        first: PathBuf,
    },
    /// A session CSV that is not one (file, line, field).
    #[error(transparent)]
    Csv(#[from] crate::rundir::csv::CsvError),
    /// Not the segments 1..=N of one plan.
    #[error(transparent)]
    Set(#[from] SegmentError),
    /// Segments of different recordings.
    #[error("{a} and {b} replayed different recordings ({detail})")]
    DifferentRecordings {
        /// One segment.
        a: String,
        /// The first segment.
        b: String,
        /// Where they differ.
        detail: String,
    },
    /// A (worker, iteration) in two sessions.
    #[error("worker {worker} iteration {iteration} ran twice: {} and {}", a.display(), b.display())]
    Twice {
        /// The worker.
        worker: u32,
        /// Its iteration.
        iteration: u32,
        /// One CSV.
        a: PathBuf,
        /// The other.
        b: PathBuf,
    },
    /// A session of a worker another segment owns.
    #[error("{}: worker {worker} is not a user of segment {segment}", path.display())]
    NotUser {
        /// The CSV.
        path: PathBuf,
        /// Its worker.
        worker: u32,
        /// The segment it was found in.
        segment: Segment,
    },
    /// A summary.json check that is not surge's.
    #[error("{name}: check {text:?}")]
    Check {
        /// The segment.
        name: String,
        /// The check as written.
        text: String,
    },
    /// A summary.json threshold that does not parse.
    #[error("{name}: {err}")]
    Threshold {
        /// The segment.
        name: String,
        /// Why.
        err: crate::checks::CheckError,
    },
}
