//! Memorable `adjective_animal` names for whales: an `ip_id` means nothing to a person and is
//! renumbered every day, a name is easy to say and to find again.
//!
//! A name depends only on (date, ip_id) and the word lists, so re-ingesting a day gives the same
//! names; collisions within a day are resolved by probing in ascending `ip_id` order.

use std::collections::HashSet;

const ADJECTIVES: &str = include_str!("names/adjectives.txt");
const ANIMALS: &str = include_str!("names/animals.txt");

/// The adjective word list (one word per line in `names/adjectives.txt`).
pub fn adjectives() -> Vec<&'static str> {
    words(ADJECTIVES)
}

/// The animal word list (one word per line in `names/animals.txt`).
pub fn animals() -> Vec<&'static str> {
    words(ANIMALS)
}

fn words(list: &'static str) -> Vec<&'static str> {
    list.lines()
        .map(str::trim)
        .filter(|w| !w.is_empty())
        .collect()
}

/// Stable 64-bit hash of (date, ip_id): FNV-1a then a splitmix64 finaliser. Written out here
/// (not `std::hash`) because names must not change between Rust versions.
fn slot_hash(date: &str, ip_id: u64) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in date.bytes().chain(ip_id.to_le_bytes()) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h ^= h >> 30;
    h = h.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h ^= h >> 27;
    h = h.wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^ (h >> 31)
}

/// Names for the given `ip_id`s of one day, in the same order; unique within the call.
/// Panics only if asked for more names than word pairs (tens of thousands; we name 100).
pub fn assign(date: &str, ip_ids: &[u64]) -> Vec<String> {
    let adj = adjectives();
    let ani = animals();
    let space = (adj.len() * ani.len()) as u64;
    assert!(ip_ids.len() as u64 <= space, "more whales than names");
    let mut order: Vec<usize> = (0..ip_ids.len()).collect();
    order.sort_by_key(|&i| ip_ids[i]);
    let mut used = HashSet::with_capacity(ip_ids.len());
    let mut names = vec![String::new(); ip_ids.len()];
    for i in order {
        let mut slot = slot_hash(date, ip_ids[i]) % space;
        while !used.insert(slot) {
            slot = (slot + 1) % space;
        }
        let (a, n) = (
            (slot / ani.len() as u64) as usize,
            (slot % ani.len() as u64) as usize,
        );
        names[i] = format!("{}_{}", adj[a], ani[n]);
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn word_lists_are_big_clean_and_distinct() {
        for list in [adjectives(), animals()] {
            assert!(list.len() >= 150, "only {} words", list.len());
            let set: HashSet<_> = list.iter().collect();
            assert_eq!(set.len(), list.len(), "duplicate word");
            for w in &list {
                assert!(w.bytes().all(|b| b.is_ascii_lowercase()), "bad word {w:?}");
            }
        }
    }

    #[test]
    fn names_are_deterministic_and_unique() {
        let ids: Vec<u64> = (1..=5000).collect();
        let a = assign("2015-01-15", &ids);
        let b = assign("2015-01-15", &ids);
        assert_eq!(a, b);
        assert_eq!(a.iter().collect::<HashSet<_>>().len(), ids.len());
        // Same ip on another day gets (almost surely) another name; order of input does not matter.
        let rev: Vec<u64> = ids.iter().rev().copied().collect();
        let r = assign("2015-01-15", &rev);
        assert_eq!(r[0], a[ids.len() - 1]);
        let other = assign("2015-01-16", &ids);
        assert!(a.iter().zip(&other).filter(|(x, y)| x != y).count() > 4900);
        assert!(a.iter().all(|n| n.split('_').count() == 2));
    }
}
