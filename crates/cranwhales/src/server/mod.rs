//! `cranwhales serve`: the JSON API and the embedded web UI (issue 3; placeholder until built).

/// Options of `cranwhales serve`.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// SQLite database file.
    #[arg(long, default_value = "data/cranwhales.db")]
    pub db: std::path::PathBuf,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub addr: std::net::SocketAddr,
}

/// Runs the server until Ctrl-C.
pub async fn run(_args: ServeArgs) -> anyhow::Result<()> {
    anyhow::bail!("serve is not built yet")
}
