//! The one error shape of the API: a status code and `{"error": "..."}`.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

/// Most characters of a request's input an error message echoes.
const SHOWN: usize = 40;

/// Input from a request (a query value, a path part) as an error message echoes it: control
/// characters escaped (`\x1b`, as the CLI and the logs print them) and cut after [`SHOWN`]
/// characters with the input's size (`…(5000 bytes)`). The one way every handler quotes what it
/// refuses: a client that prints an error must not print an escape sequence it was sent, nor a
/// 5,000-character parameter.
pub fn shown(input: &str) -> String {
    grammar::echo::echo(input.as_bytes(), SHOWN)
}

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
        tracing::error!("store: {}", grammar::echo::Escaped(&format!("{e:#}")));
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

/// 405 for a method a route does not take (every route is GET, and HEAD with it), in the envelope
/// like every other error, with `Allow`.
pub async fn method_not_allowed(method: axum::http::Method, uri: axum::http::Uri) -> Response {
    let mut resp = ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        format!(
            "{method} {}: only GET and HEAD are served",
            clip(uri.path())
        ),
    )
    .into_response();
    resp.headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
    resp
}

/// At most 60 characters of a path in a message.
fn clip(s: &str) -> String {
    if s.chars().count() > 60 {
        format!("{}…", s.chars().take(60).collect::<String>())
    } else {
        s.to_owned()
    }
}
