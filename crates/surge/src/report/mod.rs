//! `surge report`: one self-contained HTML file for a run or a comparison of runs.
//!
//! Data flows one way: run directories (`load`, `lines`) → numbers (`stats`: the run directory's
//! one `Outcome`, as summary.json states it, plus the report's own figures) → compact data model
//! (`model`) → page (`html`, with the chart runtime from web/src/report inlined). Its figures come
//! from `recording.log` and `sessions/*.csv`, so shinycannon runs work as well as surge runs.
//! `inputs` splits each line's durations by a session's first use or reuse of its `--data` row.

pub mod class;
pub mod html;
pub mod inputs;
pub mod lines;
pub mod load;
pub mod model;
pub mod segments;
pub mod split;
pub mod stats;
pub mod verdicts;

use std::{
    io::Write,
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

/// Command-line arguments of `surge report`.
#[derive(clap::Args, Debug, Clone)]
pub struct ReportArgs {
    /// Run directories: `surge replay --output-dir` or shinycannon output (recording.log + sessions/).
    #[arg(required = true, value_name = "RUN_DIR")]
    pub runs: Vec<PathBuf>,
    /// Name of each run, in the order of the directories (default: the directory name).
    #[arg(long = "name", value_name = "NAME")]
    pub names: Vec<String>,
    /// Where to write the report.
    #[arg(short, long, default_value = "report.html")]
    pub output: PathBuf,
    /// Page-load limit drawn on the charts and counted in the summary (e.g. 10s, 2500ms)
    #[arg(long, alias = "threshold", default_value = "10s", value_parser = crate::timefmt::parse_duration)]
    pub page_load_limit: Duration,
    /// Report runs even when they replayed different recordings (the report says so).
    #[arg(long)]
    pub allow_mixed: bool,
    /// Write the report's data model as JSON instead of HTML.
    #[arg(long)]
    pub json: bool,
    /// `--max-regression` (with two runs: the first is the base): the verdicts `surge compare`
    /// gives, shown on the page.
    #[command(flatten)]
    pub verdict: crate::verdict::VerdictArgs,
}

/// Why a report could not be made. Messages name the file (and line/field) at fault.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// Malformed or missing input.
    #[error("{at}: {msg}")]
    Input {
        /// File (and line) at fault.
        at: String,
        /// What is wrong.
        msg: String,
    },
    /// The runs replayed different recordings.
    #[error("runs {a:?} and {b:?} replayed different recordings ({detail}); compare runs of the same recording, or pass --allow-mixed")]
    MixedRecordings {
        /// First run's name.
        a: String,
        /// Other run's name.
        b: String,
        /// Where they differ.
        detail: String,
    },
    /// Bad combination of arguments.
    #[error("{0}")]
    Usage(String),
    /// A session CSV that is not one (names file, line and field).
    #[error(transparent)]
    Csv(#[from] crate::rundir::csv::CsvError),
    /// Segment directories that are not one plan's 1..=N.
    #[error(transparent)]
    Segments(#[from] crate::segment::SegmentError),
    /// The chart runtime was not built into this binary.
    #[error("report runtime not built: run `make web` (npm) and rebuild surge")]
    RuntimeMissing,
    /// Filesystem error.
    #[error("{path}: {err}")]
    Io {
        /// File involved.
        path: String,
        /// OS error.
        err: std::io::Error,
    },
}

impl ReportError {
    /// Wraps an I/O error with its path.
    pub fn io(path: &Path, err: std::io::Error) -> Self {
        ReportError::Io {
            path: path.display().to_string(),
            err,
        }
    }
}

const RUNTIME: &str = include_str!(concat!(env!("OUT_DIR"), "/report.js"));

/// The chart runtime (web/dist-report/report.js) embedded at build time.
pub fn runtime() -> Result<&'static str, ReportError> {
    if RUNTIME.starts_with("/*surge-report-runtime-missing*/") {
        Err(ReportError::RuntimeMissing)
    } else {
        Ok(RUNTIME)
    }
}

/// What `build` made: the page (or JSON) and figures to print.
pub struct Built {
    /// HTML page or JSON model.
    pub content: String,
    /// Sessions per run.
    pub sessions: Vec<usize>,
    /// Events per run.
    pub events: Vec<usize>,
    /// The data model as JSON (the page inlines it; `--dashboard` sends it to a live page).
    pub model: String,
}

/// Loads the runs and renders the report in memory (no file written).
pub fn build(args: &ReportArgs) -> Result<Built, ReportError> {
    build_with(args, &|_| {})
}

/// `build`, telling `progress` about each run read (the CLI prints these lines).
fn build_with(args: &ReportArgs, progress: &dyn Fn(&str)) -> Result<Built, ReportError> {
    if args.names.len() > args.runs.len() {
        return Err(ReportError::Usage(format!(
            "{} --name given for {} run directories",
            args.names.len(),
            args.runs.len()
        )));
    }
    let runtime_js = if args.json { "" } else { runtime()? };
    let page_load_limit_ms = args.page_load_limit.as_millis() as i64;
    let (dirs, capacity) = expand_capacity(&args.runs)?;
    let mut loaded = Vec::with_capacity(dirs.len());
    for (dir, named) in &dirs {
        let name = named.clone().unwrap_or_else(|| {
            dir.canonicalize()
                .ok()
                .and_then(|p| p.file_name().map(|f| f.to_string_lossy().into_owned()))
                .unwrap_or_else(|| dir.display().to_string())
        });
        let t = Instant::now();
        let run = load::load_run(dir, name)?;
        let events: usize = run.sessions.iter().map(|s| s.events.len()).sum();
        progress(&format!(
            "read {} ({} sessions, {} events) in {:.2} s",
            run.name,
            run.sessions.len(),
            events,
            t.elapsed().as_secs_f64()
        ));
        loaded.push((run, segments::tag_of(dir)?));
    }
    // Segments of one plan given directly are one run (joined like `surge merge` does).
    let mut runs = segments::join(loaded)?;
    if args.names.len() > runs.len() {
        return Err(ReportError::Usage(format!(
            "{} --name given for {} runs (the segments of one plan are one run)",
            args.names.len(),
            runs.len()
        )));
    }
    for (run, name) in runs.iter_mut().zip(&args.names) {
        run.name = name.clone();
    }
    if !args.allow_mixed {
        for r in &runs[1..] {
            if r.recording.text != runs[0].recording.text {
                return Err(ReportError::MixedRecordings {
                    a: runs[0].name.clone(),
                    b: r.name.clone(),
                    detail: crate::rundir::first_difference(
                        &runs[0].recording.text,
                        &r.recording.text,
                    ),
                });
            }
        }
    }
    let summaries: Vec<_> = runs
        .iter()
        .map(|r| stats::summarize(r, page_load_limit_ms))
        .collect();
    let judged = judge_runs(&runs, &args.verdict)?;
    let mut m = model::build(&runs, &summaries, page_load_limit_ms);
    m.capacity = capacity;
    let json = serde_json::to_string(&m).expect("model serialises");
    let content = if args.json {
        json.clone()
    } else {
        let page =
            html::render(&m, &json, runtime_js).replacen("<!--split-->", &split::sections(&m), 1);
        let mut banners = verdicts::generator_banner(&runs);
        if let Some(v) = judged {
            banners.push_str(&verdicts::section(&v, &runs[0].name, &runs[1].name));
        }
        page.replacen("<main>", &format!("<main>{banners}"), 1)
    };
    Ok(Built {
        content,
        sessions: summaries.iter().map(|s| s.sessions()).collect(),
        events: summaries.iter().map(|s| s.events).collect(),
        model: json,
    })
}

/// `--max-regression`'s verdicts on two runs (the first the base), as `surge compare` states
/// them; None without the flag.
fn judge_runs(
    runs: &[load::Run],
    flags: &crate::verdict::VerdictArgs,
) -> Result<Option<Vec<crate::verdict::Verdict>>, ReportError> {
    if flags.max_regression.is_empty() {
        return Ok(None);
    }
    if runs.len() != 2 {
        return Err(ReportError::Usage(format!(
            "--max-regression compares two runs (base, new); {} given",
            runs.len()
        )));
    }
    let mut out = Vec::new();
    for spec in &flags.max_regression {
        let (b, n) = (
            verdicts::samples(&runs[0], spec.metric),
            verdicts::samples(&runs[1], spec.metric),
        );
        if b.is_empty() || n.is_empty() {
            let run = if b.is_empty() { &runs[0] } else { &runs[1] };
            return Err(ReportError::Input {
                at: run.dir.display().to_string(),
                msg: format!("--max-regression {spec}: no values of {}", spec.metric),
            });
        }
        out.push(crate::verdict::judge(spec, &b, &n, flags.bootstrap()));
    }
    Ok(Some(out))
}

/// The run directories to load, with names: a capacity directory (`surge capacity`) stands for
/// its last good and first bad steps (named `holds N users`, `breaks at M users`) and brings its
/// capacity.json; at most one capacity directory per report.
#[allow(clippy::type_complexity)]
fn expand_capacity(
    dirs: &[PathBuf],
) -> Result<
    (
        Vec<(PathBuf, Option<String>)>,
        Option<crate::capfile::CapacityResult>,
    ),
    ReportError,
> {
    let mut out = Vec::new();
    let mut capacity = None;
    for dir in dirs {
        let Some(read) = crate::capfile::read(dir) else {
            out.push((dir.clone(), None));
            continue;
        };
        let c = read.map_err(|e| ReportError::Input {
            at: dir.display().to_string(),
            msg: e.to_string(),
        })?;
        if capacity.is_some() {
            return Err(ReportError::Usage(
                "more than one capacity directory: report one search at a time".into(),
            ));
        }
        let step = |load: Option<f64>| {
            let load = load?;
            c.steps
                .iter()
                .rev()
                .find(|s| s.load == load)
                .map(|s| dir.join(&s.dir))
        };
        let unit = &c.unit;
        if let Some(d) = step(c.holds) {
            out.push((d, Some(format!("holds {} {unit}", c.holds.unwrap_or(0.0)))));
        }
        if let Some(d) = step(c.breaks) {
            out.push((
                d,
                Some(format!("breaks at {} {unit}", c.breaks.unwrap_or(0.0))),
            ));
        }
        if out.is_empty() {
            return Err(ReportError::Input {
                at: dir.display().to_string(),
                msg: "capacity directory without a finished step".into(),
            });
        }
        capacity = Some(c);
    }
    Ok((out, capacity))
}

/// What `surge report` wrote: the terminal layer says it.
#[derive(Debug, Clone, PartialEq)]
pub struct Written {
    /// The report file.
    pub path: std::path::PathBuf,
    /// Its size in bytes.
    pub bytes: usize,
    /// Sessions and events of each run it shows.
    pub runs: Vec<(usize, usize)>,
    /// How long building and writing took.
    pub took: std::time::Duration,
}

impl std::fmt::Display for Written {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let per_run: Vec<String> = (self.runs.iter())
            .map(|(s, e)| format!("{s} sessions/{e} events"))
            .collect();
        write!(
            f,
            "wrote {} ({:.1} MB, {}) in {:.2} s",
            self.path.display(),
            self.bytes as f64 / 1e6,
            per_run.join(", "),
            self.took.as_secs_f64()
        )
    }
}

/// `surge report`: builds the report and writes it atomically (temp file, then rename);
/// `progress` gets a line for each long step (reading many sessions).
pub fn run(args: ReportArgs, progress: &dyn Fn(&str)) -> Result<Written, ReportError> {
    let t0 = Instant::now();
    let built = build_with(&args, progress)?;
    let out = &args.output;
    let tmp = out.with_extension("tmp-surge-report");
    let write = || -> std::io::Result<()> {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(built.content.as_bytes())?;
        f.sync_all()?;
        std::fs::rename(&tmp, out)
    };
    if let Err(e) = write() {
        let _ = std::fs::remove_file(&tmp);
        return Err(ReportError::io(out, e));
    }
    Ok(Written {
        path: out.clone(),
        bytes: built.content.len(),
        runs: (built.sessions.iter().copied())
            .zip(built.events.iter().copied())
            .collect(),
        took: t0.elapsed(),
    })
}
