//! `manifold` binary: parse flags, bind, run the pool, print one line on error.

use clap::Parser;
use manifold::{Cli, Config};

fn main() {
    let cli: Cli = parse_or_exit("manifold");
    // Before the settings: --max-connections' default is half of it.
    manifold::config::raise_open_file_limit();
    let verbose = cli.opts.verbose;
    let cfg = match Config::from_cli(cli) {
        Ok(c) => c,
        Err(e) => fail(&e, verbose),
    };
    let filter = if cfg.verbose {
        "manifold=debug"
    } else {
        "manifold=info"
    };
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| filter.into()),
        )
        .with_writer(std::io::stderr)
        // A log line stderr cannot take is dropped: tracing's own complaint about it goes to
        // stderr through eprintln!, which panics there and killed the task that logged.
        .log_internal_errors(false)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let rt = tokio::runtime::Runtime::new().expect("tokio runtime");
    let result = rt.block_on(async {
        cfg.validate()?;
        // Bound before any worker starts, so a taken port fails fast.
        let listener = tokio::net::TcpListener::bind(cfg.listen)
            .await
            .map_err(|source| manifold::Error::Bind {
                addr: cfg.listen,
                source,
            })?;
        let (first, second) = manifold::shutdown::stages();
        manifold::run_with_reload(
            listener,
            cfg.clone(),
            first,
            second,
            Some(reloads_on_sighup()),
        )
        .await
    });
    if let Err(e) = result {
        fail(&e, cfg.verbose);
    }
}

/// On each SIGHUP, reads the flags and the config file again; a valid config is sent on, an
/// invalid one is logged and the running generation kept.
fn reloads_on_sighup() -> tokio::sync::mpsc::UnboundedReceiver<Config> {
    use tokio::signal::unix::{signal, SignalKind};
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let mut hup = signal(SignalKind::hangup()).expect("install SIGHUP handler");
    tokio::spawn(async move {
        while hup.recv().await.is_some() {
            let parsed = Cli::try_parse_from(std::env::args_os())
                .map_err(|e| e.to_string())
                .and_then(|cli| Config::from_cli(cli).map_err(|e| e.to_string()));
            match parsed {
                Ok(cfg) => {
                    tracing::info!("SIGHUP: reloading");
                    let _ = tx.send(cfg);
                }
                Err(e) => tracing::error!(
                    "SIGHUP: {}; keeping the current generation",
                    e.lines().next().unwrap_or_default()
                ),
            }
        }
    });
    rx
}

#[path = "../../cli_usage.rs"]
mod cli_usage;
use cli_usage::parse_or_exit;

/// The error line, then exit 1; written without `eprintln!`, which would panic (exit 101) when
/// stderr is closed.
fn fail(e: &dyn std::error::Error, verbose: bool) -> ! {
    use std::io::Write;
    let mut err = std::io::stderr();
    let _ = writeln!(err, "manifold: error: {e}");
    if verbose {
        let mut src = e.source();
        while let Some(s) = src {
            let _ = writeln!(err, "  caused by: {s}");
            src = s.source();
        }
    }
    std::process::exit(1);
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
        super::doc_flags::check_docs(&manifold::Cli::command());
    }

    /// docs/manifold.md's reload table (each setting's default and reload class) is the
    /// settings table's; `UPDATE_DOCS=1` (`make docs`) writes it.
    #[test]
    fn flag_reference_reload_classes_match_the_table() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/manifold.md");
        let page = std::fs::read_to_string(&path).expect("docs/manifold.md");
        let begin = "<!-- reload: generated from the settings table by `make docs` -->\n";
        let end = "<!-- /reload -->";
        let (s, e) = (
            page.find(begin).expect("reload table start marker") + begin.len(),
            page.find(end).expect("reload table end marker"),
        );
        let want = manifold::config::live::docs_table();
        if page[s..e] == want {
            return;
        }
        assert!(
            std::env::var_os("UPDATE_DOCS").is_some(),
            "docs/manifold.md: the reload table differs from the settings table; run `make docs`"
        );
        let tmp = path.with_extension("md.tmp");
        std::fs::write(&tmp, format!("{}{want}{}", &page[..s], &page[e..])).expect("write");
        std::fs::rename(&tmp, &path).expect("rename");
    }
}
