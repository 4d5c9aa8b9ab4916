//! The one error shape of the API: a status code and `{"error": "..."}`.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

/// An API failure as the client sees it.
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    message: String,
    retry_after: Option<u64>,
}

impl ApiError {
    /// An error with this status and one-line message.
    pub fn new(status: StatusCode, message: String) -> Self {
        ApiError {
            status,
            message,
            retry_after: None,
        }
    }

    /// 400 for malformed input.
    pub fn bad_request(message: String) -> Self {
        ApiError::new(StatusCode::BAD_REQUEST, message)
    }

    /// 500 for a store failure (logged; the message stays short).
    pub fn internal(e: anyhow::Error) -> Self {
        tracing::error!("store: {e:#}");
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("store error: {e}"),
        )
    }

    /// Adds `Retry-After` (429).
    pub fn retry_after(mut self, secs: u64) -> Self {
        self.retry_after = Some(secs);
        self
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut resp = (
            self.status,
            axum::Json(super::wire::ErrorBody {
                error: self.message,
            }),
        )
            .into_response();
        resp.headers_mut()
            .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        if let Some(s) = self.retry_after {
            resp.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(s));
        }
        resp
    }
}

/// Makes sure an error response (400–599) carries the `{"error": …}` envelope: responses built
/// elsewhere (the framework's 405, a bare status) get one that names the status.
pub async fn envelope(req: axum::extract::Request, next: axum::middleware::Next) -> Response {
    let (method, uri) = (req.method().clone(), req.uri().clone());
    let resp = next.run(req).await;
    let status = resp.status();
    let is_json = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    if !(status.is_client_error() || status.is_server_error()) || is_json {
        return resp;
    }
    let reason = status.canonical_reason().unwrap_or("error").to_lowercase();
    let mut out =
        ApiError::new(status, format!("{method} {}: {reason}", clip(uri.path()))).into_response();
    for name in [header::ALLOW, header::RETRY_AFTER] {
        if let Some(v) = resp.headers().get(&name) {
            out.headers_mut().insert(name, v.clone());
        }
    }
    out
}

/// At most 60 characters of a path in a message.
fn clip(s: &str) -> String {
    if s.chars().count() > 60 {
        format!("{}…", s.chars().take(60).collect::<String>())
    } else {
        s.to_owned()
    }
}
