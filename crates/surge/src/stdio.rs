//! surge's own `println!`, `print!`, `eprintln!` and `eprint!`, in place of std's in every
//! module (declared first in lib.rs with `#[macro_use]`, so they shadow the prelude's by textual
//! scope). std's panic when stdout or stderr is closed (`surge replay … | head -1` once head has
//! exited, a pager quit early, a log collector gone): a summary or progress line nobody can read
//! ended the run with "failed printing to stdout", exit 101, after its results were on disk.
//! These drop the text and go on, as the log subscriber does (`logging`), so the command keeps
//! its own exit status.

/// `println!` that drops the line when stdout cannot take it.
macro_rules! println {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($t)*);
    }};
}

/// `print!` that drops the text when stdout cannot take it.
macro_rules! print {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stdout(), $($t)*);
    }};
}

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
