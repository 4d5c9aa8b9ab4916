//! How columns are encoded: `packages.day_package` (the day and package of a row as one
//! integer), `packages.whale_ranks` (each whale's downloads of the package, by rank) and
//! `whales.profile` (deflated JSON).
//!
//! `whale_ranks` since version 3, the list form: a 0 byte, then per whale (ranks ascending) one byte
//! `delta << 3 | (downloads - 1) << 1 | has_filtered` when the rank delta is 1..=31 and the
//! downloads 1..=4 (a crawler fetches each package once or twice: ~9 in 10 entries), followed
//! by `varint filtered` when `has_filtered`; any other entry is a 0 byte and the varints delta,
//! downloads, filtered. On 2015-01-08 this took 9 bytes a package where version 2's varint
//! pairs (`rank, downloads`, no leading 0: a rank is never 0) took 22. Or the bitmap form (0xFF
//! first, `encode_bitmap`) when shorter: a synthetic 2023 day's packages had ~25 whales
//! each, 27 bytes in the list form. Since version 4 also the common form (0xFE first,
//! `encode_common`): which of the day's common whales (`Common`) the package lacks and which
//! others it has. Profiles are deflated with a preset dictionary since version 4.

use std::io::{Read, Write};

use crate::date::{Day, EPOCH};
use flate2::{
    read::DeflateDecoder, write::DeflateEncoder, Compress, Compression, Decompress, FlushCompress,
    FlushDecompress, Status,
};

/// Package ids a day can hold in `day_package` (ids are `package_totals` rowids, one per name
/// ever stored: ~25,000 for CRAN's whole history).
pub const PACKAGE_IDS: i64 = 1 << 20;

/// `packages.day_package` of package `id` on `day` (days since 1970-01-01): one rowid per
/// (day, package), a day's rows one key range (`day_range`), ~5 bytes in a cell where the
/// date and name as text took ~18.
pub fn day_package(day: i64, id: i64) -> i64 {
    day * PACKAGE_IDS + id
}

/// The `day_package` keys of `day`, inclusive.
pub fn day_range(day: i64) -> (i64, i64) {
    (day_package(day, 0), day_package(day, PACKAGE_IDS - 1))
}

/// `package_months.month_package` of package `id` in `month` (months since 1970-01,
/// `date::Day::month`): like `day_package`, a month's rows are one key range.
pub fn month_package(month: i64, id: i64) -> i64 {
    month * PACKAGE_IDS + id
}

/// Days since 1970-01-01 of a stored `YYYY-MM-DD` date (`None` for anything else).
pub fn day_number(date: &str) -> Option<i64> {
    crate::date::Day::parse(date).map(|d| crate::date::EPOCH.days_until(d))
}

/// One whale's downloads of a package: (rank, downloads, of which small or repeated).
pub type WhaleCount = (u32, u64, u64);

/// Ranks a bitmap-form `whale_ranks` can hold (the top 100 fit).
const BITMAP_RANKS: u32 = 104;

/// `whale_ranks` as written since version 3 (`counts` by rank, ascending): the shortest of the
/// list form, the bitmap form (a package most of the top 100 fetched, as on days their crawlers
/// lead: 13 bytes for which whales, then only the entries not (1 download, 0 filtered)) and,
/// since version 4, the common form (which whales differ from the day's `common` ones).
pub fn encode_ranks(counts: &[WhaleCount], common: Common) -> Vec<u8> {
    let list = encode_list(counts);
    if list.len() <= 2 || counts.iter().any(|c| c.0 == 0 || c.0 > BITMAP_RANKS) {
        return list;
    }
    let mut best = list;
    if common.0 != 0 {
        let c = encode_common(counts, common);
        if c.len() < best.len() {
            best = c;
        }
    }
    if best.len() > 14 {
        let bitmap = encode_bitmap(counts);
        if bitmap.len() < best.len() {
            best = bitmap;
        }
    }
    best
}

/// The whales (bit `rank - 1`) that downloaded more than half of the packages any whale
/// downloaded on a day: mirrors and crawlers, which fetch nearly every package. Kept once per
/// day (`days.common_whales`), so a package's `whale_ranks` need only say how its whales differ
/// (on a synthetic 2021 day ~25 whales a package, most of them these).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Common(
    /// Bit `rank - 1` set for each common whale.
    pub u128,
);

impl Common {
    /// The common whales of a day whose packages' whales (ranks) are `lists`.
    pub fn of<'a>(lists: impl Iterator<Item = &'a [WhaleCount]>) -> Common {
        let mut n = [0u32; BITMAP_RANKS as usize];
        let mut packages = 0u32;
        for list in lists.filter(|l| !l.is_empty()) {
            packages += 1;
            for &(rank, _, _) in list {
                if (1..=BITMAP_RANKS).contains(&rank) {
                    n[(rank - 1) as usize] += 1;
                }
            }
        }
        let bits = (0..BITMAP_RANKS as usize)
            .filter(|&i| n[i] * 2 > packages)
            .fold(0u128, |m, i| m | 1 << i);
        Common(bits)
    }

    /// As stored in `days.common_whales`: 13 bytes, bit `rank - 1`; `None` when there are none.
    pub fn to_blob(self) -> Option<Vec<u8>> {
        (self.0 != 0).then(|| self.0.to_le_bytes()[..(BITMAP_RANKS / 8) as usize].to_vec())
    }

    /// `to_blob` undone (`None`: no common whales).
    pub fn from_blob(b: Option<&[u8]>) -> Common {
        let mut bytes = [0u8; 16];
        if let Some(b) = b {
            let n = b.len().min(16);
            bytes[..n].copy_from_slice(&b[..n]);
        }
        Common(u128::from_le_bytes(bytes))
    }
}

/// The common form's first byte.
const COMMON: u8 = 0xFE;

/// The common form: a `COMMON` byte, `varint n` and the `n` ranks in the package's whales or in
/// the day's common ones but not both (ascending, as deltas), then per whale of the package (by
/// rank) that is not (1 download, 0 filtered): varint (entries skipped since the last such),
/// varint downloads, varint filtered.
fn encode_common(counts: &[WhaleCount], common: Common) -> Vec<u8> {
    let mine = counts.iter().fold(0u128, |m, c| m | 1 << (c.0 - 1));
    let diff = mine ^ common.0;
    let mut out = vec![COMMON];
    varint(&mut out, u64::from(diff.count_ones()));
    let mut prev = 0u32;
    for i in (0..BITMAP_RANKS).filter(|&i| diff & (1 << i) != 0) {
        varint(&mut out, u64::from(i + 1 - prev));
        prev = i + 1;
    }
    exceptions(&mut out, counts);
    out
}

/// The entries of `counts` that are not (1 download, 0 filtered): varint (entries skipped since
/// the last such), varint downloads, varint filtered (the bitmap and common forms' tail).
fn exceptions(out: &mut Vec<u8>, counts: &[WhaleCount]) {
    let mut skipped = 0u64;
    for &(_, n, f) in counts {
        if (n, f) == (1, 0) {
            skipped += 1;
            continue;
        }
        for v in [skipped, n, f] {
            varint(out, v);
        }
        skipped = 0;
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
    exceptions(&mut out, counts);
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

/// Decodes `whale_ranks` of any version (version 2's have no filtered counts: 0) with its day's
/// `common` whales; a malformed tail is dropped (the blob is ours).
pub fn decode_ranks(b: &[u8], common: Common) -> Vec<WhaleCount> {
    let mut c = Bytes { b, at: 0 };
    let mut out = Vec::new();
    match b.first() {
        Some(&BITMAP) => return decode_bitmap(b),
        Some(&COMMON) => return decode_common(b, common),
        _ => {}
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

/// The common form back (see `encode_common`).
fn decode_common(b: &[u8], common: Common) -> Vec<WhaleCount> {
    let mut c = Bytes { b, at: 1 };
    let Some(n) = c.varint() else {
        return Vec::new();
    };
    let (mut diff, mut rank) = (0u128, 0u64);
    for _ in 0..n {
        let Some(delta) = c.varint() else {
            return Vec::new();
        };
        rank = rank.saturating_add(delta);
        if !(1..=u64::from(BITMAP_RANKS)).contains(&rank) {
            return Vec::new();
        }
        diff |= 1 << (rank - 1);
    }
    let mine = diff ^ common.0;
    let out = (0..BITMAP_RANKS)
        .filter(|&i| mine & (1 << i) != 0)
        .map(|i| (i + 1, 1, 0))
        .collect();
    apply_exceptions(out, c)
}

/// The bitmap form back (see `encode_bitmap`).
fn decode_bitmap(b: &[u8]) -> Vec<WhaleCount> {
    let Some(bits) = b.get(1..1 + (BITMAP_RANKS / 8) as usize) else {
        return Vec::new();
    };
    let out: Vec<WhaleCount> = (0..BITMAP_RANKS)
        .filter(|&i| bits[(i / 8) as usize] & (1 << (i % 8)) != 0)
        .map(|i| (i + 1, 1, 0))
        .collect();
    let c = Bytes {
        b,
        at: 1 + bits.len(),
    };
    apply_exceptions(out, c)
}

/// The exceptions at `c` applied to entries that start as (rank, 1, 0).
fn apply_exceptions(mut out: Vec<WhaleCount>, mut c: Bytes<'_>) -> Vec<WhaleCount> {
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

/// Deflate's preset dictionary for profiles (since version 4): what most profiles' JSON
/// repeats — the keys in `summary::Profile`'s order, the labels and the words of the sentences —
/// so that a profile's deflated form need not spell them out. Fixed: changing it changes the
/// stored format (a new schema version).
const PROFILE_WORDS: &[u8] = concat!(
    r#"fetching old versions too, an archive crawler; an archive crawler, "#,
    r#"not an R session; installing a large part of CRAN, mirror-like; "#,
    r#"a mirror or crawler, not an R session; a script or CI job reinstalling in a loop; "#,
    r#"a script in a loop, not an R session; a script or CI job in a loop; "#,
    r#"one set installed many times: a classroom, lab or CI; "#,
    r#"one set fetched many times by a tool, not an R session; busy all day, "#,
    r#"a scheduled job or shared machine; a crawler or scheduled job, not an R session; "#,
    r#"a scripted bulk install; a tool fetching in bulk, not an R session; "#,
    r#"a scripted bulk fetch; an R session installing packages; a script or tool, "#,
    r#"not an R session; an install session; this day's log records no R versions: ; "#,
    r#"of requests without an R version: ; every request from R: ; "#,
    r#"no R version in any request: ; like clockwork: one download every ; "#,
    r#"typically  min between downloads; up to  in one minute (at ; all within  s at ; "#,
    r#"all day from  to  UTC ( active hours); , "#,
    r#"in  versions (about  per package) ( of everything downloaded that day), "#,
    r#"each about once, each about twice, each about  times; "#,
    r#"fetched  times ( of its  downloads) and  other packages, "#,
    r#"fetched  distinct packages, from  to  UTC in  active hours, "#,
    r#"{"behaviour":"session","label":"install session","sentence":"fetched ","#,
    r#""facts":{"downloads":,"packages":,"day_packages":,"top_package":"","#,
    r#""top_package_downloads":,"versions":,"no_r_version":,"day_no_r_share":0.0,"#,
    r#""os":[{"name":"windows","downloads":},{"name":"macos","downloads":},{"name":"linux","#,
    r#""downloads":},{"name":"other","downloads":},{"name":"none","downloads":}],"#,
    r#""arch":[{"name":"x86_64","downloads":},{"name":"i386","downloads":},{"name":"other","#,
    r#""downloads":},{"name":"none","downloads":}],"active_hours":,"first":,"last":,"#,
    r#""burst":,"burst_start":,"gap_q1":,"gap_median":,"gap_q3":,"whale_downloads":}}"#,
)
.as_bytes();

/// A profile's JSON deflated with `PROFILE_WORDS` as the preset dictionary (a whale's profile is
/// ~760 bytes of JSON, ~45% of it the same keys in every profile).
pub fn pack_profile(json: &str) -> Vec<u8> {
    let mut c = Compress::new(Compression::new(9), false);
    c.set_dictionary(PROFILE_WORDS)
        .expect("a raw deflate stream takes a preset dictionary");
    let input = json.as_bytes();
    let mut out = Vec::with_capacity(input.len() / 2 + 64);
    loop {
        let at = c.total_in() as usize;
        let status = c
            .compress_vec(&input[at..], &mut out, FlushCompress::Finish)
            .expect("deflating to memory");
        if status == Status::StreamEnd {
            return out;
        }
        out.reserve(out.capacity().max(64));
    }
}

/// `pack_profile` undone; `None` if it is not such a stream of UTF-8 (at most 1 MiB).
pub fn unpack_profile(packed: &[u8]) -> Option<String> {
    let mut d = Decompress::new(false);
    d.set_dictionary(PROFILE_WORDS).ok()?;
    let mut out = Vec::with_capacity(packed.len() * 4 + 64);
    loop {
        let (at, made) = (d.total_in() as usize, d.total_out());
        let status =
            (d.decompress_vec(packed.get(at..)?, &mut out, FlushDecompress::Finish)).ok()?;
        match status {
            Status::StreamEnd => return String::from_utf8(out).ok(),
            _ if out.len() >= 1 << 20 => return None,
            // Neither input read nor output made: a cut stream.
            _ if d.total_in() as usize == at
                && d.total_out() == made
                && out.len() < out.capacity() =>
            {
                return None
            }
            _ => out.reserve(out.capacity().max(256)),
        }
    }
}

/// A version-3 profile (deflated without a dictionary) read back, for the migration.
pub fn unpack_profile_v3(packed: &[u8]) -> Option<String> {
    let mut out = String::new();
    DeflateDecoder::new(packed)
        .take(1 << 20)
        .read_to_string(&mut out)
        .ok()?;
    Some(out)
}

/// A profile as version 3 stored it (for tests that make a version-3 store).
pub fn pack_profile_v3(json: &str) -> Vec<u8> {
    let mut enc = DeflateEncoder::new(Vec::new(), Compression::new(6));
    enc.write_all(json.as_bytes()).expect("writing to a Vec");
    enc.finish().expect("writing to a Vec")
}

/// The month (months since 1970-01) of day number `day`.
pub fn month_of(day: i64) -> i64 {
    EPOCH.plus(day).month()
}

/// Day number of the first day of `month`.
pub(crate) fn month_start(month: i64) -> i64 {
    EPOCH.days_until(Day::month_start(month))
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
        let b = encode_ranks(&counts, Common::default());
        assert_eq!(decode_ranks(&b, Common::default()), counts);
        assert!(b.len() <= 20, "{}", b.len());
        assert!(decode_ranks(&encode_ranks(&[], Common::default()), Common::default()).is_empty());
        // Version 2: varint pairs.
        assert_eq!(
            decode_ranks(&[1, 5, 100, 0x80, 0x02], Common::default()),
            vec![(1, 5, 0), (100, 256, 0)]
        );
        assert!(decode_ranks(&[], Common::default()).is_empty());
    }

    #[test]
    fn many_whales_take_the_bitmap_form() {
        let mut counts: Vec<WhaleCount> = (1..=100).step_by(3).map(|r| (r, 1, 0)).collect();
        counts[0] = (1, 7, 2);
        counts[20].2 = 1;
        counts.last_mut().unwrap().1 = 1 << 33;
        let b = encode_ranks(&counts, Common::default());
        assert_eq!(b[0], BITMAP);
        assert!(b.len() < encode_list(&counts).len());
        assert_eq!(decode_ranks(&b, Common::default()), counts);
        // Few whales: the list form.
        assert_eq!(encode_ranks(&counts[..3], Common::default())[0], 0);
        // Every cut is a shorter answer, never a panic.
        for cut in 0..b.len() {
            let _ = decode_ranks(&b[..cut], Common::default());
        }
    }

    #[test]
    fn the_days_common_whales_shorten_a_package_to_its_differences() {
        // Ranks 1-20 fetch every package (mirrors), a few others some.
        let mut days: Vec<Vec<WhaleCount>> = (0..50u32)
            .map(|k| {
                let mut v: Vec<WhaleCount> = (1..=20).map(|r| (r, 1, 0)).collect();
                v.push((30 + k % 7, 2, 1));
                v
            })
            .collect();
        days[3].remove(4);
        days[3][0] = (1, 9, 4);
        days.push(Vec::new());
        let common = Common::of(days.iter().map(|v| v.as_slice()));
        assert_eq!(common, Common((1u128 << 20) - 1));
        assert_eq!(Common::from_blob(common.to_blob().as_deref()), common);
        assert_eq!(Common::from_blob(None), Common(0));
        for v in &days {
            let b = encode_ranks(v, common);
            assert_eq!(decode_ranks(&b, common), *v, "{b:?}");
            if !v.is_empty() {
                assert_eq!(b[0], COMMON);
                assert!(b.len() <= 10, "{b:?}");
                for cut in 0..b.len() {
                    let _ = decode_ranks(&b[..cut], common);
                }
            }
        }
    }

    #[test]
    fn day_packages_are_one_key_range_per_day() {
        let day = day_number("2015-01-08").unwrap();
        assert_eq!(day, 16_443);
        let (lo, hi) = day_range(day);
        assert!(lo <= day_package(day, 1) && day_package(day, PACKAGE_IDS - 1) <= hi);
        assert!(day_range(day - 1).1 < lo && hi < day_range(day + 1).0);
        assert_eq!(day_number("2015-02-30"), None);
    }

    #[test]
    fn profiles_round_trip() {
        let json = r#"{"behaviour":"mirror","facts":{"downloads":8149}}"#;
        let packed = pack_profile(json);
        assert_eq!(unpack_profile(&packed).as_deref(), Some(json));
        assert_eq!(unpack_profile(b"not deflate"), None);
        for cut in 0..packed.len() {
            assert_eq!(unpack_profile(&packed[..cut]), None, "cut at {cut}");
        }
        let long = json.repeat(300);
        assert_eq!(
            unpack_profile(&pack_profile(&long)).as_deref(),
            Some(&*long)
        );
        let v3 = pack_profile_v3(json);
        assert_eq!(unpack_profile_v3(&v3).as_deref(), Some(json));
    }
}
