//! `surge bench`: the client loop of a one-URL load test. One task per connection, each owning its
//! connection and its own histogram, dealt to `--threads` single-threaded event loops (`lanes`).
//! HTTP/1.1 goes through `h1` (the request serialized once, written as is for every exchange);
//! `--http2` uses hyper's h2c client with a reused request template.
//! Closed model by default; `--rate` is an open model whose latency is measured from each request's
//! intended send time (no coordinated omission), so requests are woken by a sub-millisecond timer
//! (`timer`).

mod lanes;
mod plan;
mod print;
mod report;
mod schedule;
mod timer;

pub use print::bench_text;
pub use report::{merge, BenchReport};

use crate::h1;
use crate::stats;
use crate::timefmt::{self, parse_duration};
use bytes::Bytes;
use hdrhistogram::Histogram;
use http_body_util::{BodyExt, Full};
use hyper::Request;
use hyper_util::rt::{TokioExecutor, TokioIo};
use plan::{make_plan, Plan};
use schedule::{closed_over, open_slot, Slot, BEHIND};
use std::collections::BTreeMap;
use std::future::Future;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// Command-line options of `surge bench`.
#[derive(clap::Args, Debug, Clone)]
pub struct BenchArgs {
    /// URL to load (http://host:port/path)
    pub url: String,
    /// Concurrent connections
    #[arg(short = 'c', long, default_value_t = 50)]
    pub connections: usize,
    /// Threads, each running its share of the connections on its own event loop (default: the
    /// CPUs this process may use)
    #[arg(short = 't', long)]
    pub threads: Option<usize>,
    /// Total requests to send (default: run for --duration)
    #[arg(short = 'n', long)]
    pub requests: Option<u64>,
    /// How long to run (default 10s when -n is not given)
    #[arg(short = 'd', long, value_parser = parse_duration)]
    pub duration: Option<Duration>,
    /// Open model: requests per second in total, latency measured from the intended send time
    #[arg(long)]
    pub rate: Option<f64>,
    /// Send only segment K of N of the --rate schedule: requests K-1, K-1+N, ... at their
    /// planned times (`surge merge` joins the segments' --json results)
    #[arg(long, value_name = "K/N")]
    pub segment: Option<String>,
    /// Start the schedule at this instant (RFC 3339), e.g. on every generator host
    #[arg(long, value_name = "TIME")]
    pub start_at: Option<String>,
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
    /// Speak HTTP/2: over cleartext with prior knowledge for http://, via ALPN "h2" for https://
    #[arg(long)]
    pub http2: bool,
    /// Per-request timeout
    #[arg(long, value_parser = parse_duration, default_value = "30s")]
    pub timeout: Duration,
    /// Statuses that count as ok (comma-separated, e.g. 200,204; default: any 2xx or 3xx)
    #[arg(long, value_name = "CODES", value_delimiter = ',', value_parser = report::parse_status)]
    pub expect_status: Vec<u16>,
    /// Share of requests that may be not ok (errors or other statuses) before the run fails
    /// with exit 1, e.g. 1% or 0.01 (default 0: any one fails it)
    #[arg(long, value_parser = parse_rate, default_value = "0")]
    pub max_error_rate: f64,
    /// Print the result as JSON
    #[arg(long)]
    pub json: bool,
    /// TLS and address flags for an https:// URL
    #[command(flatten)]
    pub tls: crate::net::TlsArgs,
}

/// A `--max-error-rate` that is not a rate.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("'{0}' is not a rate between 0 and 1 (or 0% and 100%)")]
pub struct RateError(String);

/// `--max-error-rate`: `1%`, `0.5%` or a fraction `0.01`, within 0..=1.
fn parse_rate(s: &str) -> Result<f64, RateError> {
    let (num, scale) = match s.strip_suffix('%') {
        Some(n) => (n, 100.0),
        None => (s, 1.0),
    };
    let v = num
        .trim()
        .parse::<f64>()
        .ok()
        .map(|v| v / scale)
        .filter(|v| (0.0..=1.0).contains(v))
        .ok_or_else(|| RateError(s.to_string()))?;
    Ok(v)
}

#[derive(Default)]
struct ConnStats {
    hist: Option<Histogram<u64>>,
    errors: BTreeMap<String, u64>,
    statuses: BTreeMap<u16, u64>,
    late: u64,
    bytes: u64,
}

/// One connection's client: HTTP/1.1 is read and written in the connection's own task; h2 needs
/// hyper's spawned connection driver.
enum Conn {
    H1(h1::Conn),
    H2(hyper::client::conn::http2::SendRequest<Full<Bytes>>),
}

/// Late-start threshold of the open model.
const LATE: Duration = Duration::from_millis(10);

/// A checked bench run: flags parsed, the request built once, an https target's certificate
/// probed. [`run`] takes it with a stop future, so a test (or another program) runs a benchmark
/// in-process; `main.rs` owns the flags, Ctrl-C and the printing. The schedule's clock starts
/// when the plan is made.
pub struct BenchPlan {
    plan: Arc<Plan>,
    args: BenchArgs,
    /// Draw the progress bar on stderr (main: a terminal, and no `--json`).
    pub progress: bool,
}

impl BenchPlan {
    /// Checks `args` and builds the run; prints the `--insecure` warning; one TLS probe
    /// connection (a refused certificate is an error here, not one per request).
    pub async fn from_args(args: &BenchArgs) -> anyhow::Result<BenchPlan> {
        let plan = make_plan(args)?;
        if plan.dialer.insecure() {
            eprintln!(
                "surge bench: warning: --insecure: the certificate of {} is not verified",
                plan.endpoint.authority()
            );
        }
        let alpn = if plan.http2 {
            crate::net::Alpn::H2
        } else {
            crate::net::Alpn::Http1
        };
        plan.dialer.probe(&plan.endpoint, alpn).await?;
        Ok(BenchPlan {
            plan: Arc::new(plan),
            args: args.clone(),
            progress: false,
        })
    }

    /// Feeds `live` (`--dashboard`'s metrics) with every request.
    pub fn with_live(mut self, live: Option<Arc<crate::metrics::LiveMetrics>>) -> BenchPlan {
        if let Some(p) = Arc::get_mut(&mut self.plan) {
            p.live = live;
        }
        self
    }
}

/// Runs the benchmark until its duration or request count is reached, or `stop` resolves (then
/// requests in flight finish and the partial result is returned). Prints nothing but the
/// late-start line and the countdown to `--start-at`; installs no signal handler.
pub async fn run(bench: BenchPlan, stop: impl Future<Output = ()>) -> BenchReport {
    let BenchPlan {
        plan,
        args,
        progress,
    } = bench;
    if let Some(line) = plan.start.late_line("requests whose send time has passed") {
        eprintln!("{line}");
    }
    let mut lanes = lanes::start(&plan, plan.lanes);
    // The connections wait for t0 on their own; this only tells the person watching.
    let countdown = {
        let plan = plan.clone();
        tokio::spawn(async move {
            let stop = plan.clone();
            plan.start
                .count_down(|| stop.stop.load(Ordering::Relaxed))
                .await
        })
    };
    let mut ended = 0;
    let bar = progress.then(|| progress_bar(&args));
    let mut all = ConnStats {
        hist: Some(stats::new_histogram()),
        ..Default::default()
    };
    tokio::pin!(stop);
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    loop {
        tokio::select! {
            r = lanes.recv() => match r {
                Some(r) => {
                    ended += 1;
                    match r {
                        Ok(s) => fold(&mut all, s),
                        Err(e) => *all.errors.entry(e.to_string()).or_insert(0) += 1,
                    }
                }
                None => break,
            },
            _ = tick.tick() => {
                if let Some(b) = &bar { b.set_position(progress_pos(&plan)); }
            }
            // A completed future must not be polled again: the branch is off once it fired.
            () = &mut stop, if !plan.stop.load(Ordering::Relaxed) => {
                plan.stop.store(true, Ordering::Relaxed)
            }
        }
    }
    countdown.abort();
    if ended < plan.lanes {
        let lost = (plan.lanes - ended) as u64;
        *all.errors
            .entry("lane: thread died without its statistics".into())
            .or_insert(0) += lost;
    }
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    bench_report(&args, &plan, all)
}

/// The run's result from the connections' folded statistics.
fn bench_report(args: &BenchArgs, plan: &Plan, mut all: ConnStats) -> BenchReport {
    let elapsed = plan.t0.elapsed().as_secs_f64();
    let hist = all.hist.take().unwrap_or_else(stats::new_histogram);
    let answered = hist.len();
    let errs: u64 = all.errors.values().sum();
    BenchReport {
        url: args.url.clone(),
        model: if args.rate.is_some() {
            "open"
        } else {
            "closed"
        }
        .into(),
        connections: plan.conns,
        threads: plan.lanes,
        rate: args.rate,
        planned_duration_s: plan.deadline.map(|d| (d - plan.t0).as_secs_f64()),
        planned_requests: args.requests,
        segment: args.segment.as_ref().map(|_| plan.segment.to_string()),
        start_at: args
            .start_at
            .as_ref()
            .map(|_| timefmt::format_iso(plan.start.unix_ms)),
        late_start_ms: plan.start.late.as_millis() as u64,
        started_at_ms: plan.start.unix_ms,
        duration_s: elapsed,
        requests: answered + errs,
        answered,
        ok: report::ok_count(&all.statuses, &args.expect_status),
        expect_status: args.expect_status.clone(),
        max_error_rate: args.max_error_rate,
        errors: all.errors,
        status_codes: all.statuses,
        rps: answered as f64 / elapsed.max(1e-9),
        latency_ms: stats::summarize(&hist, 1000.0),
        late_starts: all.late,
        bytes_received: all.bytes,
        merged_segments: None,
        histogram_us: stats::encode(&hist),
    }
}

fn progress_pos(plan: &Plan) -> u64 {
    match plan.deadline {
        Some(_) => plan.t0.elapsed().as_millis() as u64,
        None => plan.done.load(Ordering::Relaxed),
    }
}

fn progress_bar(args: &BenchArgs) -> indicatif::ProgressBar {
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
    b
}

fn fold(all: &mut ConnStats, s: ConnStats) {
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

/// Why a request got no answer. Its text is the key it is counted under (`errors` in the
/// output), so it holds no variable data (no address, no port).
#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    /// TCP connect failed.
    #[error("connect: {0:?}")]
    Connect(std::io::ErrorKind),
    /// The TLS handshake failed.
    #[error("TLS handshake failed")]
    Tls,
    /// The HTTP/2 handshake failed (hyper's error, classified).
    #[error("handshake: {0}")]
    Handshake(String),
    /// The HTTP/1.1 exchange failed.
    #[error(transparent)]
    H1(#[from] h1::Error),
    /// The HTTP/2 exchange failed (hyper's error, classified).
    #[error("{0}")]
    H2(String),
}

async fn connect(plan: &Plan) -> Result<Conn, RequestError> {
    let stream = plan
        .dialer
        .connect(&plan.endpoint)
        .await
        .map_err(|e| match e {
            crate::net::DialError::Connect { source, .. } => RequestError::Connect(source.kind()),
            crate::net::DialError::Tls { .. } => RequestError::Tls,
        })?;
    if !plan.http2 {
        return Ok(Conn::H1(h1::Conn::new(stream)));
    }
    let (s, c) = hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(stream))
        .await
        .map_err(|e| RequestError::Handshake(error_kind(&e)))?;
    tokio::spawn(c);
    Ok(Conn::H2(s))
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

/// One request and its whole response: status, body bytes and whether the connection stays usable.
async fn exchange(conn: &mut Conn, plan: &Plan) -> Result<h1::Response, RequestError> {
    match conn {
        Conn::H1(c) => Ok(c.exchange(&plan.request, plan.head).await?),
        Conn::H2(s) => {
            let mut req = Request::new(Full::new(plan.body.clone()));
            *req.method_mut() = plan.method.clone();
            *req.uri_mut() = plan.uri.clone();
            *req.headers_mut() = plan.headers.clone();
            let r = async {
                s.ready().await?;
                read_response(s.send_request(req).await?).await
            };
            let (status, body_bytes) = r.await.map_err(|e| RequestError::H2(error_kind(&e)))?;
            Ok(h1::Response {
                status,
                body_bytes,
                keep_alive: true,
            })
        }
    }
}

/// One exchange on `c`, or `None` when it has not ended by `sent + plan.timeout`. `timer` is the
/// connection's one timer, pushed forward only when it fires before the deadline.
async fn exchange_within(
    c: &mut Conn,
    plan: &Plan,
    mut timer: std::pin::Pin<&mut tokio::time::Sleep>,
    sent: Instant,
) -> Option<Result<h1::Response, RequestError>> {
    let ex = exchange(c, plan);
    tokio::pin!(ex);
    loop {
        tokio::select! {
            biased;
            r = &mut ex => break Some(r),
            () = &mut timer => {
                let due = sent + plan.timeout;
                if Instant::now() >= due {
                    break None;
                }
                timer.as_mut().reset(due);
            }
        }
    }
}

/// Everyone waits for the plan's start (`--start-at`), checking every 100 ms whether Ctrl-C ended
/// the wait.
async fn wait_for_start(plan: &Plan) {
    while Instant::now() < plan.t0 && !plan.stop.load(Ordering::Relaxed) {
        let tick = Instant::now() + Duration::from_millis(100);
        tokio::time::sleep_until(plan.t0.min(tick)).await;
    }
}

async fn conn_loop(plan: Arc<Plan>, id: usize) -> ConnStats {
    let mut st = ConnStats {
        hist: Some(stats::new_histogram()),
        ..Default::default()
    };
    let hist = st.hist.as_mut().expect("set above");
    let mut conn: Option<Conn> = None;
    let mut k: u64 = 0;
    // Responses by status code (100..=999), folded into `st.statuses` at the end.
    let mut statuses = vec![0u64; 1000];
    // One timer per connection, pushed forward only when it fires before the current request's
    // deadline: a timeout future per request would insert into and remove from the timer wheel
    // every time.
    let timer = tokio::time::sleep(plan.timeout);
    tokio::pin!(timer);
    let mut send_timer = timer::SendTimer::default();
    wait_for_start(&plan).await;
    // The closed model starts the next request at the previous one's end time.
    let mut now = Instant::now();
    loop {
        if plan.stop.load(Ordering::Relaxed) {
            break;
        }
        if let Some(r) = &plan.remaining {
            if r.fetch_sub(1, Ordering::Relaxed) <= 0 {
                break;
            }
        }
        let (start, sent) = match plan.rate {
            Some(rate) => match open_slot(&plan, rate, id, k) {
                Slot::End => break,
                Slot::Behind => {
                    k += 1;
                    *st.errors.entry(BEHIND.into()).or_insert(0) += 1;
                    continue;
                }
                Slot::Send(intended) => {
                    k += 1;
                    send_timer.sleep_until(intended).await;
                    let sent = Instant::now();
                    if sent.saturating_duration_since(intended) > LATE {
                        st.late += 1;
                    }
                    (intended, sent)
                }
            },
            None => (now, now),
        };
        if conn.is_none() {
            match connect(&plan).await {
                Ok(c) => conn = Some(c),
                Err(e) => {
                    *st.errors.entry(e.to_string()).or_insert(0) += 1;
                    // Avoid a hot loop against a refused port.
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    now = Instant::now();
                    if closed_over(&plan, now) {
                        break;
                    }
                    continue;
                }
            }
        }
        let c = conn.as_mut().expect("connected above");
        let result = exchange_within(c, &plan, timer.as_mut(), sent).await;
        now = Instant::now();
        let us = now.saturating_duration_since(start).as_micros() as u64;
        plan.observe(matches!(result, Some(Ok(_))).then_some(us));
        match result {
            Some(Ok(r)) => {
                let _ = hist.record(us.max(1));
                statuses[usize::from(r.status).min(999)] += 1;
                st.bytes += r.body_bytes;
                if !plan.keepalive || !r.keep_alive {
                    conn = None;
                }
            }
            Some(Err(e)) => {
                *st.errors.entry(e.to_string()).or_insert(0) += 1;
                conn = None;
            }
            None => {
                *st.errors.entry("timeout".into()).or_insert(0) += 1;
                conn = None;
            }
        }
        plan.done.fetch_add(1, Ordering::Relaxed);
        if closed_over(&plan, now) {
            break;
        }
    }
    for (code, &n) in statuses.iter().enumerate() {
        if n > 0 {
            st.statuses.insert(code as u16, n);
        }
    }
    st
}
