//! The parsing thread's side: indexed lines → rows of the day (`DayBuilder`), with errors that
//! say which file, line and field.

use std::path::Path;

use super::reader::{Batch, LineIx, Numbers};
use super::{IngestError, MAX_LINE};
use crate::csv::{self, SplitError};
use crate::day::{DayBuilder, DayTables, RowError, Threads};

/// How many lines ahead the parser prefetches a row's interner slot and ip accumulator.
const PREFETCH_AHEAD: usize = 4;

/// Turns indexed lines into rows of the day.
pub(super) struct Parser<'a> {
    pub path: &'a Path,
    pub line: u64,
    pub builder: DayBuilder,
}

impl<'a> Parser<'a> {
    pub fn new(path: &'a Path, date: Option<&str>) -> Self {
        Parser {
            path,
            line: 0,
            builder: DayBuilder::new(date),
        }
    }

    pub fn batch(&mut self, b: &Batch) -> Result<(), IngestError> {
        for (k, ix) in b.lines.iter().enumerate() {
            if let Some(n) = b.lines.get(k + PREFETCH_AHEAD).and_then(LineIx::nums) {
                self.builder.prefetch(n.pv_hash, n.ip_id);
            }
            let line = &b.text[ix.start as usize..ix.end as usize];
            if ix.fast && self.line > 0 {
                self.row_at_commas(line, &ix.commas, ix.nums())?;
            } else {
                self.line(line)?;
            }
        }
        Ok(())
    }

    /// Any line, split carefully (header, blank, unusual or bad lines).
    #[cold]
    fn line(&mut self, mut line: &[u8]) -> Result<(), IngestError> {
        self.line += 1;
        if line.len() > MAX_LINE {
            return Err(self.row_error(RowError {
                line: self.line,
                field: "row",
                problem: format!("line longer than {MAX_LINE} bytes"),
            }));
        }
        if let [rest @ .., b'\r'] = line {
            line = rest;
        }
        if self.line == 1 {
            return self.header(line);
        }
        if line.is_empty() {
            self.builder.blank_line();
            return Ok(());
        }
        let fields = csv::split(line).map_err(|e| self.split_error(e))?;
        self.builder
            .push(self.line, line, &fields)
            .map_err(|e| self.row_error(e))
    }

    /// A data line whose 9 commas are known (offsets from the line's start).
    #[inline]
    fn row_at_commas(
        &mut self,
        line: &[u8],
        commas: &[u8; 9],
        nums: Option<Numbers>,
    ) -> Result<(), IngestError> {
        self.line += 1;
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let f = match csv::fields_at(line, commas) {
            Some(f) => {
                if let Some(n) = nums {
                    return self
                        .builder
                        .push_decoded(self.line, line, &f, n.secs, n.ip_id, n.pv_hash)
                        .map_err(|e| self.row_error(e));
                }
                f
            }
            None => csv::split(line).map_err(|e| self.split_error(e))?,
        };
        self.builder
            .push(self.line, line, &f)
            .map_err(|e| self.row_error(e))
    }

    #[cold]
    fn header(&self, line: &[u8]) -> Result<(), IngestError> {
        let line = line.strip_prefix(b"\xef\xbb\xbf").unwrap_or(line);
        if csv::header_ok(line) {
            return Ok(());
        }
        Err(IngestError::Header {
            path: self.path.to_owned(),
            expected: csv::HEADER.join(","),
            found: grammar::echo::echo(line, 120),
        })
    }

    #[cold]
    fn split_error(&self, e: SplitError) -> IngestError {
        let (field, problem) = match e {
            SplitError::FieldCount(n) => {
                ("row".to_owned(), format!("expected 10 fields, found {n}"))
            }
            SplitError::Quote(i) => (
                csv::HEADER[i.min(9)].to_owned(),
                "unbalanced quotes".to_owned(),
            ),
        };
        IngestError::Row {
            path: self.path.to_owned(),
            line: self.line,
            field,
            problem,
        }
    }

    #[cold]
    fn row_error(&self, e: RowError) -> IngestError {
        IngestError::Row {
            path: self.path.to_owned(),
            line: e.line,
            field: e.field.to_owned(),
            problem: e.problem,
        }
    }

    pub fn finish(self, threads: Threads) -> Result<DayTables, IngestError> {
        let path = self.path.to_owned();
        if self.line == 0 {
            return Err(IngestError::Empty {
                path,
                reason: "no header",
            });
        }
        self.builder.finish(threads).ok_or(IngestError::Empty {
            path,
            reason: "no data rows after the header",
        })
    }
}
