//! A store as schema version 2 wrote it (one format-2 blob per whale in `whale_rows`, profiles
//! as JSON text, `whale_ranks` as varint pairs), written here from a read day with its own SQL,
//! so the migration tests start from the old encoding without an old binary.
#![allow(dead_code)]

pub mod v7;

use std::path::Path;

use cranwhales::blob;
use cranwhales::day::DayTables;
use cranwhales::parse::hms;
use cranwhales::summary::Behaviour;
use rusqlite::{params, Connection};

/// Version 2's tables, as its `schema.rs` created them.
pub const SCHEMA_V2: &str = "
CREATE TABLE days (date TEXT PRIMARY KEY, downloads INTEGER NOT NULL, downloaders INTEGER NOT NULL,
    bytes INTEGER NOT NULL, packages INTEGER NOT NULL, skipped_rows INTEGER NOT NULL,
    rows INTEGER NOT NULL, source TEXT NOT NULL, ingested_at TEXT NOT NULL,
    top1 INTEGER, top6 INTEGER, top25 INTEGER, top100 INTEGER,
    behaviours TEXT, no_r_rows INTEGER, baseline INTEGER) WITHOUT ROWID;
CREATE TABLE hourly (date TEXT NOT NULL, hour INTEGER NOT NULL, downloads INTEGER NOT NULL,
    PRIMARY KEY (date, hour)) WITHOUT ROWID;
CREATE TABLE whales (date TEXT NOT NULL, rank INTEGER NOT NULL, ip_id INTEGER NOT NULL,
    name TEXT NOT NULL, country TEXT, downloads INTEGER NOT NULL, bytes INTEGER NOT NULL,
    packages INTEGER NOT NULL, first_time TEXT NOT NULL, last_time TEXT NOT NULL,
    behaviour TEXT, profile TEXT,
    PRIMARY KEY (date, rank), UNIQUE (date, ip_id), UNIQUE (date, name)) WITHOUT ROWID;
CREATE TABLE whale_hourly (date TEXT NOT NULL, ip_id INTEGER NOT NULL, hour INTEGER NOT NULL,
    downloads INTEGER NOT NULL, PRIMARY KEY (date, ip_id, hour)) WITHOUT ROWID;
CREATE TABLE whale_rows (date TEXT NOT NULL, ip_id INTEGER NOT NULL, n INTEGER NOT NULL,
    rows BLOB NOT NULL, PRIMARY KEY (date, ip_id)) WITHOUT ROWID;
CREATE TABLE packages (date TEXT NOT NULL, package TEXT NOT NULL, downloads INTEGER NOT NULL,
    whale_downloads INTEGER NOT NULL, downloaders INTEGER, whale_ranks BLOB,
    PRIMARY KEY (date, package)) WITHOUT ROWID;
PRAGMA user_version = 2;
";

/// Writes `days` into the version-2 store at `db` (created if new).
pub fn write_v2(db: &Path, days: &[DayTables]) {
    let mut c = Connection::open(db).unwrap();
    let version: i64 = c
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    if version == 0 {
        c.execute_batch("PRAGMA page_size=16384; PRAGMA journal_mode=WAL;")
            .unwrap();
        c.execute_batch(SCHEMA_V2).unwrap();
    }
    let tx = c.transaction().unwrap();
    for day in days {
        write_day(&tx, day);
    }
    tx.commit().unwrap();
}

fn varints(pairs: &[(u32, u64)]) -> Vec<u8> {
    let mut out = Vec::new();
    for &(r, n) in pairs {
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

fn write_day(tx: &Connection, day: &DayTables) {
    let (t, s, d) = (&day.totals, &day.stats, day.date.as_str());
    let behaviours: serde_json::Map<String, serde_json::Value> = (Behaviour::ALL.iter())
        .zip(s.behaviours)
        .map(|(b, n)| (b.key().to_owned(), n.into()))
        .collect();
    tx.execute(
        "INSERT INTO days VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 'legacy', '2020-01-01T00:00:00Z',
             ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
        params![
            d,
            t.downloads,
            t.downloaders,
            t.bytes,
            t.packages,
            t.skipped_rows,
            day.rows,
            s.top[0],
            s.top[1],
            s.top[2],
            s.top[3],
            serde_json::Value::Object(behaviours).to_string(),
            s.no_r_rows,
            s.baseline
        ],
    )
    .unwrap();
    for (h, n) in day.hourly.iter().enumerate() {
        tx.execute("INSERT INTO hourly VALUES (?1, ?2, ?3)", params![d, h, n])
            .unwrap();
    }
    for p in &day.packages {
        let ranks = (!p.whale_ranks.is_empty()).then(|| varints(&p.whale_ranks));
        tx.execute(
            "INSERT INTO packages VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![
                d,
                p.package,
                p.downloads,
                p.whale_downloads,
                p.downloaders,
                ranks
            ],
        )
        .unwrap();
    }
    for (i, w) in day.whales.iter().enumerate() {
        tx.execute(
            "INSERT INTO whales VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
            params![
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
                serde_json::to_string(&w.profile).unwrap()
            ],
        )
        .unwrap();
        for (h, n) in w.hourly.iter().enumerate().filter(|(_, &n)| n > 0) {
            tx.execute(
                "INSERT INTO whale_hourly VALUES (?1, ?2, ?3, ?4)",
                params![d, w.ip_id, h, n],
            )
            .unwrap();
        }
        let (n, b) = blob::pack(day.whale_downloads(i));
        tx.execute(
            "INSERT INTO whale_rows VALUES (?1, ?2, ?3, ?4)",
            params![d, w.ip_id, n, b],
        )
        .unwrap();
    }
}

/// Turns a current store back into what version 3 stored: `packages` keyed by date and name
/// text with `whale_ranks` in version 3's forms (no common whales), `package_totals` without
/// ids, no `days.common_whales`, profiles deflated without the preset dictionary, whale logs in
/// format 3 (every other table is version 3's already).
pub fn to_v3(db: &Path) {
    use cranwhales::store::codec::{decode_ranks, encode_ranks, Common};
    let mut c = Connection::open(db).unwrap();
    let tx = c.transaction().unwrap();
    tx.execute_batch(
        "CREATE TABLE packages_v3 (date TEXT NOT NULL, package TEXT NOT NULL,
             downloads INTEGER NOT NULL, whale_downloads INTEGER NOT NULL, downloaders INTEGER,
             whale_ranks BLOB, small INTEGER, repeats INTEGER,
             PRIMARY KEY (date, package)) WITHOUT ROWID;
         CREATE TABLE totals_v3 (package TEXT PRIMARY KEY, downloads INTEGER NOT NULL,
             days INTEGER NOT NULL) WITHOUT ROWID;
         INSERT INTO totals_v3 SELECT package, downloads, days FROM package_totals;",
    )
    .unwrap();
    {
        let mut st = tx
            .prepare(
                "SELECT d.date, t.package, p.downloads, p.whale_downloads, p.downloaders,
                     p.whale_ranks, p.small, p.repeats, d.common_whales
                 FROM packages p JOIN package_totals t ON t.id = p.day_package % 1048576
                 JOIN days d ON d.date = date(p.day_package / 1048576 * 86400, 'unixepoch')",
            )
            .unwrap();
        let mut ins = tx
            .prepare("INSERT INTO packages_v3 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)")
            .unwrap();
        let mut rows = st.query([]).unwrap();
        while let Some(r) = rows.next().unwrap() {
            let ranks: Option<Vec<u8>> = r.get(5).unwrap();
            let common: Option<Vec<u8>> = r.get(8).unwrap();
            let common = Common::from_blob(common.as_deref());
            let v3 = ranks.map(|b| encode_ranks(&decode_ranks(&b, common), Common::default()));
            ins.execute(params![
                r.get::<_, String>(0).unwrap(),
                r.get::<_, String>(1).unwrap(),
                r.get::<_, i64>(2).unwrap(),
                r.get::<_, i64>(3).unwrap(),
                r.get::<_, Option<i64>>(4).unwrap(),
                v3,
                r.get::<_, Option<i64>>(6).unwrap(),
                r.get::<_, Option<i64>>(7).unwrap(),
            ])
            .unwrap();
        }
    }
    {
        // Profiles as version 3 deflated them: without the preset dictionary.
        use cranwhales::store::codec::{pack_profile_v3, unpack_profile};
        let rows: Vec<(String, u32, Vec<u8>)> = tx
            .prepare("SELECT date, rank, profile FROM whales WHERE profile IS NOT NULL")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        for (date, rank, b) in rows {
            let v3 = pack_profile_v3(&unpack_profile(&b).unwrap());
            tx.execute(
                "UPDATE whales SET profile = ?3 WHERE date = ?1 AND rank = ?2",
                params![date, rank, v3],
            )
            .unwrap();
        }
    }
    {
        // Whale logs in format 3 (each whale's columns deflated apart).
        use cranwhales::blob::daylog;
        let logs: Vec<(String, Vec<u8>)> = tx
            .prepare("SELECT date, log FROM whale_log")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        for (date, log) in logs {
            let v3 = daylog::encode_downloads_v3(&daylog::unpack_all(&log).unwrap());
            tx.execute(
                "UPDATE whale_log SET log = ?2 WHERE date = ?1",
                params![date, v3],
            )
            .unwrap();
        }
    }
    tx.execute_batch(
        "DROP TABLE packages;
         ALTER TABLE packages_v3 RENAME TO packages;
         DROP TABLE package_totals;
         ALTER TABLE totals_v3 RENAME TO package_totals;
         ALTER TABLE days DROP COLUMN common_whales;
         DROP TABLE package_months;
         DROP TABLE breakdowns;
         DROP TABLE breakdown_keys;
         PRAGMA user_version = 3;",
    )
    .unwrap();
    tx.commit().unwrap();
}

/// Turns a current store back into what version 4 stored: version 5's tables without
/// `package_months` (version 5's only change).
pub fn to_v4(db: &Path) {
    to_v5(db);
    let c = Connection::open(db).unwrap();
    c.execute_batch("BEGIN; DROP TABLE package_months; PRAGMA user_version = 4; COMMIT;")
        .unwrap();
}

/// Turns a current store back into what version 7 stored: `package_months` with only its
/// downloads and days (version 8's only change; `DROP COLUMN` rewrites the table as version 7
/// created it).
pub fn to_v7(db: &Path) {
    let c = Connection::open(db).unwrap();
    let mut sql = String::from("BEGIN;");
    for col in [
        "whale_downloads",
        "small",
        "repeats",
        "whale_filtered",
        "whale_small",
    ] {
        sql += &format!("ALTER TABLE package_months DROP COLUMN {col};");
    }
    c.execute_batch(&(sql + "PRAGMA user_version = 7; COMMIT;"))
        .unwrap();
}

/// Turns a current store back into what version 5 stored: the same tables without the
/// breakdowns (version 6's only change).
pub fn to_v5(db: &Path) {
    to_v7(db);
    let c = Connection::open(db).unwrap();
    c.execute_batch(
        "BEGIN; DROP TABLE breakdowns; DROP TABLE breakdown_keys; PRAGMA user_version = 5; COMMIT;",
    )
    .unwrap();
}
