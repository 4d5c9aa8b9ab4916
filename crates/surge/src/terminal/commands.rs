//! Each command as the terminal runs it: the plan from the flags, the logger, the dashboard, the
//! run with the stop, the printing. The result comes back typed ([`Finished`]) with the exit
//! status it stands for.

use super::{BenchCmd, Command, ReplayCmd, Signal, Terminal};
use crate::bench::{self, BenchReport};
use crate::capacity::{self, CapacityArgs, CapacityResult, Scaling};
use crate::dashboard::Dashboard;
use crate::record::{self, Recorded};
use crate::replay;
use std::future::Future;
use std::io::Write as _;

/// A command's typed result, printed already; [`Finished::exit_code`] says the exit status.
#[derive(Debug)]
pub enum Finished {
    /// `surge replay`: the run's outcome.
    Replay(Box<replay::Replayed>),
    /// `surge record`: what it wrote.
    Record(Recorded),
    /// `surge bench`: the result, and the signal that stopped the run (not one that only ended
    /// the dashboard's linger after it).
    Bench(Box<BenchReport>, Option<Signal>),
    /// `surge capacity`: the search's answer.
    Capacity(Box<CapacityResult>),
    /// `surge explain`: the ranking.
    Explain(Box<crate::capacity::explain::Explained>),
    /// `surge capacity --workers`: the scaling table.
    Scaling(Scaling),
    /// `surge merge`: what it wrote.
    Merge(crate::merge::Merged),
    /// `surge report`: the page it wrote.
    Report(crate::report::Written),
    /// `surge import-har`: the recording it wrote.
    Imported(crate::har::Imported),
    /// `surge parametrize`: the placeholders it put in.
    Parametrized(crate::parametrize::Parametrized),
    /// `surge compare`: a verdict per metric.
    Compared(crate::compare::Compared),
}

impl Finished {
    /// The exit status: a run stopped by a signal exits with that signal's (130 SIGINT, 143
    /// SIGTERM; `record` ends normally on either); else each command's own.
    pub fn exit_code(&self, signal: Option<Signal>) -> u8 {
        let stopped = |own: u8| signal.map_or(own, Signal::exit_code);
        match self {
            Finished::Replay(o) if o.interrupted => stopped(o.exit_code()),
            Finished::Replay(o) => o.exit_code(),
            // Nothing recorded is no recording: a script must not go on to replay it.
            Finished::Record(r) => u8::from(r.events == 0),
            Finished::Bench(r, stopped_by) => {
                stopped_by.map_or(u8::from(r.verdict().is_some()), Signal::exit_code)
            }
            Finished::Capacity(c) if c.interrupted => stopped(c.exit_code()),
            Finished::Capacity(c) => c.exit_code(),
            Finished::Scaling(s) if s.interrupted => stopped(s.exit_code()),
            Finished::Scaling(s) => s.exit_code(),
            Finished::Merge(m) => m.exit_code(),
            Finished::Explain(_) => stopped(0),
            Finished::Compared(c) => c.exit_code(),
            Finished::Report(_) | Finished::Imported(_) | Finished::Parametrized(_) => 0,
        }
    }
}

/// Why a command could not run: one line naming the flag, file or target at fault.
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    /// `surge replay`.
    #[error(transparent)]
    Replay(#[from] replay::ReplayError),
    /// `surge record`.
    #[error(transparent)]
    Record(#[from] record::RecordError),
    /// `surge bench`.
    #[error(transparent)]
    Bench(#[from] bench::BenchError),
    /// `surge capacity`.
    #[error(transparent)]
    Capacity(#[from] capacity::CapacityError),
    /// `surge explain`.
    #[error(transparent)]
    Explain(#[from] crate::capacity::explain::ExplainError),
    /// `surge merge`.
    #[error(transparent)]
    Merge(#[from] crate::merge::MergeError),
    /// `surge report`.
    #[error(transparent)]
    Report(#[from] crate::report::ReportError),
    /// `surge import-har`.
    #[error(transparent)]
    Har(#[from] crate::har::HarError),
    /// `surge parametrize`.
    #[error(transparent)]
    Parametrize(#[from] crate::parametrize::ParametrizeError),
    /// `surge compare`.
    #[error(transparent)]
    Compare(#[from] crate::compare::CompareError),
    /// `--debug-log`'s file cannot be created.
    #[error(transparent)]
    Log(#[from] crate::logging::LogError),
    /// `--dashboard`'s address cannot be bound.
    #[error(transparent)]
    Dashboard(#[from] crate::dashboard::DashboardError),
    /// The tokio runtime cannot start.
    #[error("cannot start the runtime: {0}")]
    Runtime(std::io::Error),
}

/// Runs one command to its end or `term.stop`, printing as the binary does; the result says
/// the exit status. Installs no signal handler (the caller feeds `term.stop`).
///
/// # Errors
/// The command's flags, files or target are wrong; nothing ran (or, for a replay whose session
/// files could not be written, the run stopped).
pub async fn run_command(cmd: Command, term: &Terminal) -> Result<Finished, CommandError> {
    Ok(match cmd {
        Command::Replay(c) => Finished::Replay(Box::new(replay_cmd(*c, term).await?)),
        Command::Record(a) => Finished::Record(record_cmd(a, term).await?),
        Command::Bench(c) => {
            let (report, stopped_by) = bench_cmd(c, term).await?;
            Finished::Bench(Box::new(report), stopped_by)
        }
        Command::Capacity(a) => capacity_cmd(*a, term).await?,
        Command::Explain(a) => explain_cmd(*a, term).await?,
        Command::ImportHar(a) => {
            let done = crate::har::run(a)?;
            println!(
                "surge import-har: wrote {} events ({}) to {}",
                done.events,
                done.origin,
                done.output.display()
            );
            Finished::Imported(done)
        }
        Command::Parametrize(a) => {
            let done = crate::parametrize::run(a)?;
            for (name, value, count) in &done.replaced {
                println!("{value} → ${{{name}}}: {count} places");
            }
            println!("wrote {}", done.output.display());
            Finished::Parametrized(done)
        }
        Command::Merge(a) => Finished::Merge(merge_cmd(a)?),
        Command::Compare(a) => {
            let done = crate::compare::run(&a)?;
            for v in &done.verdicts {
                println!("{}", v.line());
            }
            for v in done.verdicts.iter().filter(|v| v.regression) {
                eprintln!("surge compare: regression: {}", v.line());
            }
            Finished::Compared(done)
        }
        Command::Report(a) => {
            let written = crate::report::run(a, &|line| eprintln!("surge report: {line}"))?;
            eprintln!("{written}");
            Finished::Report(written)
        }
    })
}

/// The stop, saying on stderr which signal came: a run stopped early writes partial results.
fn announced(term: &Terminal) -> impl Future<Output = ()> + Send + 'static {
    let stop = term.stop.clone();
    async move {
        stop.wait().await;
        match stop.signal() {
            Some(Signal::Terminate) => eprintln!("surge: SIGTERM, finishing partial results"),
            _ => eprintln!("surge: interrupted, finishing partial results"),
        }
    }
}

/// `surge replay`: plan from the flags, logger, the dashboard, the run, then its text or JSON
/// summary (and, with the dashboard, report.html in the run directory).
async fn replay_cmd(cmd: ReplayCmd, term: &Terminal) -> Result<replay::Replayed, CommandError> {
    let args = cmd.replay;
    let mut plan = replay::ReplayPlan::from_args(&args, &term.argv).await?;
    plan.progress = term.progress;
    if term.logger {
        let debug_log = (args.debug_log).then(|| plan.out_dir.join(crate::logging::DEBUG_LOG));
        crate::logging::init(args.log_level, debug_log.as_deref())?;
    }
    let out_dir = plan.out_dir.clone();
    let kinds: Vec<&'static str> = crate::recording::Kind::ALL
        .iter()
        .map(|k| k.name())
        .collect();
    let dash = Dashboard::start(&cmd.dashboard, &kinds).await?;
    if let Some(d) = &dash {
        plan.live = Some(d.metrics.clone());
        d.show(&out_dir, &format!("surge replay {}", plan.url));
    }
    let outcome = replay::run(plan, announced(term)).await?;
    if let Some(line) = outcome.summary.generator.and_then(|g| g.warning()) {
        eprintln!("surge replay: {line}");
    }
    if let Some(d) = dash {
        d.finish(Some(&out_dir), term.stop.wait()).await;
    }
    if args.json {
        let json = serde_json::to_string_pretty(&outcome.summary).expect("a summary serialises");
        println!("{}", crate::secret::mask(&json));
    } else {
        print!(
            "{}",
            crate::secret::mask(&replay::replay_text(&outcome.summary, &out_dir))
        );
    }
    Ok(outcome)
}

/// `surge record`: plan from the flags, the listening line, the proxy until the tab closes or a
/// signal (the normal way to finish: no "interrupted" line), then how many events it wrote.
async fn record_cmd(args: record::RecordArgs, term: &Terminal) -> Result<Recorded, CommandError> {
    let plan = record::RecordPlan::from_args(&args).await?;
    // Ignore a closed stdout: the recording matters, the message does not.
    let _ = writeln!(
        std::io::stdout(),
        "surge record: listening on http://{}/ -> {} ({}); close the browser tab or press Ctrl-C to finish",
        plan.addr, args.target, plan.target_type
    );
    let _ = std::io::stdout().flush();
    let addr = plan.addr;
    let done = record::run(plan, term.stop.wait()).await;
    if done.events == 0 {
        let kept = if done.output.exists() {
            "left as it was"
        } else {
            "not written"
        };
        let _ = writeln!(
            std::io::stderr(),
            "surge record: nothing recorded (no request came through http://{addr}/); {} {kept}",
            done.output.display()
        );
        return Ok(done);
    }
    let _ = writeln!(
        std::io::stdout(),
        "surge record: wrote {} events to {}",
        done.events,
        done.output.display()
    );
    Ok(done)
}

/// `surge bench`: plan from the flags, the dashboard when asked (`/metrics`: the request
/// histogram), the run, then its text or JSON; one line saying why when more requests than
/// `--max-error-rate` were not ok (exit status 1).
async fn bench_cmd(
    cmd: BenchCmd,
    term: &Terminal,
) -> Result<(BenchReport, Option<Signal>), CommandError> {
    let args = cmd.bench;
    let dash = Dashboard::start(&cmd.dashboard, &[]).await?;
    if let Some(d) = &dash {
        d.show_title(&format!("surge bench {}", args.url));
    }
    let live = dash.as_ref().map(|d| d.metrics.clone());
    let mut plan = bench::BenchPlan::from_args(&args).await?.with_live(live);
    plan.progress =
        term.progress && !args.json && std::io::IsTerminal::is_terminal(&std::io::stderr());
    let report = bench::run(plan, term.stop.wait()).await;
    let stopped_by = term.stop.signal();
    if let Some(d) = dash {
        d.finish(None, term.stop.wait()).await;
    }
    if args.json {
        let json = serde_json::to_string_pretty(&report).expect("a bench result serialises");
        println!("{}", crate::secret::mask(&json));
    } else {
        print!("{}", bench::bench_text(&report));
    }
    if let Some(line) = report.generator.and_then(|g| g.warning()) {
        eprintln!("surge bench: {line}");
    }
    if let Some(line) = report.verdict() {
        eprintln!("surge bench: {line}");
    }
    Ok((report, stopped_by))
}

/// `surge capacity`: failed sessions are expected near the knee, so only errors are logged; the
/// answer line (or the scaling table) goes to stdout.
async fn capacity_cmd(args: CapacityArgs, term: &Terminal) -> Result<Finished, CommandError> {
    if term.logger {
        crate::logging::init(crate::logging::LogLevel::Error, None)?;
    }
    let plan = capacity::CapacityPlan::from_args(args)?;
    if !plan.args.workers.is_empty() {
        let scaling = capacity::run_scaling(plan, announced(term)).await?;
        print!("{}", scaling.table);
        return Ok(Finished::Scaling(scaling));
    }
    let result = capacity::run(plan, announced(term)).await?;
    println!("{}", result.answer);
    Ok(Finished::Capacity(Box::new(result)))
}

/// `surge explain`: the two runs, then the ranking (or explain.json with --json) on stdout.
async fn explain_cmd(
    args: crate::capacity::explain::ExplainArgs,
    term: &Terminal,
) -> Result<Finished, CommandError> {
    if term.logger {
        crate::logging::init(crate::logging::LogLevel::Error, None)?;
    }
    let json = args.json;
    let plan = crate::capacity::explain::ExplainPlan::from_args(args)?;
    let done = crate::capacity::explain::run(plan, announced(term)).await?;
    if json {
        let text = serde_json::to_string_pretty(&done).expect("explain serialises");
        println!("{text}");
    } else {
        print!(
            "{}",
            crate::capacity::explain::rank::table(&done.rows, done.users)
        );
        println!("{}", done.headline());
        println!(
            "wrote {}",
            done.dir
                .join(crate::capacity::explain::EXPLAIN_JSON)
                .display()
        );
    }
    Ok(Finished::Explain(Box::new(done)))
}

/// `surge merge`: the merge, then the merged summary (text or JSON) or bench result; one line
/// saying why when the merged bench result has too many requests not ok (exit status 1).
fn merge_cmd(args: crate::merge::MergeArgs) -> Result<crate::merge::Merged, CommandError> {
    use crate::merge::Merged;
    let (json, output) = (args.json, args.output.clone());
    let merged = crate::merge::run(args)?;
    match &merged {
        Merged::Run { summary, .. } if json => {
            let text = serde_json::to_string_pretty(summary).expect("a summary serialises");
            println!("{text}");
        }
        Merged::Run {
            summary,
            segments,
            sessions,
        } => {
            println!("merged {segments} segments: {sessions} sessions");
            print!(
                "{}",
                crate::secret::mask(&replay::replay_text(summary, &output))
            );
        }
        Merged::Bench(r) => {
            if json {
                let text = serde_json::to_string_pretty(r).expect("a bench result serialises");
                println!("{text}");
            } else {
                print!("{}", bench::bench_text(r));
            }
            // The whole plan is judged as one run would be: the same --max-error-rate line.
            if let Some(line) = r.verdict() {
                eprintln!("surge merge: {line}");
            }
        }
    }
    Ok(merged)
}
