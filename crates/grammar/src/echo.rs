//! Text from input or data made fit for a terminal or a log: a CSV header, a field, a date
//! argument, a package name or a user agent read from a downloaded log, a server's reason.
//! Raw bytes from a file, a network or a command line must not reach a terminal as they are: an
//! escape sequence in a package name would retitle or clear it, and a 10 MB line would flood it.
//! All three programs escape through this one function.

use std::fmt;

/// `raw` as text fit to print: invalid UTF-8 replaced, control characters escaped (`\n`, `\r`,
/// `\t`, `\x1b` for the other ASCII ones, `\u{9b}` above), cut after `max` characters with
/// `…(N bytes)` giving the whole input's size.
pub fn echo(raw: &[u8], max: usize) -> String {
    let text = String::from_utf8_lossy(raw);
    let mut out = String::with_capacity(text.len().min(max.saturating_mul(2)));
    for (n, c) in text.chars().enumerate() {
        if n == max {
            out.push_str(&format!("…({} bytes)", raw.len()));
            break;
        }
        push_escaped(&mut out, c);
    }
    out
}

/// Appends `c`, escaped if it is a control character.
fn push_escaped(out: &mut String, c: char) {
    match c {
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        c if (c as u32) < 0x80 && c.is_control() => out.push_str(&format!("\\x{:02x}", c as u32)),
        c if c.is_control() => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
        c => out.push(c),
    }
}

/// Text from data (a package name, a version, a country), escaped as [`echo`] does but never
/// cut, for `format!` and tracing fields: `format!("{:<20}", Escaped(name))` pads the escaped
/// form. Data values are short by the store's construction; a header or argument echoed in an
/// error uses [`echo`] with a limit instead.
#[derive(Debug, Clone, Copy)]
pub struct Escaped<'a>(pub &'a str);

impl fmt::Display for Escaped<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.0.chars().any(char::is_control) {
            return f.pad(self.0);
        }
        let mut out = String::with_capacity(self.0.len() + 8);
        for c in self.0.chars() {
            push_escaped(&mut out, c);
        }
        f.pad(&out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(echo(b"a\x7fb", 80), "a\\x7fb");
        assert_eq!(echo(b"abcdef", 3), "abc…(6 bytes)");
        assert_eq!(echo(b"abc", 3), "abc");
        assert_eq!(echo(b"\xffok", 10), "\u{fffd}ok");
        assert_eq!(echo("žluť".as_bytes(), 10), "žluť");
    }

    #[test]
    fn escaped_pads_the_escaped_form_and_never_cuts() {
        assert_eq!(
            format!("{}", Escaped("\x1b]0;PWNED\x07\x1b[2Jevil")),
            "\\x1b]0;PWNED\\x07\\x1b[2Jevil"
        );
        assert_eq!(format!("[{:<6}]", Escaped("a\tb")), "[a\\tb  ]");
        assert_eq!(format!("[{:>4}]", Escaped("ok")), "[  ok]");
        let long = "x".repeat(1000);
        assert_eq!(Escaped(&long).to_string(), long);
    }
}
