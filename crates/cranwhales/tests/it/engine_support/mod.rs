//! Shared by the engine tests: where the real days are, and a deliberately simple reference
//! computation of what a day's tables must contain (whole file in memory, `split(',')`, std maps).
#![allow(dead_code)]

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::Read;
use std::path::{Path, PathBuf};

/// The real daily logs: `$CRANWHALES_TEST_DATA/cranlogs` (set by `make test`, see
/// `scripts/test-data.py`), else `../shared/data/cranlogs` beside the repo.
pub fn cranlogs() -> PathBuf {
    match std::env::var_os("CRANWHALES_TEST_DATA") {
        Some(root) => PathBuf::from(root).join("cranlogs"),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/cranlogs"),
    }
}

/// A real day's `.csv.gz`.
pub fn day_file(date: &str) -> PathBuf {
    cranlogs().join(format!("{date}.csv.gz"))
}

/// Runs `cranwhales ARGS --db DB`: its output, whatever its exit status.
pub fn cli<I, S>(db: &Path, args: I) -> std::process::Output
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    std::process::Command::new(env!("CARGO_BIN_EXE_cranwhales"))
        .args(args)
        .arg("--db")
        .arg(db)
        .output()
        .unwrap()
}

/// Runs `cranwhales ARGS --db DB`, asserts it succeeded, and returns its stdout.
pub fn cli_ok<I, S>(db: &Path, args: I) -> String
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    let out = cli(db, args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The decompressed text of a gzip file.
pub fn gunzip(path: &Path) -> Vec<u8> {
    let mut out = Vec::new();
    flate2::read::MultiGzDecoder::new(std::fs::File::open(path).unwrap())
        .read_to_end(&mut out)
        .unwrap();
    out
}

/// Writes `text` gzipped to `path`.
pub fn gzip_to(path: &Path, text: &[u8]) {
    use std::io::Write;
    let mut e = flate2::write::GzEncoder::new(
        std::fs::File::create(path).unwrap(),
        flate2::Compression::fast(),
    );
    e.write_all(text).unwrap();
    e.finish().unwrap();
}

/// The day log `from` cut to its header and first `rows` rows, gzipped to `to`.
pub fn cut_day(from: &Path, rows: usize, to: &Path) {
    let text = gunzip(from);
    let cut: Vec<u8> = text
        .split_inclusive(|&b| b == b'\n')
        .take(rows + 1)
        .flatten()
        .copied()
        .collect();
    gzip_to(to, &cut);
}

/// What one ip did on the day.
#[derive(Default, Debug)]
pub struct Ip {
    pub downloads: u64,
    pub bytes: u64,
    pub packages: HashSet<String>,
    pub countries: HashMap<String, u64>,
    pub hourly: [u64; 24],
    /// (time, package, version, size) of every download.
    pub rows: Vec<(String, String, Option<String>, u64)>,
}

/// The reference tables of one day.
#[derive(Default, Debug)]
pub struct Reference {
    pub downloads: u64,
    pub bytes: u64,
    pub skipped: u64,
    pub hourly: [u64; 24],
    pub ips: HashMap<u64, Ip>,
    pub packages: BTreeMap<String, u64>,
}

fn value(f: &str) -> Option<String> {
    if f == "NA" {
        None
    } else {
        Some(f.trim_matches('"').to_string())
    }
}

impl Reference {
    /// Computes the reference of a real day file (its rows never contain commas in quotes).
    pub fn of_file(path: &Path) -> Reference {
        let text = String::from_utf8(gunzip(path)).unwrap();
        let mut r = Reference::default();
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split(',').collect();
            assert_eq!(f.len(), 10, "reference needs simple rows: {line}");
            let Some(package) = value(f[6]) else {
                r.skipped += 1;
                continue;
            };
            let time = f[1].trim_matches('"').to_string();
            let hour: usize = time[..2].parse().unwrap();
            let size: u64 = f[2].parse().unwrap();
            let ip: u64 = f[9].parse().unwrap();
            r.downloads += 1;
            r.bytes += size;
            r.hourly[hour] += 1;
            *r.packages.entry(package.clone()).or_default() += 1;
            let e = r.ips.entry(ip).or_default();
            e.downloads += 1;
            e.bytes += size;
            e.hourly[hour] += 1;
            e.packages.insert(package.clone());
            if let Some(c) = value(f[8]) {
                *e.countries.entry(c).or_default() += 1;
            }
            e.rows.push((time, package, value(f[7]), size));
        }
        r
    }

    /// ip_ids of the top `n` by downloads desc, ip_id asc.
    pub fn top(&self, n: usize) -> Vec<u64> {
        let mut v: Vec<(u64, u64)> = self.ips.iter().map(|(ip, e)| (e.downloads, *ip)).collect();
        v.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        v.into_iter().take(n).map(|(_, ip)| ip).collect()
    }

    /// Most frequent country of an ip, ties to the alphabetically first.
    pub fn country(&self, ip: u64) -> Option<String> {
        let mut v: Vec<(&String, &u64)> = self.ips[&ip].countries.iter().collect();
        v.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        v.first().map(|(c, _)| (*c).clone())
    }
}
