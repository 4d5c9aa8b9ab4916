//! `GET /badge/{package}?period=last-week|last-month|total&without=whales`: a README badge in the
//! shields.io "flat" style (grey label, coloured value), built once per (package, period, filter)
//! and sent with an ETag like every cached body. "Without whales" leaves out each day's top
//! [`DEFAULT_WHALES`] downloaders: a number no other badge service has.

use std::sync::Arc;

use axum::extract::rejection::PathRejection;
use axum::extract::{Path, Request, State};
use axum::response::Response;

use super::cache::{Body, REVALIDATE};
use super::error::ApiError;
use super::insight::{param, unknown_package, DEFAULT_WHALES};
use super::App;
use crate::date::{Day, Range, FIRST_LOG};

/// `period=` values: (name, days back from the newest stored day, suffix of the number).
const PERIODS: [(&str, Option<i64>, &str); 3] = [
    ("last-week", Some(7), "/week"),
    ("last-month", Some(30), "/month"),
    ("total", None, ""),
];

/// `GET /badge/{package}`.
pub async fn badge(
    State(app): State<Arc<App>>,
    name: Result<Path<String>, PathRejection>,
    req: Request,
) -> Result<Response, ApiError> {
    let Path(name) = name.map_err(|e| ApiError::bad_request(format!("bad path: {e}")))?;
    let query = req.uri().query();
    let asked = param(query, "period").unwrap_or_else(|| "last-month".into());
    let &(period, back, suffix) = (PERIODS.iter()).find(|p| p.0 == asked).ok_or_else(|| {
        ApiError::bad_request(format!(
            "period must be last-week, last-month or total, got '{}'",
            asked.chars().take(40).collect::<String>()
        ))
    })?;
    let without = match param(query, "without").as_deref() {
        None => false,
        Some("whales") => true,
        Some(v) => {
            return Err(ApiError::bad_request(format!(
                "without must be 'whales', got '{}'",
                v.chars().take(40).collect::<String>()
            )))
        }
    };
    let key = (name.clone(), period, without);
    if let Some(body) = app.insight.badges.get(&key) {
        return Ok(body.respond(req.headers()));
    }
    let epoch = app.insight.badges.epoch();
    let asked = name.clone();
    let report = app
        .db
        .read(move |s| {
            let newest = s.calendar()?.days.last().and_then(|d| Day::parse(&d.date));
            let Some(to) = newest else { return Ok(None) };
            let from = back.map_or(FIRST_LOG, |n| to.plus(1 - n).max(FIRST_LOG));
            Ok(s.package_report(&asked, Range { from, to }, DEFAULT_WHALES)?)
        })
        .await
        .map_err(ApiError::internal)?;
    let Some(report) = report else {
        return Err(unknown_package(&app, &name).await);
    };
    let t = &report.totals;
    let n = if without {
        t.without_whales
    } else {
        t.downloads
    };
    let label = if without {
        "downloads without whales"
    } else {
        "downloads"
    };
    let svg = svg(label, &format!("{}{suffix}", compact(n)), without);
    let body = Body::new(svg.into_bytes(), "image/svg+xml", REVALIDATE);
    Ok(app
        .insight
        .badges
        .insert_at(epoch, key, body)
        .respond(req.headers()))
}

/// `1234` → `1.2k`, `56789` → `57k`, `1234567` → `1.2M`, as shields.io abbreviates.
pub fn compact(n: u64) -> String {
    let (v, unit) = match n {
        0..=999 => return n.to_string(),
        1_000..=999_999 => (n as f64 / 1e3, "k"),
        1_000_000..=999_999_999 => (n as f64 / 1e6, "M"),
        _ => (n as f64 / 1e9, "G"),
    };
    if v < 10.0 {
        format!("{:.1}{unit}", (v * 10.0).floor() / 10.0)
    } else {
        format!("{:.0}{unit}", v.floor())
    }
}

/// Approximate width in pixels of `s` in 11 px Verdana (what shields.io measures with).
fn text_width(s: &str) -> u32 {
    let w: f64 = (s.chars())
        .map(|c| match c {
            'i' | 'l' | 'j' | '.' | ',' | ':' | '\'' | '|' => 3.2,
            ' ' | 'f' | 't' | 'r' | '/' | '(' | ')' => 4.6,
            'm' | 'w' | 'M' | 'W' => 10.0,
            'A'..='Z' => 7.6,
            _ => 6.9,
        })
        .sum();
    w.ceil() as u32
}

/// The badge: `label` on grey, `value` on green (blue without whales), 20 px high.
pub fn svg(label: &str, value: &str, without: bool) -> String {
    let (lw, vw) = (text_width(label) + 10, text_width(value) + 10);
    let w = lw + vw;
    let color = if without { "#007ec6" } else { "#4c1" };
    let (lx, vx) = (lw * 5, lw * 10 + vw * 5);
    let (ltl, vtl) = ((lw - 10) * 10, (vw - 10) * 10);
    format!(
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="20" role="img" aria-label="{label}: {value}"><title>{label}: {value}</title><linearGradient id="s" x2="0" y2="100%"><stop offset="0" stop-color="#bbb" stop-opacity=".1"/><stop offset="1" stop-opacity=".1"/></linearGradient><clipPath id="r"><rect width="{w}" height="20" rx="3" fill="#fff"/></clipPath><g clip-path="url(#r)"><rect width="{lw}" height="20" fill="#555"/><rect x="{lw}" width="{vw}" height="20" fill="{color}"/><rect width="{w}" height="20" fill="url(#s)"/></g><g fill="#fff" text-anchor="middle" font-family="Verdana,Geneva,DejaVu Sans,sans-serif" text-rendering="geometricPrecision" font-size="110"><text aria-hidden="true" x="{lx}" y="150" fill="#010101" fill-opacity=".3" transform="scale(.1)" textLength="{ltl}">{label}</text><text x="{lx}" y="140" transform="scale(.1)" fill="#fff" textLength="{ltl}">{label}</text><text aria-hidden="true" x="{vx}" y="150" fill="#010101" fill-opacity=".3" transform="scale(.1)" textLength="{vtl}">{value}</text><text x="{vx}" y="140" transform="scale(.1)" fill="#fff" textLength="{vtl}">{value}</text></g></svg>"##
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_abbreviated_as_shields_does() {
        for (n, want) in [
            (0, "0"),
            (999, "999"),
            (1_000, "1.0k"),
            (1_250, "1.2k"),
            (9_999, "9.9k"),
            (56_789, "56k"),
            (1_234_567, "1.2M"),
            (5_000_000_000, "5.0G"),
        ] {
            assert_eq!(compact(n), want, "{n}");
        }
        let s = svg("downloads", "1.2k/week", false);
        assert!(s.starts_with("<svg") && s.contains("downloads: 1.2k/week"));
    }
}
