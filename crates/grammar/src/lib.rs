//! The one input grammar of the workspace's three programs (`cranwhales`, `surge`, `manifold`).
//!
//! A flag name means the same thing in every program: `--drain-timeout 25s` is read by one
//! function whichever binary gets it, and refused with the same words. Text echoed from input
//! (a header, a package name from a log) is escaped by one function, calendar days computed by
//! one algorithm, and the shutdown signal awaited by one helper. Each module is one concept:
//!
//! - [`duration`]: every duration flag (`500ms`, `1.5s`, `25s`, `5m`, `1h`; a bare number is
//!   refused with a message saying how to fix it).
//! - [`size`]: every byte-size flag (`64KiB`, `16MiB`, `1GB`, a bare integer is bytes).
//! - [`echo`]: text from input or data made fit for a terminal or a log (control characters
//!   escaped, long text cut with its size).
//! - [`date`]: the proleptic Gregorian calendar as day numbers since 1970-01-01, and the strict
//!   `YYYY-MM-DD` form.
//! - [`signal`]: the `n`th SIGTERM or Ctrl-C as a future (drain on the first, stop on the second).
//!
//! The crate depends on none of the programs; they all depend on it.

pub mod date;
pub mod duration;
pub mod echo;
pub mod signal;
pub mod size;
