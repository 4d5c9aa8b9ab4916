//! The string interner of a day's aggregation: raw field bytes → dense ids, one cache line a
//! lookup.

/// Interns raw field bytes to dense ids: an open-addressing table (linear probing, at most half
/// full) of cache-line slots with keys up to `INLINE` bytes inside the slot, so a lookup touches
/// one line whose address the hash alone gives: the parser prefetches it rows ahead
/// (`prefetch`). With hashbrown, half of this lookup's time was the cache miss on the slot
/// (perf: `Interner::get` 18% of all ingest CPU on the 10M-row bench day, ~46k package+version
/// keys); with this table and the prefetch, 6%.
pub(super) struct Interner {
    slots: Vec<Slot>,
    mask: usize,
    /// Every key by id (for decoding, `is` checks and keys longer than `INLINE`).
    keys: Vec<Box<[u8]>>,
}

const INLINE: usize = 58;
const EMPTY: u16 = u16::MAX - 1;
const LONG: u16 = u16::MAX;

#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Slot {
    id: u32,
    /// Key length, `LONG` when the key is too long to be inline, `EMPTY` for a free slot.
    len: u16,
    key: [u8; INLINE],
}

const FREE: Slot = Slot {
    id: 0,
    len: EMPTY,
    key: [0; INLINE],
};

/// The hash interners use (also computed ahead on the reading thread).
#[inline]
pub fn key_hash(raw: &[u8]) -> u64 {
    use std::hash::BuildHasher;
    foldhash::fast::FixedState::with_seed(0x5eed_c0de).hash_one(raw)
}

impl Default for Interner {
    fn default() -> Self {
        Interner {
            slots: vec![FREE; 1024],
            mask: 1023,
            keys: Vec::new(),
        }
    }
}

impl Interner {
    #[inline]
    fn home(&self, hash: u64) -> usize {
        (hash >> 32) as usize & self.mask
    }

    /// The id of `raw`, or `Err(hash)` when it is new (the caller decodes it, then calls `add`).
    #[inline]
    pub(super) fn get(&self, raw: &[u8]) -> Result<u32, u64> {
        let h = key_hash(raw);
        self.get_hashed(raw, h).ok_or(h)
    }

    /// The id of `raw` whose `key_hash` is `h`, if known.
    #[inline]
    pub(super) fn get_hashed(&self, raw: &[u8], h: u64) -> Option<u32> {
        let mut i = self.home(h);
        loop {
            let s = &self.slots[i];
            if s.len == EMPTY {
                return None;
            }
            let hit = if raw.len() <= INLINE {
                usize::from(s.len) == raw.len() && same(&s.key[..raw.len()], raw)
            } else {
                s.len == LONG && same(&self.keys[s.id as usize], raw)
            };
            if hit {
                return Some(s.id);
            }
            i = (i + 1) & self.mask;
        }
    }

    /// Starts loading the slot where a key of hash `h` is looked up first.
    #[inline]
    pub(super) fn prefetch(&self, h: u64) {
        prefetch_line(&self.slots[self.home(h)]);
    }

    /// True if `id` stands for exactly `raw` (a cache check, cheaper than `get`).
    #[inline]
    pub(super) fn is(&self, id: u32, raw: &[u8]) -> bool {
        self.keys.get(id as usize).is_some_and(|k| same(k, raw))
    }

    pub(super) fn add(&mut self, raw: &[u8], hash: u64) -> u32 {
        let id = self.keys.len() as u32;
        self.keys.push(raw.into());
        if self.keys.len() * 2 > self.slots.len() {
            self.slots = vec![FREE; self.slots.len() * 2];
            self.mask = self.slots.len() - 1;
            for k in 0..self.keys.len() {
                let h = key_hash(&self.keys[k]);
                self.place(k as u32, h);
            }
        } else {
            self.place(id, hash);
        }
        id
    }

    fn place(&mut self, id: u32, hash: u64) {
        let raw = &self.keys[id as usize];
        let mut slot = Slot {
            id,
            len: LONG,
            key: [0; INLINE],
        };
        if raw.len() <= INLINE {
            slot.len = raw.len() as u16;
            slot.key[..raw.len()].copy_from_slice(raw);
        }
        let mut i = self.home(hash);
        while self.slots[i].len != EMPTY {
            i = (i + 1) & self.mask;
        }
        self.slots[i] = slot;
    }
}

/// A hint to start loading the cache line of `x`.
#[inline(always)]
pub(super) fn prefetch_line<T>(x: &T) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: a prefetch is only a hint and never faults; `x` is a live reference.
        unsafe { _mm_prefetch::<_MM_HINT_T0>((x as *const T).cast::<i8>()) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = x;
}

/// Byte equality for short keys, 8 bytes at a time, inlined (no libc call).
#[inline(always)]
pub(super) fn same(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let (mut ca, mut cb) = (a.chunks_exact(8), b.chunks_exact(8));
    for (x, y) in (&mut ca).zip(&mut cb) {
        if u64::from_ne_bytes(x.try_into().expect("8"))
            != u64::from_ne_bytes(y.try_into().expect("8"))
        {
            return false;
        }
    }
    ca.remainder()
        .iter()
        .zip(cb.remainder())
        .all(|(x, y)| x == y)
}
