//! The tests' short forms of the one ingest path (`Source` → `ingest::ingest` into a store
//! opened on `db`): a local file, or a date of `cfg`'s mirror.
#![allow(dead_code)]

use std::path::Path;

use cranwhales::date::Day;
use cranwhales::ingest::{self, IngestError, IngestReport};
use cranwhales::progress::Progress;
use cranwhales::source::{Source, SourceConfig};
use cranwhales::store::Store;

/// Ingests the local log `file` into the store at `db`.
pub fn ingest_path(
    db: &Path,
    file: &Path,
    progress: &dyn Progress,
) -> Result<IngestReport, IngestError> {
    let source = Source::File(file.to_owned());
    ingest::ingest(
        &mut Store::open(db)?,
        &source,
        &SourceConfig::default(),
        progress,
    )
}

/// Ingests the day `date` of `cfg`'s mirror into the store at `db` (a bad date is
/// `IngestError::BadDate`, as the CLI says it).
pub fn ingest_date(
    db: &Path,
    date: &str,
    cfg: &SourceConfig,
    progress: &dyn Progress,
) -> Result<IngestReport, IngestError> {
    let mut store = Store::open(db)?;
    let day = Day::parse(date).ok_or_else(|| IngestError::BadDate(date.to_owned()))?;
    ingest::ingest(&mut store, &Source::Date(day), cfg, progress)
}

/// Reads and aggregates a local log without any store, on two threads (as `ingest` does).
pub fn read_day(
    file: &Path,
    date: Option<&str>,
    progress: &dyn Progress,
) -> Result<cranwhales::day::DayTables, IngestError> {
    ingest::read_day(file, date, cranwhales::day::Threads::Two, progress)
}
