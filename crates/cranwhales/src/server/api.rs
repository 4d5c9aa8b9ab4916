//! The JSON API under `/api`. A stored day's summary changes only when the day is re-ingested, so
//! each is built once and served from memory until `watch` (or this server's own fetch) drops it;
//! days that are not stored are fetched on demand (see `fetch`).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::rejection::PathRejection;
use axum::extract::{ConnectInfo, Path, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};

use super::cache::{Body, REVALIDATE};
use super::error::{shown, ApiError};
use super::fetch::{Lookup, Status};
use super::wire::{DayList, Fetching};
use super::App;
use crate::date::Day;

/// Largest `count` the API accepts (the UI's "top N" input has the same range).
pub const MAX_COUNT: u32 = 25;
/// `count` when the query has none.
pub const DEFAULT_COUNT: u32 = 6;

/// `GET /api/days`: stored days with totals, how fresh they are, and the follower's status.
pub async fn days(State(app): State<Arc<App>>, headers: HeaderMap) -> Result<Response, ApiError> {
    if let Some(body) = app.days.get(&()) {
        return Ok(body.respond(&headers));
    }
    let epoch = app.days.epoch();
    let (days, ingested_at) = app
        .db
        .read(|s| Ok((s.days()?, s.newest_ingested_at()?)))
        .await
        .map_err(ApiError::internal)?;
    let list = DayList {
        days,
        ingested_at,
        follow: app.follow.status(),
    };
    Ok(app
        .days
        .insert_at(epoch, (), Body::json(&list, REVALIDATE))
        .respond(&headers))
}

/// `GET /api/days/{date}?count=N`: the day's summary, or 202 while it is fetched.
///
/// The hot path of the whole app: it borrows the request's headers and query instead of
/// extracting copies.
pub async fn day(
    State(app): State<Arc<App>>,
    date: Result<Path<String>, PathRejection>,
    req: Request,
) -> Result<Response, ApiError> {
    let day = parse_day(date)?;
    let count = parse_count(req.uri().query())?;
    let headers = req.headers();
    if let Some(body) = app.summaries.get(&(day, count)) {
        return Ok(body.respond(headers));
    }
    if app.fetcher.is_known(day) {
        if let Some(resp) = summary(&app, day, count, headers).await? {
            return Ok(resp);
        }
    }
    let ip = req
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0.ip());
    let limiter = app.limiter.clone();
    let mut retry_after = 60;
    let admit = || match ip {
        None => Ok(()),
        Some(ip) => limiter.check(ip).map_err(|wait| {
            retry_after = wait.as_secs().max(1);
            (
                429,
                format!("too many new days fetched from {ip}: try again in {retry_after}s"),
            )
        }),
    };
    let lookup = app.fetcher.lookup(day, admit).await;
    match lookup {
        Lookup::Stored => match summary(&app, day, count, headers).await? {
            Some(resp) => Ok(resp),
            None => Err(ApiError::new(
                StatusCode::NOT_FOUND,
                format!("{day} is not in the store"),
            )),
        },
        Lookup::Fetching(flight) => {
            let progress = format!("/api/days/{day}/progress");
            let current = flight.subscribe().borrow().clone();
            let body = Fetching {
                status: "fetching",
                date: day.to_string(),
                progress: progress.clone(),
                current,
            };
            let mut resp = (StatusCode::ACCEPTED, axum::Json(body)).into_response();
            resp.headers_mut().insert(
                header::LOCATION,
                HeaderValue::from_str(&progress).expect("ascii"),
            );
            resp.headers_mut()
                .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
            Ok(resp)
        }
        Lookup::Unavailable(status, msg) => {
            let code = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            let mut err = ApiError::new(code, msg);
            if status == 429 {
                err = err.retry_after(retry_after);
            }
            Err(err)
        }
    }
}

/// Builds (once) and sends a stored day's summary; `None` when the store has no such day.
async fn summary(
    app: &Arc<App>,
    day: Day,
    count: u32,
    headers: &HeaderMap,
) -> Result<Option<Response>, ApiError> {
    let date = day.to_string();
    let epoch = app.summaries.epoch();
    let found = app
        .db
        .read(move |s| Ok(s.day_summary(&date, count)?))
        .await
        .map_err(ApiError::internal)?;
    Ok(found.map(|s| {
        app.summaries
            .insert_at(epoch, (day, count), Body::json(&s, REVALIDATE))
            .respond(headers)
    }))
}

/// `GET /api/days/{date}/whales/{ip_id}`: one whale and all its downloads.
pub async fn whale(
    State(app): State<Arc<App>>,
    params: Result<Path<(String, String)>, PathRejection>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let Path((date, ip)) = params.map_err(|e| ApiError::bad_request(format!("bad path: {e}")))?;
    let day = parse_day(Ok(Path(date)))?;
    let ip_id: u64 = ip.parse().map_err(|_| {
        ApiError::bad_request(format!(
            "ip_id must be a whole number, got '{}'",
            shown(&ip)
        ))
    })?;
    if let Some(body) = app.whales.get(&(day, ip_id)) {
        return Ok(body.respond(&headers));
    }
    let date = day.to_string();
    let epoch = app.whales.epoch();
    let found = app
        .db
        .read(move |s| Ok(s.whale_detail(&date, ip_id)?))
        .await
        .map_err(ApiError::internal)?;
    match found {
        Some(w) => Ok(app
            .whales
            .insert_at(epoch, (day, ip_id), Body::json(&w, REVALIDATE))
            .respond(&headers)),
        None if app.fetcher.is_known(day) => Err(ApiError::new(
            StatusCode::NOT_FOUND,
            format!("ip_id {ip_id} is not among the top downloaders of {day}"),
        )),
        None => Err(ApiError::new(
            StatusCode::NOT_FOUND,
            format!("{day} is not ingested; GET /api/days/{day} fetches it"),
        )),
    }
}

/// `GET /api/days/{date}/progress`: Server-Sent Events with the fetch's phases until done or failed.
pub async fn progress(
    State(app): State<Arc<App>>,
    date: Result<Path<String>, PathRejection>,
) -> Result<Response, ApiError> {
    let day = parse_day(date)?;
    let rx = match app.fetcher.flight(day) {
        Some(f) => f.subscribe(),
        None => {
            let status = if app.fetcher.is_known(day) {
                Status::Done { rows: 0 }
            } else if let Some(failed) = app.fetcher.recent_failure(day) {
                failed
            } else {
                return Err(ApiError::new(
                    StatusCode::NOT_FOUND,
                    format!("no fetch of {day} is running; GET /api/days/{day} starts one"),
                ));
            };
            tokio::sync::watch::channel(status).1
        }
    };
    // One event per change, at most ten a second; ends after the final status.
    let stream =
        futures_util::stream::unfold((rx, true, false), |(mut rx, first, ended)| async move {
            if ended {
                return None;
            }
            if !first {
                tokio::time::sleep(Duration::from_millis(100)).await;
                if rx.changed().await.is_err() {
                    return None;
                }
            }
            let status = rx.borrow_and_update().clone();
            let fin = status.is_final();
            Some((
                Ok::<_, Infallible>(SseEvent::default().data(status.to_json())),
                (rx, false, fin),
            ))
        });
    let mut resp = Sse::new(stream)
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(10)))
        .into_response();
    resp.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(resp)
}

/// Any other `/api` path.
pub async fn not_found() -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "no such API endpoint (see /api/days)".into(),
    )
}

fn parse_day(date: Result<Path<String>, PathRejection>) -> Result<Day, ApiError> {
    let Path(date) = date.map_err(|e| ApiError::bad_request(format!("bad path: {e}")))?;
    Day::parse(&date).ok_or_else(|| {
        ApiError::bad_request(format!(
            "date must be a real day as YYYY-MM-DD, got '{}'",
            shown(&date)
        ))
    })
}

fn parse_count(query: Option<&str>) -> Result<u32, ApiError> {
    let Some(v) = super::insight::param(query, "count") else {
        return Ok(DEFAULT_COUNT);
    };
    v.parse::<u32>()
        .ok()
        .filter(|n| (1..=MAX_COUNT).contains(n))
        .ok_or_else(|| {
            ApiError::bad_request(format!(
                "count must be a whole number from 1 to {MAX_COUNT}, got '{}'",
                shown(&v)
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn count_parsing() {
        assert_eq!(parse_count(None).unwrap(), 6);
        assert_eq!(parse_count(Some("count=25")).unwrap(), 25);
        assert_eq!(parse_count(Some("count=%31%32")).unwrap(), 12);
        assert_eq!(parse_count(Some("x=1&count=1")).unwrap(), 1);
        for bad in [
            "count=0",
            "count=26",
            "count=abc",
            "count=",
            "count=-1",
            "count=99999999999999999999999",
            "count=1.5",
        ] {
            assert!(parse_count(Some(bad)).is_err(), "{bad}");
        }
    }
}
