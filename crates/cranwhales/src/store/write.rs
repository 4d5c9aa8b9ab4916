//! Writing a day: every table of the day rewritten in one transaction.

use rusqlite::{params, Transaction};

use super::schema::DAY_TABLES;
use super::{sql, Result, Store};
use crate::day::{DayTables, PackScratch};
use crate::parse::hms;
use crate::summary::Behaviour;

/// One day written at a time per process (other processes still meet SQLite's write lock).
static WRITERS: std::sync::Mutex<()> = std::sync::Mutex::new(());

impl Store {
    /// Replaces one day with `day`, atomically: readers and crashes see the old day or the new one.
    pub fn replace_day(&mut self, day: &DayTables, source: &str) -> Result<()> {
        let path = self.path.clone();
        self.write(day, source).map_err(sql(&path))
    }

    fn write(&mut self, day: &DayTables, source: &str) -> rusqlite::Result<()> {
        let d = day.date.as_str();
        // Packed before the write lock is taken.
        let blobs = pack_all(day);
        let profiles: Vec<String> = (day.whales.iter())
            .map(|w| serde_json::to_string(&w.profile).expect("serialisable"))
            .collect();
        // Writers of this process queue here and wake as soon as the one before commits; waiting
        // on SQLite's own lock instead sleeps in its busy handler (1, 2, 5, … 100 ms steps).
        let _turn = WRITERS.lock().unwrap_or_else(|e| e.into_inner());
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        for t in DAY_TABLES {
            tx.execute(&format!("DELETE FROM {t} WHERE date = ?1"), [d])?;
        }
        day_row(&tx, day, source)?;
        {
            let mut st = tx.prepare("INSERT INTO hourly VALUES (?1, ?2, ?3)")?;
            for (h, n) in day.hourly.iter().enumerate() {
                st.execute(params![d, h, n])?;
            }
            let mut st = tx.prepare(
                "INSERT INTO packages (date, package, downloads, whale_downloads, downloaders, whale_ranks)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?;
            for p in &day.packages {
                let ranks = (!p.whale_ranks.is_empty()).then(|| encode_ranks(&p.whale_ranks));
                st.execute(params![
                    d,
                    p.package,
                    p.downloads,
                    p.whale_downloads,
                    p.downloaders,
                    ranks
                ])?;
            }
            whales(&tx, day, blobs, profiles)?;
        }
        #[cfg(feature = "fault-injection")]
        hold_for_crash_test();
        tx.commit()
    }
}

/// The `days` row: totals and the day's stats.
fn day_row(tx: &Transaction<'_>, day: &DayTables, source: &str) -> rusqlite::Result<()> {
    let (t, s) = (&day.totals, &day.stats);
    let behaviours: serde_json::Map<String, serde_json::Value> = (Behaviour::ALL.iter())
        .zip(s.behaviours)
        .map(|(b, n)| (b.key().to_owned(), n.into()))
        .collect();
    tx.execute(
        "INSERT INTO days (date, downloads, downloaders, bytes, packages, skipped_rows, rows, source,
             ingested_at, top1, top6, top25, top100, behaviours, no_r_rows, baseline)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, strftime('%Y-%m-%dT%H:%M:%SZ', 'now'),
             ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
        params![
            day.date,
            t.downloads,
            t.downloaders,
            t.bytes,
            t.packages,
            t.skipped_rows,
            day.rows,
            source,
            s.top[0],
            s.top[1],
            s.top[2],
            s.top[3],
            serde_json::Value::Object(behaviours).to_string(),
            s.no_r_rows,
            s.baseline
        ],
    )?;
    Ok(())
}

/// The whales' rows in `whales`, `whale_hourly` and `whale_rows`.
fn whales(
    tx: &Transaction<'_>,
    day: &DayTables,
    blobs: Vec<(u64, Vec<u8>)>,
    profiles: Vec<String>,
) -> rusqlite::Result<()> {
    let d = day.date.as_str();
    let mut whale = tx.prepare(
        "INSERT INTO whales (date, rank, ip_id, name, country, downloads, bytes, packages,
             first_time, last_time, behaviour, profile)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
    )?;
    let mut hour = tx.prepare("INSERT INTO whale_hourly VALUES (?1, ?2, ?3, ?4)")?;
    let mut rows = tx.prepare("INSERT INTO whale_rows VALUES (?1, ?2, ?3, ?4)")?;
    for ((w, (n, blob)), profile) in day.whales.iter().zip(blobs).zip(profiles) {
        whale.execute(params![
            d,
            w.rank,
            w.ip_id,
            w.name,
            w.country,
            w.downloads,
            w.bytes,
            w.packages,
            hms(w.first),
            hms(w.last),
            w.profile.behaviour.key(),
            profile
        ])?;
        for (h, n) in w.hourly.iter().enumerate() {
            hour.execute(params![d, w.ip_id, h, n])?;
        }
        rows.execute(params![d, w.ip_id, n, blob])?;
    }
    Ok(())
}

/// (rank, downloads) pairs as LEB128 varints, ranks ascending.
pub(super) fn encode_ranks(ranks: &[(u32, u64)]) -> Vec<u8> {
    let mut out = Vec::with_capacity(ranks.len() * 3);
    for &(r, n) in ranks {
        for mut v in [u64::from(r), n] {
            while v >= 0x80 {
                out.push(v as u8 | 0x80);
                v >>= 7;
            }
            out.push(v as u8);
        }
    }
    out
}

/// Every whale's rows packed (see `DayTables::pack_whale`), on two threads: the reading thread
/// is done by now.
fn pack_all(day: &DayTables) -> Vec<(u64, Vec<u8>)> {
    let n = day.whales.len();
    let pack = |from: usize| {
        let mut scratch = PackScratch::default();
        (from..n)
            .step_by(2)
            .map(|i| day.pack_whale(i, &mut scratch))
            .collect::<Vec<_>>()
    };
    let (even, odd) = std::thread::scope(|s| {
        let odd = s.spawn(|| pack(1));
        (pack(0), odd.join().expect("packing thread"))
    });
    let mut out = Vec::with_capacity(n);
    let mut odd = odd.into_iter();
    for e in even {
        out.push(e);
        out.extend(odd.next());
    }
    out
}

/// Fault injection for the crash test: with `CRANWHALES_TEST_HOLD_TXN` set, announce on stderr
/// that the day's transaction is fully written but not committed, then wait (to be `kill -9`ed).
/// Compiled only with the test-only `fault-injection` feature (`make test` turns it on), so a
/// production write never looks at the environment.
#[cfg(feature = "fault-injection")]
fn hold_for_crash_test() {
    if std::env::var_os("CRANWHALES_TEST_HOLD_TXN").is_some() {
        eprintln!("cranwhales: holding transaction open (CRANWHALES_TEST_HOLD_TXN)");
        let mut line = String::new();
        let _ = std::io::stdin().read_line(&mut line);
    }
}
