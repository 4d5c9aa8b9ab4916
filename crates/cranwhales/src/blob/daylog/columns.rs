//! Format 4 (schema 4): format 3's dictionary and columns, but each column holds every whale's
//! rows (by rank, whale after whale) and is one zstd frame, as is the dictionary.
//!
//! Measured on format 3's blobs: deflating each whale's columns apart took 1,087 KB on a
//! synthetic 2021 day (379,182 whale rows), 251 KB on 2015-01-08; a column of all whales takes
//! 844 KB / 215 KB with zstd at level 9 (whales fetch the same packages in the same orders, at
//! the same paces: a column holds them side by side, and zstd's window spans the day). The cost:
//! reading one whale inflates the day's columns (a few MB at most: milliseconds).
//!
//! Layout: `u32 0xFFFF_FFFC` (LE), `varint len, zstd(dictionary)`, `varint nwhales`, per whale
//! `varint ip_id, varint nrows`, then the five columns in format 3's order (secs deltas,
//! package+version deltas, env, country, size index; deltas restart at each whale) as
//! `varint len, zstd(column)`, and nothing after. Frames carry zstd's checksum.

use std::io::{Read, Write};

use super::super::{varint, Cursor};

/// The first four bytes of a format-4 blob (formats 1 to 3 never start with them).
pub const FORMAT4: u32 = 0xFFFF_FFFC;

/// Columns of a whale row.
pub const COLUMNS: usize = 5;

/// zstd level: 9 took ~4% fewer bytes than 3 on the 2021 day's columns, still fast (a 10M-row
/// day's ~5 MB of columns in well under a second); 19 saved 5% more at ~10x the time.
const LEVEL: i32 = 9;

/// True if `blob` is a format-4 blob (by its first bytes).
pub fn is_format4(blob: &[u8]) -> bool {
    blob.get(..4) == Some(&FORMAT4.to_le_bytes()[..])
}

/// The blob of a day: its raw dictionary, (ip_id, rows) per whale, and the raw columns.
pub fn encode(dict: &[u8], whales: &[(u64, u64)], columns: &[Vec<u8>; COLUMNS]) -> Vec<u8> {
    let mut out = FORMAT4.to_le_bytes().to_vec();
    let frame = |out: &mut Vec<u8>, raw: &[u8]| {
        let z = compress(raw);
        varint(out, z.len() as u64);
        out.extend_from_slice(&z);
    };
    frame(&mut out, dict);
    varint(&mut out, whales.len() as u64);
    for &(ip_id, rows) in whales {
        varint(&mut out, ip_id);
        varint(&mut out, rows);
    }
    for c in columns {
        frame(&mut out, c);
    }
    out
}

fn compress(raw: &[u8]) -> Vec<u8> {
    let mut enc = zstd::stream::write::Encoder::new(Vec::with_capacity(raw.len() / 3), LEVEL)
        .expect("a zstd level in range");
    enc.include_checksum(true).expect("a zstd parameter");
    enc.write_all(raw).expect("writing to a Vec");
    enc.finish().expect("writing to a Vec")
}

/// A frame inflated, at most `limit` bytes; `None` if it is not one whole zstd frame.
fn decompress(z: &[u8], limit: u64) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    let dec = zstd::stream::read::Decoder::with_buffer(z).ok()?;
    dec.take(limit).read_to_end(&mut out).ok()?;
    Some(out)
}

/// The whales of a format-4 blob, (ip_id, rows) in stored order; `None` if malformed.
pub fn whales(blob: &[u8]) -> Option<Vec<(u64, u64)>> {
    Some(index(blob)?.1)
}

/// A format-4 blob read back: the raw dictionary, (ip_id, rows) per whale, and each whale's
/// rows as format 3's raw segment (its five columns one after the other).
pub type Opened = (Vec<u8>, Vec<(u64, u64)>, Vec<Vec<u8>>);

/// Inflates a format-4 blob (each frame at most `limit` bytes) into its `Opened` parts; `None`
/// if it is malformed.
pub fn open(blob: &[u8], limit: u64) -> Option<Opened> {
    let (dict, whales, frames) = index(blob)?;
    let dict = decompress(dict, limit)?;
    let columns = (frames.iter())
        .map(|f| decompress(f, limit))
        .collect::<Option<Vec<_>>>()?;
    let mut at = [0usize; COLUMNS];
    let mut segments = Vec::with_capacity(whales.len());
    for &(_, rows) in &whales {
        let mut seg = Vec::new();
        for (k, col) in columns.iter().enumerate() {
            let mut c = Cursor {
                blob: col,
                at: at[k],
            };
            for _ in 0..rows {
                c.varint()?;
            }
            seg.extend_from_slice(&col[at[k]..c.at]);
            at[k] = c.at;
        }
        segments.push(seg);
    }
    // Every column read to its end.
    (at.iter().zip(&columns).all(|(&a, c)| a == c.len())).then_some((dict, whales, segments))
}

/// The frames and whale list of a format-4 blob (nothing inflated); `None` if malformed.
type Index<'a> = (&'a [u8], Vec<(u64, u64)>, [&'a [u8]; COLUMNS]);

fn index(blob: &[u8]) -> Option<Index<'_>> {
    if !is_format4(blob) {
        return None;
    }
    fn frame<'a>(c: &mut Cursor<'a>) -> Option<&'a [u8]> {
        let len = usize::try_from(c.varint()?).ok()?;
        c.take(len)
    }
    let mut c = Cursor { blob, at: 4 };
    let dict = frame(&mut c)?;
    let n = c.varint()?;
    let mut whales = Vec::with_capacity(n.min(1 << 12) as usize);
    for _ in 0..n {
        whales.push((c.varint()?, c.varint()?));
    }
    let mut frames = [&blob[..0]; COLUMNS];
    for f in &mut frames {
        *f = frame(&mut c)?;
    }
    (c.at == blob.len()).then_some((dict, whales, frames))
}
