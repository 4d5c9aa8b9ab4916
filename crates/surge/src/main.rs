//! surge command line: a thin clap dispatcher over the library's `run` functions.

use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "surge",
    version,
    about = "Record web sessions, replay them with many users, benchmark URLs"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Print error details
    #[arg(short, long, global = true)]
    verbose: bool,
}

/// `surge replay`'s flags: the replay's own and the live dashboard's.
#[derive(clap::Args)]
struct ReplayCmd {
    #[command(flatten)]
    replay: surge::replay::ReplayArgs,
    #[command(flatten)]
    dashboard: surge::dashboard::DashboardArgs,
}

/// `surge bench`'s flags: the bench's own and the live dashboard's.
#[derive(clap::Args)]
struct BenchCmd {
    #[command(flatten)]
    bench: surge::bench::BenchArgs,
    #[command(flatten)]
    dashboard: surge::dashboard::DashboardArgs,
}

#[derive(Subcommand)]
enum Command {
    /// Load one URL (closed model; --rate for an open model without coordinated omission)
    Bench(BenchCmd),
    /// Record a browser session through a reverse proxy into recording.log
    Record(surge::record::RecordArgs),
    /// Convert a browser HAR export into recording.log
    ImportHar(surge::har::ImportArgs),
    /// Turn recorded values into ${name} placeholders (for replay --data)
    Parametrize(surge::parametrize::ParametrizeArgs),
    /// Replay a recording with many simulated users (shinycannon-compatible output)
    Replay(Box<ReplayCmd>),
    /// How many users an app holds within SLOs: replay steps of growing load, then bisection
    Capacity(surge::capacity::CapacityArgs),
    /// One run from the segments of a plan (--segment K/N run directories or bench --json results)
    Merge(surge::merge::MergeArgs),
    /// One self-contained HTML report for one run or a comparison of runs
    Report(surge::report::ReportArgs),
}

fn main() -> ExitCode {
    let cli: Cli = cli_usage::parse_or_exit("surge");
    // bench runs its connections on threads of its own (`--threads`): its loop here only waits.
    let rt = match &cli.command {
        Command::Bench(_) => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build(),
        _ => surge::runtime(),
    };
    let rt = match rt {
        Ok(rt) => rt,
        Err(e) => return surge::exit_code(Err(e.into()), cli.verbose),
    };
    let result = match cli.command {
        Command::Bench(a) => rt.block_on(bench(a)),
        Command::Record(a) => rt.block_on(record(a)),
        Command::ImportHar(a) => surge::har::run(a),
        Command::Parametrize(a) => surge::parametrize::run(a).map_err(Into::into),
        Command::Replay(a) => rt.block_on(replay(*a)),
        Command::Capacity(a) => rt.block_on(capacity(a)),
        Command::Merge(a) => surge::merge::run(a),
        Command::Report(a) => surge::report::run(a).map(|()| 0).map_err(Into::into),
    };
    surge::exit_code(result, cli.verbose)
}

#[path = "../../cli_usage.rs"]
mod cli_usage;

/// The command line as the session CSVs record it (after `surge replay`).
fn argv() -> Vec<String> {
    std::env::args().skip(2).collect()
}

/// Resolves at the first Ctrl-C (never when the handler cannot be installed).
async fn sigint() {
    if tokio::signal::ctrl_c().await.is_err() {
        std::future::pending::<()>().await;
    }
}

/// [`sigint`], saying so on stderr: a run stopped early writes partial results.
async fn ctrl_c() {
    sigint().await;
    eprintln!("surge: interrupted, finishing partial results");
}

/// `surge replay`: plan from the flags, logger, Ctrl-C, the dashboard, the run, then its text or
/// JSON summary (and, with the dashboard, report.html in the run directory).
async fn replay(cmd: ReplayCmd) -> anyhow::Result<u8> {
    let args = cmd.replay;
    let mut plan = surge::replay::ReplayPlan::from_args(&args, &argv()).await?;
    let debug_log = (args.debug_log).then(|| plan.out_dir.join(surge::logging::DEBUG_LOG));
    surge::logging::init(args.log_level, debug_log.as_deref())?;
    let out_dir = plan.out_dir.clone();
    let kinds: Vec<&'static str> = surge::recording::Kind::ALL
        .iter()
        .map(|k| k.name())
        .collect();
    let dash = surge::dashboard::Dashboard::start(&cmd.dashboard, &kinds).await?;
    if let Some(d) = &dash {
        plan.live = Some(d.metrics.clone());
        d.show(&out_dir, &format!("surge replay {}", plan.url));
    }
    let outcome = surge::replay::run(plan, ctrl_c()).await?;
    if let Some(d) = dash {
        d.finish(Some(&out_dir)).await;
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&outcome.summary)?);
    } else {
        print!("{}", surge::replay::replay_text(&outcome.summary, &out_dir));
    }
    Ok(outcome.exit_code())
}

/// `surge record`: plan from the flags, the listening line, the proxy until the tab closes or
/// Ctrl-C (the normal way to finish: no "interrupted" line), then how many events it wrote.
async fn record(args: surge::record::RecordArgs) -> anyhow::Result<u8> {
    use std::io::Write as _;
    let plan = surge::record::RecordPlan::from_args(&args).await?;
    // Ignore a closed stdout: the recording matters, the message does not.
    let _ = writeln!(
        std::io::stdout(),
        "surge record: listening on http://{}/ -> {} ({}); close the browser tab or press Ctrl-C to finish",
        plan.addr, args.target, plan.target_type
    );
    let _ = std::io::stdout().flush();
    let done = surge::record::run(plan, sigint()).await;
    let _ = writeln!(
        std::io::stdout(),
        "surge record: wrote {} events to {}",
        done.events,
        done.output.display()
    );
    Ok(0)
}

/// `surge bench`: plan from the flags, the dashboard when asked (`/metrics`: the request
/// histogram), Ctrl-C, the run, then its text or JSON; exit status 1 (with one line saying why)
/// when more requests than `--max-error-rate` were not ok.
async fn bench(cmd: BenchCmd) -> anyhow::Result<u8> {
    let args = cmd.bench;
    let dash = surge::dashboard::Dashboard::start(&cmd.dashboard, &[]).await?;
    if let Some(d) = &dash {
        d.show_title(&format!("surge bench {}", args.url));
    }
    let live = dash.as_ref().map(|d| d.metrics.clone());
    let mut plan = surge::bench::BenchPlan::from_args(&args)
        .await?
        .with_live(live);
    plan.progress = !args.json && std::io::IsTerminal::is_terminal(&std::io::stderr());
    let report = surge::bench::run(plan, sigint()).await;
    if let Some(d) = dash {
        d.finish(None).await;
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", surge::bench::bench_text(&report));
    }
    Ok(match report.verdict() {
        Some(line) => {
            eprintln!("surge bench: {line}");
            1
        }
        None => 0,
    })
}

/// `surge capacity`: failed sessions are expected near the knee, so only errors are logged; the
/// answer line goes to stdout.
async fn capacity(args: surge::capacity::CapacityArgs) -> anyhow::Result<u8> {
    surge::logging::init(surge::logging::LogLevel::Error, None)?;
    if !args.workers.is_empty() {
        let scaling = surge::capacity::run_scaling(args, ctrl_c()).await?;
        print!("{}", scaling.table);
        return Ok(scaling.exit_code());
    }
    let result = surge::capacity::run(args, ctrl_c()).await?;
    println!("{}", result.answer);
    Ok(result.exit_code())
}

#[cfg(test)]
#[path = "../../../tests/doc_flags.rs"]
mod doc_flags;

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// docs/<program>.md ends with every flag and default, as the code defines them.
    #[test]
    fn flag_reference_matches_the_code() {
        super::doc_flags::check_docs(&super::Cli::command());
    }
}
