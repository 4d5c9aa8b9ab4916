//! Every bad input case of the ingest policy, made from a real day in a temp dir: the error says
//! what and where, and the store is exactly as it was (the same day's earlier version included).

use crate::engine_support;
use crate::ingest_support;

use std::path::{Path, PathBuf};
use std::process::Command;

use cranwhales::ingest::IngestError;
use cranwhales::progress::Silent;
use cranwhales::store::Store;
use cranwhales::summary::{DayInfo, DaySummary};
use engine_support::*;
use ingest_support::ingest_path;

const DATE: &str = "2012-10-16";

struct Fixture {
    dir: tempfile::TempDir,
    db: PathBuf,
    /// The real day's text.
    text: Vec<u8>,
    before: (Vec<DayInfo>, DaySummary),
}

impl Fixture {
    /// A store holding two real days, one of them the day the bad files claim to be.
    fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("t.db");
        ingest_path(&db, &day_file("2012-10-17"), &Silent).unwrap();
        ingest_path(&db, &day_file(DATE), &Silent).unwrap();
        let before = snapshot(&db);
        Fixture {
            text: gunzip(&day_file(DATE)),
            dir,
            db,
            before,
        }
    }

    fn lines(&self) -> Vec<Vec<u8>> {
        self.text
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .map(<[u8]>::to_vec)
            .collect()
    }

    /// Writes `lines` as `name` (gzipped if it ends in .gz) and ingests it.
    fn ingest_lines(
        &self,
        name: &str,
        lines: &[Vec<u8>],
    ) -> (
        PathBuf,
        Result<cranwhales::ingest::IngestReport, IngestError>,
    ) {
        let mut text = lines.join(&b'\n');
        text.push(b'\n');
        self.ingest_bytes(name, &text, name.ends_with(".gz"))
    }

    fn ingest_bytes(
        &self,
        name: &str,
        bytes: &[u8],
        gz: bool,
    ) -> (
        PathBuf,
        Result<cranwhales::ingest::IngestReport, IngestError>,
    ) {
        let path = self.dir.path().join(name);
        if gz {
            gzip_to(&path, bytes);
        } else {
            std::fs::write(&path, bytes).unwrap();
        }
        let r = ingest_path(&self.db, &path, &Silent);
        (path, r)
    }

    /// The store must hold exactly what it held before the bad ingest.
    fn assert_unchanged(&self) {
        assert_eq!(snapshot(&self.db), self.before);
        assert!(Store::open(&self.db).unwrap().integrity_ok().unwrap());
    }
}

fn snapshot(db: &Path) -> (Vec<DayInfo>, DaySummary) {
    let s = Store::open(db).unwrap();
    (
        s.days().unwrap(),
        s.day_summary(DATE, 100).unwrap().unwrap(),
    )
}

fn row_err(r: Result<cranwhales::ingest::IngestReport, IngestError>) -> (u64, String, String) {
    match r {
        Err(IngestError::Row {
            line,
            field,
            problem,
            ..
        }) => (line, field, problem),
        other => panic!("expected a row error, got {other:?}"),
    }
}

#[test]
fn truncated_gzip_is_rejected() {
    let f = Fixture::new();
    let gz = std::fs::read(day_file(DATE)).unwrap();
    let (path, r) = f.ingest_bytes("2012-10-16.csv.gz", &gz[..gz.len() / 2], false);
    let e = r.unwrap_err();
    assert!(matches!(e, IngestError::Gzip { .. }), "{e:?}");
    let msg = e.to_string();
    assert!(
        msg.starts_with(&path.display().to_string()) && msg.contains("truncated"),
        "{msg}"
    );
    f.assert_unchanged();
}

#[test]
fn corrupt_gzip_is_rejected() {
    let f = Fixture::new();
    let mut gz = std::fs::read(day_file(DATE)).unwrap();
    let mid = gz.len() / 2;
    for b in &mut gz[mid..mid + 64] {
        *b ^= 0x5a;
    }
    let (_, r) = f.ingest_bytes("2012-10-16.csv.gz", &gz, false);
    let e = r.unwrap_err();
    // Either the deflate stream or the checksum breaks, or the garbage decodes to a bad row.
    assert!(
        matches!(e, IngestError::Gzip { .. } | IngestError::Row { .. }),
        "{e:?}"
    );
    f.assert_unchanged();
}

#[test]
fn a_file_that_is_not_gzip_is_rejected() {
    let f = Fixture::new();
    let (_, r) = f.ingest_bytes("2012-10-16.csv.gz", &f.text, false);
    assert!(matches!(r, Err(IngestError::NotGzip { .. })), "{r:?}");
    assert!(r
        .unwrap_err()
        .to_string()
        .ends_with("2012-10-16.csv.gz: not a gzip file"));
    f.assert_unchanged();
}

#[test]
fn wrong_header_is_rejected() {
    let f = Fixture::new();
    let mut lines = f.lines();
    lines[0] =
        br#""date","time","size","r_version","r_arch","r_os","package","version","country","ip""#
            .to_vec();
    let (_, r) = f.ingest_lines("2012-10-16.csv.gz", &lines);
    let msg = r.unwrap_err().to_string();
    assert!(msg.contains("2012-10-16.csv.gz:1: wrong header"), "{msg}");
    f.assert_unchanged();
}

#[test]
fn wrong_field_count_is_rejected_with_its_line() {
    let f = Fixture::new();
    let mut lines = f.lines();
    lines[40].extend_from_slice(b",extra");
    let (_, r) = f.ingest_lines("2012-10-16.csv.gz", &lines);
    let (line, field, problem) = row_err(r);
    assert_eq!(
        (line, field.as_str(), problem.as_str()),
        (41, "row", "expected 10 fields, found 11")
    );
    let mut lines = f.lines();
    lines[7] = br#""2012-10-16","10:00:00",1"#.to_vec();
    let (_, r) = f.ingest_lines("2012-10-16.csv.gz", &lines);
    assert_eq!(row_err(r).0, 8);
    f.assert_unchanged();
}

/// Replaces field `i` of line `n` (0-based, header is 0).
fn with_field(f: &Fixture, n: usize, i: usize, value: &[u8]) -> Vec<Vec<u8>> {
    let mut lines = f.lines();
    let mut fields: Vec<Vec<u8>> = lines[n].split(|&b| b == b',').map(<[u8]>::to_vec).collect();
    fields[i] = value.to_vec();
    lines[n] = fields.join(&b',');
    lines
}

#[test]
fn non_numeric_size_and_ip_id_are_rejected() {
    let f = Fixture::new();
    let (path, r) = f.ingest_lines("2012-10-16.csv.gz", &with_field(&f, 30, 2, b"12k"));
    let e = r.unwrap_err();
    assert_eq!(
        e.to_string(),
        format!("{}:31: field size: \"12k\" is not a number", path.display())
    );
    let (_, r) = f.ingest_lines("2012-10-16.csv.gz", &with_field(&f, 60, 9, b"x7"));
    assert_eq!(
        row_err(r),
        (61, "ip_id".into(), "\"x7\" is not a number".into())
    );
    let (_, r) = f.ingest_lines("2012-10-16.csv.gz", &with_field(&f, 60, 9, b"NA"));
    assert_eq!(row_err(r).1, "ip_id");
    let (_, r) = f.ingest_lines("2012-10-16.csv.gz", &with_field(&f, 5, 1, b"\"25:00:00\""));
    assert_eq!(row_err(r).1, "time");
    f.assert_unchanged();
}

#[test]
fn non_utf8_bytes_are_rejected() {
    let f = Fixture::new();
    let (_, r) = f.ingest_lines(
        "2012-10-16.csv.gz",
        &with_field(&f, 20, 6, b"\"gg\xffplot\""),
    );
    let (line, field, problem) = row_err(r);
    assert_eq!((line, field.as_str()), (21, "package"));
    assert!(problem.contains("not UTF-8"), "{problem}");
    f.assert_unchanged();
}

#[test]
fn rows_dated_another_day_are_rejected() {
    let f = Fixture::new();
    let (_, r) = f.ingest_lines(
        "2012-10-16.csv.gz",
        &with_field(&f, 50, 0, b"\"2012-10-15\""),
    );
    let (line, field, problem) = row_err(r);
    assert_eq!((line, field.as_str()), (51, "date"));
    assert_eq!(problem, "row dated 2012-10-15 in the log of 2012-10-16");
    // Without a date in the file name the first row decides; a later other day is still wrong.
    let (_, r) = f.ingest_lines("log.csv.gz", &with_field(&f, 50, 0, b"\"2012-10-15\""));
    assert_eq!(row_err(r).0, 51);
    // A file named for one day holding another.
    let (_, r) = f.ingest_bytes("2012-10-18.csv.gz", &f.text, true);
    assert_eq!(row_err(r).0, 2);
    f.assert_unchanged();
}

#[test]
fn empty_files_are_rejected() {
    let f = Fixture::new();
    let (_, r) = f.ingest_bytes("2012-10-16.csv.gz", b"", false);
    assert!(matches!(r, Err(IngestError::Empty { .. })), "{r:?}");
    let (_, r) = f.ingest_bytes("2012-10-16.csv.gz", b"", true);
    assert!(matches!(r, Err(IngestError::Empty { .. })), "{r:?}");
    let header = f.lines()[0].clone();
    let (_, r) = f.ingest_lines("2012-10-16.csv.gz", &[header]);
    let msg = r.unwrap_err().to_string();
    assert!(msg.contains("empty log: no data rows"), "{msg}");
    f.assert_unchanged();
}

#[test]
fn missing_values_follow_the_na_rules() {
    // Tolerated, not rejected: unquoted NA package → skipped and counted; quoted "NA" country is
    // Namibia; unquoted NA country is missing and ignored for the modal country; blank lines.
    let f = Fixture::new();
    let lines = [
        br#""date","time","size","r_version","r_arch","r_os","package","version","country","ip_id""#.to_vec(),
        br#""2012-10-16","01:00:00",10,NA,NA,NA,"a","1","NA",1"#.to_vec(),
        br#""2012-10-16","01:00:01",10,NA,NA,NA,"b","1","NA",1"#.to_vec(),
        br#""2012-10-16","01:00:02",10,NA,NA,NA,"c",NA,NA,1"#.to_vec(),
        br#""2012-10-16","01:00:03",10,NA,NA,NA,"d","1",NA,1"#.to_vec(),
        br#""2012-10-16","01:00:04",10,NA,NA,NA,"e","1","US",1"#.to_vec(),
        br#""2012-10-16","02:00:00",99,"3.0.1","x86_64","linux-gnu",NA,NA,"US",2"#.to_vec(),
        Vec::new(),
        br#""2012-10-16","03:00:00",5,"3.0.1","x86_64","linux-gnu","a","2",NA,9000000000"#.to_vec(),
    ];
    let (_, r) = f.ingest_lines("2012-10-16.csv", &lines);
    let report = r.unwrap();
    assert_eq!(
        (
            report.rows,
            report.downloads,
            report.skipped_rows,
            report.blank_lines
        ),
        (7, 6, 1, 1)
    );
    let s = Store::open(&f.db)
        .unwrap()
        .day_summary(DATE, 100)
        .unwrap()
        .unwrap();
    assert_eq!(
        (
            s.totals.downloads,
            s.totals.downloaders,
            s.totals.packages,
            s.totals.bytes
        ),
        (6, 2, 5, 55)
    );
    assert_eq!(s.whales[0].country.as_deref(), Some("NA"));
    // A large ip_id (outside the dense range) works like any other.
    assert_eq!(s.whales[1].ip_id, 9_000_000_000);
    assert_eq!(s.whales[1].country, None);
    let d = Store::open(&f.db)
        .unwrap()
        .whale_detail(DATE, 1)
        .unwrap()
        .unwrap();
    assert_eq!(d.downloads[2].version, None);
    assert_eq!(d.downloads[2].r_version, None);
    assert_eq!(d.downloads[0].country.as_deref(), Some("NA"));
    assert_eq!(d.downloads[3].country, None);
}

#[test]
fn cli_errors_are_one_line_with_a_non_zero_exit() {
    let f = Fixture::new();
    let mut lines = f.lines();
    lines[12].truncate(30);
    let bad = f.dir.path().join("2012-10-16.csv.gz");
    let mut text = lines.join(&b'\n');
    text.push(b'\n');
    gzip_to(&bad, &text);
    let out = Command::new(env!("CARGO_BIN_EXE_cranwhales"))
        .arg("ingest")
        .arg("--db")
        .arg(&f.db)
        .arg(&bad)
        .arg("not-a-file.csv.gz")
        .arg("2012-13-01")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    let errors: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("cranwhales: error:"))
        .collect();
    assert_eq!(errors.len(), 4, "{err}");
    assert!(
        errors[0].contains("2012-10-16.csv.gz:13: field row: expected 10 fields"),
        "{err}"
    );
    assert!(
        errors[1].contains("not-a-file.csv.gz: no such file"),
        "{err}"
    );
    assert!(errors[2].contains("\"2012-13-01\" is not a date"), "{err}");
    assert!(errors[3].contains("3 sources failed"), "{err}");
    assert!(
        !err.contains("panicked") && !err.contains("backtrace"),
        "{err}"
    );
    f.assert_unchanged();
}

#[test]
fn crlf_line_endings_give_the_same_day() {
    let f = Fixture::new();
    let crlf: Vec<u8> = f.lines().join(&b"\r\n"[..]);
    let path = f.dir.path().join("crlf").join("2012-10-16.csv.gz");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    gzip_to(&path, &crlf);
    let db = f.dir.path().join("crlf.db");
    ingest_path(&db, &path, &Silent).unwrap();
    let s = Store::open(&db)
        .unwrap()
        .day_summary(DATE, 100)
        .unwrap()
        .unwrap();
    assert_eq!(s, f.before.1);
}

#[test]
fn an_overlong_line_is_rejected_in_bounded_memory() {
    let f = Fixture::new();
    let mut lines = f.lines();
    lines[3] = vec![b'x'; 3 << 20];
    let (_, r) = f.ingest_lines("2012-10-16.csv.gz", &lines);
    let (line, _, problem) = row_err(r);
    assert_eq!(line, 4);
    assert!(problem.starts_with("line longer than"), "{problem}");
    f.assert_unchanged();
}

/// A reading command or `migrate` pointed at a missing file or at a directory says which, in one
/// line, and creates nothing.
#[test]
fn a_missing_or_directory_database_is_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("none.db");
    for (db, want) in [
        (dir.path(), "is a directory, not a database file"),
        (missing.as_path(), "no database at"),
    ] {
        for args in [
            &["show", "2015-01-08"][..],
            &["days"],
            &["package", "ggplot2"],
            &["migrate"],
        ] {
            let out = cli(db, args);
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(
                out.status.code(),
                Some(1),
                "{args:?} {}: {err}",
                db.display()
            );
            assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
            assert!(err.contains(want), "{args:?} {}: {err}", db.display());
            assert!(out.stdout.is_empty());
        }
    }
    assert!(!missing.exists(), "nothing was created");
}

/// An ingest that stores nothing leaves no new database behind (a mistyped file name made an
/// empty store that then served nothing), and leaves an existing one as it was.
#[test]
fn an_ingest_that_stores_nothing_creates_no_database() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("new.db");
    let missing = dir.path().join("2015-01-08.csv.gz");
    let out = cli(&db, ["ingest".as_ref(), missing.as_os_str()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("was not created"), "{err}");
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");
    // An existing store keeps its day.
    let day = crate::insight_support::day_file("2015-01-08");
    cli_ok(&db, ["ingest".as_ref(), day.as_os_str()]);
    let out = cli(&db, ["ingest".as_ref(), missing.as_os_str()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("the store keeps what it had"));
    assert!(cli_ok(&db, ["days"]).contains("2015-01-08"));
}
