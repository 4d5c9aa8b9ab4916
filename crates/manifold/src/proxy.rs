//! Request handling: read the request body whole, pick a worker, forward the request, buffer
//! the answer back (or stream it), tunnel WebSockets.
//!
//! Invariant: this module never starts or stops processes; it only holds [`Lease`]s, and a lease
//! lives exactly as long as the worker is serving (until the worker has written its response,
//! the client has read a streamed one, or the WebSocket closes). A slow client never holds a
//! worker: its request body is read before a lease (`inbound`), and a buffered response is
//! taken from the worker at the worker's pace (`outbound`).
//!
//! Retries: a request goes once more to a worker, instead of a 502, when none of it reached a
//! worker: its worker refused the connection, or its kept-alive connection closed before any byte
//! of it was written (hyper hands the request back; see `retry::attempt`); and a GET or HEAD
//! without a body that got no byte of an answer: on a kept-alive connection to the same worker
//! over a new one (it usually just closed an idle connection), else to another worker
//! (`retry::send_retrying`).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{self, HeaderMap, HeaderName, HeaderValue};
use hyper::{Request, Response, StatusCode};
use tokio::time::Instant;

use crate::account::{self, Accounted, Record, Recorder};
use crate::config::{Config, Sticky};
use crate::pool::{AcquireError, Lease, Pool, Replace};
use crate::status;
use crate::upstream::UpBody;

pub mod fault;
mod inbound;
mod leased;
mod outbound;
mod retry;
mod spool;
mod tunnel;
use inbound::BodyLimits;
use leased::Leased;
use retry::{connect_leased, send_retrying, Attempt};
use spool::Budget;
use tunnel::tunnel;

/// Why a response body ended early (the worker's connection failed, or it fell silent for
/// `--request-timeout`): hyper then aborts the response, so a client never takes a cut body
/// for a whole one.
pub type BodyError = Box<dyn std::error::Error + Send + Sync>;

/// Body of every response manifold sends.
pub type ProxyBody = BoxBody<Bytes, BodyError>;

/// Name of the sticky-session cookie; its value is the worker id.
pub const COOKIE: &str = "manifold_worker";

/// Headers that belong to one hop and are never forwarded as-is.
const HOP_BY_HOP: [&str; 7] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];

/// Everything a request needs; shared by all connections. The settings (sticky mode, time
/// limits) are read from the pool for each request, so a reload applies them at once.
pub struct Proxy {
    pool: Arc<Pool>,
    rec: Arc<Recorder>,
    /// Where the app is mounted (`/` alone).
    prefix: String,
    /// Its sticky cookie's name.
    cookie: String,
    /// `--buffer-memory`: memory of all its buffered bodies together.
    budget: Arc<Budget>,
}

/// Which worker (id, generation) answered a request and how long its response head took.
#[derive(Default)]
struct Served {
    worker: Option<(u64, u64)>,
    upstream: Option<Duration>,
    /// The response streams, holding its worker.
    streamed: bool,
    /// It was sent once more (to the same worker on a new connection, or to another worker).
    retried: bool,
}

/// The per-request time limits, copied into each request's task.
#[derive(Clone, Copy)]
struct Timeouts {
    /// `--request-timeout`: for the response head, and for each silence in its body.
    request: Duration,
    ws_idle: Duration,
    /// `--buffer-size`: bytes of one body in memory.
    buffer_size: u64,
    /// `--buffer-response`: largest response buffered (0: none).
    buffer_response: u64,
}

impl Timeouts {
    fn of(cfg: &Config) -> Timeouts {
        Timeouts {
            request: cfg.request_timeout,
            ws_idle: cfg.ws_idle_timeout,
            buffer_size: cfg.buffer_size,
            buffer_response: cfg.buffer_response,
        }
    }
}

/// `Retry-After` seconds for a 503: the queue timeout, 1 to 60.
fn retry_after(cfg: &Config) -> u64 {
    cfg.queue_timeout.as_secs().clamp(1, 60)
}

impl Proxy {
    /// Builds the handler over a pool; `rec` gets every forwarded request.
    pub fn new(pool: Arc<Pool>, rec: Arc<Recorder>) -> Proxy {
        let budget = Arc::new(Budget::new(pool.cfg().buffer_memory));
        Proxy {
            budget,
            pool,
            rec,
            prefix: "/".into(),
            cookie: COOKIE.into(),
        }
    }

    /// Answers one request from `client` (status pages, or forwarded to a worker); every
    /// forwarded one gets `X-Request-Id`/`X-Request-Start` both ways and is accounted for.
    pub async fn handle(
        &self,
        mut req: Request<Incoming>,
        client: SocketAddr,
    ) -> Response<ProxyBody> {
        match req.uri().path() {
            "/__manifold__/status" | "/__manifold__/metrics" => return self.status(&req),
            _ => {}
        }
        let (arrived, arrived_at) = (Instant::now(), SystemTime::now());
        let id = self.rec.stamp(req.headers_mut(), arrived_at);
        let start = req.headers().get(account::REQUEST_START).cloned();
        let cfg = self.pool.cfg();
        let cookie = if cfg.sticky == Sticky::Cookie {
            sticky_cookie(req.headers(), &self.cookie)
        } else {
            None
        };
        let mut record = Record {
            rec: self.rec.clone(),
            arrived_at,
            arrived,
            id,
            method: req.method().to_string(),
            path: req
                .uri()
                .path_and_query()
                .map_or("/".into(), |p| p.as_str().to_string()),
            status: 0,
            queue_wait: Duration::ZERO,
            upstream: None,
            worker: None,
            sticky: cookie,
            streamed: false,
            retried: false,
        };
        let mut resp = self.route(req, client, cookie, &mut record, &cfg).await;
        let h = resp.headers_mut();
        h.insert(
            account::REQUEST_ID,
            HeaderValue::from_str(&record.id).expect("checked id"),
        );
        if let Some(start) = start {
            h.insert(account::REQUEST_START, start);
        }
        // Appended: a worker's own Server-Timing entries reach the client too.
        h.append(account::SERVER_TIMING, account::server_timing(&record));
        record.status = resp.status().as_u16();
        resp.map(|b| Accounted::new(b, record).boxed())
    }

    /// Draining check, a worker, the exchange, and the sticky cookie.
    async fn route(
        &self,
        req: Request<Incoming>,
        client: SocketAddr,
        cookie: Option<u64>,
        record: &mut Record,
        cfg: &Config,
    ) -> Response<ProxyBody> {
        // Draining: only a session already on a worker here goes on; a new one is refused so the
        // balancer sends it elsewhere (HAProxy: `retry-on 503` + `option redispatch`).
        if self.pool.is_draining() && !cookie.is_some_and(|w| self.pool.is_ready(w)) {
            let mut r = plain(
                StatusCode::SERVICE_UNAVAILABLE,
                "manifold: draining, not taking new sessions\n".into(),
            );
            r.headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
            return r;
        }
        // The whole body first: a slow upload holds this connection, never a worker.
        let req = if is_upgrade(req.headers()) {
            req.map(BodyExt::boxed)
        } else {
            let (mut parts, body) = req.into_parts();
            let limits = BodyLimits {
                max: cfg.max_body,
                timeout: cfg.body_timeout,
                memory: cfg.buffer_size,
            };
            match inbound::read_whole(body, &mut parts.headers, limits, &self.budget).await {
                Ok(b) => Request::from_parts(parts, b),
                Err(r) => return r,
            }
        };
        let queued = Instant::now();
        let acquired = self.pool.acquire(cookie).await;
        record.queue_wait = queued.elapsed();
        let lease = match acquired {
            Ok(l) => l,
            Err(e) => return unavailable(e, retry_after(cfg)),
        };
        let (mut resp, served) = self.forward(req, client, lease, Timeouts::of(cfg)).await;
        record.worker = served.worker;
        record.upstream = served.upstream;
        record.streamed = served.streamed;
        record.retried = served.retried;
        if let Some((worker, _)) = served
            .worker
            .filter(|(w, _)| cfg.sticky == Sticky::Cookie && cookie != Some(*w))
        {
            let v = format!(
                "{}={worker}; Path={}; HttpOnly; SameSite=Lax",
                self.cookie, self.prefix
            );
            resp.headers_mut().append(
                header::SET_COOKIE,
                HeaderValue::from_str(&v).expect("ascii cookie"),
            );
        }
        resp
    }

    fn status(&self, req: &Request<Incoming>) -> Response<ProxyBody> {
        page(self.status_page(req.uri().path() != "/__manifold__/status"))
    }

    /// This app's status JSON, or its metrics text (`metrics`), as a page.
    pub fn status_page(&self, metrics: bool) -> status::Page {
        let mut snap = self.pool.snapshot();
        snap.access_log_lines_dropped = self.rec.log.as_ref().map_or(0, |l| l.dropped());
        let cap = status::Capacity::new(&snap, status::HostLoad::read());
        if !metrics {
            status::json(&snap, &cap)
        } else {
            let mut extra = String::new();
            let rec = &self.rec;
            let labels = format!("app=\"{}\",", rec.app);
            for (name, h) in [
                ("manifold_request_duration_seconds", &rec.duration),
                ("manifold_queue_wait_seconds", &rec.queue_wait),
            ] {
                let _ = std::fmt::Write::write_fmt(
                    &mut extra,
                    format_args!(
                        "# HELP {name} Seconds, by status class\n# TYPE {name} histogram\n"
                    ),
                );
                h.render(&mut extra, name, &labels);
            }
            status::metrics(&snap, &cap, &extra)
        }
    }

    /// Mounts this app at `prefix` (its sticky cookie is named after `name` and scoped to the
    /// prefix, so apps on one host never read each other's cookie).
    pub fn mount(mut self, prefix: &str, name: &str) -> Proxy {
        let safe: String = name
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        self.cookie = format!("{COOKIE}_{safe}");
        self.prefix = prefix.to_string();
        self
    }

    /// Runs the exchange with the worker in a task of its own, so the lease (the worker's slot)
    /// is held until the worker answered or was replaced, even if the client goes away first.
    async fn forward(
        &self,
        req: Request<UpBody>,
        client: SocketAddr,
        lease: Lease,
        timeouts: Timeouts,
    ) -> (Response<ProxyBody>, Served) {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let pool = self.pool.clone();
        let budget = self.budget.clone();
        tokio::spawn(async move {
            let _ = tx.send(exchange(pool, budget, req, client, lease, timeouts).await);
        });
        rx.await.unwrap_or_else(|_| {
            let r = plain(
                StatusCode::INTERNAL_SERVER_ERROR,
                "manifold: request task failed\n".into(),
            );
            (r, Served::default())
        })
    }
}

/// 503 with Retry-After for a request that got no worker.
fn unavailable(e: AcquireError, retry_after: u64) -> Response<ProxyBody> {
    let mut r = plain(StatusCode::SERVICE_UNAVAILABLE, format!("manifold: {e}\n"));
    r.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(retry_after));
    r
}

/// Waits for `f`, at most `limit` (zero: no limit); `None` when the limit passed.
async fn within<T>(limit: Duration, f: impl std::future::Future<Output = T>) -> Option<T> {
    if limit.is_zero() {
        return Some(f.await);
    }
    tokio::time::timeout(limit, f).await.ok()
}

/// Sends one request to the leased worker and returns its response (body still streaming and
/// holding the lease, cut if the worker falls silent for `--request-timeout`, see `leased`), a
/// tunnel's 101, a 502, or a 504 after `--request-timeout` (the worker is then replaced), with
/// the worker that answered.
async fn exchange(
    pool: Arc<Pool>,
    budget: Arc<Budget>,
    mut req: Request<UpBody>,
    client: SocketAddr,
    lease: Lease,
    timeouts: Timeouts,
) -> (Response<ProxyBody>, Served) {
    let upgrade = is_upgrade(req.headers());
    let client_upgrade = upgrade.then(|| hyper::upgrade::on(&mut req));
    let (mut parts, body) = req.into_parts();
    // Origin form ("/path?query"): workers such as httpuv do not accept absolute URIs.
    parts.uri = match parts.uri.path_and_query() {
        Some(pq) => hyper::Uri::from(pq.clone()),
        None => hyper::Uri::from_static("/"),
    };
    forwarded_headers(&mut parts.headers, client, upgrade);
    let up_req = Request::from_parts(parts, body);
    let (lease, conn, pooled) = match connect_leased(&pool, lease, upgrade).await {
        Ok(got) => got,
        Err(r) => return (r, Served::default()),
    };
    let sent_at = Instant::now();
    let sent = send_retrying(&pool, lease, conn, pooled, up_req, timeouts.request).await;
    let (mut lease, sent, retried) = match sent {
        Ok(got) => got,
        Err(r) => return (r, Served::default()),
    };
    let mut worker = Served {
        worker: Some((lease.worker, lease.generation)),
        upstream: Some(sent_at.elapsed()),
        retried,
        ..Served::default()
    };
    let mut resp = match sent {
        Attempt::Answered(r, c) => {
            if !upgrade {
                lease.put_conn(c);
            }
            r
        }
        Attempt::TimedOut => {
            worker.upstream = None;
            return (timed_out(&pool, lease.worker, timeouts.request), worker);
        }
        Attempt::Failed(e, _) => {
            let msg = format!("worker {} failed: {e}", lease.worker);
            tracing::warn!(worker = lease.worker, error = %e, "worker request failed");
            pool.count_bad_gateway(msg.clone());
            return (
                plain(StatusCode::BAD_GATEWAY, format!("manifold: {msg}\n")),
                worker,
            );
        }
    };
    pool.count_answer(lease.worker, resp.status().is_server_error());
    if resp.status() == StatusCode::SWITCHING_PROTOCOLS {
        if let Some(client_upgrade) = client_upgrade {
            let worker_upgrade = hyper::upgrade::on(&mut resp);
            tokio::spawn(tunnel(
                client_upgrade,
                worker_upgrade,
                lease,
                timeouts.ws_idle,
            ));
            let (parts, _) = resp.into_parts();
            return (Response::from_parts(parts, empty()), worker);
        }
    }
    strip_hop_by_hop(resp.headers_mut());
    worker.streamed = outbound::streams(resp.headers_mut(), timeouts.buffer_response);
    let resp = resp.map(|b| {
        let hint = hyper::body::Body::size_hint(&b);
        let body = Leased::new(b, lease, pool, timeouts.request);
        if worker.streamed {
            body.boxed()
        } else {
            let (memory, cap) = (timeouts.buffer_size, timeouts.buffer_response);
            outbound::buffer(body, budget, memory, cap, hint).boxed()
        }
    });
    (resp, worker)
}

/// The 504 for a request the worker did not answer in time; the worker is replaced.
fn timed_out(pool: &Pool, worker: u64, limit: Duration) -> Response<ProxyBody> {
    pool.replace(worker, Replace::RequestTimeout);
    plain(
        StatusCode::GATEWAY_TIMEOUT,
        format!(
            "manifold: worker {worker} did not answer within {} (--request-timeout); it is being replaced\n",
            humantime::format_duration(limit)
        ),
    )
}

/// A plain-text response from manifold itself.
pub fn plain(status: StatusCode, text: String) -> Response<ProxyBody> {
    let mut r = Response::new(Full::new(Bytes::from(text)).map_err(|n| match n {}).boxed());
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

/// A status view as a response.
fn page(p: status::Page) -> Response<ProxyBody> {
    let mut r = Response::new(
        Full::new(Bytes::from(p.body))
            .map_err(|n| match n {})
            .boxed(),
    );
    *r.status_mut() = StatusCode::from_u16(p.status).expect("status code");
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(p.content_type),
    );
    r
}

fn empty() -> ProxyBody {
    http_body_util::Empty::new().map_err(|n| match n {}).boxed()
}

/// The worker id in the sticky cookie, if any.
fn sticky_cookie(headers: &HeaderMap, name: &str) -> Option<u64> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|kv| kv.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .and_then(|(_, v)| v.parse().ok())
}

fn is_upgrade(headers: &HeaderMap) -> bool {
    headers.contains_key(header::UPGRADE)
        && headers
            .get_all(header::CONNECTION)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .any(|t| t.trim().eq_ignore_ascii_case("upgrade"))
}

fn strip_hop_by_hop(headers: &mut HeaderMap) {
    // Headers named in Connection are hop-by-hop too.
    let named: Vec<HeaderName> = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|t| HeaderName::from_bytes(t.trim().as_bytes()).ok())
        .collect();
    for n in named {
        headers.remove(n);
    }
    for h in HOP_BY_HOP {
        headers.remove(h);
    }
}

/// Drops hop-by-hop headers (keeping an upgrade's own) and sets the `X-Forwarded-*` headers.
fn forwarded_headers(headers: &mut HeaderMap, client: SocketAddr, upgrade: bool) {
    let keep = upgrade.then(|| {
        (
            headers.get(header::UPGRADE).cloned(),
            headers.get(header::CONNECTION).cloned(),
        )
    });
    strip_hop_by_hop(headers);
    if let Some((Some(up), Some(conn))) = keep {
        headers.insert(header::UPGRADE, up);
        headers.insert(header::CONNECTION, conn);
    }
    let ip = client.ip().to_string();
    let xff = match headers.get("x-forwarded-for").and_then(|v| v.to_str().ok()) {
        Some(prev) => format!("{prev}, {ip}"),
        None => ip,
    };
    if let Ok(v) = HeaderValue::from_str(&xff) {
        headers.insert("x-forwarded-for", v);
    }
    if !headers.contains_key("x-forwarded-proto") {
        headers.insert("x-forwarded-proto", HeaderValue::from_static("http"));
    }
    if let Some(host) = headers.get(header::HOST).cloned() {
        headers.insert("x-forwarded-host", host);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cookie_and_headers() {
        let mut h = HeaderMap::new();
        h.insert(
            header::COOKIE,
            HeaderValue::from_static("a=1; manifold_worker=7; b=2"),
        );
        assert_eq!(sticky_cookie(&h, COOKIE), Some(7));
        h.insert(header::HOST, HeaderValue::from_static("example.org"));
        h.insert(
            header::CONNECTION,
            HeaderValue::from_static("keep-alive, x-secret"),
        );
        h.insert("x-secret", HeaderValue::from_static("1"));
        h.insert("x-forwarded-for", HeaderValue::from_static("10.0.0.1"));
        forwarded_headers(&mut h, "127.0.0.2:5000".parse().unwrap(), false);
        assert!(!h.contains_key("x-secret") && !h.contains_key(header::CONNECTION));
        assert_eq!(h["x-forwarded-for"], "10.0.0.1, 127.0.0.2");
        assert_eq!(h["x-forwarded-host"], "example.org");
        assert_eq!(h["x-forwarded-proto"], "http");
    }

    #[test]
    fn upgrade_headers_survive() {
        let mut h = HeaderMap::new();
        h.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
        h.insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
        assert!(is_upgrade(&h));
        forwarded_headers(&mut h, "127.0.0.1:1".parse().unwrap(), true);
        assert_eq!(h[header::UPGRADE], "websocket");
        assert_eq!(h[header::CONNECTION], "Upgrade");
    }
}
