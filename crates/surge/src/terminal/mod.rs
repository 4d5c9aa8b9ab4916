//! The terminal layer: what `surge` is as a process. It parses nothing itself (`main.rs` hands it
//! the parsed [`Cli`]) but owns everything else a library `run` must not do: the tokio runtime,
//! the logger, SIGINT and SIGTERM (one [`Stop`], the only place surge touches signals), the live
//! dashboard, printing results and turning them into exit statuses. `main.rs` calls [`main`]; the
//! tests call [`run_command`] with a [`Terminal`] of their own (no logger, no signal handler, a
//! stop they trigger), so the binary's path and the tests' are one.
//!
//! Each command is flags → plan → `run(plan, stop)` → result: the flags are checked into a plan
//! (`ReplayPlan::from_args`, `BenchPlan::from_args`, ...), the plan runs until its end or the
//! stop, and the typed result comes back here to be printed ([`Finished`]). A plan's constructor
//! does the reading a bad input must fail on before any load is made (the recording, `--data`,
//! an https target's TLS probe; replay also prepares its run directory), and nothing else: no
//! logger, no signal, no printing but warnings; `run` does the run's own I/O.
//!
//! After a signal a run starts nothing new and writes what it has: replay and capacity cut the
//! sessions still running at once (PLAYBACK_FAIL, kind `interrupted`) and write their session
//! files and summary.json within about a second; bench lets requests in flight end (each bounded
//! by `--timeout`). Exit status 130 after SIGINT, 143 after SIGTERM.

mod commands;
mod stop;

pub use commands::{run_command, CommandError, Finished};
pub use stop::{Signal, Stop};

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// surge's command line.
#[derive(Parser, Debug)]
#[command(
    name = "surge",
    version,
    about = "Record web sessions, replay them with many users, benchmark URLs"
)]
pub struct Cli {
    /// The subcommand and its flags.
    #[command(subcommand)]
    pub command: Command,
    /// Print error details
    #[arg(short, long, global = true)]
    pub verbose: bool,
}

impl Cli {
    /// `surge ARGS…` parsed as the binary parses its command line (`args` without the program
    /// name): what a test hands [`run_command`].
    ///
    /// # Errors
    /// clap's refusal (the binary prints it and exits 2).
    pub fn parse_args<I, S>(args: I) -> Result<Cli, clap::Error>
    where
        I: IntoIterator<Item = S>,
        S: Into<std::ffi::OsString> + Clone,
    {
        let argv = std::iter::once(std::ffi::OsString::from("surge"))
            .chain(args.into_iter().map(Into::into));
        Cli::try_parse_from(argv)
    }
}

/// `surge replay`'s flags: the replay's own and the live dashboard's.
#[derive(clap::Args, Debug)]
pub struct ReplayCmd {
    /// The replay's flags.
    #[command(flatten)]
    pub replay: crate::replay::ReplayArgs,
    /// `--dashboard`.
    #[command(flatten)]
    pub dashboard: crate::dashboard::DashboardArgs,
}

/// `surge bench`'s flags: the bench's own and the live dashboard's.
#[derive(clap::Args, Debug)]
pub struct BenchCmd {
    /// The bench's flags.
    #[command(flatten)]
    pub bench: crate::bench::BenchArgs,
    /// `--dashboard`.
    #[command(flatten)]
    pub dashboard: crate::dashboard::DashboardArgs,
}

/// surge's subcommands, each with its flags.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Load one URL (closed model; --rate for an open model without coordinated omission)
    Bench(BenchCmd),
    /// Record a browser session through a reverse proxy into recording.log
    Record(crate::record::RecordArgs),
    /// Convert a browser HAR export into recording.log
    ImportHar(crate::har::ImportArgs),
    /// Turn recorded values into ${name} placeholders (for replay --data)
    Parametrize(crate::parametrize::ParametrizeArgs),
    /// Replay a recording with many simulated users (shinycannon-compatible output)
    Replay(Box<ReplayCmd>),
    /// How many users an app holds within SLOs: replay steps of growing load, then bisection
    Capacity(Box<crate::capacity::CapacityArgs>),
    /// Why it is slow: one user alone, then many; each request or output ranked by its cost
    Explain(Box<crate::capacity::explain::ExplainArgs>),
    /// One run from the segments of a plan (--segment K/N run directories or bench --json results)
    Merge(crate::merge::MergeArgs),
    /// One self-contained HTML report for one run or a comparison of runs
    Report(crate::report::ReportArgs),
    /// CI's verdict: exit 1 when NEW is slower than BASE beyond a margin and beyond noise
    Compare(crate::compare::CompareArgs),
}

impl Command {
    /// Whether the command is a run that a signal stops (the others are short file commands,
    /// left to the signals' default action).
    fn stoppable(&self) -> bool {
        matches!(
            self,
            Command::Bench(_)
                | Command::Record(_)
                | Command::Replay(_)
                | Command::Capacity(_)
                | Command::Explain(_)
        )
    }
}

/// How a command meets its terminal: the stop signal, whether to install the logger, the
/// command line the session CSVs record, and `-v`.
#[derive(Debug, Clone, Default)]
pub struct Terminal {
    /// The run's stop (SIGINT and SIGTERM in the binary; triggered by hand in a test).
    pub stop: Stop,
    /// Install the process-wide logger (`--log-level`, `--debug-log`); a test leaves it off.
    pub logger: bool,
    /// Draw progress lines on stderr when it is a terminal.
    pub progress: bool,
    /// `surge replay`'s arguments as given, written into the session CSVs' first line.
    pub argv: Vec<String>,
}

/// The binary: runs `cli` on its runtime with SIGINT and SIGTERM feeding the stop, prints the
/// result (or the error, one line; details with `-v`) and returns the exit status.
pub fn main(cli: Cli) -> ExitCode {
    // bench runs its connections on threads of its own (`--threads`): its loop here only waits.
    let rt = match &cli.command {
        Command::Bench(_) => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build(),
        _ => crate::runtime(),
    };
    let rt = match rt {
        Ok(rt) => rt,
        Err(e) => return exit_code(Err(CommandError::Runtime(e)), cli.verbose),
    };
    let term = Terminal {
        stop: Stop::new(),
        logger: true,
        progress: true,
        argv: std::env::args().skip(2).collect(),
    };
    let verbose = cli.verbose;
    let stoppable = cli.command.stoppable();
    let result = rt.block_on(async {
        if stoppable {
            term.stop.listen_to_signals();
        }
        run_command(cli.command, &term).await
    });
    exit_code(result.map(|f| f.exit_code(term.stop.signal())), verbose)
}

/// Turns a command's result into the process exit status; an error prints one line (its causes
/// joined by `: `; the whole chain with `-v`) and is status 2.
pub fn exit_code(result: Result<u8, CommandError>, verbose: bool) -> ExitCode {
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            let line = if verbose {
                format!("surge: error: {e:?}")
            } else {
                format!("surge: error: {}", error_line(&e))
            };
            eprintln!("{}", crate::secret::mask(&line));
            ExitCode::from(2)
        }
    }
}

/// `error: cause: cause…` on one line.
fn error_line(e: &(dyn std::error::Error + 'static)) -> String {
    let mut line = e.to_string();
    let mut cur = e.source();
    while let Some(s) = cur {
        line.push_str(": ");
        line.push_str(&s.to_string());
        cur = s.source();
    }
    line
}
