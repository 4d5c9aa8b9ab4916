//! `/api/packages?q=` and `/api/trends`, and the caches of every answer across the stored days
//! (the package, top, calendar and badge answers of `context` and `badge` too). Each body is built once
//! from the precomputed tables (a primary-key seek per stored day, or a range of `days`) and served
//! from memory until a day is added or replaced (by this server's fetches or, seen by `watch`, by
//! another process), when these caches are dropped (`Insight::invalidate`).

use std::sync::{Arc, Mutex, RwLock};

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::Response;

use super::cache::{Body, Cache, REVALIDATE};
use super::error::{shown, ApiError};
use super::App;
use crate::context::RangeTotals;
use crate::date::{Day, Range};
use crate::day::breakdown::Without;
use crate::day::TOP;
use crate::summary::{Bin, PackageName};
use grammar::echo::Escaped;

/// `whales` when the query has none (the UI's default "top N").
pub const DEFAULT_WHALES: u32 = 6;
/// Suggestions at most per request.
const MAX_SUGGESTIONS: usize = 50;

/// Every stored package name with its downloads, by lowercased name.
type Names = Arc<Vec<(String, PackageName)>>;

/// What a package answer depends on: the names as asked (`a,b,c`), the range, N, the bin,
/// whether counts are running sums, and what its rank leaves out.
pub(super) type PackagesKey = (String, Range, u32, Bin, bool, Without);

/// Every package's downloads over a range (without the kinds asked), kept for the last few
/// asked.
type TotalsCache = Mutex<Vec<((Range, Without), Arc<RangeTotals>)>>;

/// Ranges whose totals are kept (each ~0.5 MB at 15,000 packages).
const KEPT_TOTALS: usize = 8;

/// The caches of the cross-day answers.
pub struct Insight {
    /// Package reports and comparisons.
    pub(super) packages: Cache<PackagesKey>,
    trends: Cache<Range>,
    /// Top and trending lists by (range, limit, what they leave out).
    pub(super) top: Cache<(Range, usize, Without)>,
    /// The calendar, by the day it was built for (its `last` is yesterday).
    pub(super) calendar: Cache<Day>,
    /// Badges by (package, period, without whales).
    pub(super) badges: Cache<(String, &'static str, bool)>,
    /// A package's breakdowns, releases and kinds, by (package, the endpoint and its parsed
    /// parameters): over all days each reads a blob per stored day (~0.1-0.3 s on 5,200 days).
    pub(super) who: Cache<(String, String)>,
    totals: TotalsCache,
    /// Every stored package name with its downloads, sorted by lowercased name; built on first
    /// use after each change of the stored days.
    names: RwLock<Option<Names>>,
}

impl Insight {
    pub fn new() -> Insight {
        Insight {
            packages: Cache::new(64 << 20),
            trends: Cache::new(8 << 20),
            top: Cache::new(8 << 20),
            calendar: Cache::new(4 << 20),
            badges: Cache::new(4 << 20),
            who: Cache::new(16 << 20),
            totals: Mutex::new(Vec::new()),
            names: RwLock::new(None),
        }
    }

    /// A day was added or replaced: every cross-day answer may change.
    pub fn invalidate(&self) {
        self.packages.clear();
        self.trends.clear();
        self.top.clear();
        self.calendar.clear();
        self.badges.clear();
        self.who.clear();
        self.totals
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
        *self.names.write().unwrap_or_else(|e| e.into_inner()) = None;
    }
}

/// The query's value of `key` (the last one wins), percent-decoded: the one query reader of the
/// API (`count`, `from`, `to`, `q`, ... alike).
pub(super) fn param(query: Option<&str>, key: &str) -> Option<String> {
    let mut found = None;
    for pair in query.unwrap_or("").split('&') {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        if k == key {
            found = Some(decode(v));
        }
    }
    found
}

/// `%XX` and `+` decoding of a query value (an invalid escape is kept as it is).
fn decode(v: &str) -> String {
    let b = v.as_bytes();
    let hex = |c: u8| (c as char).to_digit(16);
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < b.len() => match (hex(b[i + 1]), hex(b[i + 2])) {
                (Some(h), Some(l)) => {
                    out.push((h * 16 + l) as u8);
                    i += 2;
                }
                _ => out.push(b'%'),
            },
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

pub(super) fn range_of(query: Option<&str>) -> Result<Range, ApiError> {
    let (from, to) = (param(query, "from"), param(query, "to"));
    Range::parse(from.as_deref(), to.as_deref()).map_err(|e| ApiError::bad_request(e.to_string()))
}

pub(super) fn whales_of(query: Option<&str>) -> Result<u32, ApiError> {
    let Some(v) = param(query, "whales") else {
        return Ok(DEFAULT_WHALES);
    };
    v.parse::<u32>()
        .ok()
        .filter(|n| (1..=TOP as u32).contains(n))
        .ok_or_else(|| {
            ApiError::bad_request(format!(
                "whales must be a whole number from 1 to {TOP}, got '{}'",
                shown(&v)
            ))
        })
}

/// 404 for a package not downloaded on any stored day, with "did you mean" from the in-memory
/// names (no table scan for a mistyped name).
pub(super) async fn unknown_package(app: &Arc<App>, name: &str) -> ApiError {
    let names = match names(app).await {
        Ok(n) => n,
        Err(e) => return e,
    };
    let lower = name.to_lowercase();
    let like = names
        .binary_search_by(|(l, _)| l.as_str().cmp(&lower))
        .ok()
        .map(|i| names[i].1.package.clone());
    let hint = like.map_or(String::new(), |p| {
        format!(" (did you mean '{}'?)", Escaped(&p))
    });
    ApiError::new(
        StatusCode::NOT_FOUND,
        format!(
            "package '{}' was not downloaded on any stored day{hint}",
            shown(name)
        ),
    )
}

/// Every package's downloads over `range` without the kinds `without` names: from memory, or
/// read once (one pass over the range's rows) and kept unless a day came meanwhile.
pub(super) async fn totals(
    app: &Arc<App>,
    range: Range,
    without: Without,
) -> Result<Arc<RangeTotals>, ApiError> {
    let key = (range, without);
    let kept = |t: &TotalsCache| {
        let t = t.lock().unwrap_or_else(|e| e.into_inner());
        t.iter().find(|(k, _)| *k == key).map(|(_, v)| v.clone())
    };
    if let Some(t) = kept(&app.insight.totals) {
        return Ok(t);
    }
    let epoch = app.insight.packages.epoch();
    let read = app
        .db
        .read(move |s| Ok(s.filtered_totals(range, without)?))
        .await
        .map_err(ApiError::internal)?;
    let read = Arc::new(read);
    let mut t = app.insight.totals.lock().unwrap_or_else(|e| e.into_inner());
    if app.insight.packages.epoch() == epoch {
        t.retain(|(k, _)| *k != key);
        if t.len() >= KEPT_TOTALS {
            t.remove(0);
        }
        t.push((key, read.clone()));
    }
    Ok(read)
}

/// `GET /api/packages?q=PREFIX&limit=N`: stored package names starting with `PREFIX` (ignoring
/// case), most downloaded first.
pub async fn suggest(State(app): State<Arc<App>>, req: Request) -> Result<Response, ApiError> {
    let query = req.uri().query();
    let q = param(query, "q").unwrap_or_default().to_lowercase();
    let limit = match param(query, "limit") {
        None => 10,
        Some(v) => v
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=MAX_SUGGESTIONS).contains(n))
            .ok_or_else(|| {
                ApiError::bad_request(format!(
                    "limit must be a whole number from 1 to {MAX_SUGGESTIONS}, got '{}'",
                    shown(&v)
                ))
            })?,
    };
    let names = names(&app).await?;
    let start = names.partition_point(|(lower, _)| lower.as_str() < q.as_str());
    let mut found: Vec<&PackageName> = names[start..]
        .iter()
        .take_while(|(lower, _)| lower.starts_with(&q))
        .map(|(_, p)| p)
        .collect();
    found.sort_by(|a, b| {
        b.downloads
            .cmp(&a.downloads)
            .then(a.package.cmp(&b.package))
    });
    found.truncate(limit);
    Ok(Body::json(&found, REVALIDATE).respond(req.headers()))
}

async fn names(app: &Arc<App>) -> Result<Names, ApiError> {
    if let Some(n) = app
        .insight
        .names
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .clone()
    {
        return Ok(n);
    }
    let epoch = app.insight.packages.epoch();
    let mut all = app
        .db
        .read(|s| Ok(s.package_names()?))
        .await
        .map_err(ApiError::internal)?
        .into_iter()
        .map(|p| (p.package.to_lowercase(), p))
        .collect::<Vec<_>>();
    all.sort_by(|a, b| a.0.cmp(&b.0));
    let all = Arc::new(all);
    let mut names = app.insight.names.write().unwrap_or_else(|e| e.into_inner());
    // Kept only if no day came since the read began (`invalidate` moves the epoch first).
    if app.insight.packages.epoch() == epoch {
        *names = Some(all.clone());
    }
    Ok(all)
}

/// `GET /api/trends?from=&to=`.
pub async fn trends(State(app): State<Arc<App>>, req: Request) -> Result<Response, ApiError> {
    let range = range_of(req.uri().query())?;
    let headers = req.headers();
    if let Some(body) = app.insight.trends.get(&range) {
        return Ok(body.respond(headers));
    }
    let epoch = app.insight.trends.epoch();
    let t = app
        .db
        .read(move |s| Ok(s.trends(range)?))
        .await
        .map_err(ApiError::internal)?;
    Ok(app
        .insight
        .trends
        .insert_at(epoch, range, Body::json(&t, REVALIDATE))
        .respond(headers))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_values_are_decoded() {
        assert_eq!(
            param(Some("q=gg%2Bplot&x=1"), "q").as_deref(),
            Some("gg+plot")
        );
        assert_eq!(param(Some("q=a+b&q=c"), "q").as_deref(), Some("c"));
        assert_eq!(param(Some("q=50%"), "q").as_deref(), Some("50%"));
        assert_eq!(param(Some("q=%zz"), "q").as_deref(), Some("%zz"));
        assert_eq!(param(None, "q"), None);
    }
}
