//! `surge bench`: the client loop of a one-URL load test. One task per connection, each owning a
//! hyper HTTP/1 (or h2c) connection and its own histogram; a pre-parsed request template is reused
//! so the per-request work is a header-map clone. Closed model by default; `--rate` is an open model
//! whose latency is measured from each request's intended send time (no coordinated omission).

use crate::stats::{self, Summary};
use crate::timefmt::parse_duration;
use bytes::Bytes;
use hdrhistogram::Histogram;
use http_body_util::{BodyExt, Full};
use hyper::header::{HeaderMap, HeaderName, HeaderValue};
use hyper::{Method, Request, Uri};
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpStream;
use tokio::time::Instant;

/// Command-line options of `surge bench`.
#[derive(clap::Args, Debug, Clone)]
pub struct BenchArgs {
    /// URL to load (http://host:port/path)
    pub url: String,
    /// Concurrent connections
    #[arg(short = 'c', long, default_value_t = 50)]
    pub connections: usize,
    /// Total requests to send (default: run for --duration)
    #[arg(short = 'n', long)]
    pub requests: Option<u64>,
    /// How long to run (default 10s when -n is not given)
    #[arg(short = 'd', long, value_parser = parse_duration)]
    pub duration: Option<Duration>,
    /// Open model: requests per second in total, latency measured from the intended send time
    #[arg(long)]
    pub rate: Option<f64>,
    /// HTTP method
    #[arg(short = 'm', long, default_value = "GET")]
    pub method: String,
    /// Extra request header 'Name: value' (repeatable)
    #[arg(short = 'H', long = "header")]
    pub headers: Vec<String>,
    /// File whose contents are sent as the request body
    #[arg(long)]
    pub body: Option<PathBuf>,
    /// Open a new connection for every request
    #[arg(long)]
    pub no_keepalive: bool,
    /// Speak HTTP/2 over cleartext (prior knowledge)
    #[arg(long)]
    pub http2: bool,
    /// Per-request timeout
    #[arg(long, value_parser = parse_duration, default_value = "30s")]
    pub timeout: Duration,
    /// Print the result as JSON
    #[arg(long)]
    pub json: bool,
}

/// Result of a bench run (printed as text or JSON).
#[derive(Serialize, Debug, Clone)]
pub struct BenchReport {
    pub url: String,
    pub model: &'static str,
    pub connections: usize,
    pub rate: Option<f64>,
    pub duration_s: f64,
    pub requests: u64,
    pub ok: u64,
    pub errors: BTreeMap<String, u64>,
    pub status_codes: BTreeMap<u16, u64>,
    pub rps: f64,
    /// Latency in ms.
    pub latency_ms: Summary,
    /// Open model: requests that started more than 10 ms after their intended time.
    pub late_starts: u64,
    pub bytes_received: u64,
}

struct Plan {
    uri: Uri,
    authority: String,
    method: Method,
    headers: HeaderMap,
    body: Bytes,
    http2: bool,
    keepalive: bool,
    timeout: Duration,
    deadline: Option<Instant>,
    remaining: Option<AtomicI64>,
    period: Option<Duration>,
    conns: usize,
    t0: Instant,
    stop: AtomicBool,
    done: AtomicU64,
}

#[derive(Default)]
struct ConnStats {
    hist: Option<Histogram<u64>>,
    errors: BTreeMap<String, u64>,
    statuses: BTreeMap<u16, u64>,
    late: u64,
    bytes: u64,
}

type H1Conn = hyper::client::conn::http1::Connection<TokioIo<TcpStream>, Full<Bytes>>;

/// HTTP/1 connections are driven inside the connection's own task (no spawned driver, no cross-task
/// wake-ups per request); h2 needs its spawned driver.
enum Sender {
    H1(
        hyper::client::conn::http1::SendRequest<Full<Bytes>>,
        std::pin::Pin<Box<H1Conn>>,
    ),
    H2(hyper::client::conn::http2::SendRequest<Full<Bytes>>),
}

/// Late-start threshold of the open model.
const LATE: Duration = Duration::from_millis(10);

/// Runs the benchmark and prints the report; exit status 1 if every request failed.
pub async fn run(args: BenchArgs) -> anyhow::Result<u8> {
    let plan = Arc::new(make_plan(&args)?);
    let mut tasks = tokio::task::JoinSet::new();
    for id in 0..plan.conns {
        tasks.spawn(conn_loop(plan.clone(), id));
    }
    let bar = progress_bar(&args);
    let mut all = ConnStats {
        hist: Some(stats::new_histogram()),
        ..Default::default()
    };
    let sigint = tokio::signal::ctrl_c();
    tokio::pin!(sigint);
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    loop {
        tokio::select! {
            r = tasks.join_next() => match r {
                Some(Ok(s)) => merge(&mut all, s),
                Some(Err(e)) => *all.errors.entry(format!("task: {e}")).or_insert(0) += 1,
                None => break,
            },
            _ = tick.tick() => {
                if let Some(b) = &bar { b.set_position(progress_pos(&plan)); }
            }
            _ = &mut sigint => plan.stop.store(true, Ordering::Relaxed),
        }
    }
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let elapsed = plan.t0.elapsed().as_secs_f64();
    let hist = all.hist.take().unwrap_or_else(stats::new_histogram);
    let ok = hist.len();
    let errs: u64 = all.errors.values().sum();
    let report = BenchReport {
        url: args.url.clone(),
        model: if args.rate.is_some() {
            "open"
        } else {
            "closed"
        },
        connections: plan.conns,
        rate: args.rate,
        duration_s: elapsed,
        requests: ok + errs,
        ok,
        errors: all.errors,
        status_codes: all.statuses,
        rps: ok as f64 / elapsed.max(1e-9),
        latency_ms: stats::summarize(&hist, 1000.0),
        late_starts: all.late,
        bytes_received: all.bytes,
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", crate::printer::bench_text(&report));
    }
    Ok(if report.ok == 0 { 1 } else { 0 })
}

fn progress_pos(plan: &Plan) -> u64 {
    match plan.deadline {
        Some(_) => plan.t0.elapsed().as_millis() as u64,
        None => plan.done.load(Ordering::Relaxed),
    }
}

fn progress_bar(args: &BenchArgs) -> Option<indicatif::ProgressBar> {
    if !std::io::IsTerminal::is_terminal(&std::io::stderr()) || args.json {
        return None;
    }
    let (len, tmpl) = match args.requests {
        Some(n) if args.duration.is_none() => (n, "{bar:40} {pos}/{len} requests {per_sec}"),
        _ => (
            args.duration.unwrap_or(Duration::from_secs(10)).as_millis() as u64,
            "{bar:40} {elapsed}",
        ),
    };
    let b = indicatif::ProgressBar::new(len);
    if let Ok(s) = indicatif::ProgressStyle::with_template(tmpl) {
        b.set_style(s);
    }
    Some(b)
}

fn merge(all: &mut ConnStats, s: ConnStats) {
    if let (Some(a), Some(h)) = (all.hist.as_mut(), s.hist.as_ref()) {
        let _ = a.add(h);
    }
    for (k, v) in s.errors {
        *all.errors.entry(k).or_insert(0) += v;
    }
    for (k, v) in s.statuses {
        *all.statuses.entry(k).or_insert(0) += v;
    }
    all.late += s.late;
    all.bytes += s.bytes;
}

fn make_plan(args: &BenchArgs) -> anyhow::Result<Plan> {
    let uri: Uri = args
        .url
        .parse()
        .map_err(|e| anyhow::anyhow!("URL {}: {e}", args.url))?;
    if uri.scheme_str() != Some("http") {
        anyhow::bail!("URL {}: only http:// is supported", args.url);
    }
    let host = uri
        .host()
        .ok_or_else(|| anyhow::anyhow!("URL {}: no host", args.url))?;
    let authority = format!("{host}:{}", uri.port_u16().unwrap_or(80));
    if args.connections == 0 {
        anyhow::bail!("-c must be at least 1");
    }
    let method: Method = args
        .method
        .parse()
        .map_err(|_| anyhow::anyhow!("-m {}: not an HTTP method", args.method))?;
    let mut headers = HeaderMap::new();
    if !args.http2 {
        headers.insert(
            hyper::header::HOST,
            HeaderValue::from_str(uri.authority().map(|a| a.as_str()).unwrap_or(host))?,
        );
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
            .ok_or_else(|| anyhow::anyhow!("-H \"{h}\": expected 'Name: value'"))?;
        headers.insert(
            HeaderName::from_bytes(k.trim().as_bytes())
                .map_err(|e| anyhow::anyhow!("-H \"{h}\": {e}"))?,
            HeaderValue::from_str(v.trim()).map_err(|e| anyhow::anyhow!("-H \"{h}\": {e}"))?,
        );
    }
    let body = match &args.body {
        Some(p) => Bytes::from(
            std::fs::read(p).map_err(|e| anyhow::anyhow!("--body {}: {e}", p.display()))?,
        ),
        None => Bytes::new(),
    };
    let request_uri = if args.http2 {
        uri.clone()
    } else {
        uri.path_and_query()
            .map(|p| p.as_str())
            .unwrap_or("/")
            .parse()?
    };
    let duration = match (args.requests, args.duration) {
        (Some(_), None) => None,
        (_, d) => Some(d.unwrap_or(Duration::from_secs(10))),
    };
    let period = match args.rate {
        Some(r) if r > 0.0 && r.is_finite() => {
            Some(Duration::from_secs_f64(args.connections as f64 / r))
        }
        Some(r) => anyhow::bail!("--rate {r}: must be a positive number"),
        None => None,
    };
    let t0 = Instant::now();
    Ok(Plan {
        uri: request_uri,
        authority,
        method,
        headers,
        body,
        http2: args.http2,
        keepalive: !args.no_keepalive,
        timeout: args.timeout,
        deadline: duration.map(|d| t0 + d),
        remaining: args.requests.map(|n| AtomicI64::new(n as i64)),
        period,
        conns: args.connections,
        t0,
        stop: AtomicBool::new(false),
        done: AtomicU64::new(0),
    })
}

fn error_kind(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = cur {
        if let Some(io) = err.downcast_ref::<std::io::Error>() {
            return format!("io: {:?}", io.kind());
        }
        cur = err.source();
    }
    if let Some(h) = e.downcast_ref::<hyper::Error>() {
        if h.is_incomplete_message() {
            return "connection closed mid-response".into();
        }
        if h.is_closed() || h.is_canceled() {
            return "connection closed".into();
        }
        if h.is_parse() {
            return "invalid response".into();
        }
    }
    e.to_string()
}

async fn connect(plan: &Plan) -> Result<Sender, String> {
    let tcp = TcpStream::connect(&plan.authority)
        .await
        .map_err(|e| format!("connect: {:?}", e.kind()))?;
    let _ = tcp.set_nodelay(true);
    let io = TokioIo::new(tcp);
    if plan.http2 {
        let (s, c) = hyper::client::conn::http2::handshake(TokioExecutor::new(), io)
            .await
            .map_err(|e| format!("handshake: {}", error_kind(&e)))?;
        tokio::spawn(c);
        Ok(Sender::H2(s))
    } else {
        let (s, c) = hyper::client::conn::http1::handshake(io)
            .await
            .map_err(|e| format!("handshake: {}", error_kind(&e)))?;
        Ok(Sender::H1(s, Box::pin(c)))
    }
}

async fn read_response(
    resp: hyper::Response<hyper::body::Incoming>,
) -> Result<(u16, u64), hyper::Error> {
    let status = resp.status().as_u16();
    let mut body = resp.into_body();
    let mut n = 0u64;
    while let Some(f) = body.frame().await {
        if let Some(d) = f?.data_ref() {
            n += d.len() as u64;
        }
    }
    Ok((status, n))
}

async fn conn_loop(plan: Arc<Plan>, id: usize) -> ConnStats {
    let mut st = ConnStats {
        hist: Some(stats::new_histogram()),
        ..Default::default()
    };
    let hist = st.hist.as_mut().expect("set above");
    let mut sender: Option<Sender> = None;
    let mut k: u64 = 0;
    loop {
        if plan.stop.load(Ordering::Relaxed) {
            break;
        }
        if let Some(r) = &plan.remaining {
            if r.fetch_sub(1, Ordering::Relaxed) <= 0 {
                break;
            }
        }
        let start = match plan.period {
            Some(p) => {
                // Connection `id` owns slots id, id+C, id+2C, ... of the global schedule.
                let intended = plan.t0 + p.mul_f64(k as f64 + id as f64 / plan.conns as f64);
                k += 1;
                if plan.deadline.is_some_and(|d| intended >= d) {
                    break;
                }
                tokio::time::sleep_until(intended).await;
                if Instant::now().saturating_duration_since(intended) > LATE {
                    st.late += 1;
                }
                intended
            }
            None => Instant::now(),
        };
        if sender.is_none() {
            match connect(&plan).await {
                Ok(s) => sender = Some(s),
                Err(e) => {
                    *st.errors.entry(e).or_insert(0) += 1;
                    // Avoid a hot loop against a refused port.
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    if plan.deadline.is_some_and(|d| Instant::now() >= d) {
                        break;
                    }
                    continue;
                }
            }
        }
        let mut req = Request::new(Full::new(plan.body.clone()));
        *req.method_mut() = plan.method.clone();
        *req.uri_mut() = plan.uri.clone();
        *req.headers_mut() = plan.headers.clone();
        let s = sender.as_mut().expect("connected above");
        let fut = async {
            match s {
                Sender::H1(s, conn) => {
                    let exchange = async {
                        s.ready().await?;
                        read_response(s.send_request(req).await?).await
                    };
                    tokio::pin!(exchange);
                    tokio::select! {
                        biased;
                        r = &mut exchange => r.map_err(|e| error_kind(&e)),
                        c = conn.as_mut() => Err(match c {
                            Ok(()) => "connection closed".to_string(),
                            Err(e) => error_kind(&e),
                        }),
                    }
                }
                Sender::H2(s) => {
                    let exchange = async {
                        s.ready().await?;
                        read_response(s.send_request(req).await?).await
                    };
                    exchange.await.map_err(|e| error_kind(&e))
                }
            }
        };
        match tokio::time::timeout(plan.timeout, fut).await {
            Ok(Ok((status, n))) => {
                let us = start.elapsed().as_micros() as u64;
                let _ = hist.record(us.max(1));
                *st.statuses.entry(status).or_insert(0) += 1;
                st.bytes += n;
                if !plan.keepalive {
                    sender = None;
                }
            }
            Ok(Err(e)) => {
                *st.errors.entry(e).or_insert(0) += 1;
                sender = None;
            }
            Err(_) => {
                *st.errors.entry("timeout".into()).or_insert(0) += 1;
                sender = None;
            }
        }
        plan.done.fetch_add(1, Ordering::Relaxed);
        if plan.deadline.is_some_and(|d| Instant::now() >= d) {
            break;
        }
    }
    st
}
