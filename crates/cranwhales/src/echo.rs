//! Input echoed back in a message: a CSV header, a field, a date argument. Raw bytes from a file
//! or a command line must not reach a terminal as they are: an escape sequence in a header would
//! retitle or clear it, and a 10 MB line would flood it.

/// `raw` as text fit to print: invalid UTF-8 replaced, control characters escaped (`\x1b`, `\n`,
/// `\u{9b}`), cut after `max` characters with `…(N bytes)` giving the whole input's size.
pub fn echo(raw: &[u8], max: usize) -> String {
    let text = String::from_utf8_lossy(raw);
    let mut out = String::with_capacity(text.len().min(max * 2));
    for (n, c) in text.chars().enumerate() {
        if n == max {
            out.push_str(&format!("…({} bytes)", raw.len()));
            break;
        }
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x80 && c.is_control() => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            c if c.is_control() => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::echo;

    #[test]
    fn control_characters_are_escaped_and_long_input_cut() {
        assert_eq!(
            echo(b"\x1b]0;pwned\x07\x1b[2Jdate", 80),
            "\\x1b]0;pwned\\x07\\x1b[2Jdate"
        );
        assert_eq!(
            echo("a\u{9b}b\tc\r\n".as_bytes(), 80),
            "a\\u{9b}b\\tc\\r\\n"
        );
        assert_eq!(echo(b"abcdef", 3), "abc…(6 bytes)");
        assert_eq!(echo(b"abc", 3), "abc");
        assert_eq!(echo(b"\xffok", 10), "\u{fffd}ok");
        assert_eq!(echo("žluť".as_bytes(), 10), "žluť");
    }
}
