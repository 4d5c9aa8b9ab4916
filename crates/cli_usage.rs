//! Shared by the three programs' `main.rs` (included with `#[path]`; the crates depend on none of
//! each other): a command line clap refuses becomes one line, `PROGRAM: error: WHAT` (the
//! convention of all three programs, docs/testing.md), exit status 2; help and version print as
//! clap has them.

use clap::Parser;

/// The parsed command line, or the process ends as described above.
pub fn parse_or_exit<P: Parser>(program: &str) -> P {
    match P::try_parse() {
        Ok(p) => p,
        Err(e) => std::process::exit(report(program, e)),
    }
}

/// Prints a clap refusal (help and version as clap has them, anything else on one line) and
/// returns the exit status it stands for.
pub fn report(program: &str, e: clap::Error) -> i32 {
    use clap::error::ErrorKind;
    if matches!(
        e.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        let _ = e.print();
        return if e.use_stderr() { 2 } else { 0 };
    }
    let text = e.render().to_string();
    // The first paragraph, on one line (a missing argument's name is on the line after).
    let para: Vec<&str> = (text.lines().map(str::trim))
        .skip_while(|l| l.is_empty())
        .take_while(|l| !l.is_empty())
        .collect();
    eprintln!("{program}: {}", para.join(" "));
    2
}
