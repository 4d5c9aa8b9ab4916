//! Packages in context: `/api/packages/{a,b,c}` (up to 8 packages, binned or summed, each with
//! its rank and the distribution of all packages), `/api/top` (top and trending lists over a
//! range) and `/api/calendar` (every stored day's downloads). Ranks, distributions and lists come
//! from every package's downloads over the range (`insight::totals`, read once per range); each
//! body is built once and cached like the other cross-day answers.

use std::sync::Arc;

use axum::extract::rejection::PathRejection;
use axum::extract::{Path, Request, State};
use axum::response::Response;

use super::breakdown::without_of;
use super::cache::{Body, REVALIDATE};
use super::error::{shown, ApiError};
use super::insight::{param, range_of, totals, unknown_package, whales_of};
use super::App;
use crate::context::{binned, in_context, PackageComparison, TopList};
use crate::date::{Day, Range, FIRST_LOG};
use crate::summary::Bin;

/// Packages one request may compare.
pub const MAX_PACKAGES: usize = 8;
/// Longest list in `/api/top`.
const MAX_LIMIT: usize = 100;
/// `limit` when `/api/top` has none.
const DEFAULT_LIMIT: usize = 20;

/// The names of `a,b,c`: 1 to [`MAX_PACKAGES`], none empty, none twice.
fn names_of(list: &str) -> Result<Vec<String>, ApiError> {
    let names: Vec<String> = list.split(',').map(str::to_owned).collect();
    if names.len() > MAX_PACKAGES {
        return Err(ApiError::bad_request(format!(
            "packages: at most {MAX_PACKAGES} names separated by commas, got {}",
            names.len()
        )));
    }
    if names.iter().any(|n| n.is_empty()) {
        return Err(ApiError::bad_request(format!(
            "packages: an empty name in '{}'",
            shown(list)
        )));
    }
    for (i, n) in names.iter().enumerate() {
        if names[..i].contains(n) {
            return Err(ApiError::bad_request(format!(
                "packages: '{}' is named twice",
                shown(n)
            )));
        }
    }
    Ok(names)
}

fn bin_of(query: Option<&str>) -> Result<Bin, ApiError> {
    let Some(v) = param(query, "bin") else {
        return Ok(Bin::Day);
    };
    Bin::parse(&v).ok_or_else(|| {
        ApiError::bad_request(format!(
            "bin must be day, week, month or year, got '{}'",
            shown(&v)
        ))
    })
}

fn cumulative_of(query: Option<&str>) -> Result<bool, ApiError> {
    match param(query, "cumulative").as_deref() {
        None | Some("false") => Ok(false),
        Some("true") => Ok(true),
        Some(v) => Err(ApiError::bad_request(format!(
            "cumulative must be true or false, got '{}'",
            shown(v)
        ))),
    }
}

/// `GET /api/packages/{name}` or `/api/packages/a,b,c` with `from`, `to`, `whales`, `bin`,
/// `cumulative`, `without` (what the ranks and the distribution leave out): one
/// `PackageReport`, or a `PackageComparison` of several.
pub async fn packages(
    State(app): State<Arc<App>>,
    list: Result<Path<String>, PathRejection>,
    req: Request,
) -> Result<Response, ApiError> {
    let Path(list) = list.map_err(|e| ApiError::bad_request(format!("bad path: {e}")))?;
    let names = names_of(&list)?;
    let query = req.uri().query();
    let (range, whales) = (range_of(query)?, whales_of(query)?);
    let (bin, cumulative) = (bin_of(query)?, cumulative_of(query)?);
    let without = without_of(query)?;
    let key = (list, range, whales, bin, cumulative, without);
    if let Some(body) = app.insight.packages.get(&key) {
        return Ok(body.respond(req.headers()));
    }
    let epoch = app.insight.packages.epoch();
    let asked = names.clone();
    let reports = app
        .db
        .read(move |s| {
            (asked.iter())
                .map(|n| Ok(s.package_report(n, range, whales)?))
                .collect::<anyhow::Result<Vec<_>>>()
        })
        .await
        .map_err(ApiError::internal)?;
    if let Some(i) = reports.iter().position(Option::is_none) {
        return Err(unknown_package(&app, &names[i]).await);
    }
    let all = totals(&app, range, without).await?;
    let mut reports: Vec<_> = (reports.into_iter().flatten())
        .map(|r| binned(in_context(r, &all), bin, cumulative))
        .collect();
    let body = if reports.len() == 1 {
        Body::json(&reports.remove(0), REVALIDATE)
    } else {
        let c = PackageComparison {
            from: range.from.to_string(),
            to: range.to.to_string(),
            whales,
            bin,
            cumulative,
            packages: reports,
        };
        Body::json(&c, REVALIDATE)
    };
    Ok(app
        .insight
        .packages
        .insert_at(epoch, key, body)
        .respond(req.headers()))
}

/// The period trending compares `range` with: as many days just before it, cut at the first log
/// day; `None` when `range` starts with the logs.
fn before(range: Range) -> Option<Range> {
    let len = range.from.days_until(range.to) + 1;
    let to = range.from.plus(-1);
    (to >= FIRST_LOG).then(|| Range {
        from: range.from.plus(-len).max(FIRST_LOG),
        to,
    })
}

/// `GET /api/top?from=&to=&limit=N&without=whales,small,repeats`: the most downloaded and the
/// trending packages, counted without the kinds `without` names (any of them).
pub async fn top(State(app): State<Arc<App>>, req: Request) -> Result<Response, ApiError> {
    let query = req.uri().query();
    let range = range_of(query)?;
    let limit = match param(query, "limit") {
        None => DEFAULT_LIMIT,
        Some(v) => (v.parse::<usize>().ok())
            .filter(|n| (1..=MAX_LIMIT).contains(n))
            .ok_or_else(|| {
                ApiError::bad_request(format!(
                    "limit must be a whole number from 1 to {MAX_LIMIT}, got '{}'",
                    shown(&v)
                ))
            })?,
    };
    let without = without_of(query)?;
    let key = (range, limit, without);
    if let Some(body) = app.insight.top.get(&key) {
        return Ok(body.respond(req.headers()));
    }
    let epoch = app.insight.top.epoch();
    let now = totals(&app, range, without).await?;
    let prior = before(range);
    let then = match prior {
        Some(r) => Some(totals(&app, r, without).await?),
        None => None,
    };
    let mut left_out = now.days_without_filters.clone();
    if let Some(t) = &then {
        left_out.extend(t.days_without_filters.iter().cloned());
        left_out.sort();
    }
    let list = TopList {
        from: range.from.to_string(),
        to: range.to.to_string(),
        days: now.days,
        packages: now.len() as u64,
        downloads: now.total(),
        top: now.top(limit),
        before_from: prior.map(|r| r.from.to_string()),
        before_to: prior.map(|r| r.to.to_string()),
        before_days: then.as_ref().map_or(0, |t| t.days),
        trending: then.map_or_else(Vec::new, |t| now.trending(&t, limit)),
        rule: TopList::rule(),
        without: without.names().into_iter().map(str::to_owned).collect(),
        days_without_filters: left_out,
    };
    Ok(app
        .insight
        .top
        .insert_at(epoch, key, Body::json(&list, REVALIDATE))
        .respond(req.headers()))
}

/// `GET /api/calendar`: the span of the logs and every stored day's downloads.
pub async fn calendar(State(app): State<Arc<App>>, req: Request) -> Result<Response, ApiError> {
    let today = Day::yesterday();
    if let Some(body) = app.insight.calendar.get(&today) {
        return Ok(body.respond(req.headers()));
    }
    let epoch = app.insight.calendar.epoch();
    let c = app
        .db
        .read(|s| Ok(s.calendar()?))
        .await
        .map_err(ApiError::internal)?;
    Ok(app
        .insight
        .calendar
        .insert_at(epoch, today, Body::json(&c, REVALIDATE))
        .respond(req.headers()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn package_lists_are_checked() {
        assert_eq!(names_of("a,b").unwrap(), ["a", "b"]);
        for bad in ["a,,b", "a,b,a", "", "1,2,3,4,5,6,7,8,9"] {
            assert!(names_of(bad).is_err(), "{bad}");
        }
        assert_eq!(bin_of(Some("bin=week")).unwrap(), Bin::Week);
        assert!(bin_of(Some("bin=weeks")).is_err());
        assert!(cumulative_of(Some("cumulative=true")).unwrap());
        assert!(cumulative_of(Some("cumulative=1")).is_err());
        let r = Range::parse(Some("2015-01-08"), Some("2015-01-14")).unwrap();
        let b = before(r).unwrap();
        assert_eq!(
            (b.from.to_string(), b.to.to_string()),
            ("2015-01-01".into(), "2015-01-07".into())
        );
        assert!(before(Range::parse(None, Some("2015-01-01")).unwrap()).is_none());
    }
}
