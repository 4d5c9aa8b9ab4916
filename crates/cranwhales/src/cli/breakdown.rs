//! `cranwhales package NAME --by FIELD`: a package's downloads over a range by version, country,
//! OS, R version or arch, every key, most first, as pypistats prints them by system or Python
//! version. It is the breakdown the API serves (`GET /api/packages/{name}/breakdown`), from the
//! same store call: a table here, the same JSON with `--json`.

use std::fmt::Write;

use grammar::echo::Escaped;

use crate::day::breakdown::Without;
use crate::numfmt::thousands;
use crate::store::breakdown::{BreakdownReport, By};

/// Longest key shown in the table (a version or country is far shorter; a key is log text).
const KEY_WIDTH: usize = 40;

/// `--by`, for clap: the field's name.
///
/// # Errors
/// Any other word, with the names that are allowed.
pub fn parse_by(s: &str) -> Result<By, String> {
    By::parse(s).ok_or_else(|| "expected version, country, os, r_version or arch".to_owned())
}

/// `--without`, for clap: any of `whales`, `small`, `repeats`, comma-separated.
///
/// # Errors
/// Any other word, with the words that are allowed.
pub fn parse_without(s: &str) -> Result<Without, String> {
    Without::parse(s)
        .ok_or_else(|| "expected any of whales, small, repeats, comma-separated".to_owned())
}

/// The breakdown as a table: a heading with the range, what was left out and the total, a line
/// per key (a missing field as `(missing)`) with its downloads and share, and the stored days the
/// total could not count.
pub fn render(r: &BreakdownReport) -> String {
    let without = if r.without.is_empty() {
        String::new()
    } else {
        format!(", without {}", r.without.join(", "))
    };
    let days = if r.days == 1 { "day" } else { "days" };
    let mut o = format!(
        "{} by {}, {} to {}{without}: {} downloads on {} stored {days}\n\n",
        Escaped(&r.package),
        r.by,
        r.from,
        r.to,
        thousands(r.total),
        thousands(r.days)
    );
    let keys: Vec<String> = (r.rows.iter())
        .map(|k| match &k.key {
            Some(k) => cut(&Escaped(k).to_string()),
            None => "(missing)".to_owned(),
        })
        .collect();
    let w = keys.iter().map(|k| k.chars().count()).max().unwrap_or(0);
    let w = w.max(r.by.len());
    let _ = writeln!(o, "{:<w$}  {:>11}  {:>6}", r.by, "downloads", "share");
    for (key, row) in keys.iter().zip(&r.rows) {
        let share = 100.0 * row.downloads as f64 / r.total.max(1) as f64;
        let _ = writeln!(
            o,
            "{key:<w$}  {:>11}  {share:>5.1}%",
            thousands(row.downloads)
        );
    }
    if r.rows.is_empty() {
        o.push_str("(no downloads in this range)\n");
    }
    if !r.days_without_breakdowns.is_empty() {
        let _ = writeln!(
            o,
            "\nnot counted: {} stored days without breakdowns (stored before schema 6; ingest them again with --force)",
            r.days_without_breakdowns.len()
        );
    }
    if !r.days_without_filters.is_empty() {
        let _ = writeln!(
            o,
            "\nnot counted: {} stored days whose breakdowns do not split off small and repeated downloads (stored with schema 6; ingest them again with --force)",
            r.days_without_filters.len()
        );
    }
    o
}

/// `s` cut to [`KEY_WIDTH`] characters, the cut marked.
fn cut(s: &str) -> String {
    if s.chars().count() <= KEY_WIDTH {
        return s.to_owned();
    }
    let mut t: String = s.chars().take(KEY_WIDTH - 1).collect();
    t.push('…');
    t
}
