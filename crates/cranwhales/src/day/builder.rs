//! `DayBuilder`: one pass over a day's rows, counting as it goes and keeping each row as 20
//! bytes of dictionary ids for the whales' tables at the end.

use super::interner::{key_hash, same, Interner};
use super::ips::{Ips, NONE};
use super::COUNTRY_SHIFT;
use super::{breakdown, downloaders, filters, pack, rank, row_err, stats, whales};
use super::{DayTables, Dict, FastMap, PackageCount, RowError, RowRec, Threads, WhaleTable};
use crate::csv::{col, Fields};
use crate::names;
use crate::parse;
use crate::profile::{DayContext, EnvClass};
use crate::summary::Totals;

const MAX_COUNTRIES: u32 = 1 << (32 - COUNTRY_SHIFT);

/// Accumulates one day from its rows in a single pass.
pub struct DayBuilder {
    date: Option<String>,
    date_raw: Vec<u8>,
    rows: u64,
    skipped: u64,
    blank: u64,
    downloads: u64,
    bytes: u64,
    hourly: [u64; 24],
    ips: Ips,
    pkgver_ix: Interner,
    pkgver_count: Vec<u64>,
    package_ix: FastMap<String, u32>,
    env_ix: Interner,
    /// Rows per env id (for the day's share of requests without an R version).
    env_count: Vec<u64>,
    country_ix: Interner,
    /// Two-letter quoted country codes (`"US"`) → id, indexed by the two letters.
    country_fast: Vec<u32>,
    dict: Dict,
    log: Vec<RowRec>,
    big_sizes: FastMap<u64, u64>,
}

fn utf8(line: u64, field: &'static str, b: &[u8]) -> Result<String, RowError> {
    utf8_str(line, field, b).map(str::to_owned)
}

fn utf8_str<'a>(line: u64, field: &'static str, b: &'a [u8]) -> Result<&'a str, RowError> {
    std::str::from_utf8(b).map_err(|e| {
        row_err(
            line,
            field,
            format!("not UTF-8 (byte {} of the field)", e.valid_up_to() + 1),
        )
    })
}

fn opt_utf8(line: u64, field: &'static str, raw: &[u8]) -> Result<Option<String>, RowError> {
    parse::text(raw).map(|t| utf8(line, field, &t)).transpose()
}

/// `&line[a.start .. b.end]` for two fields of `line`, a before b.
#[inline]
fn span<'a>(line: &'a [u8], a: &[u8], b: &[u8]) -> &'a [u8] {
    let base = line.as_ptr() as usize;
    let start = a.as_ptr() as usize - base;
    let end = b.as_ptr() as usize - base + b.len();
    &line[start..end]
}

impl DayBuilder {
    /// `date`: the day the rows must belong to, if known (from a file name or the request);
    /// otherwise the first row decides.
    pub fn new(date: Option<&str>) -> Self {
        DayBuilder {
            date: date.map(str::to_owned),
            date_raw: date
                .map(|d| format!("\"{d}\"").into_bytes())
                .unwrap_or_default(),
            rows: 0,
            skipped: 0,
            blank: 0,
            downloads: 0,
            bytes: 0,
            hourly: [0; 24],
            ips: Ips::default(),
            pkgver_ix: Interner::default(),
            pkgver_count: Vec::new(),
            package_ix: FastMap::default(),
            env_ix: Interner::default(),
            env_count: Vec::new(),
            country_ix: Interner::default(),
            country_fast: vec![NONE; 1 << 16],
            dict: Dict::default(),
            log: Vec::new(),
            big_sizes: FastMap::default(),
        }
    }

    /// Data rows seen so far (skipped ones included).
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// An empty line: tolerated and counted.
    pub fn blank_line(&mut self) {
        self.blank += 1;
    }

    #[cold]
    fn check_date(&mut self, line: u64, raw: &[u8]) -> Result<(), RowError> {
        let Some(d) = parse::date(raw) else {
            let shown = grammar::echo::echo(raw, 40);
            return Err(row_err(
                line,
                "date",
                format!("{shown} is not a YYYY-MM-DD date"),
            ));
        };
        match &self.date {
            None => {
                self.date = Some(d.to_owned());
                self.date_raw = raw.to_vec();
                Ok(())
            }
            Some(day) if day == d => Ok(()),
            Some(day) => Err(row_err(
                line,
                "date",
                format!("row dated {d} in the log of {day}"),
            )),
        }
    }

    /// Adds one data row (already split into 10 raw fields of `line`).
    #[inline]
    pub fn push(&mut self, line_no: u64, line: &[u8], f: &Fields<'_>) -> Result<(), RowError> {
        if !self.admit(line_no, line, f)? {
            return Ok(());
        }
        let pkg = f[col::PACKAGE];
        let secs = parse::seconds(f[col::TIME])
            .ok_or_else(|| bad(line_no, "time", f[col::TIME], "a HH:MM:SS time"))?;
        let size = parse::uint(f[col::SIZE])
            .filter(|&v| v <= i64::MAX as u64)
            .ok_or_else(|| bad(line_no, "size", f[col::SIZE], "a number"))?;
        let ip_id = parse::uint(f[col::IP_ID])
            .filter(|&v| v <= i64::MAX as u64)
            .ok_or_else(|| bad(line_no, "ip_id", f[col::IP_ID], "a number"))?;
        let pv_hash = key_hash(span(line, pkg, f[col::VERSION]));
        self.add(line_no, line, f, secs, size, ip_id, pv_hash)
    }

    /// Starts loading what a row with this package+version hash (see `push_decoded`) and
    /// ip_id will touch, a few rows before it is pushed: its interner slot and its ip's
    /// accumulator. perf (10M-row bench day): the accumulator's cache miss was ~10% of the
    /// parsing thread's time (~750k ips x 24 B: beyond L2).
    #[inline]
    pub fn prefetch(&self, pv_hash: u64, ip_id: u64) {
        self.pkgver_ix.prefetch(pv_hash);
        self.ips.prefetch(ip_id);
    }

    /// `push` of a row whose time and ip_id were already decoded (exactly as `push` would:
    /// `parse::seconds`, `parse::uint` ≤ `i64::MAX`) by the reading thread, which also computed
    /// `pv_hash`: the `key_hash` of the raw bytes from package's opening to version's closing.
    #[inline]
    #[allow(clippy::too_many_arguments)]
    pub fn push_decoded(
        &mut self,
        line_no: u64,
        line: &[u8],
        f: &Fields<'_>,
        secs: u32,
        ip_id: u64,
        pv_hash: u64,
    ) -> Result<(), RowError> {
        if !self.admit(line_no, line, f)? {
            return Ok(());
        }
        // Size is decoded here, on the parsing thread, which has room: the reading thread
        // (inflate + index) is the pipeline's longer half.
        // `f` lies inside `line`: the field's offsets let `uint_at` read it as one word.
        let at = (f[col::SIZE].as_ptr() as usize).wrapping_sub(line.as_ptr() as usize);
        let size = parse::uint_at(line, at, at.wrapping_add(f[col::SIZE].len()))
            .filter(|&v| v <= i64::MAX as u64)
            .ok_or_else(|| bad(line_no, "size", f[col::SIZE], "a number"))?;
        self.add(line_no, line, f, secs, size, ip_id, pv_hash)
    }

    /// What every row goes through first: counted, date checked, and skipped (counted) when its
    /// package is missing. `Ok(false)` means the row was skipped.
    #[inline(always)]
    fn admit(&mut self, line_no: u64, line: &[u8], f: &Fields<'_>) -> Result<bool, RowError> {
        self.rows += 1;
        if !same(f[col::DATE], &self.date_raw) {
            self.check_date(line_no, f[col::DATE])?;
        }
        let pkg = f[col::PACKAGE];
        if parse::is_missing(pkg) || pkg == b"\"\"" {
            self.skip(line_no, line)?;
            return Ok(false);
        }
        Ok(true)
    }

    /// The rest of `push` once the row's numbers are decoded.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn add(
        &mut self,
        line_no: u64,
        line: &[u8],
        f: &Fields<'_>,
        secs: u32,
        size: u64,
        ip_id: u64,
        pv_hash: u64,
    ) -> Result<(), RowError> {
        let pkg = f[col::PACKAGE];
        let ip = self.ips.index(ip_id);
        let pv_raw = span(line, pkg, f[col::VERSION]);
        let pkgver = match self.pkgver_ix.get_hashed(pv_raw, pv_hash) {
            Some(id) => id,
            None => self.new_pkgver(line_no, pv_raw, pv_hash, f)?,
        };
        let env_raw = span(line, f[col::R_VERSION], f[col::R_OS]);
        let mut env = self.ips.acc(ip).env;
        if !self.env_ix.is(env, env_raw) {
            env = match self.env_ix.get(env_raw) {
                Ok(id) => id,
                Err(h) => self.new_env(line_no, env_raw, h, f)?,
            };
            self.ips.acc(ip).env = env;
        }
        let c_raw = f[col::COUNTRY];
        let country = if let [b'"', a, b, b'"'] = *c_raw {
            match self.country_fast[usize::from(a) << 8 | usize::from(b)] {
                NONE => {
                    let id = self.country_id(line_no, c_raw)?;
                    self.country_fast[usize::from(a) << 8 | usize::from(b)] = id;
                    id
                }
                id => id,
            }
        } else {
            let cached = self.ips.acc(ip).country;
            if self.country_ix.is(cached, c_raw) {
                cached
            } else {
                let id = self.country_id(line_no, c_raw)?;
                self.ips.acc(ip).country = id;
                id
            }
        };

        let acc = self.ips.acc(ip);
        acc.downloads += 1;
        acc.bytes += size;
        self.pkgver_count[pkgver as usize] += 1;
        self.env_count[env as usize] += 1;
        self.hourly[(secs / 3600) as usize] += 1;
        self.downloads += 1;
        self.bytes += size;
        let small = if size < u64::from(u32::MAX) {
            size as u32
        } else {
            self.big_sizes.insert(self.log.len() as u64, size);
            u32::MAX
        };
        self.log.push(RowRec {
            ip,
            pkgver,
            env,
            size: small,
            time_country: secs | (country << COUNTRY_SHIFT),
        });
        Ok(())
    }

    #[cold]
    fn skip(&mut self, line_no: u64, line: &[u8]) -> Result<(), RowError> {
        // Skipped rows are not decoded further, but must still be text.
        if let Err(e) = std::str::from_utf8(line) {
            return Err(row_err(
                line_no,
                "row",
                format!("not UTF-8 (byte {} of the line)", e.valid_up_to() + 1),
            ));
        }
        self.skipped += 1;
        Ok(())
    }

    #[cold]
    fn new_pkgver(
        &mut self,
        line: u64,
        raw: &[u8],
        hash: u64,
        f: &Fields<'_>,
    ) -> Result<u32, RowError> {
        let raw_name = parse::unquote(f[col::PACKAGE]);
        let name = utf8_str(line, "package", &raw_name)?;
        let version = opt_utf8(line, "version", f[col::VERSION])?;
        // A new version of a known package allocates nothing for the name.
        let pkg = match self.package_ix.get(name) {
            Some(&pkg) => pkg,
            None => {
                let pkg = self.package_ix.len() as u32;
                self.package_ix.insert(name.to_owned(), pkg);
                self.dict.packages.push(name.to_owned());
                pkg
            }
        };
        self.dict.pkgvers.push((pkg, version));
        self.pkgver_count.push(0);
        Ok(self.pkgver_ix.add(raw, hash))
    }

    #[cold]
    fn new_env(
        &mut self,
        line: u64,
        raw: &[u8],
        hash: u64,
        f: &Fields<'_>,
    ) -> Result<u32, RowError> {
        let env = [
            opt_utf8(line, "r_version", f[col::R_VERSION])?,
            opt_utf8(line, "r_arch", f[col::R_VERSION + 1])?,
            opt_utf8(line, "r_os", f[col::R_OS])?,
        ];
        self.dict.envs.push(env);
        self.env_count.push(0);
        Ok(self.env_ix.add(raw, hash))
    }

    /// The id of a country field (interned on first sight).
    #[cold]
    fn country_id(&mut self, line: u64, raw: &[u8]) -> Result<u32, RowError> {
        let hash = match self.country_ix.get(raw) {
            Ok(id) => return Ok(id),
            Err(h) => h,
        };
        if self.dict.countries.len() as u32 >= MAX_COUNTRIES {
            return Err(row_err(
                line,
                "country",
                format!("more than {MAX_COUNTRIES} distinct values"),
            ));
        }
        self.dict.countries.push(opt_utf8(line, "country", raw)?);
        Ok(self.country_ix.add(raw, hash))
    }

    /// Ranks the downloaders and builds the day's tables on `threads`. `None` when no data row
    /// was seen.
    pub fn finish(mut self, threads: Threads) -> Option<DayTables> {
        let date = self.date.take()?;
        if self.rows == 0 {
            return None;
        }
        let ranking = rank::rank(&self.ips);
        let (whale_rows, pkg_whale) = whales::rows_of_whales(
            &self.log,
            &self.big_sizes,
            &ranking,
            &self.ips,
            &self.dict,
            threads,
        );
        let pkg_of: Vec<u32> = self.dict.pkgvers.iter().map(|(p, _)| *p).collect();
        let mut pkg_downloads = vec![0u64; self.dict.packages.len()];
        for (pv, n) in self.pkgver_count.iter().enumerate() {
            pkg_downloads[pkg_of[pv] as usize] += n;
        }
        // Unique downloaders on one thread beside the filters' one: one scan of the log instead of
        // two halves' whole scans, and the filters (the longer) are not kept waiting.
        let (downloaders, filtered) = threads.join(
            || {
                downloaders::unique_downloaders(
                    &self.log,
                    &pkg_of,
                    &pkg_downloads,
                    &self.ips,
                    Threads::One,
                )
            },
            || filters::count(&self.log, &pkg_of, &pkg_downloads, &ranking),
        );
        let (whales, no_r_rows) = self.whale_tables(&date, &ranking, whale_rows, threads);
        let count = |t| {
            let (log, flags) = (&self.log, &filtered.flags);
            breakdown::count(log, &pkg_of, &pkg_downloads, &ranking, &self.dict, flags, t)
        };
        // The whales' blob is packed beside the breakdowns (on two threads, three at once): on
        // its own, packing took 0.19 s of the 10M-row day with the second core idle; beside
        // them the ingest went from 2.1 to 1.9 s (4 rounds each, load ~2).
        let (breakdowns, packed_log) = match threads {
            Threads::One => (count(Threads::One), None),
            Threads::Two => std::thread::scope(|s| {
                let packing = s.spawn(|| pack::pack_log(&self.dict, &whales));
                let b = count(Threads::Two);
                (b, Some(packing.join().expect("packing thread")))
            }),
        };
        // Freeing ~200 MB of rows takes tens of ms of unmapping: done beside the rest.
        let log = self.log;
        std::thread::spawn(move || drop(log));
        let packages = package_counts(
            &self.dict,
            &whales,
            [pkg_downloads, downloaders, pkg_whale],
            filtered,
        );
        let stats = stats::day_stats(&whales, &packages, no_r_rows);

        Some(DayTables {
            date,
            rows: self.rows,
            blank_lines: self.blank,
            totals: Totals {
                downloads: self.downloads,
                downloaders: ranking.downloaders,
                bytes: self.bytes,
                packages: packages.len() as u64,
                skipped_rows: self.skipped,
            },
            hourly: self.hourly,
            whales,
            packages,
            stats,
            breakdowns,
            packed_log,
            dict: self.dict,
        })
    }

    /// The whales' tables (names, profiles, …) and the day's rows without an R version.
    fn whale_tables(
        &self,
        date: &str,
        ranking: &rank::Ranking,
        whale_rows: Vec<Vec<super::WhaleRow>>,
        threads: Threads,
    ) -> (Vec<WhaleTable>, u64) {
        let whale_ids: Vec<u64> = ranking.order.iter().map(|&i| self.ips.get(i).1).collect();
        let names = names::assign(date, &whale_ids);
        let envs: Vec<EnvClass> = (self.dict.envs.iter())
            .map(|[v, a, o]| EnvClass::of(v.as_deref(), a.as_deref(), o.as_deref()))
            .collect();
        let no_r_rows: u64 = (envs.iter().zip(&self.env_count))
            .filter(|(e, _)| e.no_r)
            .map(|(_, n)| n)
            .sum();
        let input = whales::ProfileInput {
            envs,
            day: DayContext {
                packages: self.dict.packages.len() as u64,
                no_r_share: no_r_rows as f64 / self.downloads.max(1) as f64,
                whale_downloads: (ranking.order.iter())
                    .map(|&i| u64::from(self.ips.get(i).0.downloads))
                    .sum(),
            },
        };
        let whales = whales::tables(
            whale_rows, names, ranking, &self.ips, &self.dict, &input, threads,
        );
        (whales, no_r_rows)
    }
}

/// Every package's counts, with each whale's downloads of it by rank.
fn package_counts(
    dict: &Dict,
    whales: &[WhaleTable],
    [downloads, downloaders, whale_downloads]: [Vec<u64>; 3],
    filtered: filters::Filtered,
) -> Vec<PackageCount> {
    let mut ranks: Vec<Vec<(u32, u64)>> = vec![Vec::new(); dict.packages.len()];
    for w in whales {
        for &(p, n) in &w.package_counts {
            ranks[p as usize].push((w.rank, u64::from(n)));
        }
    }
    let whale_filtered = filtered.whales.into_iter();
    (dict
        .packages
        .iter()
        .zip(ranks)
        .zip(whale_filtered)
        .enumerate())
    .map(|(i, ((p, whale_ranks), whale_filtered))| PackageCount {
        package: p.clone(),
        downloads: downloads[i],
        downloaders: downloaders[i],
        whale_downloads: whale_downloads[i],
        whale_ranks,
        small: filtered.small[i],
        repeats: filtered.repeats[i],
        whale_filtered,
    })
    .collect()
}

#[cold]
fn bad(line: u64, field: &'static str, raw: &[u8], what: &str) -> RowError {
    let shown = grammar::echo::echo(raw, 40);
    row_err(line, field, format!("\"{shown}\" is not {what}"))
}
