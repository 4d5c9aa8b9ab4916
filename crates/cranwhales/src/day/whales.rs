//! The whales' tables: their rows picked out of the day's row log, then per whale the
//! chronological rows, hourly counts, modal country, distinct packages and behaviour profile.

use super::ips::Ips;
use super::rank::Ranking;
use super::{Dict, FastMap, RowRec, Threads, WhaleRow, WhaleTable, COUNTRY_SHIFT};
use crate::profile::{self, DayContext, EnvClass, Profiler, Row};

/// Each whale's rows (by rank - 1), in file order, and each package's downloads by whales.
///
/// The log scan is the largest part of `finish` and the reading thread is done by now: with
/// `Threads::Two` each half of the log is scanned on its own core, and the halves joined in file
/// order.
pub(super) fn rows_of_whales(
    log: &[RowRec],
    big_sizes: &FastMap<u64, u64>,
    ranking: &Ranking,
    ips: &Ips,
    dict: &Dict,
    threads: Threads,
) -> (Vec<Vec<WhaleRow>>, Vec<u64>) {
    let scan = |part: &[RowRec], first: usize| {
        let mut rows: Vec<Vec<WhaleRow>> = vec![Vec::new(); ranking.order.len()];
        let mut pkg_whale = vec![0u64; dict.packages.len()];
        for (i, r) in part.iter().enumerate() {
            let rank = ranking.of(r.ip);
            if rank == 0 {
                continue;
            }
            let size = if r.size == u32::MAX {
                big_sizes[&((first + i) as u64)]
            } else {
                u64::from(r.size)
            };
            pkg_whale[dict.pkgvers[r.pkgver as usize].0 as usize] += 1;
            let list = &mut rows[rank as usize - 1];
            if list.capacity() == 0 {
                // Sized once: a whale's row count is known, and growing a list of
                // ~100k rows by doubling copied it over and over.
                list.reserve_exact(ips.get(ranking.order[rank as usize - 1]).0.downloads as usize);
            }
            list.push(WhaleRow {
                secs: r.time_country & ((1 << COUNTRY_SHIFT) - 1),
                country: r.time_country >> COUNTRY_SHIFT,
                pkgver: r.pkgver,
                env: r.env,
                size,
            });
        }
        (rows, pkg_whale)
    };
    if threads == Threads::One {
        return scan(log, 0);
    }
    let half = log.len() / 2;
    let ((mut whale_rows, mut pkg_whale), (later, pkg_later)) =
        threads.join(|| scan(&log[..half], 0), || scan(&log[half..], half));
    for (rows, more) in whale_rows.iter_mut().zip(later) {
        rows.extend_from_slice(&more);
    }
    for (n, more) in pkg_whale.iter_mut().zip(pkg_later) {
        *n += more;
    }
    (whale_rows, pkg_whale)
}

/// Countries are counted by text (`"US"` and `US` are two raw values of one country): `canon`
/// maps a raw country id to its text's index in `texts` (sorted, so the lowest index among
/// equal counts is the alphabetically first).
struct Countries<'a> {
    texts: Vec<&'a str>,
    canon: Vec<Option<usize>>,
}

impl<'a> Countries<'a> {
    fn new(dict: &'a Dict) -> Self {
        let mut texts: Vec<&str> = dict
            .countries
            .iter()
            .flatten()
            .map(|c| c.as_str())
            .collect();
        texts.sort_unstable();
        texts.dedup();
        let canon = (dict.countries.iter())
            .map(|c| {
                c.as_deref()
                    .map(|c| texts.binary_search(&c).unwrap_or_default())
            })
            .collect();
        Countries { texts, canon }
    }
}

/// What every whale's profile needs from the whole day.
pub(super) struct ProfileInput {
    /// Every R build of the day, classified (by env id).
    pub envs: Vec<EnvClass>,
    pub day: DayContext,
}

/// One table per whale, in rank order; with `Threads::Two` built on two threads (odd and even
/// ranks).
pub(super) fn tables(
    whale_rows: Vec<Vec<WhaleRow>>,
    names: Vec<String>,
    ranking: &Ranking,
    ips: &Ips,
    dict: &Dict,
    input: &ProfileInput,
    threads: Threads,
) -> Vec<WhaleTable> {
    let countries = Countries::new(dict);
    let table = |r: usize, rows: Vec<WhaleRow>, name: String, sc: &mut Scratch| {
        let (acc, ip_id) = ips.get(ranking.order[r]);
        let s = stats(r, rows, dict, &countries, &mut sc.seen);
        let facts = sc.profiler.measure(
            s.rows.iter().map(|w| Row {
                secs: w.secs,
                package: dict.pkgvers[w.pkgver as usize].0,
                pkgver: w.pkgver,
                env: w.env,
            }),
            &input.envs,
            &dict.packages,
            &input.day,
        );
        WhaleTable {
            rank: r as u32 + 1,
            ip_id,
            name,
            country: s.country,
            downloads: u64::from(acc.downloads),
            bytes: acc.bytes,
            packages: s.packages,
            first: s.rows.first().map_or(0, |w| w.secs),
            last: s.rows.last().map_or(0, |w| w.secs),
            hourly: s.hourly,
            profile: profile::profile(facts),
            rows: s.rows,
            package_counts: sc.profiler.package_counts().collect(),
        }
    };
    let build = |part: Vec<(usize, (Vec<WhaleRow>, String))>| {
        let mut sc = Scratch {
            seen: vec![0u32; dict.packages.len()],
            profiler: Profiler::default(),
        };
        (part.into_iter())
            .map(|(r, (rows, name))| table(r, rows, name, &mut sc))
            .collect::<Vec<_>>()
    };
    let all = whale_rows.into_iter().zip(names).enumerate();
    if threads == Threads::One {
        return build(all.collect());
    }
    let (even, odd): (Vec<_>, Vec<_>) = all.partition(|(r, _)| r % 2 == 0);
    let (even, odd) = threads.join(|| build(even), || build(odd));
    let mut whales = Vec::with_capacity(ranking.order.len());
    let mut odd = odd.into_iter();
    for w in even {
        whales.push(w);
        whales.extend(odd.next());
    }
    whales
}

/// Per-thread memory reused from whale to whale.
struct Scratch {
    /// One slot per package (see `stats`).
    seen: Vec<u32>,
    profiler: Profiler,
}

/// What a whale's rows say about it.
struct Stats {
    /// Chronological.
    rows: Vec<WhaleRow>,
    hourly: [u64; 24],
    packages: u64,
    country: Option<String>,
}

/// The stats of the whale of rank `r + 1` from its rows; `seen` is per-thread scratch (one
/// slot per package).
fn stats(
    r: usize,
    mut rows: Vec<WhaleRow>,
    dict: &Dict,
    countries: &Countries<'_>,
    seen: &mut [u32],
) -> Stats {
    // Chronological; the sort is stable so equal times keep file order.
    rows.sort_by_key(|w| w.secs);
    let mut hourly = [0u64; 24];
    let mut packages = 0u64;
    let mut by_country = vec![0u64; countries.texts.len()];
    for w in &rows {
        hourly[(w.secs / 3600) as usize] += 1;
        if let Some(c) = countries.canon[w.country as usize] {
            by_country[c] += 1;
        }
        // `seen[p] == r + 1` once whale r has a download of package p.
        let p = dict.pkgvers[w.pkgver as usize].0 as usize;
        if seen[p] != r as u32 + 1 {
            seen[p] = r as u32 + 1;
            packages += 1;
        }
    }
    // Modal country; ties go to the alphabetically first code.
    let country = (by_country.iter().enumerate())
        .filter(|(_, &n)| n > 0)
        .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(&a.0)))
        .map(|(c, _)| countries.texts[c].to_owned());
    Stats {
        rows,
        hourly,
        packages,
        country,
    }
}
