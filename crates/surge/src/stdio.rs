//! surge's own `eprintln!` and `eprint!`, in place of std's in every module (declared first in
//! lib.rs with `#[macro_use]`, so they shadow the prelude's by textual scope). std's panic when
//! stderr is closed (`surge … 2>&1 | head` once head has exited, a log collector gone): a
//! progress or report line nobody can read ended the run with "failed printing to stderr",
//! exit 101, often after its results were on disk. These drop the line and go on, as the log
//! subscriber does (`logging`), so the command keeps its own exit status.

/// `eprintln!` that drops the line when stderr cannot take it.
macro_rules! eprintln {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($t)*);
    }};
}

/// `eprint!` that drops the text when stderr cannot take it.
macro_rules! eprint {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stderr(), $($t)*);
    }};
}
