//! Per-downloader accumulators of one day, found by ip_id without a hash lookup for the common
//! (small, dense) ids.

use super::interner::prefetch_line;
use super::FastMap;

/// ip_ids below this index the dense table directly; larger ones go through a map.
pub(super) const DENSE_IPS: u64 = 1 << 22;
/// No id yet (an `IpAcc` cache slot that was never filled).
pub(super) const NONE: u32 = u32::MAX;

/// One downloader's running totals.
#[derive(Clone, Copy)]
pub(super) struct IpAcc {
    pub bytes: u64,
    pub downloads: u32,
    /// The ip's last R build and country: one downloader's rows mostly repeat them, so checking
    /// these first skips two hash lookups per row.
    pub env: u32,
    pub country: u32,
}

impl IpAcc {
    const EMPTY: IpAcc = IpAcc {
        bytes: 0,
        downloads: 0,
        env: NONE,
        country: NONE,
    };
}

/// Every ip of the day by *ip index*: the ip_id itself below `DENSE_IPS` (ids are small and
/// dense: renumbered daily from 1), which saves a lookup per row; unused slots have 0
/// downloads. Larger ids: ip index `DENSE_IPS + k` is `sparse[k]`.
#[derive(Default)]
pub(super) struct Ips {
    dense: Vec<IpAcc>,
    sparse: Vec<IpAcc>,
    sparse_ids: Vec<u64>,
    sparse_ix: FastMap<u64, u32>,
}

impl Ips {
    /// The ip index of `ip_id`, creating its entry on first sight.
    #[inline]
    pub fn index(&mut self, ip_id: u64) -> u32 {
        if ip_id < DENSE_IPS {
            let i = ip_id as usize;
            if i >= self.dense.len() {
                let new_len = (i + 1)
                    .next_power_of_two()
                    .max(1024)
                    .min(DENSE_IPS as usize);
                self.dense.resize(new_len, IpAcc::EMPTY);
            }
            i as u32
        } else if let Some(&k) = self.sparse_ix.get(&ip_id) {
            DENSE_IPS as u32 + k
        } else {
            let k = self.sparse.len() as u32;
            self.sparse.push(IpAcc::EMPTY);
            self.sparse_ids.push(ip_id);
            self.sparse_ix.insert(ip_id, k);
            DENSE_IPS as u32 + k
        }
    }

    /// The accumulator of ip index `ip`.
    #[inline]
    pub fn acc(&mut self, ip: u32) -> &mut IpAcc {
        if u64::from(ip) < DENSE_IPS {
            &mut self.dense[ip as usize]
        } else {
            &mut self.sparse[(u64::from(ip) - DENSE_IPS) as usize]
        }
    }

    /// Starts loading the accumulator of a dense `ip_id` (a row or so ahead of its use).
    #[inline]
    pub fn prefetch(&self, ip_id: u64) {
        if let Some(acc) = self.dense.get(ip_id as usize) {
            prefetch_line(acc);
        }
    }

    /// The accumulator and ip_id of ip index `ix`.
    #[inline]
    pub fn get(&self, ix: u32) -> (IpAcc, u64) {
        if u64::from(ix) < DENSE_IPS {
            (self.dense[ix as usize], u64::from(ix))
        } else {
            let k = (u64::from(ix) - DENSE_IPS) as usize;
            (self.sparse[k], self.sparse_ids[k])
        }
    }

    /// The dense table (index = ip_id = ip index).
    pub fn dense(&self) -> &[IpAcc] {
        &self.dense
    }

    /// The large ids: `(accumulator, ip_id)`, the k-th having ip index `DENSE_IPS + k`.
    pub fn sparse(&self) -> impl Iterator<Item = (&IpAcc, u64)> + '_ {
        self.sparse.iter().zip(self.sparse_ids.iter().copied())
    }

    /// How many large ids there are.
    pub fn sparse_len(&self) -> usize {
        self.sparse.len()
    }
}
