//! `cranwhales migrate`: brings a store written by an older cranwhales to the current schema
//! in place, with a line per day re-encoded, then gives the freed pages back to the file system.
//! Opening a store (any command, `serve`) migrates it too, silently; this shows the progress.

use std::io::Write;
use std::path::PathBuf;

use anyhow::bail;

use crate::numfmt::thousands;
use crate::store::{MigrateStep, PackStep, Store, DEFAULT_DB};

/// Options of `cranwhales migrate`.
#[derive(Debug, clap::Args)]
pub struct MigrateArgs {
    /// SQLite database file.
    #[arg(long, default_value = DEFAULT_DB)]
    pub db: PathBuf,
    /// Skip the VACUUM after migrating (the file keeps its size; the freed pages are reused).
    #[arg(long)]
    pub no_vacuum: bool,
}

/// Migrates (all days in one transaction: a crash leaves the old store), then compacts.
pub fn migrate(args: MigrateArgs) -> anyhow::Result<()> {
    if args.db.is_dir() {
        bail!(
            "{} is a directory, not a database file (pass --db FILE)",
            args.db.display()
        );
    }
    if !args.db.is_file() {
        bail!("no database at {} (nothing to migrate)", args.db.display());
    }
    let before = std::fs::metadata(&args.db)?.len();
    let mut err = std::io::stderr();
    let mut progress = |s: &MigrateStep| {
        let _ = writeln!(err, "migrate: {}/{} days ({})", s.done, s.total, s.date);
    };
    // The store error says it all in one line (its cause chain would repeat it).
    let store =
        Store::open_with_progress(&args.db, &mut progress).map_err(|e| anyhow::anyhow!("{e}"))?;
    // The compaction step of the package history (`store::history`): months closed since.
    let mut store = store;
    let mut step = |s: &PackStep| {
        let _ = writeln!(
            err,
            "migrate: packing {} ({}/{}: {})",
            s.month,
            s.done + 1,
            s.total,
            s.what
        );
    };
    let packed = store.pack_months_with(false, &mut step)?;
    if packed > 0 {
        let _ = writeln!(
            err,
            "migrate: packed {packed} month(s) of package history and breakdowns"
        );
    }
    if !args.no_vacuum {
        store.compact()?;
    }
    let after = store.file_bytes()?;
    let schema = match store.schema() {
        (Some(from), to) => format!("schema migrated from version {from} to {to}"),
        (None, now) => format!("schema up to date (version {now})"),
    };
    println!(
        "{}: {schema}, {} bytes (was {} bytes)",
        args.db.display(),
        thousands(after),
        thousands(before)
    );
    Ok(())
}
