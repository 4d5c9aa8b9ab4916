//! One connection's loop: connect (TLS, h2 handshake), exchange requests as the closed or open
//! model says, time them, classify their errors into the keys the result counts them under.

use super::schedule::{closed_over, open_slot, Slot, BEHIND};
use super::{timer, Plan};
use crate::h1;
use crate::stats;
use bytes::Bytes;
use hdrhistogram::Histogram;
use http_body_util::{BodyExt, Full};
use hyper::Request;
use hyper_util::rt::{TokioExecutor, TokioIo};
use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// What one connection (or a lane, or the whole run) measured.
#[derive(Default)]
pub(super) struct ConnStats {
    pub(super) hist: Option<Histogram<u64>>,
    pub(super) errors: BTreeMap<String, u64>,
    pub(super) statuses: BTreeMap<u16, u64>,
    pub(super) late: u64,
    pub(super) bytes: u64,
}

/// One connection's client: HTTP/1.1 is read and written in the connection's own task; h2 needs
/// hyper's spawned connection driver.
enum Conn {
    H1(h1::Conn),
    H2(hyper::client::conn::http2::SendRequest<Full<Bytes>>),
}

/// Late-start threshold of the open model.
const LATE: Duration = Duration::from_millis(10);

/// Adds one connection's (or lane's) statistics into `all`.
pub(super) fn fold(all: &mut ConnStats, s: ConnStats) {
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

/// One connection's requests until the plan ends or the run stops; its statistics.
pub(super) async fn conn_loop(plan: Arc<Plan>, id: usize) -> ConnStats {
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
