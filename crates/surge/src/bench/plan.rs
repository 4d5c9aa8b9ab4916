//! What one `surge bench` run will do, built once from the flags: the target, the request bytes,
//! the schedule (closed or open model, segment, start) and the counters the connections share.

use super::error::BenchError;
use super::schedule::schedule;
use super::BenchArgs;
use crate::net;
use crate::segment::{Segment, Start};
use bytes::Bytes;
use hyper::header::{HeaderMap, HeaderName, HeaderValue};
use hyper::{Method, Uri};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64};
use std::time::Duration;
use tokio::time::Instant;

fn usage(m: String) -> BenchError {
    BenchError::Usage(m)
}

/// One bench run's fixed inputs and shared counters, read by every connection task.
pub(super) struct Plan {
    /// `--dashboard`'s metrics: every request's latency or failure.
    pub(super) live: Option<std::sync::Arc<crate::metrics::LiveMetrics>>,
    pub(super) uri: Uri,
    /// Host, port, TLS; connected through `dialer` (the run's one TLS config, `--resolve`).
    pub(super) endpoint: net::Endpoint,
    pub(super) dialer: net::Dialer,
    pub(super) method: Method,
    pub(super) headers: HeaderMap,
    pub(super) body: Bytes,
    /// The whole HTTP/1.1 request (head and body), written as is for every exchange.
    pub(super) request: Vec<u8>,
    /// HEAD responses have no body whatever their headers say.
    pub(super) head: bool,
    pub(super) http2: bool,
    pub(super) keepalive: bool,
    pub(super) timeout: Duration,
    pub(super) deadline: Option<Instant>,
    pub(super) remaining: Option<AtomicI64>,
    /// Open model: requests per second of the whole plan, and the plan's request count (-n).
    pub(super) rate: Option<f64>,
    pub(super) limit: Option<u64>,
    /// Open model: the schedule's end + `--timeout`; requests still unsent then are errors.
    pub(super) cutoff: Option<Instant>,
    /// This process's share of the schedule (1/1 without --segment).
    pub(super) segment: Segment,
    pub(super) conns: usize,
    /// Event-loop threads (`lanes`), at most one per connection.
    pub(super) lanes: usize,
    pub(super) start: Start,
    pub(super) t0: Instant,
    pub(super) stop: AtomicBool,
    pub(super) done: AtomicU64,
}

pub(super) fn make_plan(args: &BenchArgs) -> Result<Plan, BenchError> {
    let uri: Uri = (args.url.parse()).map_err(|e| usage(format!("URL {}: {e}", args.url)))?;
    let endpoint =
        net::Endpoint::from_uri(&uri).map_err(|e| usage(format!("URL {}: {e}", args.url)))?;
    let host = endpoint.host.clone();
    let alpn = if args.http2 {
        net::Alpn::H2
    } else {
        net::Alpn::Http1
    };
    let dialer =
        net::Dialer::new(&args.tls, endpoint.tls, alpn)?.with_handshake_timeout(args.timeout);
    if args.connections == 0 {
        return Err(usage("-c must be at least 1".into()));
    }
    let threads = match args.threads {
        Some(0) => return Err(usage("--threads must be at least 1".into())),
        Some(n) => n,
        None => std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    let method: Method = args
        .method
        .parse()
        .map_err(|_| usage(format!("-m {}: not an HTTP method", args.method)))?;
    let headers = request_headers(args, &uri, &host)?;
    let body = match &args.body {
        Some(p) => Bytes::from(std::fs::read(p).map_err(|err| BenchError::Body {
            path: p.clone(),
            err,
        })?),
        None => Bytes::new(),
    };
    let request_uri = if args.http2 {
        uri.clone()
    } else {
        uri.path_and_query()
            .map(|p| p.as_str())
            .unwrap_or("/")
            .parse()
            .map_err(|e| usage(format!("URL {}: {e}", args.url)))?
    };
    let request = serialize_request(&method, &request_uri, &headers, &body);
    let duration = match (args.requests, args.duration) {
        (Some(_), None) => None,
        (_, d) => Some(d.unwrap_or(Duration::from_secs(10))),
    };
    let (segment, start) = schedule(args)?;
    let t0 = start.t0;
    Ok(Plan {
        live: None,
        uri: request_uri,
        endpoint,
        dialer,
        head: method == Method::HEAD,
        method,
        headers,
        body,
        request,
        http2: args.http2,
        keepalive: !args.no_keepalive,
        timeout: args.timeout,
        deadline: duration.map(|d| t0 + d),
        // The open model stops at the plan's request count (`limit`), closed at the shared count.
        remaining: (args.rate.is_none())
            .then_some(args.requests)
            .flatten()
            .map(|n| AtomicI64::new(n as i64)),
        rate: args.rate,
        limit: args.requests,
        cutoff: args.rate.map(|r| {
            let end = duration.map_or_else(
                || t0 + Duration::from_secs_f64(args.requests.unwrap_or(0) as f64 / r),
                |d| t0 + d,
            );
            end + args.timeout
        }),
        segment: segment.unwrap_or(Segment { index: 1, count: 1 }),
        conns: args.connections,
        lanes: threads.min(args.connections),
        start,
        t0,
        stop: AtomicBool::new(false),
        done: AtomicU64::new(0),
    })
}

/// The request's headers: Host (HTTP/1.1), User-Agent, `Connection: close` for `--no-keepalive`,
/// then every `-H`.
fn request_headers(args: &BenchArgs, uri: &Uri, host: &str) -> Result<HeaderMap, BenchError> {
    let mut headers = HeaderMap::new();
    if !args.http2 {
        let authority = uri.authority().map(|a| a.as_str()).unwrap_or(host);
        let value = HeaderValue::from_str(authority)
            .map_err(|e| usage(format!("URL {}: {e}", args.url)))?;
        headers.insert(hyper::header::HOST, value);
    }
    headers.insert(
        hyper::header::USER_AGENT,
        HeaderValue::from_static(concat!("surge/", env!("CARGO_PKG_VERSION"))),
    );
    if args.no_keepalive && !args.http2 {
        headers.insert(hyper::header::CONNECTION, HeaderValue::from_static("close"));
    }
    for h in &args.headers {
        let (k, v) = h
            .split_once(':')
            .ok_or_else(|| usage(format!("-H \"{h}\": expected 'Name: value'")))?;
        headers.insert(
            HeaderName::from_bytes(k.trim().as_bytes())
                .map_err(|e| usage(format!("-H \"{h}\": {e}")))?,
            HeaderValue::from_str(v.trim()).map_err(|e| usage(format!("-H \"{h}\": {e}")))?,
        );
    }
    Ok(headers)
}

/// The HTTP/1.1 request bytes; a body gets a Content-Length unless -H set the framing.
fn serialize_request(method: &Method, uri: &Uri, headers: &HeaderMap, body: &[u8]) -> Vec<u8> {
    let mut r = format!("{method} {uri} HTTP/1.1\r\n").into_bytes();
    for (k, v) in headers {
        r.extend_from_slice(k.as_str().as_bytes());
        r.extend_from_slice(b": ");
        r.extend_from_slice(v.as_bytes());
        r.extend_from_slice(b"\r\n");
    }
    let framed = headers.contains_key(hyper::header::CONTENT_LENGTH)
        || headers.contains_key(hyper::header::TRANSFER_ENCODING);
    let expects_body = [Method::POST, Method::PUT, Method::PATCH].contains(method);
    if !framed && (!body.is_empty() || expects_body) {
        r.extend_from_slice(format!("content-length: {}\r\n", body.len()).as_bytes());
    }
    r.extend_from_slice(b"\r\n");
    r.extend_from_slice(body);
    r
}

impl Plan {
    /// Tells `--dashboard`'s metrics about one request: answered in `us`, or not (None).
    pub(super) fn observe(&self, us: Option<u64>) {
        if let Some(l) = &self.live {
            l.bench_request(us);
        }
    }
}
