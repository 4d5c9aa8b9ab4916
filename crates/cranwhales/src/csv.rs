//! The log's CSV: its header and columns, and splitting text into lines and a line into its 10
//! raw fields. The one splitter of the crate: the reading thread indexes lines and commas in
//! bulk (`index_lines`), the parser cuts fields at those commas (`fields_at`) and falls back to
//! exact splitting (`split`) for anything unusual.
//!
//! Hand-rolled rather than the `csv` crate because this is the hot loop of ingest: it finds
//! separators with SIMD and never copies or decodes a field unless asked to. A field is kept
//! *raw* (quotes included) so callers can intern it by its bytes and decode each distinct value
//! once. Quoting follows RFC 4180 within a line (`"a,b"`, `"say ""hi"""`); a quoted field may
//! not span lines (the log format never does, and a stray quote is reported, not guessed at).

use crate::parse;

/// The expected header, in order.
pub const HEADER: [&str; 10] = [
    "date",
    "time",
    "size",
    "r_version",
    "r_arch",
    "r_os",
    "package",
    "version",
    "country",
    "ip_id",
];

/// Column positions, named so the ingest code reads like the header.
pub mod col {
    /// `date`: `YYYY-MM-DD`.
    pub const DATE: usize = 0;
    /// `time`: `HH:MM:SS`, UTC.
    pub const TIME: usize = 1;
    /// `size`: bytes sent.
    pub const SIZE: usize = 2;
    /// `r_version`; `r_arch` is the column after it.
    pub const R_VERSION: usize = 3;
    /// `r_os`.
    pub const R_OS: usize = 5;
    /// `package`.
    pub const PACKAGE: usize = 6;
    /// `version` of the package.
    pub const VERSION: usize = 7;
    /// `country`: two-letter code.
    pub const COUNTRY: usize = 8;
    /// `ip_id`: the day's anonymised downloader number (a whale's key).
    pub const IP_ID: usize = 9;
}

/// Why a line could not be split into fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SplitError {
    /// Not exactly 10 fields; carries how many were found.
    FieldCount(usize),
    /// A quoted field without its closing quote, or with text after it; carries the field index.
    Quote(usize),
}

/// The raw fields of one line: byte ranges into the line, quotes included.
pub type Fields<'a> = [&'a [u8]; 10];

/// Splits one line (without its newline) into its 10 raw fields.
#[inline]
pub fn split(line: &[u8]) -> Result<Fields<'_>, SplitError> {
    let mut out: Fields<'_> = [&[]; 10];
    let mut start = 0usize;
    let mut n = 0usize;
    // Fast path: no quoted field contains a comma, so every comma is a separator.
    for comma in memchr::memchr_iter(b',', line) {
        if n == 9 {
            return split_slow(line);
        }
        out[n] = &line[start..comma];
        n += 1;
        start = comma + 1;
    }
    if n != 9 {
        return split_slow(line);
    }
    out[9] = &line[start..];
    if out.iter().any(|f| open_quote(f)) {
        return split_slow(line);
    }
    Ok(out)
}

/// The fields of a line whose 9 separators the line index found (`commas`: offsets from the
/// line's start, see [`index_lines`]); `None` when a quoted field may hold a comma, so the
/// commas are not all separators (then [`split`] it).
#[inline]
pub fn fields_at<'a>(line: &'a [u8], commas: &[u8; 9]) -> Option<Fields<'a>> {
    let mut f: Fields<'_> = [&[]; 10];
    let mut prev = 0;
    for (i, &c) in commas.iter().enumerate() {
        let c = usize::from(c);
        f[i] = line.get(prev..c).unwrap_or_default();
        prev = c + 1;
    }
    f[9] = line.get(prev..).unwrap_or_default();
    (!f.iter().any(|x| open_quote(x))).then_some(f)
}

/// A field that opens a quote it does not close: cut at a comma inside quotes.
#[inline(always)]
fn open_quote(f: &[u8]) -> bool {
    f.first() == Some(&b'"') && (f.len() < 2 || f[f.len() - 1] != b'"')
}

/// Exact RFC 4180 splitting of one line; used when the fast path sees something unusual, and
/// the source of precise error messages.
fn split_slow(line: &[u8]) -> Result<Fields<'_>, SplitError> {
    let mut out: Fields<'_> = [&[]; 10];
    let mut n = 0usize;
    let mut pos = 0usize;
    loop {
        let start = pos;
        if line.get(pos) == Some(&b'"') {
            let mut j = pos + 1;
            loop {
                match memchr::memchr(b'"', &line[j..]) {
                    None => return Err(SplitError::Quote(n)),
                    Some(k) if line.get(j + k + 1) == Some(&b'"') => j += k + 2,
                    Some(k) => {
                        pos = j + k + 1;
                        break;
                    }
                }
            }
            if pos < line.len() && line[pos] != b',' {
                return Err(SplitError::Quote(n));
            }
        } else {
            pos = memchr::memchr(b',', &line[pos..]).map_or(line.len(), |k| pos + k);
        }
        if n < 10 {
            out[n] = &line[start..pos];
        }
        n += 1;
        if pos >= line.len() {
            break;
        }
        pos += 1; // the comma
    }
    if n == 10 {
        Ok(out)
    } else {
        Err(SplitError::FieldCount(n))
    }
}

/// Checks a header line against [`HEADER`] (names quoted or not).
pub fn header_ok(line: &[u8]) -> bool {
    match split(line) {
        Ok(f) => f
            .iter()
            .zip(HEADER)
            .all(|(raw, name)| parse::unquote(raw).as_ref() == name.as_bytes()),
        Err(_) => false,
    }
}

/// Finds every line of `text` and its separators: calls `line(start, end, commas, n)` per line,
/// `[start, end)` without the newline, `n` commas counted and the first 9 in `commas` (offsets
/// into `text`). The last line may lack its newline.
///
/// Scans 64 bytes at a time into bit masks of commas and newlines, then walks the set bits:
/// a comma every ~8 bytes made `memchr2_iter` stop and restart its SIMD loop at every hit
/// (18% of all ingest CPU on the 10M-row bench day; this loop: see `masks64`).
#[inline]
pub fn index_lines(text: &[u8], mut line: impl FnMut(usize, usize, &[u32; 9], usize)) {
    let mut from = 0usize;
    let mut commas = [0u32; 9];
    let mut n = 0usize;
    let mut base = 0usize;
    let mut blocks = text.chunks_exact(64);
    for block in &mut blocks {
        let (mc, mn) = masks64(block.try_into().expect("64 bytes"));
        let mut m = mc | mn;
        while m != 0 {
            let bit = m.trailing_zeros();
            m &= m - 1;
            let pos = base + bit as usize;
            if mn >> bit & 1 == 0 {
                if n < 9 {
                    commas[n] = pos as u32;
                }
                n += 1;
            } else {
                line(from, pos, &commas, n);
                n = 0;
                from = pos + 1;
            }
        }
        base += 64;
    }
    for (i, &b) in blocks.remainder().iter().enumerate() {
        let pos = base + i;
        if b == b',' {
            if n < 9 {
                commas[n] = pos as u32;
            }
            n += 1;
        } else if b == b'\n' {
            line(from, pos, &commas, n);
            n = 0;
            from = pos + 1;
        }
    }
    if from < text.len() {
        line(from, text.len(), &commas, n);
    }
}

/// Bit masks (bit i = byte i) of the commas and of the newlines in a 64-byte block.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn masks64(block: &[u8; 64]) -> (u64, u64) {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_set1_epi8,
    };
    let (mut mc, mut mn) = (0u64, 0u64);
    // SAFETY: SSE2 is part of the x86_64 baseline; each load reads 16 bytes inside `block`.
    unsafe {
        let (comma, nl) = (_mm_set1_epi8(b',' as i8), _mm_set1_epi8(b'\n' as i8));
        for i in 0..4 {
            let v = _mm_loadu_si128(block.as_ptr().add(i * 16).cast::<__m128i>());
            let c = _mm_movemask_epi8(_mm_cmpeq_epi8(v, comma)) as u32 & 0xffff;
            let l = _mm_movemask_epi8(_mm_cmpeq_epi8(v, nl)) as u32 & 0xffff;
            mc |= u64::from(c) << (i * 16);
            mn |= u64::from(l) << (i * 16);
        }
    }
    (mc, mn)
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn masks64(block: &[u8; 64]) -> (u64, u64) {
    let (mut mc, mut mn) = (0u64, 0u64);
    for (i, &b) in block.iter().enumerate() {
        mc |= u64::from(b == b',') << i;
        mn |= u64::from(b == b'\n') << i;
    }
    (mc, mn)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::{is_missing, text, unquote};

    #[test]
    fn splits_plain_and_quoted_lines() {
        let l =
            br#""2015-01-15","00:00:03",7644610,"3.0.3","i386","mingw32","Lahman","3.0-1","NA",2"#;
        let f = split(l).unwrap();
        assert_eq!(f[0], br#""2015-01-15""#);
        assert_eq!(f[2], b"7644610");
        assert_eq!(f[8], br#""NA""#);
        assert!(!is_missing(f[8]));
        assert_eq!(f[9], b"2");
        let l = br#""2015-01-15","00:00:03",1,NA,"i,386","mingw32","say ""hi""",NA,NA,2"#;
        let f = split(l).unwrap();
        assert_eq!(f[4], br#""i,386""#);
        assert_eq!(unquote(f[4]).as_ref(), b"i,386");
        assert_eq!(unquote(f[6]).as_ref(), br#"say "hi""#);
        assert!(is_missing(f[3]) && is_missing(f[7]));
        assert_eq!(text(f[3]), None);
    }

    #[test]
    fn reports_bad_lines() {
        assert_eq!(split(b"a,b,c"), Err(SplitError::FieldCount(3)));
        assert_eq!(
            split(b"1,2,3,4,5,6,7,8,9,10,11"),
            Err(SplitError::FieldCount(11))
        );
        assert_eq!(
            split(br#"1,2,3,"4,5,6,7,8,9,10"#),
            Err(SplitError::Quote(3))
        );
        assert_eq!(
            split(br#"1,2,3,"4"x,5,6,7,8,9,10"#),
            Err(SplitError::Quote(3))
        );
    }

    #[test]
    fn header_is_checked_by_name() {
        assert!(header_ok(
            br#""date","time","size","r_version","r_arch","r_os","package","version","country","ip_id""#
        ));
        assert!(!header_ok(b"date,time,size"));
    }
}
