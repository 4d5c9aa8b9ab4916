//! Unique downloaders of every package: the row log's ip indexes grouped by package (a counting
//! scatter: each package's downloads are known, so its slots are too), then counted once each
//! with a per-ip stamp. The packages are cut in two halves of about equal downloads, one per
//! core; each core scans the whole log but keeps only its own packages' rows.
//!
//! perf (10M-row bench day): the scan is most of the cost, and a branch on "is this row's
//! package mine" mispredicted half the time; rows of other packages are written to a scratch
//! slot instead, so the loop has no data-dependent branch.

use super::ips::{Ips, DENSE_IPS};
use super::{RowRec, Threads};

/// Distinct ips per package id. `pkg_of[pkgver]` is the package of a package+version id and
/// `downloads[p]` the rows of package `p` in `log`. `Threads::One` scans the log once for all
/// packages.
pub(super) fn unique_downloaders(
    log: &[RowRec],
    pkg_of: &[u32],
    downloads: &[u64],
    ips: &Ips,
    threads: Threads,
) -> Vec<u64> {
    let slots = Slots {
        dense: ips.dense().len(),
        len: ips.dense().len() + ips.sparse_len(),
    };
    if threads == Threads::One {
        return count_range(log, pkg_of, downloads, 0..downloads.len(), slots);
    }
    let cut = half_cut(downloads);
    let half = |lo: usize, hi: usize| count_range(log, pkg_of, downloads, lo..hi, slots);
    let (mut first, second) = threads.join(|| half(0, cut), || half(cut, downloads.len()));
    first.extend(second);
    first
}

/// The first package of the second half when the packages are cut in two of about equal rows
/// (`downloads[p]`: package p's rows): where the running sum passes half the rows.
pub(super) fn half_cut(downloads: &[u64]) -> usize {
    let total: u64 = downloads.iter().sum();
    let mut run = 0u64;
    (downloads.iter())
        .position(|&n| {
            run += n;
            2 * run > total
        })
        .map_or(downloads.len(), |p| p + 1)
}

/// Stamp slots of ip indexes: the index itself when dense, else `dense` + the sparse position.
#[derive(Clone, Copy)]
struct Slots {
    dense: usize,
    len: usize,
}

impl Slots {
    #[inline]
    fn of(self, ip: u32) -> usize {
        if u64::from(ip) < DENSE_IPS {
            ip as usize
        } else {
            self.dense + (u64::from(ip) - DENSE_IPS) as usize
        }
    }
}

/// Unique downloaders of the packages in `range`.
fn count_range(
    log: &[RowRec],
    pkg_of: &[u32],
    downloads: &[u64],
    range: std::ops::Range<usize>,
    slots: Slots,
) -> Vec<u64> {
    let n = range.len();
    // `next[k]`: where package range.start + k's next ip goes in `grouped`; `next[n]` is the
    // scratch slot at the end, where every other package's rows land (and stay).
    let mut next: Vec<u32> = Vec::with_capacity(n + 1);
    let mut at = 0u32;
    for &d in &downloads[range.clone()] {
        next.push(at);
        at += d as u32;
    }
    next.push(at);
    let starts = next.clone();
    // Package+version id → index into `next` (n: not one of ours).
    let local: Vec<u32> = (pkg_of.iter())
        .map(|&p| {
            let p = p as usize;
            if range.contains(&p) {
                (p - range.start) as u32
            } else {
                n as u32
            }
        })
        .collect();
    let mut grouped = vec![0u32; at as usize + 1];
    for r in log {
        let k = local[r.pkgver as usize] as usize;
        let slot = next[k];
        grouped[slot as usize] = r.ip;
        next[k] = slot + u32::from(k != n);
    }
    // `stamp[slot] == k + 1` once package k has counted the ip in `slot`.
    let mut stamp = vec![0u32; slots.len];
    (0..n)
        .map(|k| {
            let mark = k as u32 + 1;
            let mut unique = 0u64;
            for &ip in &grouped[starts[k] as usize..next[k] as usize] {
                let i = slots.of(ip);
                if stamp[i] != mark {
                    stamp[i] = mark;
                    unique += 1;
                }
            }
            unique
        })
        .collect()
}
