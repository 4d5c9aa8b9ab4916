//! The `cranwhales` command: a thin shell over the library.

use clap::{Parser, Subcommand};

/// Finds the few downloaders behind a large share of CRAN's package downloads.
#[derive(Parser)]
#[command(name = "cranwhales", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the web UI and JSON API.
    Serve(cranwhales::server::ServeArgs),
}

#[tokio::main]
async fn main() {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Serve(args) => cranwhales::server::run(args).await,
    };
    if let Err(e) = result {
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
}
