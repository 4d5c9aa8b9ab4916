//! Who downloads a package (issue 34): `/api/packages/{pkg}/breakdown` (by version, country,
//! OS, R version or arch; with `step=` also per day, week, month or year, for a chart over
//! time), `/api/packages/{pkg}/releases` (each version's first day and shares) and
//! `/api/packages/{pkg}/kinds` (whales, small, repeats and the rest, adding up to the raw
//! count). Each is read from the store once (a rowid seek per stored day) and kept in memory
//! (`Insight::who`) until a day is added or replaced, when every cross-day answer is dropped.

use std::sync::Arc;

use axum::extract::rejection::PathRejection;
use axum::extract::{Path, Request, State};
use axum::http::HeaderMap;
use axum::response::Response;
use serde::Serialize;

use super::cache::{Body, REVALIDATE};
use super::error::{shown, ApiError};
use super::insight::{param, range_of, unknown_package, whales_of};
use super::App;
use crate::date::{Day, Range};
use crate::day::breakdown::Without;
use crate::store::breakdown::{BreakdownReport, By, KeyRow};
use crate::store::Store;
use crate::summary::Bin;

/// Bins one `step=` answer holds at most (a week over the whole history is ~750).
pub const MAX_BINS: usize = 1_000;

fn by_of(query: Option<&str>) -> Result<By, ApiError> {
    let Some(v) = param(query, "by") else {
        return Err(ApiError::bad_request(
            "by is required: version, country, os, r_version or arch".to_owned(),
        ));
    };
    By::parse(&v).ok_or_else(|| {
        ApiError::bad_request(format!(
            "by must be version, country, os, r_version or arch, got '{}'",
            shown(&v)
        ))
    })
}

/// `without`: any of `whales`, `small`, `repeats`, comma-separated (each counted per key).
pub(super) fn without_of(query: Option<&str>) -> Result<Without, ApiError> {
    let v = param(query, "without").unwrap_or_default();
    Without::parse(&v).ok_or_else(|| {
        ApiError::bad_request(format!(
            "without must be whales, small or repeats (comma-separated), got '{}'",
            shown(&v)
        ))
    })
}

/// `step`: none (one breakdown of the range) or `day|week|month|year`.
fn step_of(query: Option<&str>) -> Result<Option<Bin>, ApiError> {
    match param(query, "step") {
        None => Ok(None),
        Some(v) => Bin::parse(&v).map(Some).ok_or_else(|| {
            ApiError::bad_request(format!(
                "step must be day, week, month or year, got '{}'",
                shown(&v)
            ))
        }),
    }
}

/// One bin of a `step=` answer: its days in the range, how many are counted, its keys.
#[derive(Debug, Serialize)]
pub struct StepRows {
    /// First day of the bin inside the range.
    pub from: String,
    /// Last day of the bin inside the range.
    pub to: String,
    /// Days of the bin inside the range (what "fully stored" means: `days == span`).
    pub span: u64,
    /// Stored days of the bin counted (with breakdowns).
    pub days: u64,
    /// Every key with downloads in the bin, most first.
    pub rows: Vec<KeyRow>,
}

/// `breakdown?step=`: the range's breakdown and the same per bin, bins without a stored day
/// left out (a gap, never a zero).
#[derive(Debug, Serialize)]
pub struct Steps {
    /// The breakdown over the whole range (as without `step`).
    #[serde(flatten)]
    pub range: BreakdownReport,
    /// `day`, `week`, `month` or `year`.
    pub step: Bin,
    /// The bins with at least one stored day, in date order.
    pub bins: Vec<StepRows>,
}

/// The bins of `range` by `step` (ISO weeks from Monday, calendar months and years), each cut to
/// the range.
pub fn bins_of(range: Range, step: Bin) -> Vec<Range> {
    let end_of = |d: Day| match step {
        Bin::Day => d,
        Bin::Week => d.week_start().plus(6),
        Bin::Month => Day::month_start(d.month() + 1).plus(-1),
        Bin::Year => Day::month_start(d.month() - d.month().rem_euclid(12) + 12).plus(-1),
    };
    let mut out = Vec::new();
    let mut from = range.from;
    while from <= range.to {
        let to = end_of(from).min(range.to);
        out.push(Range { from, to });
        from = to.plus(1);
    }
    out
}

/// The range's breakdown and, with a step, each bin's: `None` for a package never stored.
fn steps(
    s: &Store,
    package: &str,
    range: Range,
    by: By,
    without: Without,
    step: Bin,
) -> crate::store::Result<Option<Steps>> {
    let Some(whole) = s.breakdown(package, range, by, without)? else {
        return Ok(None);
    };
    let mut bins = Vec::new();
    for bin in bins_of(range, step) {
        let Some(r) = s.breakdown(package, bin, by, without)? else {
            continue;
        };
        if r.days == 0 {
            continue;
        }
        bins.push(StepRows {
            from: bin.from.to_string(),
            to: bin.to.to_string(),
            span: (bin.from.days_until(bin.to) + 1) as u64,
            days: r.days,
            rows: r.rows,
        });
    }
    Ok(Some(Steps {
        range: whole,
        step,
        bins,
    }))
}

/// What every handler here does: send `package`'s answer from memory, or read it on a
/// blocking thread, keep it (under `what`: the endpoint and its parsed parameters) and send it
/// as JSON; a 404 naming a near name when the package was never stored.
async fn answer<T, F>(
    app: Arc<App>,
    name: Result<Path<String>, PathRejection>,
    headers: &HeaderMap,
    what: String,
    read: F,
) -> Result<Response, ApiError>
where
    T: Serialize + Send + 'static,
    F: FnOnce(&Store, &str) -> crate::store::Result<Option<T>> + Send + 'static,
{
    let Path(name) = name.map_err(|e| ApiError::bad_request(format!("bad path: {e}")))?;
    let key = (name.clone(), what);
    if let Some(body) = app.insight.who.get(&key) {
        return Ok(body.respond(headers));
    }
    let epoch = app.insight.who.epoch();
    let asked = name.clone();
    let report = (app.db)
        .read(move |s| Ok(read(s, &asked)?))
        .await
        .map_err(ApiError::internal)?;
    match report {
        Some(r) => {
            let body = Body::json(&r, REVALIDATE);
            Ok(app.insight.who.insert_at(epoch, key, body).respond(headers))
        }
        None => Err(unknown_package(&app, &name).await),
    }
}

/// `GET /api/packages/{pkg}/breakdown?by=&from=&to=&without=whales,small,repeats&step=`.
pub async fn breakdown(
    State(app): State<Arc<App>>,
    name: Result<Path<String>, PathRejection>,
    req: Request,
) -> Result<Response, ApiError> {
    let query = req.uri().query();
    let (range, by, without) = (range_of(query)?, by_of(query)?, without_of(query)?);
    match step_of(query)? {
        None => {
            let what = format!("breakdown {range:?} {by:?} {without:?}");
            answer(app, name, req.headers(), what, move |s, p| {
                s.breakdown(p, range, by, without)
            })
            .await
        }
        Some(step) => {
            let n = bins_of(range, step).len();
            if n > MAX_BINS {
                return Err(ApiError::bad_request(format!(
                    "step: {n} bins from {} to {}, at most {MAX_BINS}: a longer step or a \
                     shorter range",
                    range.from, range.to
                )));
            }
            let what = format!("breakdown {range:?} {by:?} {without:?} {step:?}");
            answer(app, name, req.headers(), what, move |s, p| {
                steps(s, p, range, by, without, step)
            })
            .await
        }
    }
}

/// `GET /api/packages/{pkg}/releases`.
pub async fn releases(
    State(app): State<Arc<App>>,
    name: Result<Path<String>, PathRejection>,
    req: Request,
) -> Result<Response, ApiError> {
    let what = "releases".to_owned();
    answer(app, name, req.headers(), what, |s, p| s.releases(p)).await
}

/// `GET /api/packages/{pkg}/kinds?from=&to=&whales=N`.
pub async fn kinds(
    State(app): State<Arc<App>>,
    name: Result<Path<String>, PathRejection>,
    req: Request,
) -> Result<Response, ApiError> {
    let query = req.uri().query();
    let (range, whales) = (range_of(query)?, whales_of(query)?);
    let what = format!("kinds {range:?} {whales}");
    answer(app, name, req.headers(), what, move |s, p| {
        s.kinds(p, range, whales)
    })
    .await
}
