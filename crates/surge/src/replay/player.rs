//! The session player: one user's pass through the recording (HTTP requests on its own
//! connection, the WebSocket, placeholders, expected messages), each wait bounded.

use super::stream::play_stream;
use super::Shared;
use crate::output::SessionLog;
use crate::recording::{Event, Kind, StreamEnd};
use crate::shiny::{self, Expect, Received};
use crate::target::{self, Conn, CookieJar};
use crate::tokens::Tokens;
use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use http_body_util::Full;
use hyper::header::HeaderValue;
use hyper::Request;
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
    pub sh: &'a Shared,
    pub tokens: Tokens,
    pub jar: CookieJar,
    pub http: Conn,
    pub ws: Option<Ws>,
    pub pending: VecDeque<Received>,
    pub streams: tokio::task::JoinSet<(&'static str, u32, Result<(), String>)>,
}

/// Most unmatched messages kept per session (older ones are dropped).
const PENDING_MAX: usize = 64;

fn on_frame(
    pending: &mut VecDeque<Received>,
    m: Option<Result<Message, tokio_tungstenite::tungstenite::Error>>,
) -> Result<(), String> {
    match m {
        Some(Ok(Message::Text(t))) if t.starts_with("c[") => {
            Err(format!("server closed the SockJS session: {}", t.as_str()))
        }
        Some(Ok(Message::Text(t))) => {
            for r in shiny::receive(t.as_str()) {
                if pending.len() == PENDING_MAX {
                    pending.pop_front();
                }
                pending.push_back(r);
            }
            Ok(())
        }
        Some(Ok(Message::Close(_))) | None => Err("server closed the WebSocket".into()),
        Some(Ok(_)) => Ok(()),
        Some(Err(e)) => Err(format!("WebSocket: {e}")),
    }
}

fn status_ok(expected: u16, got: u16) -> bool {
    expected == got || (matches!(expected, 200 | 304) && matches!(got, 200 | 304))
}

impl Player<'_> {
    /// Plays the whole recording once; `line` is the recording line being played.
    pub async fn play(&mut self, log: &mut SessionLog, line: &mut u32) -> Result<(), String> {
        let rec = &self.sh.rec;
        let shiny = rec.is_shiny();
        let mut prev_begin: Option<i64> = None;
        for (i, ev) in rec.events.iter().enumerate() {
            if let Some(done) = self.streams.try_join_next() {
                self.stream_result(done, line)?;
            }
            *line = ev.line;
            let gap = prev_begin.map(|p| (ev.begin_ms - p).max(0)).unwrap_or(0);
            let sleeps = match ev.kind {
                Kind::WsSend | Kind::WsClose => true,
                Kind::ReqGet => self.ws.is_some() || !shiny,
                k => !shiny && k.is_http(),
            };
            let sleep = if sleeps { self.sh.think.scale(gap) } else { 0 };
            if sleep > 0 {
                log.push("PLAYBACK_SLEEPBEFORE_START", ev.line);
                self.idle_until(Instant::now() + Duration::from_millis(sleep as u64))
                    .await
                    .map_err(|e| format!("{} line {}: {e}", ev.kind.name(), ev.line))?;
                log.push("PLAYBACK_SLEEPBEFORE_END", ev.line);
            }
            log.push(ev.kind.start_name(), ev.line);
            let t = Instant::now();
            self.handle(i, ev)
                .await
                .map_err(|e| format!("{} line {}: {e}", ev.kind.name(), ev.line))?;
            log.push(ev.kind.end_name(), ev.line);
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
            self.stream_result(done, line)?;
        }
        Ok(())
    }

    fn stream_result(
        &self,
        done: Result<(&'static str, u32, Result<(), String>), tokio::task::JoinError>,
        line: &mut u32,
    ) -> Result<(), String> {
        let (kind, l, r) = done.map_err(|e| format!("event stream task: {e}"))?;
        r.map_err(|e| {
            *line = l;
            format!("{kind} line {l}: {e}")
        })
    }

    /// Waits until `deadline`, reading (and queueing) WebSocket messages meanwhile.
    async fn idle_until(&mut self, deadline: Instant) -> Result<(), String> {
        loop {
            let Some(ws) = self.ws.as_mut() else {
                sleep_until(deadline).await;
                return Ok(());
            };
            tokio::select! {
                _ = sleep_until(deadline) => return Ok(()),
                m = ws.next() => on_frame(&mut self.pending, m)?,
            }
        }
    }

    async fn wait_for(&mut self, expect: &Expect) -> Result<Received, String> {
        let raw = match expect {
            Expect::Raw(s) => Some(self.tokens.substitute(s)?.into_owned()),
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
            let ws = self.ws.as_mut().ok_or("no open WebSocket")?;
            tokio::select! {
                _ = sleep_until(deadline) => {
                    let what = match expect {
                        Expect::Keys { keys, .. } => format!("a message with keys [{keys}]"),
                        Expect::Raw(s) => format!("message {s}"),
                    };
                    return Err(format!(
                        "{what} did not arrive within {:?} (--message-timeout)",
                        self.sh.message_timeout
                    ));
                }
                m = ws.next() => on_frame(&mut self.pending, m)?,
            }
        }
    }

    async fn handle(&mut self, i: usize, ev: &Event) -> Result<(), String> {
        match ev.kind {
            k if k.is_http() => self.http(i, ev).await,
            Kind::WsOpen => self.ws_open(ev).await,
            Kind::WsSend => {
                let text = self.tokens.substitute(&ev.message)?.into_owned();
                let ws = self
                    .ws
                    .as_mut()
                    .ok_or("WS_SEND without an open WebSocket")?;
                ws.send(Message::text(text))
                    .await
                    .map_err(|e| format!("WebSocket send: {e}"))
            }
            Kind::WsRecv | Kind::WsRecvInit | Kind::WsRecvBeginUpload => {
                let expect = ev.expect.as_ref().ok_or("no expectation")?;
                let got = self.wait_for(expect).await?;
                if ev.kind == Kind::WsRecvInit {
                    let sid = got
                        .session_id
                        .ok_or("init message has no config.sessionId")?;
                    self.tokens.set("SESSION", &sid);
                }
                if ev.kind == Kind::WsRecvBeginUpload {
                    let job = got
                        .job_id
                        .ok_or("upload reply has no response.value.jobId")?;
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

    async fn http(&mut self, i: usize, ev: &Event) -> Result<(), String> {
        let (method, path, req) = self.request(i, ev)?;
        if let Some(end) = ev.stream {
            return self.stream(ev, end, method, path, req).await;
        }
        // Every wait is bounded: the response head, then each piece of the body.
        let timeout = self.sh.message_timeout;
        let resp = tokio::time::timeout(timeout, self.http.send(&self.sh.target, req))
            .await
            .map_err(|_| {
                format!("no response within {timeout:?} (--message-timeout): {method} {path}")
            })??;
        self.jar.store(resp.headers());
        let status = resp.status().as_u16();
        let keep = match ev.kind {
            Kind::ReqHome => 512 * 1024,
            Kind::ReqTok => 4096,
            _ => 0,
        };
        let body = target::read_body(resp.into_body(), keep, timeout)
            .await
            .map_err(|e| format!("{e}: {method} {path}"))?;
        if !status_ok(ev.status, status) {
            return Err(format!(
                "status {status}, expected {}: {method} {path}",
                ev.status
            ));
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

    /// Opens a recorded streaming response on its own connection (as a browser does): the event
    /// ends when the head arrives with the expected status; the body plays in the background for
    /// the recorded duration, scaled like think time (see [`play_stream`]).
    async fn stream(
        &mut self,
        ev: &Event,
        end: StreamEnd,
        method: String,
        path: String,
        req: Request<Full<Bytes>>,
    ) -> Result<(), String> {
        let timeout = self.sh.message_timeout;
        let (head, stream) =
            tokio::time::timeout(timeout, target::open_stream(&self.sh.target, req))
                .await
                .map_err(|_| {
                    format!("no response within {timeout:?} (--message-timeout): {method} {path}")
                })??;
        self.jar.store(&head.headers);
        let status = head.status.as_u16();
        if !status_ok(ev.status, status) {
            return Err(format!(
                "status {status}, expected {}: {method} {path}",
                ev.status
            ));
        }
        let recorded = (ev.end_ms.unwrap_or(ev.begin_ms) - ev.begin_ms).max(0);
        let hold = Duration::from_millis(self.sh.think.scale(recorded).max(0) as u64);
        let (kind, line) = (ev.kind.name(), ev.line);
        self.streams
            .spawn(async move { (kind, line, play_stream(stream, end, hold, timeout).await) });
        Ok(())
    }

    /// The request a recorded HTTP event makes, with this user's cookies and placeholders.
    fn request(
        &self,
        i: usize,
        ev: &Event,
    ) -> Result<(String, String, Request<Full<Bytes>>), String> {
        let sh = self.sh;
        let path = sh.target.path(&self.tokens.substitute(&ev.url)?);
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
            b = b.header(k, v);
        }
        let body = sh.bodies[i].clone().unwrap_or_default();
        let req = b
            .body(Full::new(body))
            .map_err(|e| format!("bad request {method} {path}: {e}"))?;
        Ok((method, path, req))
    }

    async fn ws_open(&mut self, ev: &Event) -> Result<(), String> {
        if self.ws.is_some() {
            return Err("WS_OPEN while a WebSocket is already open".into());
        }
        let sh = self.sh;
        let url = sh.target.ws_url(&self.tokens.substitute(&ev.url)?);
        let mut req = url
            .as_str()
            .into_client_request()
            .map_err(|e| format!("bad WebSocket URL {url}: {e}"))?;
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
            h.insert(k, v.clone());
        }
        let tcp = crate::net::connect(&sh.target.authority)
            .await
            .map_err(|e| format!("connect {}: {e}", sh.target.authority))?;
        // Small buffers: thousands of idle users must stay cheap.
        let cfg = WebSocketConfig::default()
            .read_buffer_size(4096)
            .write_buffer_size(0);
        let (ws, _) = tokio_tungstenite::client_async_with_config(req, tcp, Some(cfg))
            .await
            .map_err(|e| format!("WebSocket handshake {url}: {e}"))?;
        self.ws = Some(ws);
        Ok(())
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
