//! The `ingest`, `show`, `days` and `package` subcommands: argument types and what each one runs
//! and prints. `ingest` (one source or a batch of days, N at a time) is in `ingest`, `migrate`
//! (an older store brought up to date) in `migrate`. Text from the data (package names,
//! countries, whale sentences, notes) reaches the terminal escaped (`grammar::echo::Escaped`): a
//! log comes from the network, and a package name may hold an escape sequence.

mod breakdown;
mod follow;
mod ingest;
mod migrate;

pub use ingest::{ingest, IngestArgs};
pub use migrate::{migrate, MigrateArgs};

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use grammar::echo::Escaped;

use crate::date;
use crate::numfmt::thousands;
use crate::store::{Store, DEFAULT_DB};
use crate::summary::{DayInfo, DaySummary, PackageReport};

/// Options of `cranwhales show`.
#[derive(Debug, clap::Args)]
pub struct ShowArgs {
    /// SQLite database file.
    #[arg(long, default_value = DEFAULT_DB)]
    pub db: PathBuf,
    /// The day, YYYY-MM-DD.
    #[arg(value_parser = parse_day)]
    pub date: String,
    /// How many top whales to show (1-100).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub count: u32,
    /// Print the JSON the web API serves for GET /api/days/{date}?count=N.
    #[arg(long)]
    pub json: bool,
}

/// Options of `cranwhales days`.
#[derive(Debug, clap::Args)]
pub struct DaysArgs {
    /// SQLite database file.
    #[arg(long, default_value = DEFAULT_DB)]
    pub db: PathBuf,
    /// Print JSON (the `days` list of GET /api/days).
    #[arg(long)]
    pub json: bool,
}

/// Options of `cranwhales package`.
#[derive(Debug, clap::Args)]
pub struct PackageArgs {
    /// SQLite database file.
    #[arg(long, default_value = DEFAULT_DB)]
    pub db: PathBuf,
    /// The package name (exact, case-sensitive as on CRAN).
    pub name: String,
    /// First day (YYYY-MM-DD) [default: the first CRAN log day].
    #[arg(long, value_parser = parse_day)]
    pub from: Option<String>,
    /// Last day (YYYY-MM-DD) [default: yesterday].
    #[arg(long, value_parser = parse_day)]
    pub to: Option<String>,
    /// Leave out each day's top N whales (1-100).
    #[arg(long, default_value_t = 6, value_parser = clap::value_parser!(u32).range(1..=100), conflicts_with = "by")]
    pub whales: u32,
    /// Downloads by version, country, os, r_version or arch instead of by day: every key, most
    /// first (as GET /api/packages/{name}/breakdown?by=).
    #[arg(long, value_parser = breakdown::parse_by)]
    pub by: Option<crate::store::breakdown::By>,
    /// With --by: leave out any of whales (each day's top 100), small, repeats, comma-separated.
    #[arg(long, value_parser = breakdown::parse_without, requires = "by")]
    pub without: Option<crate::day::breakdown::Without>,
    /// Print the JSON the web API serves for GET /api/packages/{name} (with --by: for
    /// /api/packages/{name}/breakdown).
    #[arg(long)]
    pub json: bool,
}

/// A day argument (`show DATE`, `package --from/--to`), for clap: a real calendar day written
/// `YYYY-MM-DD`, so a mistyped one is a usage error (exit 2) naming the argument, as a bad
/// `--count` is, before any store is opened.
///
/// # Errors
/// Anything else, saying what a day must look like.
pub fn parse_day(s: &str) -> Result<String, String> {
    match date::Day::parse(s) {
        Some(_) => Ok(s.to_owned()),
        None => Err("not a real day as YYYY-MM-DD".to_owned()),
    }
}

/// Whether `e` is a usage error found after clap (a range whose days are real but outside the
/// logs, or reversed): `main` exits 2 for it, as for the errors clap finds, and 1 for the rest.
pub fn is_usage(e: &anyhow::Error) -> bool {
    e.downcast_ref::<date::DateError>().is_some()
}

/// Prints one package over the stored days, or (`--by`) its downloads by one field.
pub fn package(args: PackageArgs) -> anyhow::Result<()> {
    let range = date::Range::parse(args.from.as_deref(), args.to.as_deref())?;
    let store = open_existing(&args.db)?;
    if let Some(by) = args.by {
        let without = args.without.unwrap_or_default();
        let Some(r) = store.breakdown(&args.name, range, by, without)? else {
            return Err(unknown_package(&store, &args));
        };
        return if args.json {
            out(&(serde_json::to_string_pretty(&r)? + "\n"))
        } else {
            out(&breakdown::render(&r))
        };
    }
    let Some(report) = store.package_report(&args.name, range, args.whales)? else {
        return Err(unknown_package(&store, &args));
    };
    // Rank and distribution as the API gives them (one pass over the range's rows).
    let report = crate::context::in_context(report, &store.range_totals(range)?);
    if args.json {
        out(&(serde_json::to_string_pretty(&report)? + "\n"))
    } else {
        out(&render_package(&report))
    }
}

/// The error for a package never stored, naming a near name if there is one.
fn unknown_package(store: &Store, args: &PackageArgs) -> anyhow::Error {
    let hint = match store.package_like(&args.name) {
        Ok(Some(p)) => format!(" (did you mean '{}'?)", Escaped(&p)),
        _ => String::new(),
    };
    anyhow::anyhow!(
        "package '{}' was not downloaded on any day in {}{hint}",
        grammar::echo::echo(args.name.as_bytes(), 120),
        args.db.display()
    )
}

/// Prints one day's summary.
pub fn show(args: ShowArgs) -> anyhow::Result<()> {
    let store = open_existing(&args.db)?;
    let Some(summary) = store.day_summary(&args.date, args.count)? else {
        bail!(
            "{} is not in {} (run: cranwhales ingest {})",
            args.date,
            args.db.display(),
            args.date
        );
    };
    if args.json {
        out(&(serde_json::to_string_pretty(&summary)? + "\n"))
    } else {
        out(&render_summary(&summary))
    }
}

/// Lists the ingested days.
pub fn days(args: DaysArgs) -> anyhow::Result<()> {
    let store = open_existing(&args.db)?;
    let days = store.days()?;
    if args.json {
        out(&(serde_json::to_string_pretty(&days)? + "\n"))
    } else {
        out(&render_days(&days))
    }
}

/// Writes to stdout; a reader that went away (`| head`) is not an error.
fn out(text: &str) -> anyhow::Result<()> {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(()),
    }
}

/// Reading commands do not create an empty database by accident.
fn open_existing(db: &Path) -> anyhow::Result<Store> {
    if db.is_dir() {
        bail!(
            "{} is a directory, not a database file (pass --db FILE)",
            db.display()
        );
    }
    if !db.is_file() {
        bail!(
            "no database at {} (run cranwhales ingest first, or pass --db)",
            db.display()
        );
    }
    Store::open(db).with_context(|| format!("opening {}", db.display()))
}

fn render_summary(s: &DaySummary) -> String {
    use std::fmt::Write;
    let t = &s.totals;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "{}: {} downloads by {} downloaders, {} bytes, {} packages, {} rows skipped (no package)\n",
        s.date,
        thousands(t.downloads),
        thousands(t.downloaders),
        thousands(t.bytes),
        thousands(t.packages),
        thousands(t.skipped_rows)
    );
    let top = format!("top {}", s.count);
    let _ = writeln!(o, "hour (UTC)  {:>10}  {:>10}  share of top", "all", top);
    for h in &s.hourly {
        let share = if h.downloads == 0 {
            0.0
        } else {
            h.whale_downloads as f64 / h.downloads as f64
        };
        let bar = "#".repeat((share * 30.0).round() as usize);
        let _ = writeln!(
            o,
            "{:02}          {:>10}  {:>10}  {:>4.0}% {bar}",
            h.hour,
            thousands(h.downloads),
            thousands(h.whale_downloads),
            share * 100.0
        );
    }
    let _ = writeln!(
        o,
        "\n{:>4}  {:<24} {:>10} {:>7} {:>10} {:>16} {:>8}",
        "rank", "name", "ip_id", "country", "downloads", "bytes", "packages"
    );
    for w in &s.whales {
        let _ = writeln!(
            o,
            "{:>4}  {:<24} {:>10} {:>7} {:>10} {:>16} {:>8}",
            w.rank,
            Escaped(&w.name),
            w.ip_id,
            Escaped(w.country.as_deref().unwrap_or("-")),
            thousands(w.downloads),
            thousands(w.bytes),
            thousands(w.packages)
        );
    }
    let _ = writeln!(o, "\nwhat each one is doing (docs/whale-behaviours.md):");
    for w in &s.whales {
        match &w.profile {
            Some(p) => {
                let _ = writeln!(
                    o,
                    "{:>4}  {} [{}]: {}",
                    w.rank,
                    Escaped(&w.name),
                    Escaped(&p.label),
                    Escaped(&p.sentence)
                );
            }
            None => {
                let _ = writeln!(
                    o,
                    "{:>4}  {}: no profile (stored by an older version; re-ingest the day with --force)",
                    w.rank,
                    Escaped(&w.name)
                );
            }
        }
    }
    o
}

fn render_days(days: &[DayInfo]) -> String {
    use std::fmt::Write;
    let mut o = format!(
        "{:<10}  {:>11}  {:>11}  {:>17}  {:>8}  {:>7}\n",
        "date", "downloads", "downloaders", "bytes", "packages", "skipped"
    );
    for d in days {
        let t = &d.totals;
        let _ = writeln!(
            o,
            "{:<10}  {:>11}  {:>11}  {:>17}  {:>8}  {:>7}",
            d.date,
            thousands(t.downloads),
            thousands(t.downloaders),
            thousands(t.bytes),
            thousands(t.packages),
            thousands(t.skipped_rows)
        );
    }
    if days.is_empty() {
        o.push_str("(no days ingested yet)\n");
    }
    o
}

fn render_package(r: &PackageReport) -> String {
    use std::fmt::Write;
    let opt = |v: Option<u64>| v.map_or("-".to_owned(), thousands);
    let mut o = format!(
        "{}: {} to {}, without each day's top {} whales\n\n{:<10}  {:>10}  {:>11}  {:>10}  {:>10}  {:>6}  {:>10}\n",
        Escaped(&r.package), r.from, r.to, r.whales, "date", "downloads", "downloaders", "by whales", "without", "share", "aggregate"
    );
    for day in &r.days {
        let d = &day.counts;
        let share = if d.downloads == 0 {
            0.0
        } else {
            100.0 * d.whale_downloads as f64 / d.downloads as f64
        };
        let _ = writeln!(
            o,
            "{:<10}  {:>10}  {:>11}  {:>10}  {:>10}  {:>5.1}%  {:>10}",
            day.date,
            thousands(d.downloads),
            opt(day.downloaders),
            thousands(d.whale_downloads),
            thousands(d.without_whales),
            share,
            opt(d.adjusted)
        );
    }
    if r.days.is_empty() {
        o.push_str("(no stored days in this range)\n");
    }
    let _ = writeln!(
        o,
        "{:<10}  {:>10}  {:>11}  {:>10}  {:>10}  {:>6}  {:>10}\n\n{}\n{}",
        "total",
        thousands(r.totals.downloads),
        "",
        thousands(r.totals.whale_downloads),
        thousands(r.totals.without_whales),
        "",
        opt(r.totals.adjusted),
        Escaped(&r.note),
        Escaped(&r.filters_note)
    );
    if let Some(rank) = &r.rank {
        let _ = writeln!(
            o,
            "rank among all packages over these days: {}",
            Escaped(&rank.text)
        );
    }
    o
}
