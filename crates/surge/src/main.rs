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

#[derive(Subcommand)]
enum Command {
    /// Load one URL (closed model; --rate for an open model without coordinated omission)
    Bench(surge::bench::BenchArgs),
    /// Record a browser session through a reverse proxy into recording.log
    Record(surge::record::RecordArgs),
    /// Convert a browser HAR export into recording.log
    ImportHar(surge::har::ImportArgs),
    /// Replay a recording with many simulated users (shinycannon-compatible output)
    Replay(surge::replay::ReplayArgs),
    /// One run from the segments of a plan (--segment K/N run directories or bench --json results)
    Merge(surge::merge::MergeArgs),
    /// One self-contained HTML report for one run or a comparison of runs
    Report(surge::report::ReportArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
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
        Command::Bench(a) => rt.block_on(surge::bench::run(a)),
        Command::Record(a) => rt.block_on(surge::record::run(a)),
        Command::ImportHar(a) => surge::har::run(a),
        Command::Replay(a) => rt.block_on(surge::replay::run(a)),
        Command::Merge(a) => surge::merge::run(a),
        Command::Report(a) => surge::report::run(a).map(|()| 0).map_err(Into::into),
    };
    surge::exit_code(result, cli.verbose)
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
