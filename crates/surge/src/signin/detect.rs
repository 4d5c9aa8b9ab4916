//! What serves the app, told the way shinycannon tells it (rstudio/shinycannon
//! `src/main/kotlin/com/rstudio/shinycannon/Detect.kt`, `servedBy`, lines 32-54): the answer to
//! one GET of the app URL decides which sign-in exchange a user must go through.

use hyper::HeaderMap;
use std::fmt;

/// The kinds of server shinycannon knows (its `ServerType`), named as it names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerType {
    /// Posit (RStudio) Connect: sets an `rscid` cookie.
    Connect,
    /// Shiny Server or Shiny Server Pro: an `x-ssp-xsrf` header or `SSP-XSRF` cookie, or
    /// `X-Powered-By: Express | Shiny Server | Shiny Server Pro`.
    ShinyServer,
    /// shinyapps.io, told by the host name alone.
    ShinyappsIo,
    /// A bare R Shiny app (its page loads shiny.js).
    Shiny,
    /// None of the above.
    Unknown,
}

impl fmt::Display for ServerType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ServerType::Connect => "Posit Connect",
            ServerType::ShinyServer => "Shiny Server or Shiny Server Pro",
            ServerType::ShinyappsIo => "shinyapps.io",
            ServerType::Shiny => "R/Shiny",
            ServerType::Unknown => "an unknown server",
        })
    }
}

/// shinycannon's `servedBy`: the host first, then the answer's headers and cookies, in its order
/// (an `X-Powered-By` of another value skips the `rscid` test, as in Detect.kt line 43-48), then
/// the body's shiny.js.
pub fn served_by(host: &str, headers: &HeaderMap, body: &[u8]) -> ServerType {
    if host.ends_with(".shinyapps.io") {
        return ServerType::ShinyappsIo;
    }
    let cookie = |name: &str| set_cookie_names(headers).any(|n| n == name);
    if headers.contains_key("x-ssp-xsrf") || cookie("SSP-XSRF") {
        return ServerType::ShinyServer;
    }
    if let Some(v) = headers.get("x-powered-by") {
        let v = v.to_str().unwrap_or_default();
        if ["Express", "Shiny Server", "Shiny Server Pro"].contains(&v) {
            return ServerType::ShinyServer;
        }
    } else if cookie("rscid") {
        return ServerType::Connect;
    }
    if has_shiny_js(body) {
        return ServerType::Shiny;
    }
    ServerType::Unknown
}

/// shinycannon's `isProtected` (ProtectedApp.kt line 80-82): the app answers 403 or 404 to a
/// user who has not signed in.
pub fn is_protected(status: u16) -> bool {
    matches!(status, 403 | 404)
}

/// Detect.kt's `hasShinyJs`: the page loads `shiny.js` or `shiny.min.js`.
fn has_shiny_js(body: &[u8]) -> bool {
    let text = String::from_utf8_lossy(body);
    ["/shiny.js", "/shiny.min.js"].iter().any(|js| {
        text.match_indices(js)
            .any(|(i, m)| matches!(text.as_bytes().get(i + m.len()), Some(b'"' | b'\'')))
    })
}

/// The names of the cookies a response sets.
fn set_cookie_names(headers: &HeaderMap) -> impl Iterator<Item = &str> {
    headers
        .get_all(hyper::header::SET_COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .filter_map(|s| s.split(';').next()?.split_once('=').map(|(n, _)| n.trim()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(
                hyper::header::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        h
    }

    #[test]
    fn tells_servers_apart_in_shinycannons_order() {
        let none = headers(&[]);
        assert_eq!(
            served_by("x.shinyapps.io", &none, b""),
            ServerType::ShinyappsIo
        );
        let ssp = headers(&[("x-ssp-xsrf", "1")]);
        assert_eq!(served_by("h", &ssp, b""), ServerType::ShinyServer);
        let ssp = headers(&[("set-cookie", "SSP-XSRF=abc; Path=/")]);
        assert_eq!(served_by("h", &ssp, b""), ServerType::ShinyServer);
        let rsc = headers(&[("set-cookie", "rscid=1; Path=/")]);
        assert_eq!(served_by("h", &rsc, b""), ServerType::Connect);
        // Another X-Powered-By skips the rscid test, as shinycannon does.
        let other = headers(&[("x-powered-by", "PHP"), ("set-cookie", "rscid=1")]);
        assert_eq!(served_by("h", &other, b""), ServerType::Unknown);
        let page = br#"<script src="shiny-1.7/shiny.min.js"></script>"#;
        assert_eq!(served_by("h", &none, page), ServerType::Shiny);
        assert_eq!(served_by("h", &none, b"shiny.min.jsx"), ServerType::Unknown);
        assert!(is_protected(403) && is_protected(404) && !is_protected(401));
    }
}
