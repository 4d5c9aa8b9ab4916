//! Several apps on one port: the request's path prefix picks the app (longest match), the prefix
//! is removed before the app's proxy sees the request (so a Shiny app's relative assets and
//! WebSocket work under it), and `/__manifold__/status` and `/metrics` cover every app (JSON
//! `apps.<name>`, Prometheus label `app`). With one app the router is a pass-through.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{self, HeaderValue};
use hyper::{Request, Response, StatusCode};

use crate::proxy::{plain, Proxy, ProxyBody};

/// One mounted app.
pub struct Route {
    /// Its name (metrics label, status key).
    pub name: String,
    /// Its prefix, starting and ending with `/`.
    pub prefix: String,
    /// Its proxy (and through it, its pool).
    pub proxy: Arc<Proxy>,
}

/// The apps of this host.
pub struct Router {
    routes: Vec<Route>,
}

impl Router {
    /// A router over `routes` (a single route at `/` passes everything through).
    pub fn new(mut routes: Vec<Route>) -> Router {
        // Longest prefix first, so /a/b/ wins over /a/.
        routes.sort_by_key(|r| std::cmp::Reverse(r.prefix.len()));
        Router { routes }
    }

    /// Answers one request: status views, a redirect to `prefix/`, or the app's proxy.
    pub async fn handle(
        &self,
        mut req: Request<Incoming>,
        client: SocketAddr,
    ) -> Response<ProxyBody> {
        if self.routes.len() == 1 && self.routes[0].prefix == "/" {
            return self.routes[0].proxy.handle(req, client).await;
        }
        let path = req.uri().path().to_string();
        match path.as_str() {
            "/__manifold__/status" => return self.status(),
            "/__manifold__/metrics" => return self.metrics(),
            _ => {}
        }
        let Some(route) = self.routes.iter().find(|r| path.starts_with(&r.prefix)) else {
            if let Some(r) = self.routes.iter().find(|r| format!("{path}/") == r.prefix) {
                // `/sales` → `/sales/`: relative URLs in the app's page need the slash.
                let mut resp = plain(StatusCode::MOVED_PERMANENTLY, format!("see {}\n", r.prefix));
                resp.headers_mut().insert(
                    header::LOCATION,
                    HeaderValue::from_str(&r.prefix).expect("prefix is a header value"),
                );
                return resp;
            }
            return plain(
                StatusCode::NOT_FOUND,
                "manifold: no app at this path\n".into(),
            );
        };
        let keep = route.prefix.len() - 1;
        let rest = req
            .uri()
            .path_and_query()
            .map_or("/", |pq| pq.as_str())
            .get(keep..)
            .unwrap_or("/")
            .to_string();
        *req.uri_mut() = rest
            .parse()
            .unwrap_or_else(|_| hyper::Uri::from_static("/"));
        if let Ok(v) = HeaderValue::from_str(&route.prefix[..keep]) {
            req.headers_mut().insert("x-forwarded-prefix", v);
        }
        route.proxy.handle(req, client).await
    }

    /// `{"draining": .., "apps": {name: status}}`; 404 while draining, as one app's status.
    fn status(&self) -> Response<ProxyBody> {
        let mut apps = BTreeMap::new();
        let mut draining = false;
        for r in &self.routes {
            let page = r.proxy.status_page(false);
            draining |= page.status == 404;
            let v: serde_json::Value = serde_json::from_slice(&page.body).expect("status is JSON");
            apps.insert(r.name.clone(), v);
        }
        let body =
            serde_json::to_vec_pretty(&serde_json::json!({ "draining": draining, "apps": apps }))
                .expect("serialises");
        respond(if draining { 404 } else { 200 }, body, "application/json")
    }

    /// Every app's metrics in one exposition: each family once, its samples labelled `app`.
    fn metrics(&self) -> Response<ProxyBody> {
        let texts: Vec<(String, String)> = self
            .routes
            .iter()
            .map(|r| {
                let page = r.proxy.status_page(true);
                (
                    r.name.clone(),
                    String::from_utf8_lossy(&page.body).into_owned(),
                )
            })
            .collect();
        respond(
            200,
            merge_metrics(&texts).into_bytes(),
            "text/plain; version=0.0.4",
        )
    }
}

fn respond(status: u16, body: Vec<u8>, content_type: &'static str) -> Response<ProxyBody> {
    let mut r = Response::new(Full::new(Bytes::from(body)).map_err(|n| match n {}).boxed());
    *r.status_mut() = StatusCode::from_u16(status).expect("status code");
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    r
}

/// Merges per-app Prometheus texts: families in first-seen order, HELP/TYPE once, every sample
/// given an `app` label unless it has one.
pub fn merge_metrics(texts: &[(String, String)]) -> String {
    let mut order: Vec<String> = Vec::new();
    let mut heads: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut samples: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (app, text) in texts {
        let mut family = String::new();
        for line in text.lines() {
            if let Some(rest) = line
                .strip_prefix("# HELP ")
                .or_else(|| line.strip_prefix("# TYPE "))
            {
                family = rest
                    .split_whitespace()
                    .next()
                    .unwrap_or_default()
                    .to_string();
                let h = heads.entry(family.clone()).or_default();
                if h.len() < 2 && !h.iter().any(|x| x == line) {
                    h.push(line.to_string());
                }
                if !order.contains(&family) {
                    order.push(family.clone());
                }
                continue;
            }
            let labelled = if line.contains("app=\"") {
                line.to_string()
            } else if let Some((name, rest)) = line.split_once('{') {
                format!("{name}{{app=\"{app}\",{rest}")
            } else if let Some((name, value)) = line.split_once(' ') {
                format!("{name}{{app=\"{app}\"}} {value}")
            } else {
                continue;
            };
            samples.entry(family.clone()).or_default().push(labelled);
        }
    }
    let mut out = String::new();
    for f in order {
        for l in heads
            .get(&f)
            .into_iter()
            .flatten()
            .chain(samples.get(&f).into_iter().flatten())
        {
            out.push_str(l);
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_once_samples_labelled() {
        let a =
            "# HELP x X\n# TYPE x gauge\nx 1\n# HELP y Y\n# TYPE y counter\ny{worker=\"1\"} 2\n";
        let b = "# HELP x X\n# TYPE x gauge\nx 3\n# HELP h H\n# TYPE h histogram\nh_count{app=\"b\",class=\"2xx\"} 4\n";
        let m = merge_metrics(&[("a".into(), a.into()), ("b".into(), b.into())]);
        assert_eq!(
            m,
            "# HELP x X\n# TYPE x gauge\nx{app=\"a\"} 1\nx{app=\"b\"} 3\n# HELP y Y\n# TYPE y counter\ny{app=\"a\",worker=\"1\"} 2\n# HELP h H\n# TYPE h histogram\nh_count{app=\"b\",class=\"2xx\"} 4\n"
        );
    }
}
