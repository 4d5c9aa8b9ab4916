//! `GET /badge/{package}?period=last-week|last-month|total&without=whales`: a README badge in the
//! shields.io "flat" style (grey label, coloured value), built once per (package, period, filter)
//! and sent with an ETag like every cached body. "Without whales" leaves out each day's top
//! [`DEFAULT_WHALES`] downloaders: a number no other badge service has. A period with days that
//! are not stored says so on the badge ("incomplete: 4 of 30 days"): its number is a sum over the
//! stored days only, and a reader must not take it for the whole period.

use std::sync::Arc;

use axum::extract::rejection::PathRejection;
use axum::extract::{Path, Request, State};
use axum::response::Response;

use super::cache::{Body, REVALIDATE};
use super::error::{shown, ApiError};
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
            shown(&asked)
        ))
    })?;
    let without = match param(query, "without").as_deref() {
        None => false,
        Some("whales") => true,
        Some(v) => {
            return Err(ApiError::bad_request(format!(
                "without must be 'whales', got '{}'",
                shown(v)
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
            let calendar = s.calendar()?;
            let newest = calendar.days.last().and_then(|d| Day::parse(&d.date));
            let Some(to) = newest else { return Ok(None) };
            let from = back.map_or(FIRST_LOG, |n| to.plus(1 - n).max(FIRST_LOG));
            let stored = (calendar.days.iter())
                .filter_map(|d| Day::parse(&d.date))
                .filter(|d| (from..=to).contains(d))
                .count() as i64;
            let coverage = (stored, from.days_until(to) + 1);
            let report = s.package_report(&asked, Range { from, to }, DEFAULT_WHALES)?;
            Ok(report.map(|r| (r, coverage)))
        })
        .await
        .map_err(ApiError::internal)?;
    let Some((report, (stored, span))) = report else {
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
    let svg = svg(label, &value(n, suffix, stored, span), without);
    let body = Body::new(svg.into_bytes(), "image/svg+xml", REVALIDATE);
    Ok(app
        .insight
        .badges
        .insert_at(epoch, key, body)
        .respond(req.headers()))
}

/// The badge's value: `2.6k/month`, or with days of the period not stored
/// `2.6k/month, incomplete: 4 of 30 days` (the sum is over the stored days only).
pub fn value(n: u64, suffix: &str, stored: i64, span: i64) -> String {
    let v = format!("{}{suffix}", compact(n));
    if stored >= span {
        return v;
    }
    format!("{v}, incomplete: {stored} of {span} days")
}

/// `1234` → `1.2k`, `2556` → `2.6k`, `56789` → `57k`, `999999` → `1.0M`: rounded to the nearest
/// (half up), one decimal below 10 of a unit, as shields.io abbreviates. Integer arithmetic, so no
/// float edge decides a digit.
pub fn compact(n: u64) -> String {
    if n < 1_000 {
        return n.to_string();
    }
    for (scale, unit) in [(1_000u64, "k"), (1_000_000, "M"), (1_000_000_000, "G")] {
        let tenths = (n + scale / 20) / (scale / 10);
        if tenths < 100 {
            return format!("{}.{}{unit}", tenths / 10, tenths % 10);
        }
        let whole = (n + scale / 2) / scale;
        if whole < 1_000 || unit == "G" {
            return format!("{whole}{unit}");
        }
    }
    unreachable!("the G unit takes every number")
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
            (1_249, "1.2k"),
            (1_250, "1.3k"),
            (2_556, "2.6k"),
            (9_949, "9.9k"),
            (9_950, "10k"),
            (56_789, "57k"),
            (999_499, "999k"),
            (999_500, "1.0M"),
            (1_234_567, "1.2M"),
            (5_000_000_000, "5.0G"),
            (12_345_678_901_234, "12346G"),
        ] {
            assert_eq!(compact(n), want, "{n}");
        }
        assert_eq!(value(2_556, "/month", 30, 30), "2.6k/month");
        assert_eq!(
            value(11_000, "/month", 4, 30),
            "11k/month, incomplete: 4 of 30 days"
        );
        let s = svg("downloads", "1.2k/week", false);
        assert!(s.starts_with("<svg") && s.contains("downloads: 1.2k/week"));
    }
}
