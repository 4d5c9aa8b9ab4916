//! surge command line: clap parses it, the library's terminal layer (`surge::terminal`) does the
//! rest (runtime, logger, SIGINT/SIGTERM, dashboard, printing, exit status).

use std::process::ExitCode;

fn main() -> ExitCode {
    let cli: surge::terminal::Cli = cli_usage::parse_or_exit("surge");
    surge::terminal::main(cli)
}

#[path = "../../cli_usage.rs"]
mod cli_usage;

#[cfg(test)]
#[path = "../../../tests/doc_flags.rs"]
mod doc_flags;

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// docs/<program>.md ends with every flag and default, as the code defines them.
    #[test]
    fn flag_reference_matches_the_code() {
        super::doc_flags::check_docs(&surge::terminal::Cli::command());
    }
}
