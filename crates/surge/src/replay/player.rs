//! The session player: one user's pass through the recording (HTTP requests on its own
//! connection, the WebSocket, placeholders, expected messages), each wait bounded.

use super::stream::play_stream;
use super::ReplayPlan;
use crate::capture::Capture;
use crate::failure::{At, Cause, Failure};
use crate::recording::{Event, Kind, StreamEnd};
use crate::rundir::{RowEvent, SessionLog};
use crate::shiny::{self, Expect, Received};
use crate::target::{self, Conn, CookieJar};
use crate::tokens::Tokens;
use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use http_body_util::Full;
use hyper::header::HeaderValue;
use hyper::Request;
use std::borrow::Cow;
use std::collections::VecDeque;
use std::time::Duration;
use tokio::time::{sleep_until, Instant};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

type Ws = WebSocketStream<crate::net::Stream>;

/// The state of one session being played: a few strings, one HTTP connection, one WebSocket, and
/// the streaming responses (SSE) playing in the background (aborted when the session is dropped).
pub(super) struct Player<'a> {
    pub sh: &'a ReplayPlan,
    /// The recording this session plays (one journey of a mix).
    pub journey: &'a super::Journey,
    pub tokens: Tokens,
    pub jar: CookieJar,
    pub http: Conn,
    pub ws: Option<Ws>,
    pub pending: VecDeque<Received>,
    pub streams: tokio::task::JoinSet<(At, Result<(), Failure>)>,
    /// The last response's `Server-Timing`, taken when its event ends.
    pub server_timing: Option<crate::timing::ServerTiming>,
}

/// Most unmatched messages kept per session (older ones are dropped).
const PENDING_MAX: usize = 64;

/// Most bytes of a response body a `--capture` looks at.
const CAPTURE_BODY_MAX: usize = 1024 * 1024;

/// A received frame: queued for expectations, and looked at by every `--capture` without a line.
fn on_frame(
    pending: &mut VecDeque<Received>,
    caps: (&[Capture], &mut Tokens),
    keep_text: bool,
    m: Option<Result<Message, tokio_tungstenite::tungstenite::Error>>,
) -> Result<(), Cause> {
    match m {
        Some(Ok(Message::Text(t))) if t.starts_with("c[") => Err(Cause::Closed(format!(
            "server closed the SockJS session: {}",
            t.as_str()
        ))),
        Some(Ok(Message::Text(t))) => {
            let (captures, tokens) = caps;
            for c in captures.iter().filter(|c| c.line.is_none()) {
                if let Some(v) = c.find(t.as_str()) {
                    tokens.set(&c.name, &v);
                }
            }
            for mut r in shiny::receive(t.as_str()) {
                if keep_text {
                    r.text = Some(t.as_str().into());
                }
                if pending.len() == PENDING_MAX {
                    pending.pop_front();
                }
                pending.push_back(r);
            }
            Ok(())
        }
        Some(Ok(Message::Close(_))) | None => {
            Err(Cause::Closed("server closed the WebSocket".into()))
        }
        Some(Ok(_)) => Ok(()),
        Some(Err(e)) => Err(Cause::Closed(format!("WebSocket: {e}"))),
    }
}

fn status_ok(expected: u16, got: u16) -> bool {
    expected == got || (matches!(expected, 200 | 304) && matches!(got, 200 | 304))
}

impl Player<'_> {
    /// Plays the whole recording once; `at` is the recording event being played.
    pub async fn play(&mut self, log: &mut SessionLog, at: &mut Option<At>) -> Result<(), Failure> {
        let rec = &self.journey.rec;
        let shiny = rec.is_shiny();
        if self.sh.signin.per_session() {
            let sh = self.sh;
            (sh.signin)
                .sign_in(
                    &sh.target,
                    &mut self.http,
                    &mut self.jar,
                    &sh.headers,
                    sh.message_timeout,
                )
                .await
                .map_err(|e| Cause::SignIn(e.to_string()))?;
        }
        let mut prev_begin: Option<i64> = None;
        for (i, ev) in rec.events.iter().enumerate() {
            if let Some(done) = self.streams.try_join_next() {
                stream_result(done)?;
            }
            let here = At {
                kind: ev.kind,
                line: ev.line,
            };
            *at = Some(here);
            let gap = prev_begin.map(|p| (ev.begin_ms - p).max(0)).unwrap_or(0);
            let sleeps = match ev.kind {
                Kind::WsSend | Kind::WsClose => true,
                Kind::ReqGet => self.ws.is_some() || !shiny,
                k => !shiny && k.is_http(),
            };
            let sleep = if sleeps { self.sh.think.scale(gap) } else { 0 };
            if sleep > 0 {
                log.push(RowEvent::SleepStart, ev.line);
                self.idle_until(Instant::now() + Duration::from_millis(sleep as u64))
                    .await
                    .map_err(|c| Failure::from(c).at(here))?;
                log.push(RowEvent::SleepEnd, ev.line);
            }
            log.push(RowEvent::Start(ev.kind), ev.line);
            let t = Instant::now();
            self.handle(i, ev).await.map_err(|f| f.at(here))?;
            log.push(RowEvent::End(ev.kind), ev.line);
            if let Some(server) = self.server_timing.take() {
                log.timings.push(crate::timing::Sample {
                    line: ev.line,
                    start_ms: log.rows[log.rows.len() - 2].ts,
                    measured_ms: t.elapsed().as_secs_f64() * 1000.0,
                    server,
                });
            }
            tracing::debug!(
                "session {} line {}: {} {} {:.1} ms",
                log.session,
                ev.line,
                ev.kind.name(),
                ev.url,
                t.elapsed().as_secs_f64() * 1000.0
            );
            prev_begin = Some(ev.begin_ms);
        }
        // The session is over when its streams are (each is bounded by its own deadline).
        while let Some(done) = self.streams.join_next().await {
            stream_result(done)?;
        }
        Ok(())
    }

    /// `s` with this session's placeholder values.
    fn substitute<'s>(&self, s: &'s str) -> Result<Cow<'s, str>, Cause> {
        self.tokens.substitute(s).map_err(Cause::Placeholder)
    }

    /// Waits until `deadline`, reading (and queueing) WebSocket messages meanwhile.
    async fn idle_until(&mut self, deadline: Instant) -> Result<(), Cause> {
        loop {
            let Some(ws) = self.ws.as_mut() else {
                sleep_until(deadline).await;
                return Ok(());
            };
            tokio::select! {
                _ = sleep_until(deadline) => return Ok(()),
                m = ws.next() => on_frame(&mut self.pending, (&self.sh.captures, &mut self.tokens), !self.sh.expects.is_empty(), m)?,
            }
        }
    }

    async fn wait_for(&mut self, expect: &Expect) -> Result<Received, Cause> {
        let raw = match expect {
            Expect::Raw(s) => Some(self.substitute(s)?.into_owned()),
            Expect::Keys { .. } => None,
        };
        let deadline = Instant::now() + self.sh.message_timeout;
        loop {
            if let Some(i) = self
                .pending
                .iter()
                .position(|r| shiny::matches(expect, r, raw.as_deref()))
            {
                return Ok(self.pending.remove(i).expect("index from position"));
            }
            let ws = (self.ws.as_mut())
                .ok_or_else(|| Cause::Recording("no open WebSocket to receive on".into()))?;
            tokio::select! {
                _ = sleep_until(deadline) => {
                    let what = match expect {
                        Expect::Keys { keys, .. } => format!("a message with keys [{keys}]"),
                        Expect::Raw(s) => format!("message {s}"),
                    };
                    return Err(Cause::Timeout(format!(
                        "{what} did not arrive within {:?} (--message-timeout)",
                        self.sh.message_timeout
                    )));
                }
                m = ws.next() => on_frame(&mut self.pending, (&self.sh.captures, &mut self.tokens), !self.sh.expects.is_empty(), m)?,
            }
        }
    }

    async fn handle(&mut self, i: usize, ev: &Event) -> Result<(), Failure> {
        match ev.kind {
            k if k.is_http() => self.http(i, ev).await,
            Kind::WsOpen => self.ws_open(ev).await,
            Kind::WsSend => {
                let text = self.substitute(&ev.message)?.into_owned();
                let ws = (self.ws.as_mut())
                    .ok_or_else(|| Cause::Recording("WS_SEND without an open WebSocket".into()))?;
                ws.send(Message::text(text))
                    .await
                    .map_err(|e| Cause::Closed(format!("WebSocket send: {e}")).into())
            }
            k if k.is_recv() => {
                let expect =
                    (ev.expect.as_ref()).ok_or_else(|| Cause::Internal("no expectation".into()))?;
                let got = self.wait_for(expect).await?;
                if let Some(text) = &got.text {
                    crate::expect::check(&self.sh.expects, ev.line, text)?;
                }
                let missing = |what: &str| Cause::UnexpectedMessage(what.into());
                if ev.kind == Kind::WsRecvInit {
                    let sid = (got.session_id)
                        .ok_or_else(|| missing("init message has no config.sessionId"))?;
                    self.tokens.set("SESSION", &sid);
                }
                if ev.kind == Kind::WsRecvBeginUpload {
                    let job = (got.job_id)
                        .ok_or_else(|| missing("upload reply has no response.value.jobId"))?;
                    self.tokens.set("UPLOAD_JOB_ID", &job);
                }
                Ok(())
            }
            Kind::WsClose => {
                if let Some(mut ws) = self.ws.take() {
                    let _ = ws.close(None).await;
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    async fn http(&mut self, i: usize, ev: &Event) -> Result<(), Failure> {
        let (method, path, req) = self.request(i, ev)?;
        let detail = |c: Cause| Failure::from(c).request(Some(&method), &path);
        if let Some(end) = ev.stream {
            return self.stream(ev, end, req).await.map_err(detail);
        }
        // Every wait is bounded: the response head, then each piece of the body.
        let timeout = self.sh.message_timeout;
        let resp = tokio::time::timeout(timeout, self.http.send(&self.sh.target, req))
            .await
            .map_err(|_| detail(no_response(timeout)))?
            .map_err(detail)?;
        self.jar.store(resp.headers());
        self.server_timing = crate::timing::ServerTiming::parse(
            (resp.headers().get_all("server-timing").iter()).filter_map(|v| v.to_str().ok()),
        );
        let status = resp.status().as_u16();
        let captures = self.sh.captures.iter().any(|c| c.applies_to(ev.line));
        let expects = self.sh.expects.iter().any(|x| x.line == ev.line);
        let keep = match ev.kind {
            _ if captures => CAPTURE_BODY_MAX,
            _ if expects => crate::expect::BODY_MAX,
            Kind::ReqHome => 512 * 1024,
            Kind::ReqTok => 4096,
            _ => 0,
        };
        let body = target::read_body(resp.into_body(), keep, timeout)
            .await
            .map_err(detail)?;
        if !status_ok(ev.status, status) {
            return Err(detail(Cause::WrongStatus {
                expected: ev.status,
                got: status,
            }));
        }
        if captures {
            self.capture(ev, &body).map_err(detail)?;
        }
        if expects {
            let text = String::from_utf8_lossy(&body);
            crate::expect::check(&self.sh.expects, ev.line, &text).map_err(detail)?;
        }
        match ev.kind {
            Kind::ReqHome => {
                if let Some(w) = shiny::worker_id(&body) {
                    self.tokens.set("WORKER", &w);
                }
            }
            Kind::ReqTok => {
                self.tokens
                    .set("TOKEN", String::from_utf8_lossy(&body).trim());
            }
            _ => {}
        }
        Ok(())
    }

    /// Runs the `--capture`s that look at this event's response; one bound to its line that finds
    /// nothing fails the session.
    fn capture(&mut self, ev: &Event, body: &[u8]) -> Result<(), Cause> {
        let text = String::from_utf8_lossy(body);
        for c in self.sh.captures.iter().filter(|c| c.applies_to(ev.line)) {
            match c.find(&text) {
                Some(v) => self.tokens.set(&c.name, &v),
                None if c.line.is_some() => {
                    return Err(Cause::Capture(format!(
                        "--capture {}@{}: {c} found nothing in the response",
                        c.name, ev.line
                    )))
                }
                None => {}
            }
        }
        Ok(())
    }

    /// Opens a recorded streaming response on its own connection (as a browser does): the event
    /// ends when the head arrives with the expected status; the body plays in the background for
    /// the recorded duration, scaled like think time (see [`play_stream`]).
    async fn stream(
        &mut self,
        ev: &Event,
        end: StreamEnd,
        req: Request<Full<Bytes>>,
    ) -> Result<(), Cause> {
        let timeout = self.sh.message_timeout;
        let (method, path) = (req.method().to_string(), req.uri().to_string());
        let (head, stream) =
            tokio::time::timeout(timeout, target::open_stream(&self.sh.target, req))
                .await
                .map_err(|_| no_response(timeout))??;
        self.jar.store(&head.headers);
        let status = head.status.as_u16();
        if !status_ok(ev.status, status) {
            return Err(Cause::WrongStatus {
                expected: ev.status,
                got: status,
            });
        }
        let recorded = (ev.end_ms.unwrap_or(ev.begin_ms) - ev.begin_ms).max(0);
        let hold = Duration::from_millis(self.sh.think.scale(recorded).max(0) as u64);
        let at = At {
            kind: ev.kind,
            line: ev.line,
        };
        self.streams.spawn(async move {
            let r = play_stream(stream, end, hold, timeout).await;
            (
                at,
                r.map_err(|c| Failure::from(c).request(Some(&method), &path)),
            )
        });
        Ok(())
    }

    /// The request a recorded HTTP event makes, with this user's cookies and placeholders.
    fn request(
        &self,
        i: usize,
        ev: &Event,
    ) -> Result<(String, String, Request<Full<Bytes>>), Cause> {
        let sh = self.sh;
        let path = sh.target.path(&self.substitute(&ev.url)?);
        let method = match (&ev.method, ev.kind) {
            (Some(m), _) => m.to_string(),
            (None, Kind::ReqPost) => "POST".into(),
            _ => "GET".into(),
        };
        let mut b = Request::builder()
            .method(method.as_str())
            .uri(path.as_str())
            .header(hyper::header::HOST, sh.target.authority.as_str())
            .header(
                hyper::header::USER_AGENT,
                concat!("surge/", env!("CARGO_PKG_VERSION")),
            );
        if let Some(c) = self.jar.header() {
            b = b.header(hyper::header::COOKIE, c);
        }
        for (k, v) in &sh.headers {
            b = b.header(k, self.header_value(v)?);
        }
        let mut body = self.journey.bodies[i].clone().unwrap_or_default();
        if !sh.vars.is_empty() && body.windows(2).any(|w| w == b"${") {
            if let Ok(text) = std::str::from_utf8(&body) {
                body = Bytes::from(self.substitute(text)?.into_owned());
            }
        }
        let req = b
            .body(Full::new(body))
            .map_err(|e| Cause::Recording(format!("bad request {method} {path}: {e}")))?;
        Ok((method, path, req))
    }

    /// A `-H` header's value with this session's `--data`/`--capture` placeholders filled.
    fn header_value(&self, v: &HeaderValue) -> Result<HeaderValue, Cause> {
        let text = match v.to_str() {
            Ok(t) if !self.sh.vars.is_empty() && t.contains("${") => t,
            _ => return Ok(v.clone()),
        };
        let filled = self.substitute(text)?;
        let mut out = HeaderValue::from_str(&filled).map_err(|_| {
            Cause::Placeholder(crate::tokens::TokenError::BadHeader(text.to_string()))
        })?;
        out.set_sensitive(v.is_sensitive());
        Ok(out)
    }

    async fn ws_open(&mut self, ev: &Event) -> Result<(), Failure> {
        if self.ws.is_some() {
            return Err(
                Cause::Recording("WS_OPEN while a WebSocket is already open".into()).into(),
            );
        }
        let sh = self.sh;
        let url = sh.target.ws_url(&self.substitute(&ev.url)?);
        let detail = |c: Cause| Failure::from(c).request(None, &url);
        let mut req = (url.as_str().into_client_request())
            .map_err(|e| detail(Cause::Recording(format!("bad WebSocket URL: {e}"))))?;
        let h = req.headers_mut();
        h.insert(
            hyper::header::USER_AGENT,
            HeaderValue::from_static(concat!("surge/", env!("CARGO_PKG_VERSION"))),
        );
        if let Some(c) = self.jar.header() {
            if let Ok(v) = HeaderValue::from_str(&c) {
                h.insert(hyper::header::COOKIE, v);
            }
        }
        for (k, v) in &sh.headers {
            h.insert(k, self.header_value(v).map_err(detail)?);
        }
        let tcp = target::connect(&sh.target).await.map_err(detail)?;
        // Small buffers: thousands of idle users must stay cheap.
        let cfg = WebSocketConfig::default()
            .read_buffer_size(4096)
            .write_buffer_size(0);
        let (ws, _) = tokio_tungstenite::client_async_with_config(req, tcp, Some(cfg))
            .await
            .map_err(|e| detail(handshake_failure(e)))?;
        self.ws = Some(ws);
        Ok(())
    }
}

/// A background stream's outcome, with the event it belongs to.
fn stream_result(
    done: Result<(At, Result<(), Failure>), tokio::task::JoinError>,
) -> Result<(), Failure> {
    let (at, r) = done.map_err(|e| Cause::Internal(format!("event stream task: {e}")))?;
    r.map_err(|f| f.at(at))
}

fn no_response(timeout: Duration) -> Cause {
    Cause::Timeout(format!(
        "no response within {timeout:?} (--message-timeout)"
    ))
}

/// A refused WebSocket upgrade is a wrong status (101 expected); anything else a connect error.
fn handshake_failure(e: tokio_tungstenite::tungstenite::Error) -> Cause {
    match e {
        tokio_tungstenite::tungstenite::Error::Http(resp) => Cause::WrongStatus {
            expected: 101,
            got: resp.status().as_u16(),
        },
        e => Cause::ConnectError(format!("WebSocket handshake: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_worker_id_and_status_equivalence() {
        assert_eq!(
            shiny::worker_id(b"<head><base href=\"_w_ab12/\">").as_deref(),
            Some("ab12")
        );
        assert_eq!(shiny::worker_id(b"<head>"), None);
        assert!(status_ok(200, 304) && status_ok(304, 200) && !status_ok(200, 500));
    }
}
