//! The downloads a package view can leave out as inflated (issue 21, cranlogs #45), counted per
//! package at ingest:
//! - **small**: under [`SMALL_BYTES`] bytes sent — no package file is that small, so these are
//!   failed or partial transfers and probes (packageRank's size filter uses the same threshold);
//! - **repeats**: a download of a package by one downloader (`ip_id`) within
//!   [`REPEAT_WINDOW_SECS`] seconds after that downloader's previous download of the same package
//!   (any version; small ones left aside), in time order: the same install retried or looped,
//!   one download to a person.
//!
//! The two never overlap (a small download is not a repeat), so both can be taken out at once.
//! Each whale's share of them is kept by rank, so they can be taken out beside the whales.
//!
//! How: the log's rows grouped by package (a counting scatter, as `downloaders`), each as one
//! `u64` (ip, time, small, its place in the group), each package's group sorted, then one pass
//! per group. Among one downloader's downloads of a package in the same second, the first in
//! the file comes first: that fixes which of them is the repeat, so that the breakdowns
//! (`day::breakdown`) can take each row's flag ([`Filtered::flags`]).

use super::rank::Ranking;
use super::RowRec;
use super::COUNTRY_SHIFT;

/// Downloads of fewer bytes than this are small.
pub const SMALL_BYTES: u64 = 1_000;

/// A download within this many seconds after the same downloader's previous download of the
/// same package is a repeat (5 minutes: one `install.packages` retried, or a loop).
pub const REPEAT_WINDOW_SECS: u32 = 300;

/// A row's [`Filtered::flags`] entry when it is small.
pub(super) const SMALL: u8 = 1;
/// A row's [`Filtered::flags`] entry when it is a repeat.
pub(super) const REPEAT: u8 = 2;

/// Per package id: small downloads, repeats, and the top-100 whales' share of both, by rank.
pub(super) struct Filtered {
    pub small: Vec<u64>,
    pub repeats: Vec<u64>,
    /// (rank, small + repeats by that whale), ranks ascending; only whales with some.
    pub whales: Vec<Vec<(u32, u64)>>,
    /// Per row of the log, in its order: 0, [`SMALL`] or [`REPEAT`].
    pub flags: Vec<u8>,
}

/// Counts the small and repeated downloads of every package in `log`. `pkg_of[pkgver]` is the
/// package of a package+version id and `downloads[p]` the rows of package `p`.
pub(super) fn count(
    log: &[RowRec],
    pkg_of: &[u32],
    downloads: &[u64],
    ranking: &Ranking,
) -> Filtered {
    let mut next: Vec<usize> = Vec::with_capacity(downloads.len());
    let mut at = 0usize;
    for &d in downloads {
        next.push(at);
        at += d as usize;
    }
    let starts = next.clone();
    // The low `place` bits: the row's place in its package's group (file order).
    let biggest = downloads.iter().copied().max().unwrap_or(0);
    let place = u64::BITS - biggest.leading_zeros();
    let max_ip = log.iter().map(|r| r.ip).max().unwrap_or(0);
    // Fits any real day: 2^24 downloaders and a package with 2^22 downloads take 64 bits.
    assert!(
        u32::BITS - max_ip.leading_zeros() + 18 + place <= 64,
        "a day of {max_ip} downloaders and {biggest} downloads of one package"
    );
    let mut keys = vec![0u64; at];
    for r in log {
        let p = pkg_of[r.pkgver as usize] as usize;
        let secs = u64::from(r.time_country & ((1 << COUNTRY_SHIFT) - 1));
        let small = u64::from(u64::from(r.size) < SMALL_BYTES);
        let i = (next[p] - starts[p]) as u64;
        keys[next[p]] = (u64::from(r.ip) << 18 | secs << 1 | small) << place | i;
        next[p] += 1;
    }
    let n = downloads.len();
    let mut out = Filtered {
        small: vec![0; n],
        repeats: vec![0; n],
        whales: vec![Vec::new(); n],
        flags: Vec::new(),
    };
    // Per slot of `keys` (package group, file order within it): the row's flag.
    let mut slot_flags = vec![0u8; at];
    let mut by_rank = [0u64; 256];
    for p in 0..n {
        let group = &mut keys[starts[p]..next[p]];
        group.sort_unstable();
        // The previous kept (not small) download: (ip, secs).
        let mut prev: Option<(u64, u32)> = None;
        let mut touched = false;
        for &key in group.iter() {
            let (k, i) = (key >> place, (key & ((1 << place) - 1)) as usize);
            let (ip, secs) = (k >> 18, ((k >> 1) & ((1 << 17) - 1)) as u32);
            let filtered = if k & 1 == 1 {
                out.small[p] += 1;
                slot_flags[starts[p] + i] = SMALL;
                true
            } else {
                let repeat =
                    matches!(prev, Some((pi, ps)) if pi == ip && secs - ps <= REPEAT_WINDOW_SECS);
                prev = Some((ip, secs));
                out.repeats[p] += u64::from(repeat);
                if repeat {
                    slot_flags[starts[p] + i] = REPEAT;
                }
                repeat
            };
            if filtered {
                let rank = ranking.of(ip as u32);
                if rank > 0 {
                    by_rank[usize::from(rank)] += 1;
                    touched = true;
                }
            }
        }
        if touched {
            for (rank, c) in by_rank.iter_mut().enumerate().filter(|(_, c)| **c > 0) {
                out.whales[p].push((rank as u32, *c));
                *c = 0;
            }
        }
    }
    // Back to the log's order: the scatter again.
    next.copy_from_slice(&starts);
    out.flags = (log.iter())
        .map(|r| {
            let p = pkg_of[r.pkgver as usize] as usize;
            next[p] += 1;
            slot_flags[next[p] - 1]
        })
        .collect();
    out
}
