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
    /// Replay a recording with many simulated users (shinycannon-compatible output)
    Replay(ReplayCmd),
    /// How many users an app holds within SLOs: replay steps of growing load, then bisection
    Capacity(surge::capacity::CapacityArgs),
    /// One run from the segments of a plan (--segment K/N run directories or bench --json results)
    Merge(surge::merge::MergeArgs),
    /// One self-contained HTML report for one run or a comparison of runs
    Report(surge::report::ReportArgs),
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return usage_error(e),
    };
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
        Command::Record(a) => rt.block_on(surge::record::run(a)),
        Command::ImportHar(a) => surge::har::run(a),
        Command::Replay(a) => rt.block_on(replay(a)),
        Command::Capacity(a) => rt.block_on(capacity(a)),
        Command::Merge(a) => surge::merge::run(a),
        Command::Report(a) => surge::report::run(a).map(|()| 0).map_err(Into::into),
    };
    surge::exit_code(result, cli.verbose)
}

/// A command line clap refuses: help and version print as clap has them; a bad flag is one
/// line (`surge: error: invalid value ... for '--stages <STAGES>': ...`) and exit status 2.
fn usage_error(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(
        e.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        let _ = e.print();
        return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
    }
    let text = e.render().to_string();
    // The first paragraph, on one line (a missing argument's name is on the line after).
    let para: Vec<&str> = (text.lines().map(str::trim))
        .skip_while(|l| l.is_empty())
        .take_while(|l| !l.is_empty())
        .collect();
    eprintln!("surge: {}", para.join(" "));
    ExitCode::from(2)
}

/// The command line as the session CSVs record it (after `surge replay`).
fn argv() -> Vec<String> {
    std::env::args().skip(2).collect()
}

/// Resolves at the first Ctrl-C (never when the handler cannot be installed).
async fn ctrl_c() {
    if tokio::signal::ctrl_c().await.is_ok() {
        eprintln!("surge: interrupted, finishing partial results");
    } else {
        std::future::pending::<()>().await;
    }
}

/// `surge bench`, with its dashboard when asked (`/metrics`: the request histogram).
async fn bench(cmd: BenchCmd) -> anyhow::Result<u8> {
    let dash = surge::dashboard::Dashboard::start(&cmd.dashboard, &[])
        .await
        .map_err(anyhow::Error::msg)?;
    if let Some(d) = &dash {
        d.show_title(&format!("surge bench {}", cmd.bench.url));
    }
    let live = dash.as_ref().map(|d| d.metrics.clone());
    let code = surge::bench::run_with(cmd.bench, live).await;
    if let Some(d) = dash {
        d.finish(None).await;
    }
    code
}

/// `surge replay`: plan from the flags, logger, Ctrl-C, the dashboard, the run, then its text or
/// JSON summary (and, with the dashboard, report.html in the run directory).
async fn replay(cmd: ReplayCmd) -> anyhow::Result<u8> {
    let args = cmd.replay;
    let mut plan = surge::replay::ReplayPlan::from_args(&args, &argv()).await?;
    let debug_log = (args.debug_log).then(|| plan.out_dir.join(surge::logging::DEBUG_LOG));
    surge::logging::init(args.log_level, debug_log.as_deref()).map_err(anyhow::Error::msg)?;
    let out_dir = plan.out_dir.clone();
    let kinds: Vec<&'static str> = surge::recording::Kind::ALL
        .iter()
        .map(|k| k.name())
        .collect();
    let dash = surge::dashboard::Dashboard::start(&cmd.dashboard, &kinds)
        .await
        .map_err(anyhow::Error::msg)?;
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

/// `surge capacity`: failed sessions are expected near the knee, so only errors are logged; the
/// answer line goes to stdout.
async fn capacity(args: surge::capacity::CapacityArgs) -> anyhow::Result<u8> {
    surge::logging::init(surge::logging::LogLevel::Error, None).map_err(anyhow::Error::msg)?;
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
