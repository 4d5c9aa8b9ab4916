//! Reading a day: its summary with the top whales, one whale with its rows, its packages.

use rusqlite::{params, Connection, OptionalExtension};

use super::codec::{day_number, day_range, unpack_profile, PACKAGE_IDS};
use super::{sql, totals, Result, Store};
use crate::blob::daylog::{self, WhaleRows};
use crate::day::TOP;
use crate::summary::{DaySummary, Hour, Profile, Whale, WhaleDetail};

/// A package's downloads on a day (all, and by the day's top-100 whales).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PackageDownloads {
    /// The package name as logged.
    pub package: String,
    /// Every download of it that day.
    pub downloads: u64,
    /// Of which by the day's top-100 whales together.
    pub whale_downloads: u64,
}

impl Store {
    /// The day's summary with its top `count` whales (`count` is clamped to 1..=100);
    /// `None` if the day is not ingested. Reads in one transaction so it sees one version of the day.
    pub fn day_summary(&self, date: &str, count: u32) -> Result<Option<DaySummary>> {
        let count = count.clamp(1, TOP as u32);
        let q = || -> rusqlite::Result<Option<DaySummary>> {
            let tx = self.conn.unchecked_transaction()?;
            let Some(totals) = tx
                .query_row(
                    "SELECT downloads, downloaders, bytes, packages, skipped_rows FROM days WHERE date = ?1",
                    [date],
                    |r| totals(r, 0),
                )
                .optional()?
            else {
                return Ok(None);
            };
            let mut hourly: Vec<Hour> = (0..24)
                .map(|h| Hour {
                    hour: h,
                    downloads: 0,
                    whale_downloads: 0,
                })
                .collect();
            let mut st = tx.prepare_cached("SELECT hour, downloads FROM hourly WHERE date = ?1")?;
            for r in st.query_map([date], |r| Ok((r.get::<_, usize>(0)?, r.get::<_, u64>(1)?)))? {
                let (h, n) = r?;
                hourly[h].downloads = n;
            }
            let whales = whales(&tx, date, Some(count), None)?;
            for w in &whales {
                for (h, n) in w.hourly.iter().enumerate() {
                    hourly[h].whale_downloads += n;
                }
            }
            drop(st);
            tx.commit()?;
            Ok(Some(DaySummary {
                date: date.to_owned(),
                count,
                totals,
                hourly,
                whales,
            }))
        };
        q().map_err(sql(&self.path))
    }

    /// One whale of a day with every one of its downloads (chronological); `None` if the day is
    /// not ingested or `ip_id` is not among its top 100.
    pub fn whale_detail(&self, date: &str, ip_id: u64) -> Result<Option<WhaleDetail>> {
        let q = || -> rusqlite::Result<Option<WhaleDetail>> {
            let tx = self.conn.unchecked_transaction()?;
            let Some(whale) = whales(&tx, date, None, Some(ip_id))?.pop() else {
                return Ok(None);
            };
            let (first, last): (String, String) = tx.query_row(
                "SELECT first_time, last_time FROM whales WHERE date = ?1 AND ip_id = ?2",
                params![date, ip_id],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )?;
            let log: Vec<u8> =
                tx.query_row("SELECT log FROM whale_log WHERE date = ?1", [date], |r| {
                    r.get(0)
                })?;
            let downloads = daylog::unpack_whale(&log, ip_id).flatten().ok_or_else(|| {
                let e = format!("corrupt whale_log blob ({date}, ip_id {ip_id})").into();
                rusqlite::Error::FromSqlConversionFailure(0, rusqlite::types::Type::Blob, e)
            })?;
            tx.commit()?;
            Ok(Some(WhaleDetail {
                date: date.to_owned(),
                whale,
                first,
                last,
                downloads,
            }))
        };
        q().map_err(sql(&self.path))
    }

    /// Every top-100 whale's downloads of a day, (ip_id, rows) by rank; `None` if the day is not
    /// stored. One decoding of the day's dictionary for all (tests and tools compare whole days).
    pub fn whale_rows(&self, date: &str) -> Result<Option<Vec<WhaleRows>>> {
        let q = || -> rusqlite::Result<Option<Vec<WhaleRows>>> {
            let log: Option<Vec<u8>> = self
                .conn
                .query_row("SELECT log FROM whale_log WHERE date = ?1", [date], |r| {
                    r.get(0)
                })
                .optional()?;
            log.map(|b| {
                daylog::unpack_all(&b).ok_or_else(|| {
                    let e = format!("corrupt whale_log blob ({date})").into();
                    rusqlite::Error::FromSqlConversionFailure(0, rusqlite::types::Type::Blob, e)
                })
            })
            .transpose()
        };
        q().map_err(sql(&self.path))
    }

    /// Per-package downloads of a day, most downloaded first (ties by name).
    pub fn packages(&self, date: &str, limit: u32) -> Result<Vec<PackageDownloads>> {
        let Some(day) = day_number(date) else {
            return Ok(Vec::new());
        };
        let (lo, hi) = day_range(day);
        let q = || -> rusqlite::Result<Vec<PackageDownloads>> {
            let mut st = self.conn.prepare_cached(&format!(
                "SELECT t.package, p.downloads, p.whale_downloads FROM packages p
                 JOIN package_totals t ON t.id = p.day_package % {PACKAGE_IDS}
                 WHERE p.day_package BETWEEN ?1 AND ?2
                 ORDER BY p.downloads DESC, t.package LIMIT ?3"
            ))?;
            let rows = st.query_map(params![lo, hi, limit], |r| {
                Ok(PackageDownloads {
                    package: r.get(0)?,
                    downloads: r.get(1)?,
                    whale_downloads: r.get(2)?,
                })
            })?;
            rows.collect()
        };
        q().map_err(sql(&self.path))
    }
}

/// Whales of a day by rank: the top `limit`, or the one with `ip_id`.
fn whales(
    conn: &Connection,
    date: &str,
    limit: Option<u32>,
    ip_id: Option<u64>,
) -> rusqlite::Result<Vec<Whale>> {
    let mut st = conn.prepare_cached(
        "SELECT rank, ip_id, name, country, downloads, bytes, packages, profile FROM whales
         WHERE date = ?1 AND rank <= ?2 AND (?3 IS NULL OR ip_id = ?3) ORDER BY rank",
    )?;
    let mut whales = st
        .query_map(params![date, limit.unwrap_or(TOP as u32), ip_id], |r| {
            Ok(Whale {
                rank: r.get(0)?,
                ip_id: r.get(1)?,
                name: r.get(2)?,
                country: r.get(3)?,
                downloads: r.get(4)?,
                bytes: r.get(5)?,
                packages: r.get(6)?,
                hourly: vec![0; 24],
                profile: parse_profile(r.get_ref(7)?)?,
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let mut st = conn.prepare_cached(
        "SELECT hour, downloads FROM whale_hourly WHERE date = ?1 AND ip_id = ?2",
    )?;
    for w in &mut whales {
        for r in st.query_map(params![date, w.ip_id], |r| {
            Ok((r.get::<_, usize>(0)?, r.get::<_, u64>(1)?))
        })? {
            let (h, n) = r?;
            w.hourly[h] = n;
        }
    }
    Ok(whales)
}

/// A stored profile: deflated JSON (version 3), JSON text (version 2); `None` for a whale
/// stored before profiles existed.
fn parse_profile(v: rusqlite::types::ValueRef<'_>) -> rusqlite::Result<Option<Profile>> {
    use rusqlite::types::{Type, ValueRef};
    let bad = |t: Type, e: Box<dyn std::error::Error + Send + Sync>| {
        rusqlite::Error::FromSqlConversionFailure(7, t, e)
    };
    let json = match v {
        ValueRef::Null => return Ok(None),
        ValueRef::Text(t) => String::from_utf8_lossy(t).into_owned(),
        ValueRef::Blob(b) => {
            unpack_profile(b).ok_or_else(|| bad(Type::Blob, "corrupt profile blob".into()))?
        }
        _ => return Err(bad(Type::Integer, "profile is a number".into())),
    };
    (serde_json::from_str(&json).map(Some)).map_err(|e| bad(Type::Text, e.into()))
}
