//! Who downloads a package (issue 34): `/api/packages/{pkg}/breakdown` (by version, country,
//! OS, R version or arch), `/api/packages/{pkg}/releases` (each version's first day and shares)
//! and `/api/packages/{pkg}/kinds` (whales, small, repeats and the rest, adding up to the raw
//! count). Each is read from the store per request (a rowid seek per stored day); nothing is
//! cached, so an answer never outlives a day's change.

use std::sync::Arc;

use axum::extract::rejection::PathRejection;
use axum::extract::{Path, Request, State};
use axum::response::Response;

use super::cache::{Body, REVALIDATE};
use super::error::ApiError;
use super::insight::{param, range_of, unknown_package, whales_of};
use super::App;
use crate::day::breakdown::Without;
use crate::store::breakdown::By;

/// At most 40 characters of user input, for messages.
fn shown(s: &str) -> String {
    s.chars().take(40).collect()
}

fn name_of(name: Result<Path<String>, PathRejection>) -> Result<String, ApiError> {
    let Path(name) = name.map_err(|e| ApiError::bad_request(format!("bad path: {e}")))?;
    Ok(name)
}

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
fn without_of(query: Option<&str>) -> Result<Without, ApiError> {
    let v = param(query, "without").unwrap_or_default();
    Without::parse(&v).ok_or_else(|| {
        ApiError::bad_request(format!(
            "without must be whales, small or repeats (comma-separated), got '{}'",
            shown(&v)
        ))
    })
}

/// `GET /api/packages/{pkg}/breakdown?by=&from=&to=&without=whales,small,repeats`.
pub async fn breakdown(
    State(app): State<Arc<App>>,
    name: Result<Path<String>, PathRejection>,
    req: Request,
) -> Result<Response, ApiError> {
    let name = name_of(name)?;
    let query = req.uri().query();
    let (range, by, without) = (range_of(query)?, by_of(query)?, without_of(query)?);
    let asked = name.clone();
    let report = (app.db)
        .read(move |s| Ok(s.breakdown(&asked, range, by, without)?))
        .await
        .map_err(ApiError::internal)?;
    match report {
        Some(r) => Ok(Body::json(&r, REVALIDATE).respond(req.headers())),
        None => Err(unknown_package(&app, &name).await),
    }
}

/// `GET /api/packages/{pkg}/releases`.
pub async fn releases(
    State(app): State<Arc<App>>,
    name: Result<Path<String>, PathRejection>,
    req: Request,
) -> Result<Response, ApiError> {
    let name = name_of(name)?;
    let asked = name.clone();
    let report = (app.db)
        .read(move |s| Ok(s.releases(&asked)?))
        .await
        .map_err(ApiError::internal)?;
    match report {
        Some(r) => Ok(Body::json(&r, REVALIDATE).respond(req.headers())),
        None => Err(unknown_package(&app, &name).await),
    }
}

/// `GET /api/packages/{pkg}/kinds?from=&to=&whales=N`.
pub async fn kinds(
    State(app): State<Arc<App>>,
    name: Result<Path<String>, PathRejection>,
    req: Request,
) -> Result<Response, ApiError> {
    let name = name_of(name)?;
    let query = req.uri().query();
    let (range, whales) = (range_of(query)?, whales_of(query)?);
    let asked = name.clone();
    let report = (app.db)
        .read(move |s| Ok(s.kinds(&asked, range, whales)?))
        .await
        .map_err(ApiError::internal)?;
    match report {
        Some(r) => Ok(Body::json(&r, REVALIDATE).respond(req.headers())),
        None => Err(unknown_package(&app, &name).await),
    }
}
