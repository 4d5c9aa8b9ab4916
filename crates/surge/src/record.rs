//! `surge record`: a recording reverse proxy (HTTP + WebSocket). The browser talks to the proxy, the
//! proxy talks to the target and appends one shinyloadtest event per exchange to recording.log
//! (flushed line by line, so Ctrl-C leaves a valid file). Response bodies stream through (SSE, long
//! polls, big downloads: bounded memory); an HTTP event is written when its response ends. Live
//! session values are written back as `${PLACEHOLDER}`s; noise messages are relayed but not
//! recorded. Ends when the first WebSocket is closed by the browser (tab closed) or on Ctrl-C.

use crate::recording::{self, EventLine, STREAM_CLIENT, STREAM_SERVER, TARGET_HTTP, TARGET_SHINY};
use crate::shiny;
use crate::target::Target;
use crate::timefmt::{format_iso, now_ms};
use crate::tokens::Placeholders;
use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::{Body, Frame, Incoming, SizeHint};
use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::client::legacy::{connect::HttpConnector, Client};
use hyper_util::rt::{TokioExecutor, TokioIo};
use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::Role;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

/// Command-line options of `surge record`.
#[derive(clap::Args, Debug, Clone)]
pub struct RecordArgs {
    /// App to record, e.g. http://127.0.0.1:3838/
    #[arg(long)]
    pub target: String,
    /// Address the recording proxy listens on (open http://<this>/ in the browser)
    #[arg(long, default_value = "127.0.0.1:8600")]
    pub listen: String,
    /// Recording file to write (POST bodies go to <file>.post.N)
    #[arg(short = 'o', long, default_value = "recording.log")]
    pub output: PathBuf,
    /// Target type header: auto (detect Shiny), R/Shiny, or surge/http
    #[arg(long, default_value = "auto")]
    pub target_type: String,
}

/// recording.log and the events held back while a home page streams.
struct Log {
    file: std::fs::File,
    homes_open: u32,
    held: Vec<EventLine>,
}

struct State {
    target: Target,
    target_url: String,
    shiny: bool,
    output: PathBuf,
    file: Mutex<Log>,
    tokens: Mutex<Placeholders>,
    posts: AtomicU32,
    events: AtomicU32,
    next_req: AtomicU64,
    open: Mutex<HashMap<u64, OpenReq>>,
    client: Client<HttpConnector, Full<Bytes>>,
    done: watch::Sender<bool>,
}

const HOP_BY_HOP: [&str; 9] = [
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "host",
];

fn strip_hop(h: &mut HeaderMap) {
    for n in HOP_BY_HOP {
        h.remove(n);
    }
}

impl State {
    /// Appends an event, or holds it while a home page is still streaming: the page's event comes
    /// first (replay learns `${WORKER}` from it), though the browser fetched assets meanwhile.
    fn write(&self, ev: &EventLine) {
        let mut log = self.file.lock().expect("file lock");
        if log.homes_open > 0 {
            log.held.push(ev.clone());
        } else {
            self.append(&mut log, ev);
        }
    }

    fn append(&self, log: &mut Log, ev: &EventLine) {
        let line = serde_json::to_string(ev).expect("event serializes");
        if writeln!(log.file, "{line}")
            .and_then(|_| log.file.flush())
            .is_err()
        {
            eprintln!("surge record: cannot write {}", self.output.display());
        }
        self.events.fetch_add(1, Ordering::Relaxed);
    }

    /// Writes a home page's event, then what was held while it streamed (once no page is open).
    fn write_home(&self, ev: &EventLine) {
        let mut log = self.file.lock().expect("file lock");
        log.homes_open = log.homes_open.saturating_sub(1);
        self.append(&mut log, ev);
        if log.homes_open == 0 {
            for held in std::mem::take(&mut log.held) {
                self.append(&mut log, &held);
            }
        }
    }

    fn apply(&self, s: &str) -> String {
        self.tokens.lock().expect("tokens lock").apply(s)
    }

    fn add_token(&self, value: &str, placeholder: &'static str) {
        self.tokens
            .lock()
            .expect("tokens lock")
            .add(value, placeholder);
    }
}

/// Runs the proxy until the browser closes the session's WebSocket or Ctrl-C; exit status 0.
pub async fn run(args: RecordArgs) -> anyhow::Result<u8> {
    let target = Target::parse(&args.target).map_err(anyhow::Error::msg)?;
    let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let target_type = match args.target_type.as_str() {
        "auto" => detect(&client, &target).await?,
        t => t.to_string(),
    };
    let listener = TcpListener::bind(&args.listen)
        .await
        .map_err(|e| anyhow::anyhow!("--listen {}: {e}", args.listen))?;
    let addr = listener.local_addr()?;
    let mut file = std::fs::File::create(&args.output)
        .map_err(|e| anyhow::anyhow!("{}: {e}", args.output.display()))?;
    file.write_all(recording::header(&args.target, &target_type).as_bytes())?;
    file.flush()?;
    let (done, mut done_rx) = watch::channel(false);
    let state = Arc::new(State {
        target,
        target_url: args.target.clone(),
        shiny: target_type == TARGET_SHINY,
        output: args.output.clone(),
        file: Mutex::new(Log {
            file,
            homes_open: 0,
            held: Vec::new(),
        }),
        tokens: Mutex::new(Placeholders::default()),
        posts: AtomicU32::new(0),
        events: AtomicU32::new(0),
        next_req: AtomicU64::new(0),
        open: Mutex::new(HashMap::new()),
        client,
        done,
    });
    // Ignore a closed stdout: the recording matters, the message does not.
    let _ = writeln!(
        std::io::stdout(),
        "surge record: listening on http://{addr}/ -> {} ({target_type}); close the browser tab or press Ctrl-C to finish",
        args.target
    );
    let _ = std::io::stdout().flush();
    let sigint = tokio::signal::ctrl_c();
    tokio::pin!(sigint);
    loop {
        tokio::select! {
            acc = listener.accept() => {
                let Ok((tcp, _)) = acc else { continue };
                let st = state.clone();
                tokio::spawn(async move {
                    let svc = hyper::service::service_fn(move |req| handle(st.clone(), req));
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(tcp), svc)
                        .with_upgrades()
                        .await;
                });
            }
            _ = done_rx.changed() => break,
            _ = &mut sigint => break,
        }
    }
    state.close_all();
    let _ = writeln!(
        std::io::stdout(),
        "surge record: wrote {} events to {}",
        state.events.load(Ordering::Relaxed),
        args.output.display()
    );
    Ok(0)
}

/// Shiny or not, from the target's home page. Reads until "shiny" shows up, 256 KB, the end, or
/// 3 s of waiting (a page may stream or never end).
async fn detect(
    client: &Client<HttpConnector, Full<Bytes>>,
    target: &Target,
) -> anyhow::Result<String> {
    let uri = format!("http://{}{}/", target.authority, target.base_path);
    let wait = std::time::Duration::from_secs(3);
    let resp = tokio::time::timeout(wait, client.get(uri.parse()?))
        .await
        .map_err(|_| anyhow::anyhow!("target {uri} did not answer within {wait:?}"))?
        .map_err(|e| anyhow::anyhow!("cannot reach target {uri}: {e}"))?;
    let mut body = resp.into_body();
    let mut seen = Vec::new();
    let deadline = tokio::time::Instant::now() + wait;
    let mut shiny = false;
    while !shiny && seen.len() < 256 * 1024 {
        match tokio::time::timeout_at(deadline, body.frame()).await {
            Ok(Some(Ok(f))) => {
                if let Some(d) = f.data_ref() {
                    seen.extend(d.iter().map(u8::to_ascii_lowercase));
                    shiny = seen.windows(5).any(|w| w == b"shiny");
                }
            }
            _ => break,
        }
    }
    Ok(if shiny { TARGET_SHINY } else { TARGET_HTTP }.to_string())
}

/// The proxy's response body: the target's body streamed through a [`Tap`], or a short message.
type ProxyBody = BoxBody<Bytes, hyper::Error>;

fn full(b: impl Into<Bytes>) -> ProxyBody {
    Full::new(b.into()).map_err(|never| match never {}).boxed()
}

fn text_response(status: StatusCode, msg: String) -> Response<ProxyBody> {
    let mut r = Response::new(full(msg));
    *r.status_mut() = status;
    r
}

async fn handle(
    st: Arc<State>,
    req: Request<Incoming>,
) -> Result<Response<ProxyBody>, std::convert::Infallible> {
    let is_ws = req
        .headers()
        .get(header::UPGRADE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("websocket"));
    Ok(if is_ws {
        websocket(st, req).await
    } else {
        http(st, req).await
    })
}

/// Request bodies are collected (they are saved to recording.log.post.N); response bodies stream to
/// the browser frame by frame, so Server-Sent Events, long polls and big downloads pass through with
/// bounded memory. The event is written when the response ends (see [`Tap`]).
async fn http(st: Arc<State>, req: Request<Incoming>) -> Response<ProxyBody> {
    let begin = now_ms();
    let (parts, body) = req.into_parts();
    let pq = parts
        .uri
        .path_and_query()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| "/".into());
    let body = match body.collect().await {
        Ok(b) => b.to_bytes(),
        Err(e) => return text_response(StatusCode::BAD_REQUEST, format!("reading request: {e}")),
    };
    let uri = format!("http://{}{}", st.target.authority, st.target.path(&pq));
    let mut up = Request::new(Full::new(body.clone()));
    *up.method_mut() = parts.method.clone();
    *up.uri_mut() = match uri.parse() {
        Ok(u) => u,
        Err(e) => return text_response(StatusCode::BAD_REQUEST, format!("bad URL {uri}: {e}")),
    };
    let mut headers = parts.headers.clone();
    strip_hop(&mut headers);
    if let Ok(v) = HeaderValue::from_str(&st.target.authority) {
        headers.insert(header::HOST, v);
    }
    *up.headers_mut() = headers;
    let resp = match st.client.request(up).await {
        Ok(r) => r,
        Err(e) => {
            return text_response(
                StatusCode::BAD_GATEWAY,
                format!("surge record: target {}: {e}", st.target_url),
            )
        }
    };
    let (rparts, rbody) = resp.into_parts();
    let open = open_http(
        &st,
        &parts.method,
        pq,
        &body,
        &rparts.headers,
        rparts.status.as_u16(),
        begin,
    );
    let home = open.as_ref().is_some_and(|o| o.ev.kind == "REQ_HOME");
    let keep = match open.as_ref().map(|o| o.ev.kind.as_str()) {
        Some("REQ_HOME") => 512 * 1024,
        Some("REQ_TOK") => 4096,
        _ => 0,
    };
    if home {
        st.file.lock().expect("file lock").homes_open += 1;
    }
    let id = open.map(|o| {
        let id = st.next_req.fetch_add(1, Ordering::Relaxed);
        st.open.lock().expect("open lock").insert(id, o);
        id
    });
    let tap = Tap {
        inner: rbody,
        st: st.clone(),
        id,
        head: Vec::new(),
        keep,
        find_worker: home,
    };
    let mut out = Response::new(tap.boxed());
    *out.status_mut() = rparts.status;
    let mut h = rparts.headers;
    strip_hop(&mut h);
    *out.headers_mut() = h;
    out
}

/// A request whose response is still streaming: the event minus its end (and the URL, which gets
/// placeholders applied when it is written, after tokens learnt meanwhile).
struct OpenReq {
    ev: EventLine,
    pq: String,
}

/// Relays the target's response body frame by frame and writes the request's event when the body
/// ends: the target finished (or failed), or the browser went away (hyper drops the body). Keeps at
/// most `keep` bytes, for the values REQ_HOME / REQ_TOK bodies carry.
struct Tap {
    inner: Incoming,
    st: Arc<State>,
    id: Option<u64>,
    head: Vec<u8>,
    keep: usize,
    /// A home page: learn `${WORKER}` as soon as its `<base href>` has passed, since the browser
    /// fetches `_w_<worker>/` assets while the page is still streaming.
    find_worker: bool,
}

impl Tap {
    fn finish(&mut self, by_server: bool) {
        if let Some(id) = self.id.take() {
            self.st.close_req(id, &self.head, by_server);
        }
    }
}

impl Body for Tap {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        let this = &mut *self;
        let r = Pin::new(&mut this.inner).poll_frame(cx);
        match &r {
            Poll::Ready(Some(Ok(f))) => {
                if let Some(d) = f.data_ref() {
                    if this.head.len() < this.keep {
                        let n = (this.keep - this.head.len()).min(d.len());
                        this.head.extend_from_slice(&d[..n]);
                    }
                    if this.find_worker {
                        if let Some(w) = shiny::worker_id(&this.head) {
                            this.st.add_token(&w, "${WORKER}");
                            this.find_worker = false;
                        }
                    }
                }
            }
            Poll::Ready(_) => this.finish(true),
            Poll::Pending => {}
        }
        r
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for Tap {
    fn drop(&mut self) {
        // Dropped before its end: the browser went away (closed an EventSource, left the page).
        self.finish(false);
    }
}

/// True for a Server-Sent Events response (it stays open while the page is).
fn is_event_stream(h: &HeaderMap) -> bool {
    h.get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().starts_with("text/event-stream"))
}

/// The event for a request whose response head has arrived; None for what is not recorded.
fn open_http(
    st: &State,
    method: &Method,
    pq: String,
    body: &Bytes,
    resp_headers: &HeaderMap,
    status: u16,
    begin: i64,
) -> Option<OpenReq> {
    let path = pq.split('?').next().unwrap_or("");
    if path.ends_with("favicon.ico") {
        return None;
    }
    let mut ev = EventLine {
        begin: format_iso(begin),
        status: Some(status),
        ..Default::default()
    };
    if *method == Method::GET {
        let html = resp_headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/html"));
        let lower = path.to_ascii_lowercase();
        ev.kind = if (st.shiny && (lower.ends_with('/') || lower.ends_with(".rmd")))
            || (!st.shiny && html && lower.ends_with('/'))
        {
            "REQ_HOME"
        } else if st.shiny && path.contains("__token__") {
            "REQ_TOK"
        } else if let Some(n) = st.shiny.then(|| robust_id(path)).flatten() {
            st.add_token(n, "${ROBUST_ID}");
            "REQ_SINF"
        } else {
            "REQ_GET"
        }
        .into();
    } else {
        ev.kind = "REQ_POST".into();
        if *method != Method::POST {
            ev.method = Some(method.as_str().to_string());
        }
        if !body.is_empty() {
            let n = st.posts.fetch_add(1, Ordering::Relaxed);
            let file = PathBuf::from(format!("{}.post.{n}", st.output.display()));
            if let Err(e) = std::fs::write(&file, body) {
                eprintln!("surge record: cannot write {}: {e}", file.display());
            }
            ev.datafile = file.file_name().map(|f| f.to_string_lossy().into_owned());
        }
    }
    if is_event_stream(resp_headers) {
        // Ended by whom is filled in when it ends.
        ev.stream = Some(String::new());
    }
    Some(OpenReq { ev, pq })
}

impl State {
    /// Writes the event of a finished request (once; later calls for the same id do nothing).
    fn close_req(&self, id: u64, head: &[u8], by_server: bool) {
        let Some(OpenReq { mut ev, pq }) = self.open.lock().expect("open lock").remove(&id) else {
            return;
        };
        if ev.kind == "REQ_TOK" {
            self.add_token(String::from_utf8_lossy(head).trim(), "${TOKEN}");
        }
        if let Some(s) = ev.stream.as_mut() {
            *s = if by_server {
                STREAM_SERVER
            } else {
                STREAM_CLIENT
            }
            .into();
        }
        ev.end = Some(format_iso(now_ms()));
        ev.url = Some(self.apply(&pq));
        if ev.kind == "REQ_HOME" {
            self.write_home(&ev);
        } else {
            self.write(&ev);
        }
    }

    /// Writes the events of requests still streaming when the recording stops (ended by the client).
    fn close_all(&self) {
        let ids: Vec<u64> = self
            .open
            .lock()
            .expect("open lock")
            .keys()
            .copied()
            .collect();
        for id in ids {
            self.close_req(id, &[], false);
        }
    }
}

/// `n=<id>` segment of a SockJS info URL.
fn robust_id(path: &str) -> Option<&str> {
    let rest = &path[path.find("/__sockjs__/")? + 12..];
    rest.split('/')
        .find_map(|seg| seg.strip_prefix("n="))
        .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'))
}

/// `<server>/<session>` of a SockJS WebSocket path `.../<a>/<b>/websocket`.
fn sockjs_id(path: &str) -> Option<String> {
    let p = path.strip_suffix("/websocket")?;
    let mut segs = p.rsplit('/');
    let b = segs.next()?;
    let a = segs.next()?;
    let word = |s: &str| !s.is_empty() && s.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_');
    (word(a) && word(b)).then(|| format!("{a}/{b}"))
}

async fn websocket(st: Arc<State>, mut req: Request<Incoming>) -> Response<ProxyBody> {
    let Some(key) = req.headers().get(header::SEC_WEBSOCKET_KEY).cloned() else {
        return text_response(StatusCode::BAD_REQUEST, "missing Sec-WebSocket-Key".into());
    };
    let pq = req
        .uri()
        .path_and_query()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| "/".into());
    let url = st.target.ws_url(&pq);
    let mut up_req = match url.as_str().into_client_request() {
        Ok(r) => r,
        Err(e) => return text_response(StatusCode::BAD_REQUEST, format!("bad URL {url}: {e}")),
    };
    for h in [
        header::COOKIE,
        header::USER_AGENT,
        header::SEC_WEBSOCKET_PROTOCOL,
    ] {
        if let Some(v) = req.headers().get(&h) {
            up_req.headers_mut().insert(h, v.clone());
        }
    }
    let begin = now_ms();
    let upstream = match tokio_tungstenite::connect_async(up_req).await {
        Ok((ws, _)) => ws,
        Err(e) => {
            return text_response(StatusCode::BAD_GATEWAY, format!("WebSocket to {url}: {e}"))
        }
    };
    let path = pq.split('?').next().unwrap_or("").to_string();
    if let Some(id) = sockjs_id(&path) {
        st.add_token(&id, "${SOCKJSID}");
    }
    st.write(&EventLine {
        kind: "WS_OPEN".into(),
        begin: format_iso(begin),
        url: Some(st.apply(&pq)),
        ..Default::default()
    });
    let upgrade = hyper::upgrade::on(&mut req);
    let st2 = st.clone();
    tokio::spawn(async move {
        let Ok(upgraded) = upgrade.await else { return };
        let client =
            WebSocketStream::from_raw_socket(TokioIo::new(upgraded), Role::Server, None).await;
        relay(st2, client, upstream).await;
    });
    let mut resp = Response::new(full(Bytes::new()));
    *resp.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let h = resp.headers_mut();
    h.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
    h.insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
    if let Ok(v) = HeaderValue::from_str(&derive_accept_key(key.as_bytes())) {
        h.insert(header::SEC_WEBSOCKET_ACCEPT, v);
    }
    resp
}

fn ws_event(kind: &str, message: Option<String>) -> EventLine {
    EventLine {
        kind: kind.into(),
        begin: format_iso(now_ms()),
        message,
        ..Default::default()
    }
}

async fn relay<C, U>(
    st: Arc<State>,
    mut client: WebSocketStream<C>,
    mut upstream: WebSocketStream<U>,
) where
    C: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
    U: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    loop {
        tokio::select! {
            m = client.next() => match m {
                Some(Ok(Message::Text(t))) => {
                    if !shiny::ignorable_frame(t.as_str()) {
                        st.write(&ws_event("WS_SEND", Some(st.apply(t.as_str()))));
                    }
                    if upstream.send(Message::Text(t)).await.is_err() { break; }
                }
                Some(Ok(Message::Binary(b))) => { if upstream.send(Message::Binary(b)).await.is_err() { break; } }
                Some(Ok(Message::Ping(_))) | Some(Ok(Message::Pong(_))) | Some(Ok(Message::Frame(_))) => {}
                Some(Ok(Message::Close(_))) | Some(Err(_)) | None => {
                    let _ = upstream.close(None).await;
                    st.write(&ws_event("WS_CLOSE", None));
                    let _ = st.done.send(true);
                    break;
                }
            },
            m = upstream.next() => match m {
                Some(Ok(Message::Text(t))) => {
                    record_recv(&st, t.as_str());
                    if client.send(Message::Text(t)).await.is_err() { break; }
                }
                Some(Ok(Message::Binary(b))) => { if client.send(Message::Binary(b)).await.is_err() { break; } }
                Some(Ok(Message::Ping(_))) | Some(Ok(Message::Pong(_))) | Some(Ok(Message::Frame(_))) => {}
                Some(Ok(Message::Close(_))) | Some(Err(_)) | None => {
                    let _ = client.close(None).await;
                    break;
                }
            },
        }
    }
}

fn record_recv(st: &State, frame: &str) {
    if frame == "o" {
        st.write(&ws_event("WS_RECV", Some(frame.into())));
        return;
    }
    if shiny::ignorable_frame(frame) {
        return;
    }
    let first = shiny::payloads(frame)
        .into_iter()
        .next()
        .unwrap_or_default();
    let obj = shiny::parse_object(&first);
    let get = |o: &serde_json::Map<String, serde_json::Value>, path: &[&str]| -> Option<String> {
        let mut v = o.get(path[0])?;
        for p in &path[1..] {
            v = v.get(p)?;
        }
        v.as_str().map(str::to_string)
    };
    let kind = match &obj {
        Some(o) if o.contains_key("config") => {
            if let Some(s) = get(o, &["config", "sessionId"]) {
                st.add_token(&s, "${SESSION}");
            }
            "WS_RECV_INIT"
        }
        Some(o) if get(o, &["response", "value", "jobId"]).is_some() => {
            if let Some(j) = get(o, &["response", "value", "jobId"]) {
                st.add_token(&j, "${UPLOAD_JOB_ID}");
            }
            "WS_RECV_BEGIN_UPLOAD"
        }
        _ => "WS_RECV",
    };
    st.write(&ws_event(kind, Some(st.apply(frame))));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sockjs_ids() {
        assert_eq!(
            robust_id("/__sockjs__/n=AbC123/t=x/w=1/s=0/info"),
            Some("AbC123")
        );
        assert_eq!(robust_id("/shared/shiny.js"), None);
        assert_eq!(
            sockjs_id("/__sockjs__/n=a/t=b/w=c/s=0/000/xyz12345/websocket").as_deref(),
            Some("000/xyz12345")
        );
        assert_eq!(sockjs_id("/websocket/"), None);
    }
}
