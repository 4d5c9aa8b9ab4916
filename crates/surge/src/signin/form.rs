//! The small pieces of a form sign-in: a login page's hidden inputs (shinycannon posts them back
//! to Shiny Server Pro: ProtectedApp.kt `getInputs`, lines 84-96), the form body, and the first
//! line of a refusal, escaped and cut, for the one-line error.

/// Most characters of a server's answer quoted in an error.
const QUOTE_MAX: usize = 160;

/// `<input type="hidden" name=… value=…>` of an HTML page, in page order (XSRF tokens and the
/// like, which a login form expects back).
pub fn hidden_inputs(html: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let lower = html.to_ascii_lowercase();
    let mut from = 0;
    while let Some(i) = lower[from..].find("<input") {
        let start = from + i + "<input".len();
        let end = lower[start..].find('>').map_or(html.len(), |j| start + j);
        let attrs = attributes(&html[start..end]);
        let get = |k: &str| attrs.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        if get("type").is_some_and(|t| t.eq_ignore_ascii_case("hidden")) {
            if let Some(name) = get("name") {
                out.push((name, get("value").unwrap_or_default()));
            }
        }
        from = end;
    }
    out
}

/// `name="value"`, `name='value'` and `name=value` attributes of a tag (names lowercased,
/// values with the common entities decoded).
fn attributes(tag: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let b = tag.as_bytes();
    let mut i = 0;
    while i < b.len() {
        while i < b.len() && (b[i].is_ascii_whitespace() || b[i] == b'/') {
            i += 1;
        }
        let name_start = i;
        while i < b.len() && !b[i].is_ascii_whitespace() && b[i] != b'=' && b[i] != b'/' {
            i += 1;
        }
        let name = tag[name_start..i].to_ascii_lowercase();
        if i < b.len() && b[i] == b'=' {
            i += 1;
            let (value, next) = match b.get(i) {
                Some(&q @ (b'"' | b'\'')) => {
                    let close = tag[i + 1..].find(q as char).map_or(b.len(), |j| i + 1 + j);
                    (&tag[i + 1..close], close + 1)
                }
                _ => {
                    let end = tag[i..]
                        .find(|c: char| c.is_ascii_whitespace())
                        .map_or(b.len(), |j| i + j);
                    (&tag[i..end], end)
                }
            };
            out.push((name, decode_entities(value)));
            i = next;
        } else if !name.is_empty() {
            out.push((name, String::new()));
        } else {
            i += 1;
        }
    }
    out
}

fn decode_entities(s: &str) -> String {
    s.replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

/// An `application/x-www-form-urlencoded` body.
pub fn urlencoded<'a>(fields: impl IntoIterator<Item = (&'a str, &'a str)>) -> String {
    let mut s = form_urlencoded::Serializer::new(String::new());
    for (k, v) in fields {
        s.append_pair(k, v);
    }
    s.finish()
}

/// The first non-empty line of a server's answer, escaped (no control characters reach the
/// terminal) and cut to a readable length.
pub fn first_line(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let line = text.lines().map(str::trim).find(|l| !l.is_empty());
    let Some(line) = line else {
        return "(empty body)".into();
    };
    // The workspace's one escaper: control characters as `\x1b`, cut with its size.
    grammar::echo::echo(line.as_bytes(), QUOTE_MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_hidden_inputs() {
        let page = r#"<form><INPUT type="hidden" name="_xsrf" value="a&amp;b"/>
            <input type='text' name='username'><input name=next type=hidden value=/app/></form>"#;
        assert_eq!(
            hidden_inputs(page),
            vec![
                ("_xsrf".to_string(), "a&b".to_string()),
                ("next".to_string(), "/app/".to_string())
            ]
        );
    }

    #[test]
    fn quotes_the_first_line_escaped_and_cut() {
        assert_eq!(first_line(b"\n  bad password\nmore"), "bad password");
        assert_eq!(first_line(b"a\tb\x1b[31m"), "a\\tb\\x1b[31m");
        assert_eq!(first_line(b""), "(empty body)");
        assert!(first_line(&[b'x'; 500]).starts_with(&"x".repeat(QUOTE_MAX)));
        assert!(first_line(&[b'x'; 500]).ends_with("…(500 bytes)"));
        assert_eq!(urlencoded([("u", "a b&c")]), "u=a+b%26c");
    }
}
