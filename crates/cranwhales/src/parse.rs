//! Decoders of the log's raw fields (see `csv` for splitting): NA, quotes, numbers, times,
//! dates. Each decodes a field's bytes in place, word at a time where it is hot.

use std::borrow::Cow;

use crate::date;

/// True for the log's missing value: an unquoted `NA` (a quoted `"NA"` is Namibia) or nothing.
#[inline]
pub fn is_missing(raw: &[u8]) -> bool {
    raw == b"NA" || raw.is_empty()
}

/// The text of a field: outer quotes removed and `""` unescaped; `None` when missing.
pub fn text(raw: &[u8]) -> Option<Cow<'_, [u8]>> {
    if is_missing(raw) {
        return None;
    }
    Some(unquote(raw))
}

/// Removes outer quotes and unescapes `""`; borrows when there is nothing to unescape.
pub fn unquote(raw: &[u8]) -> Cow<'_, [u8]> {
    if raw.len() >= 2 && raw[0] == b'"' && raw[raw.len() - 1] == b'"' {
        let inner = &raw[1..raw.len() - 1];
        if memchr::memchr(b'"', inner).is_none() {
            Cow::Borrowed(inner)
        } else {
            let mut v = Vec::with_capacity(inner.len());
            let mut i = 0;
            while i < inner.len() {
                v.push(inner[i]);
                i += if inner[i] == b'"' && inner.get(i + 1) == Some(&b'"') {
                    2
                } else {
                    1
                };
            }
            Cow::Owned(v)
        }
    } else {
        Cow::Borrowed(raw)
    }
}

/// Strips the quotes of a field that cannot legitimately contain quotes (numbers, dates).
#[inline]
fn bare(raw: &[u8]) -> &[u8] {
    if raw.len() >= 2 && raw[0] == b'"' && raw[raw.len() - 1] == b'"' {
        &raw[1..raw.len() - 1]
    } else {
        raw
    }
}

/// A non-negative decimal integer (optionally quoted); `None` if empty, non-digit or overflowing.
#[inline]
pub fn uint(raw: &[u8]) -> Option<u64> {
    let s = bare(raw);
    if s.is_empty() || s.len() > 20 {
        return None;
    }
    if s.len() < 20 {
        // 19 digits cannot overflow: no checked arithmetic, and one test for all digits.
        let (mut v, mut bad) = (0u64, false);
        for &b in s {
            let d = b.wrapping_sub(b'0');
            bad |= d > 9;
            v = v.wrapping_mul(10).wrapping_add(u64::from(d));
        }
        return (!bad).then_some(v);
    }
    let mut v: u64 = 0;
    for &b in s {
        let d = b.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(u64::from(d))?;
    }
    Some(v)
}

/// `uint(&text[start..end])`, reading the field's last 8 bytes as one word when it is 1 to 8
/// bare digits with 8 bytes of `text` before its end (every size and ip_id of a real log past
/// the first bytes of a line); anything else goes to `uint`. The digit loop was ~6% of all
/// ingest CPU on the 10M-row bench day (two numbers a row).
#[inline]
pub fn uint_at(text: &[u8], start: usize, end: usize) -> Option<u64> {
    let len = end.wrapping_sub(start);
    let Some(word) = end
        .checked_sub(8)
        .filter(|_| (1..=8).contains(&len))
        .and_then(|from| text.get(from..end))
    else {
        return uint(text.get(start..end)?);
    };
    // Little-endian: the field is the top `len` bytes; the bytes before it are masked off.
    let mask = u64::MAX << ((8 - len) * 8);
    let d = (u64::from_le_bytes(word.try_into().ok()?) ^ 0x3030_3030_3030_3030) & mask;
    const HIGH: u64 = 0xF0F0_F0F0_F0F0_F0F0;
    if d & HIGH != 0 || (d + 0x0606_0606_0606_0606) & HIGH != 0 {
        // Not all digits (a quote, a sign, `NA`...): the careful path decides.
        return uint(&text[start..end]);
    }
    // Pairs, then quads, then all eight: the first byte is the most significant digit.
    let v = (d * 10 + (d >> 8)) & 0x00FF_00FF_00FF_00FF;
    let v = (v * 100 + (v >> 16)) & 0x0000_FFFF_0000_FFFF;
    Some((v * 10_000 + (v >> 32)) & 0xFFFF_FFFF)
}

/// Seconds since midnight of an `HH:MM:SS` field (optionally quoted); `None` if malformed.
///
/// All eight bytes are checked and decoded at once as one little-endian word (every data row
/// has a time: this was ~8% of the reading thread's time digit by digit).
#[inline]
pub fn seconds(raw: &[u8]) -> Option<u32> {
    let s: [u8; 8] = bare(raw).try_into().ok()?;
    let x = u64::from_le_bytes(s);
    // Bytes 0,1 (hours), 3,4 (minutes), 6,7 (seconds) are digits; bytes 2 and 5 are ':'.
    const DIGITS: u64 = 0xFFFF_00FF_FF00_FFFF;
    const ZEROS: u64 = 0x3030_0030_3000_3030;
    if x & !DIGITS != 0x0000_3A00_003A_0000 {
        return None;
    }
    let a = x & DIGITS;
    // Each digit byte is 0x30..=0x39: high nibble 3, and adding 6 keeps it 3 (no carry out).
    if a & 0xF0F0_00F0_F000_F0F0 != ZEROS
        || (a + 0x0606_0006_0600_0606) & 0xF0F0_00F0_F000_F0F0 != ZEROS
    {
        return None;
    }
    let d = a - ZEROS;
    // Byte k becomes 10 * digit k + digit k+1: hours at byte 0, minutes at 3, seconds at 6.
    let v = d * 10 + (d >> 8);
    let (h, m, sec) = (
        (v & 0xFF) as u32,
        (v >> 24 & 0xFF) as u32,
        (v >> 48 & 0xFF) as u32,
    );
    // 60 allows a leap second.
    (h < 24 && m < 60 && sec <= 60).then_some(h * 3600 + m * 60 + sec)
}

/// `HH:MM:SS` of seconds since midnight.
pub fn hms(secs: u32) -> String {
    format!("{:02}:{:02}:{:02}", secs / 3600, secs / 60 % 60, secs % 60)
}

/// The `YYYY-MM-DD` text of a date field (optionally quoted) if it is a log date
/// ([`date::is_log_date`]).
pub fn date(raw: &[u8]) -> Option<&str> {
    let s = std::str::from_utf8(bare(raw)).ok()?;
    date::is_log_date(s).then_some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_numbers_times_dates() {
        assert_eq!(uint(b"123"), Some(123));
        assert_eq!(uint(br#""123""#), Some(123));
        assert_eq!(uint(b"12a"), None);
        assert_eq!(uint(b"NA"), None);
        assert_eq!(uint(b"99999999999999999999"), None);
        assert_eq!(seconds(br#""01:02:03""#), Some(3723));
        assert_eq!(seconds(b"24:00:00"), None);
        assert_eq!(hms(3723), "01:02:03");
        assert_eq!(date(br#""2012-02-29""#), Some("2012-02-29"));
        assert_eq!(date(b"2013-02-29"), None);
    }

    /// Naive references for the word-at-a-time decoders.
    fn seconds_ref(s: &[u8]) -> Option<u32> {
        let t = std::str::from_utf8(s).ok()?;
        let p: Vec<&str> = t.split(':').collect();
        let ok = p.len() == 3
            && p.iter()
                .all(|x| x.len() == 2 && x.bytes().all(|b| b.is_ascii_digit()));
        let n: Vec<u32> = p.iter().filter_map(|x| x.parse().ok()).collect();
        (ok && n[0] < 24 && n[1] < 60 && n[2] <= 60).then(|| n[0] * 3600 + n[1] * 60 + n[2])
    }

    #[test]
    fn seconds_matches_a_naive_parse_on_every_time_and_every_one_byte_change() {
        for secs in (0..86_400).step_by(7).chain([86_399]) {
            let t = format!("{:02}:{:02}:{:02}", secs / 3600, secs / 60 % 60, secs % 60);
            assert_eq!(seconds(t.as_bytes()), Some(secs), "{t}");
            assert_eq!(seconds(format!("\"{t}\"").as_bytes()), Some(secs));
        }
        for t in ["00:00:00", "19:59:60", "23:59:59", "09:09:09"] {
            for i in 0..8 {
                for b in 0..=255u8 {
                    let mut m = t.as_bytes().to_vec();
                    m[i] = b;
                    assert_eq!(seconds(&m), seconds_ref(&m), "{m:?}");
                }
            }
        }
        assert_eq!(seconds(b"1:02:03"), None);
        assert_eq!(seconds(b"01:02:034"), None);
    }

    #[test]
    fn uint_matches_a_naive_parse() {
        let reference = |s: &[u8]| {
            let t = std::str::from_utf8(s).ok()?;
            (t.bytes().all(|b| b.is_ascii_digit()) && !t.is_empty())
                .then(|| t.parse::<u64>().ok())?
        };
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        for len in 1..=21 {
            for _ in 0..500 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let mut s: Vec<u8> = (0..len)
                    .map(|k| b'0' + ((x >> (k % 60)) % 10) as u8)
                    .collect();
                if x % 5 == 0 {
                    s[(x % len as u64) as usize] = (x >> 8) as u8;
                }
                if len == 20 && x % 3 == 0 {
                    s[0] = b'1' + (x % 9) as u8;
                }
                assert_eq!(uint(&s), reference(&s), "{:?}", String::from_utf8_lossy(&s));
            }
        }
        assert_eq!(uint(b"18446744073709551615"), Some(u64::MAX));
        assert_eq!(uint(b"18446744073709551616"), None);
    }

    #[test]
    fn uint_at_matches_uint() {
        let mut x: u64 = 0x2545_F491_4F6C_DD1D;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for _ in 0..20_000 {
            let r = next();
            let prefix: Vec<u8> = (0..r % 12)
                .map(|k| b"0123456789,\"a"[((r >> k) % 13) as usize])
                .collect();
            let len = (r >> 8) % 11;
            let mut field: Vec<u8> = (0..len)
                .map(|k| b'0' + ((r >> (k + 16)) % 10) as u8)
                .collect();
            match (r >> 40) % 8 {
                0 if len > 0 => field[((r >> 44) % len) as usize] = (r >> 48) as u8,
                1 => field = [b"\"".as_slice(), &field, b"\""].concat(),
                2 => field = b"NA".to_vec(),
                _ => {}
            }
            let text = [prefix.as_slice(), &field, b",x"].concat();
            let (start, end) = (prefix.len(), prefix.len() + field.len());
            assert_eq!(
                uint_at(&text, start, end),
                uint(&field),
                "{:?} in {:?}",
                String::from_utf8_lossy(&field),
                String::from_utf8_lossy(&text)
            );
        }
        assert_eq!(uint_at(b"abcdefgh99999999", 8, 16), Some(99_999_999));
        assert_eq!(uint_at(b"abcdefgh00000001", 8, 16), Some(1));
        assert_eq!(uint_at(b"abcdefgh1", 8, 9), Some(1));
        assert_eq!(uint_at(b"abcdefgh", 8, 8), None);
        assert_eq!(uint_at(b"abc", 2, 9), None);
    }
}
