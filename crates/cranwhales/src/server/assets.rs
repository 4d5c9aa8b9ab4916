//! The web UI (web/dist) embedded in the binary. Every file is loaded and gzipped once at start;
//! lookups are exact matches on the embedded names, so no request path can reach the filesystem.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{Html, IntoResponse, Response};
use rust_embed::RustEmbed;

use super::cache::{Body, IMMUTABLE, REVALIDATE};
use super::error::ApiError;
use super::App;

#[derive(RustEmbed)]
#[folder = "$CARGO_MANIFEST_DIR/../../web/dist"]
struct Dist;

/// The UI's files by URL path (`/`, `/assets/index-abc123.js`, ...).
pub struct Assets {
    files: HashMap<String, Arc<Body>>,
}

impl Assets {
    /// Loads and compresses every embedded file.
    pub fn load() -> Assets {
        let mut files = HashMap::new();
        for name in Dist::iter() {
            let Some(file) = Dist::get(&name) else {
                continue;
            };
            // Vite puts a content hash in every name under assets/: those never change.
            let cache = if name.starts_with("assets/") {
                IMMUTABLE
            } else {
                REVALIDATE
            };
            let body = Arc::new(Body::new(
                file.data.into_owned(),
                content_type(&name),
                cache,
            ));
            if name == "index.html" {
                files.insert("/".to_owned(), body.clone());
            }
            files.insert(format!("/{name}"), body);
        }
        Assets { files }
    }

    /// Whether the UI was built into this binary.
    pub fn has_ui(&self) -> bool {
        self.files.contains_key("/")
    }
}

fn content_type(name: &str) -> &'static str {
    match name.rsplit('.').next().unwrap_or("") {
        "html" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "json" => "application/json",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "ico" => "image/x-icon",
        "woff2" => "font/woff2",
        "txt" => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

/// Fallback handler: an embedded file, or 404.
pub async fn serve(
    State(app): State<Arc<App>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    if method != Method::GET && method != Method::HEAD {
        return super::error::method_not_allowed(method, uri).await;
    }
    match app.assets.files.get(uri.path()) {
        Some(body) => body.respond(&headers),
        None if uri.path() == "/" => Html(
            "<!doctype html><title>CRAN whales</title><p>The web UI is not built into this binary: \
             run <code>make web</code> (or <code>make demo</code>) and rebuild. The API is at \
             <a href=\"/api/days\">/api/days</a>.",
        )
        .into_response(),
        None => ApiError::new(StatusCode::NOT_FOUND, "no such file (the UI is at /)".into())
            .into_response(),
    }
}
