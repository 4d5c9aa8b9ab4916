//! How two columns are encoded: `packages.whale_ranks` (each whale's downloads of the package,
//! by rank) and `whales.profile` (deflated JSON).
//!
//! `whale_ranks` since version 3, the list form: a 0 byte, then per whale (ranks ascending) one byte
//! `delta << 3 | (downloads - 1) << 1 | has_filtered` when the rank delta is 1..=31 and the
//! downloads 1..=4 (a crawler fetches each package once or twice: ~9 in 10 entries), followed
//! by `varint filtered` when `has_filtered`; any other entry is a 0 byte and the varints delta,
//! downloads, filtered. On 2015-01-08 this took 9 bytes a package where version 2's varint
//! pairs (`rank, downloads`, no leading 0: a rank is never 0) took 22. Or the bitmap form (0xFF
//! first, `encode_bitmap`) when shorter: a synthetic 2023 day's packages had ~25 whales
//! each, 27 bytes in the list form.

use std::io::{Read, Write};

use flate2::{read::DeflateDecoder, write::DeflateEncoder, Compression};

/// One whale's downloads of a package: (rank, downloads, of which small or repeated).
pub type WhaleCount = (u32, u64, u64);

/// Ranks a bitmap-form `whale_ranks` can hold (the top 100 fit).
const BITMAP_RANKS: u32 = 104;

/// `whale_ranks` as written since version 3 (`counts` by rank, ascending): the shorter of the
/// list form and the bitmap form (a package most of the top 100 fetched, as on days their crawlers
/// lead: 13 bytes for which whales, then only the entries not (1 download, 0 filtered)).
pub fn encode_ranks(counts: &[WhaleCount]) -> Vec<u8> {
    let list = encode_list(counts);
    if list.len() <= 14 || counts.iter().any(|c| c.0 == 0 || c.0 > BITMAP_RANKS) {
        return list;
    }
    let bitmap = encode_bitmap(counts);
    if bitmap.len() < list.len() {
        bitmap
    } else {
        list
    }
}

/// The bitmap form's first byte (version 2 starts with a rank's varint, 1..=100; the list form
/// with 0).
const BITMAP: u8 = 0xFF;

/// The bitmap form: a `BITMAP` byte, 13 bytes with bit `rank - 1` set for each whale, then per entry
/// that is not (1 download, 0 filtered): varint (entries skipped since the last such), varint
/// downloads, varint filtered.
fn encode_bitmap(counts: &[WhaleCount]) -> Vec<u8> {
    let mut out = vec![BITMAP];
    let mut bits = [0u8; (BITMAP_RANKS / 8) as usize];
    for &(rank, _, _) in counts {
        let i = (rank - 1) as usize;
        bits[i / 8] |= 1 << (i % 8);
    }
    out.extend_from_slice(&bits);
    let mut skipped = 0u64;
    for &(_, n, f) in counts {
        if (n, f) == (1, 0) {
            skipped += 1;
            continue;
        }
        for v in [skipped, n, f] {
            varint(&mut out, v);
        }
        skipped = 0;
    }
    out
}

/// The list form (see the module doc).
fn encode_list(counts: &[WhaleCount]) -> Vec<u8> {
    let mut out = Vec::with_capacity(1 + counts.len() * 2);
    out.push(0);
    let mut prev = 0u32;
    for &(rank, n, filtered) in counts {
        let delta = rank.wrapping_sub(prev);
        prev = rank;
        if (1..=31).contains(&delta) && (1..=4).contains(&n) {
            out.push((delta << 3) as u8 | ((n as u8 - 1) << 1) | u8::from(filtered > 0));
            if filtered > 0 {
                varint(&mut out, filtered);
            }
        } else {
            out.push(0);
            for v in [u64::from(delta), n, filtered] {
                varint(&mut out, v);
            }
        }
    }
    out
}

/// Decodes `whale_ranks` of either version (version 2's have no filtered counts: 0); a
/// malformed tail is dropped (the blob is ours).
pub fn decode_ranks(b: &[u8]) -> Vec<WhaleCount> {
    let mut c = Bytes { b, at: 0 };
    let mut out = Vec::new();
    if b.first() == Some(&BITMAP) {
        return decode_bitmap(b);
    }
    if b.first() != Some(&0) {
        while let (Some(r), Some(n)) = (c.varint(), c.varint()) {
            out.push((r as u32, n, 0));
        }
        return out;
    }
    c.at = 1;
    let mut rank = 0u32;
    while let Some(byte) = c.byte() {
        let entry = if byte == 0 {
            (c.varint(), c.varint(), c.varint())
        } else {
            let f = if byte & 1 == 1 { c.varint() } else { Some(0) };
            (
                Some(u64::from(byte >> 3)),
                Some(u64::from((byte >> 1) & 3) + 1),
                f,
            )
        };
        let (Some(delta), Some(n), Some(filtered)) = entry else {
            break;
        };
        rank = rank.wrapping_add(delta as u32);
        out.push((rank, n, filtered));
    }
    out
}

/// The bitmap form back (see `encode_bitmap`).
fn decode_bitmap(b: &[u8]) -> Vec<WhaleCount> {
    let Some(bits) = b.get(1..1 + (BITMAP_RANKS / 8) as usize) else {
        return Vec::new();
    };
    let mut out: Vec<WhaleCount> = (0..BITMAP_RANKS)
        .filter(|&i| bits[(i / 8) as usize] & (1 << (i % 8)) != 0)
        .map(|i| (i + 1, 1, 0))
        .collect();
    let mut c = Bytes {
        b,
        at: 1 + bits.len(),
    };
    let mut at = 0usize;
    while let (Some(skip), Some(n), Some(f)) = (c.varint(), c.varint(), c.varint()) {
        at = at.saturating_add(skip as usize);
        let Some(e) = out.get_mut(at) else { break };
        (e.1, e.2) = (n, f);
        at += 1;
    }
    out
}

/// A reader of raw bytes and LEB128 varints.
struct Bytes<'a> {
    b: &'a [u8],
    at: usize,
}

impl Bytes<'_> {
    fn byte(&mut self) -> Option<u8> {
        let v = *self.b.get(self.at)?;
        self.at += 1;
        Some(v)
    }

    fn varint(&mut self) -> Option<u64> {
        let (mut v, mut shift) = (0u64, 0u32);
        loop {
            let byte = self.byte()?;
            v |= u64::from(byte & 0x7f) << shift.min(63);
            shift += 7;
            if byte & 0x80 == 0 {
                return Some(v);
            }
        }
    }
}

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// A profile's JSON deflated (a whale's profile is ~760 bytes of JSON, ~45% of it repeated keys).
pub fn pack_profile(json: &str) -> Vec<u8> {
    let mut enc = DeflateEncoder::new(Vec::new(), Compression::new(6));
    enc.write_all(json.as_bytes()).expect("writing to a Vec");
    enc.finish().expect("writing to a Vec")
}

/// `pack_profile` undone; `None` if it is not deflated UTF-8.
pub fn unpack_profile(packed: &[u8]) -> Option<String> {
    let mut out = String::new();
    DeflateDecoder::new(packed)
        .take(1 << 20)
        .read_to_string(&mut out)
        .ok()?;
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_round_trip_in_both_forms() {
        let counts = vec![
            (1, 1, 0),
            (2, 4, 3),
            (17, 2, 0),
            (48, 1, 1),
            (49, 5, 0),
            (100, 1 << 40, 7),
        ];
        let b = encode_ranks(&counts);
        assert_eq!(decode_ranks(&b), counts);
        assert!(b.len() <= 20, "{}", b.len());
        assert!(decode_ranks(&encode_ranks(&[])).is_empty());
        // Version 2: varint pairs.
        assert_eq!(
            decode_ranks(&[1, 5, 100, 0x80, 0x02]),
            vec![(1, 5, 0), (100, 256, 0)]
        );
        assert!(decode_ranks(&[]).is_empty());
    }

    #[test]
    fn many_whales_take_the_bitmap_form() {
        let mut counts: Vec<WhaleCount> = (1..=100).step_by(3).map(|r| (r, 1, 0)).collect();
        counts[0] = (1, 7, 2);
        counts[20].2 = 1;
        counts.last_mut().unwrap().1 = 1 << 33;
        let b = encode_ranks(&counts);
        assert_eq!(b[0], BITMAP);
        assert!(b.len() < encode_list(&counts).len());
        assert_eq!(decode_ranks(&b), counts);
        // Few whales: the list form.
        assert_eq!(encode_ranks(&counts[..3])[0], 0);
        // Every cut is a shorter answer, never a panic.
        for cut in 0..b.len() {
            let _ = decode_ranks(&b[..cut]);
        }
    }

    #[test]
    fn profiles_round_trip() {
        let json = r#"{"behaviour":"mirror","facts":{"downloads":8149}}"#;
        assert_eq!(unpack_profile(&pack_profile(json)).as_deref(), Some(json));
        assert_eq!(unpack_profile(b"not deflate"), None);
    }
}
