//! `surge merge`: one result from the segments of one plan (`--segment K/N` runs on several
//! hosts). Run directories (`surge replay`) become one run directory that `surge report` and
//! shinyloadtest read as one run; bench `--json` results become one bench result. Inputs that are
//! not exactly the segments 1..N of one plan (and, for replays, of one recording) are refused
//! with a one-line error, and nothing is written.
//!
//! `read` (a segment directory), `write` (the merged directory and its summary.json).

mod error;
mod read;
mod write;

pub use error::MergeError;

use crate::bench::{self, BenchReport};
use crate::replay;
use crate::segment;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Command-line options of `surge merge`.
#[derive(clap::Args, Debug, Clone)]
pub struct MergeArgs {
    /// The segments: run directories of `surge replay --segment`, or `surge bench --segment
    /// --json` result files
    #[arg(required = true, value_name = "RUN_DIR|BENCH_JSON")]
    pub inputs: Vec<PathBuf>,
    /// Where to write the merged run directory (or bench JSON file)
    #[arg(short, long, value_name = "OUT")]
    pub output: PathBuf,
    /// Replace the output if it exists
    #[arg(long)]
    pub overwrite_output: bool,
    /// Print the merged summary as JSON instead of text
    #[arg(long)]
    pub json: bool,
}

/// What a merge wrote: the merged run (its summary.json) or the merged bench result. The
/// terminal prints it.
#[derive(Debug)]
pub enum Merged {
    /// Run directories → one run directory.
    Run {
        /// The merged run's summary.json.
        summary: Box<replay::RunSummary>,
        /// How many segments were merged.
        segments: usize,
        /// How many sessions the merged run has.
        sessions: usize,
    },
    /// Bench `--json` results → one bench result.
    Bench(Box<BenchReport>),
}

impl Merged {
    /// The exit status: 0, or 1 when the merged bench result has too many requests not ok
    /// (judged as one run would be; the merged run's checks are in its summary).
    pub fn exit_code(&self) -> u8 {
        match self {
            Merged::Run { .. } => 0,
            Merged::Bench(r) => u8::from(r.verdict().is_some()),
        }
    }
}

/// Merges and writes the merged output; prints nothing.
pub fn run(args: MergeArgs) -> Result<Merged, MergeError> {
    let usage = |m: String| Err(MergeError::Usage(m));
    if args.output.exists() && !args.overwrite_output {
        return usage(format!(
            "output {} already exists (use --overwrite-output)",
            args.output.display()
        ));
    }
    let out_canon = args.output.canonicalize().ok();
    let is_output = |i: &&PathBuf| out_canon.is_some() && i.canonicalize().ok() == out_canon;
    if let Some(i) = args.inputs.iter().find(is_output) {
        return usage(format!("output {} is one of the inputs", i.display()));
    }
    if let Some(missing) = args.inputs.iter().find(|p| !p.exists()) {
        return usage(format!(
            "{}: no such run directory or file",
            missing.display()
        ));
    }
    let dirs = args.inputs.iter().filter(|p| p.is_dir()).count();
    if dirs == args.inputs.len() {
        runs(&args)
    } else if dirs == 0 {
        benches(&args)
    } else {
        usage("give either run directories (replay) or bench JSON files, not both".into())
    }
}

/// Run directories of `surge replay --segment` → one run directory.
fn runs(args: &MergeArgs) -> Result<Merged, MergeError> {
    let mut parts = (args.inputs.iter())
        .map(|d| read::part(d))
        .collect::<Result<Vec<_>, MergeError>>()?;
    check_parts(&parts)?;
    parts.sort_by_key(|p| p.tag.segment.index);
    let sessions = write::in_start_order(&parts);
    let summary = write::summary(&parts, &sessions)?;
    write::run_dir(
        &args.output,
        args.overwrite_output,
        &parts,
        &sessions,
        &summary,
    )?;
    Ok(Merged::Run {
        summary: Box::new(summary),
        segments: parts.len(),
        sessions: sessions.len(),
    })
}

/// The parts are the segments 1..N of one plan, of one recording, and no (worker, iteration)
/// was run twice.
fn check_parts(parts: &[read::Part]) -> Result<(), MergeError> {
    let tags: Vec<_> = parts
        .iter()
        .map(|p| (p.name.clone(), p.tag.clone()))
        .collect();
    segment::check_set(&tags)?;
    let first = &parts[0];
    for p in &parts[1..] {
        if p.recording != first.recording {
            return Err(MergeError::DifferentRecordings {
                a: p.name.clone(),
                b: first.name.clone(),
                detail: crate::rundir::first_difference(&first.recording, &p.recording),
            });
        }
    }
    let mut seen: HashMap<(u32, u32), &Path> = HashMap::new();
    for p in parts {
        for s in &p.sessions {
            if let Some(other) = seen.insert((s.worker, s.iteration), &s.path) {
                return Err(MergeError::Twice {
                    worker: s.worker,
                    iteration: s.iteration,
                    a: other.to_path_buf(),
                    b: s.path.clone(),
                });
            }
            if !p.tag.segment.owns(u64::from(s.worker)) {
                return Err(MergeError::NotUser {
                    path: s.path.clone(),
                    worker: s.worker,
                    segment: p.tag.segment,
                });
            }
        }
    }
    Ok(())
}

/// `surge bench --segment --json` results → one bench result (JSON file).
fn benches(args: &MergeArgs) -> Result<Merged, MergeError> {
    let mut parts = Vec::with_capacity(args.inputs.len());
    for f in &args.inputs {
        let name = f.display().to_string();
        let bad = |why: String| MergeError::BenchInput {
            name: name.clone(),
            why,
        };
        let text = std::fs::read_to_string(f).map_err(|e| bad(e.to_string()))?;
        let r: BenchReport = serde_json::from_str(&text)
            .map_err(|e| bad(format!("not a surge bench --json result ({e})")))?;
        parts.push((name, r));
    }
    let merged = bench::merge(&parts)?;
    let json = serde_json::to_string_pretty(&merged).expect("a bench result serialises");
    let tmp = args.output.with_extension("merging");
    std::fs::write(&tmp, format!("{json}\n"))
        .and_then(|()| std::fs::rename(&tmp, &args.output))
        .map_err(|err| {
            let _ = std::fs::remove_file(&tmp);
            MergeError::Io {
                path: args.output.clone(),
                err,
            }
        })?;
    Ok(Merged::Bench(Box::new(merged)))
}
