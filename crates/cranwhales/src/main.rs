//! The `cranwhales` command: a thin shell over the library.

use std::time::Duration;

use anyhow::Context;
use clap::{Parser, Subcommand};
use cranwhales::{cli, server};

/// Finds the few downloaders behind a large share of CRAN's package downloads.
#[derive(Parser)]
#[command(name = "cranwhales", version)]
struct Cli {
    /// Print errors with their full cause chain.
    #[arg(short, long, global = true)]
    verbose: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the web UI and JSON API.
    Serve(server::ServeArgs),
    /// Ingest days (local .csv.gz files, or dates and URLs to download) into the database.
    Ingest(cli::IngestArgs),
    /// Print one day's summary: totals, hourly traffic, the top whales.
    Show(cli::ShowArgs),
    /// List the ingested days with their totals.
    Days(cli::DaysArgs),
    /// One package over the stored days: downloads, unique downloaders, without the whales.
    Package(cli::PackageArgs),
    /// Bring a store written by an older cranwhales up to date, in place, showing progress.
    Migrate(cli::MigrateArgs),
}

fn main() {
    let cli: Cli = parse_or_exit("cranwhales");
    let result = match cli.command {
        Command::Serve(args) => serve(args),
        Command::Ingest(args) => cli::ingest(args),
        Command::Show(args) => cli::show(args),
        Command::Days(args) => cli::days(args),
        Command::Package(args) => cli::package(args),
        Command::Migrate(args) => cli::migrate(args),
    };
    if let Err(e) = result {
        if cli.verbose {
            eprintln!("cranwhales: error: {e:?}");
        } else {
            eprintln!("cranwhales: error: {e:#}");
        }
        std::process::exit(if cli::is_usage(&e) { 2 } else { 1 });
    }
}

#[path = "../../cli_usage.rs"]
mod cli_usage;
use cli_usage::parse_or_exit;

/// `cranwhales serve`: bind, print the URL, serve until a signal, drain.
fn serve(args: server::ServeArgs) -> anyhow::Result<()> {
    // Fetches, failures and stalls are logged to stderr (RUST_LOG overrides the level).
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("cranwhales=info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let rt = tokio::runtime::Runtime::new()?;
    let result = rt.block_on(async {
        let state = server::open(&args).await?;
        let listener = tokio::net::TcpListener::bind(args.addr)
            .await
            .with_context(|| format!("listening on {}", args.addr))?;
        let addr = listener.local_addr()?;
        // Handlers installed before the URL line: a signal right after it drains, not kills.
        let (first, second) = grammar::signal::stages();
        println!(
            "cranwhales: serving {} stored days on http://{addr}/",
            state.stored_days()
        );
        tokio::select! {
            r = server::run(listener, state, first) => r,
            _ = second => {
                tracing::warn!("second signal: stopping without waiting for requests in flight");
                Ok(())
            }
        }
    });
    // An ingest still running on a blocking thread is abandoned: its day is never half-stored.
    rt.shutdown_timeout(Duration::from_millis(200));
    result
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
