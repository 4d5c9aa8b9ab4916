//! Ranking a day's downloaders: the top [`TOP`] by downloads (ties: lower ip_id first).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::ips::{IpAcc, Ips, DENSE_IPS};
use super::TOP;

/// The day's whales in rank order, and a rank lookup by ip index.
pub(super) struct Ranking {
    /// Ip indexes of the whales, best first.
    pub order: Vec<u32>,
    /// Ips with at least one download.
    pub downloaders: u64,
    /// Rank (1-based; 0: not a whale) by dense ip index, then by sparse position.
    dense: Vec<u8>,
    sparse: Vec<u8>,
}

impl Ranking {
    /// The rank of ip index `ip` (0: not a whale).
    #[inline]
    pub fn of(&self, ip: u32) -> u8 {
        match self.dense.get(ip as usize) {
            Some(&rank) => rank,
            None => self.sparse[(u64::from(ip) - DENSE_IPS) as usize],
        }
    }
}

/// Top `TOP` by downloads desc, ip_id asc, among ips with a download.
///
/// One sequential pass with the best `TOP` so far in a heap whose top is the worst kept:
/// collecting every downloader and selecting among them took ~35 ms (random reads).
pub(super) fn rank(ips: &Ips) -> Ranking {
    let mut best: BinaryHeap<(Reverse<u32>, u64, u32)> = BinaryHeap::new();
    let mut downloaders = ips.sparse_len() as u64;
    let mut offer = |acc: &IpAcc, id: u64, ix: u32| {
        let cand = (Reverse(acc.downloads), id, ix);
        if best.len() < TOP {
            best.push(cand);
        } else if best.peek().is_some_and(|worst| cand < *worst) {
            best.pop();
            best.push(cand);
        }
    };
    for (i, acc) in ips.dense().iter().enumerate() {
        if acc.downloads > 0 {
            downloaders += 1;
            offer(acc, i as u64, i as u32);
        }
    }
    for (k, (acc, id)) in ips.sparse().enumerate() {
        offer(acc, id, DENSE_IPS as u32 + k as u32);
    }
    let order: Vec<u32> = best.into_sorted_vec().iter().map(|c| c.2).collect();

    let mut dense = vec![0u8; ips.dense().len()];
    let mut sparse = vec![0u8; ips.sparse_len()];
    for (r, &ip) in order.iter().enumerate() {
        if u64::from(ip) < DENSE_IPS {
            dense[ip as usize] = (r + 1) as u8;
        } else {
            sparse[(u64::from(ip) - DENSE_IPS) as usize] = (r + 1) as u8;
        }
    }
    Ranking {
        order,
        downloaders,
        dense,
        sparse,
    }
}
