//! The `cranwhales` command: a thin shell over the library.

use clap::{Parser, Subcommand};
use cranwhales::cli;

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
    Serve(cranwhales::server::ServeArgs),
    /// Ingest days (local .csv.gz files or dates to download) into the database.
    Ingest(cli::IngestArgs),
    /// Print one day's summary: totals, hourly traffic, the top whales.
    Show(cli::ShowArgs),
    /// List the ingested days with their totals.
    Days(cli::DaysArgs),
    /// One package over the stored days: downloads, unique downloaders, without the whales.
    Package(cli::PackageArgs),
}

fn main() {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Serve(args) => tokio::runtime::Runtime::new()
            .map_err(anyhow::Error::from)
            .and_then(|rt| rt.block_on(cranwhales::server::run(args))),
        Command::Ingest(args) => cli::ingest(args),
        Command::Show(args) => cli::show(args),
        Command::Days(args) => cli::days(args),
        Command::Package(args) => cli::package(args),
    };
    if let Err(e) = result {
        if cli.verbose {
            eprintln!("error: {e:?}");
        } else {
            eprintln!("error: {e:#}");
        }
        std::process::exit(1);
    }
}
