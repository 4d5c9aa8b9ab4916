//! `surge compare BASE NEW --max-regression METRIC:STAT:MARGIN …`: CI's verdict on two runs.
//! BASE and NEW are run directories (`surge replay`, shinycannon, merged segments) read as
//! `surge report` reads them, or bench results (`surge bench --json > FILE`: its latency
//! histogram). Each metric is judged by [`crate::verdict::judge`]: a regression is over the
//! margin and beyond run-to-run noise. Exit status 1 when one regressed, 0 when none did;
//! `--json FILE` writes the verdicts for CI (whole or not at all).

use crate::report::{load, verdicts, ReportError};
use crate::verdict::{judge, Metric, Samples, Verdict, VerdictArgs};
use std::path::{Path, PathBuf};

/// Command-line arguments of `surge compare`.
#[derive(clap::Args, Debug, Clone)]
pub struct CompareArgs {
    /// The run compared against: a run directory, or a `surge bench --json` result file.
    #[arg(value_name = "BASE")]
    pub base: PathBuf,
    /// The run judged: a run directory, or a `surge bench --json` result file.
    #[arg(value_name = "NEW")]
    pub new: PathBuf,
    /// The metrics, the seed and the resamples.
    #[command(flatten)]
    pub verdict: VerdictArgs,
    /// Also write the verdicts as JSON to FILE (for CI).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

/// Why two runs could not be compared: one line naming the flag, file or metric at fault.
#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    /// No `--max-regression` given.
    #[error("no --max-regression given: name at least one metric, e.g. --max-regression page_load:p95:10%")]
    NoSpec,
    /// A run directory that cannot be read.
    #[error(transparent)]
    Run(#[from] ReportError),
    /// A file that is not a bench result.
    #[error("{path}: not a run directory nor a `surge bench --json` result: {msg}")]
    NotBench {
        /// The file.
        path: String,
        /// What is wrong with it.
        msg: String,
    },
    /// A metric one of the runs has no values of.
    #[error("{path}: no values of {metric} ({why})")]
    NoValues {
        /// The run.
        path: String,
        /// The metric.
        metric: String,
        /// What kind of run it is and what it has.
        why: &'static str,
    },
    /// A per-line metric on runs of different recordings.
    #[error("{metric}: {base} and {new} replayed different recordings ({detail}); compare per-line metrics on runs of the same recording")]
    MixedRecordings {
        /// The metric.
        metric: String,
        /// BASE.
        base: String,
        /// NEW.
        new: String,
        /// Where the recordings differ.
        detail: String,
    },
    /// `--json`'s file cannot be written.
    #[error("{path}: {err}")]
    Io {
        /// The file.
        path: String,
        /// The OS error.
        err: std::io::Error,
    },
}

/// What `surge compare` found: a verdict per metric, in the order given.
#[derive(Debug, Clone, PartialEq)]
pub struct Compared {
    /// One per `--max-regression`.
    pub verdicts: Vec<Verdict>,
}

impl Compared {
    /// 1 when a metric regressed, else 0.
    pub fn exit_code(&self) -> u8 {
        u8::from(self.verdicts.iter().any(|v| v.regression))
    }
}

/// One side of the comparison.
enum Source {
    Run(Box<load::Run>),
    Bench(Samples),
}

impl Source {
    fn read(path: &Path) -> Result<Source, CompareError> {
        if path.is_dir() {
            let run = load::load_run(path, path.display().to_string())?;
            return Ok(Source::Run(Box::new(run)));
        }
        let at = || path.display().to_string();
        let text =
            std::fs::read_to_string(path).map_err(|err| CompareError::Io { path: at(), err })?;
        let bad = |msg: String| CompareError::NotBench { path: at(), msg };
        let json: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| bad(format!("not JSON ({e})")))?;
        let hist = json["histogram_us"]
            .as_str()
            .ok_or_else(|| bad("no histogram_us field".into()))?;
        let h = crate::stats::decode(hist).map_err(|e| bad(format!("histogram_us: {e}")))?;
        Ok(Source::Bench(Samples::weighted(h.iter_recorded().map(
            |v| (v.value_iterated_to() as f64 / 1000.0, v.count_at_value()),
        ))))
    }

    fn samples(&self, metric: Metric, path: &Path) -> Result<Samples, CompareError> {
        let (s, why) = match self {
            Source::Run(r) => (
                verdicts::samples(r, metric),
                "a run directory has page_load, session, events, lineN and event types",
            ),
            Source::Bench(s) if metric == Metric::Latency => (s.clone(), "a bench result"),
            Source::Bench(_) => (Samples::default(), "a bench result has only latency"),
        };
        if s.is_empty() {
            return Err(CompareError::NoValues {
                path: path.display().to_string(),
                metric: metric.to_string(),
                why,
            });
        }
        Ok(s)
    }
}

/// `surge compare`: reads both runs, judges every metric, writes `--json` when asked.
///
/// # Errors
/// No metric given, a run that cannot be read, a metric a run has no values of, `--json`'s
/// file not writable.
pub fn run(args: &CompareArgs) -> Result<Compared, CompareError> {
    if args.verdict.max_regression.is_empty() {
        return Err(CompareError::NoSpec);
    }
    let base = Source::read(&args.base)?;
    let new = Source::read(&args.new)?;
    let mut out = Vec::new();
    for spec in &args.verdict.max_regression {
        if let (Source::Run(b), Source::Run(n), Metric::Line(_) | Metric::Kind(_)) =
            (&base, &new, spec.metric)
        {
            if b.recording.text != n.recording.text {
                return Err(CompareError::MixedRecordings {
                    metric: spec.metric.to_string(),
                    base: args.base.display().to_string(),
                    new: args.new.display().to_string(),
                    detail: crate::rundir::first_difference(&b.recording.text, &n.recording.text),
                });
            }
        }
        let b = base.samples(spec.metric, &args.base)?;
        let n = new.samples(spec.metric, &args.new)?;
        out.push(judge(spec, &b, &n, args.verdict.bootstrap()));
    }
    let compared = Compared { verdicts: out };
    if let Some(path) = &args.json {
        write_json(path, args, &compared)?;
    }
    Ok(compared)
}

/// The CI summary: both runs, the bootstrap's settings, `ok` and the verdicts; temp + rename.
fn write_json(path: &Path, args: &CompareArgs, c: &Compared) -> Result<(), CompareError> {
    let doc = serde_json::json!({
        "base": args.base.display().to_string(),
        "new": args.new.display().to_string(),
        "seed": args.verdict.seed,
        "resamples": args.verdict.resamples,
        "ok": c.exit_code() == 0,
        "regressions": c.verdicts.iter().filter(|v| v.regression).count(),
        "verdicts": c.verdicts,
    });
    let text = serde_json::to_string_pretty(&doc).expect("verdicts serialise");
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp-surge-compare");
    let tmp = PathBuf::from(tmp);
    let res = std::fs::write(&tmp, text + "\n").and_then(|()| std::fs::rename(&tmp, path));
    res.map_err(|err| {
        let _ = std::fs::remove_file(&tmp);
        CompareError::Io {
            path: path.display().to_string(),
            err,
        }
    })
}
