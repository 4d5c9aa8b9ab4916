//! `surge record`: a recording reverse proxy (HTTP + WebSocket). The browser talks to the proxy, the
//! proxy talks to the target and appends one shinyloadtest event per exchange to recording.log
//! (flushed line by line, so Ctrl-C leaves a valid file). Response bodies stream through (SSE, long
//! polls, big downloads: bounded memory); an HTTP event is written when its response ends. Live
//! session values are written back as `${PLACEHOLDER}`s; noise messages are relayed but not
//! recorded. Ends when the first WebSocket is closed by the browser (tab closed) or on Ctrl-C.
//!
//! Modules: `state` (recording.log, placeholders, open requests), `output` (the file: in place
//! from its first event, so a session that records nothing keeps an older recording), `http`
//! (one exchange), `tap` (the streamed response body that writes its event), `ws` (WebSocket
//! relay).

mod http;
mod output;
mod state;
mod tap;
mod ws;

use crate::net::Connector;
use crate::recording::{self, TARGET_HTTP, TARGET_SHINY};
use crate::target::Target;
use crate::tokens::Placeholders;
use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header;
use hyper::{Request, Response, StatusCode};
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioIo};
use state::{Log, State};
use std::collections::HashMap;
use std::future::Future;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::net::TcpListener;
use tokio::sync::watch;

/// Command-line options of `surge record`.
#[derive(clap::Args, Debug, Clone)]
pub struct RecordArgs {
    /// App to record, e.g. http://127.0.0.1:3838/
    #[arg(long)]
    pub target: String,
    /// Address the recording proxy listens on (open http://<this>/ in the browser)
    // A socket address as clap reads it, as manifold's --listen, cranwhales' --addr and
    // --dashboard: the same text is accepted or refused, in the same words, by every program.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8600")]
    pub listen: std::net::SocketAddr,
    /// Recording file to write (POST bodies go to <file>.post.N)
    #[arg(short = 'o', long, default_value = "recording.log")]
    pub output: PathBuf,
    /// Target type header: auto (detect Shiny), R/Shiny, or surge/http
    // Only these: any other text (`shiny`) was written to the header as it was, and the
    // recorder then treated a Shiny app as plain HTTP (no ${WORKER}/${TOKEN}/… placeholders),
    // so the recording did not replay.
    #[arg(long, default_value = "auto", value_parser = ["auto", TARGET_SHINY, TARGET_HTTP])]
    pub target_type: String,
    /// NAME=VALUE: write every VALUE of URLs and WebSocket messages as ${NAME}, for replay --data
    /// (repeatable; the same as surge parametrize afterwards)
    #[arg(long = "param", value_name = "NAME=VALUE")]
    pub params: Vec<String>,
    /// TLS and address flags for an https:// target (the browser side stays http)
    #[command(flatten)]
    pub tls: crate::net::TlsArgs,
}

/// Why a recording cannot start: one line naming the flag, file or target.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// A flag's value is wrong (`--target`, `--param`, `--listen`).
    #[error("{0}")]
    Usage(String),
    /// The target cannot be reached, or its TLS setup is refused.
    #[error(transparent)]
    Target(#[from] crate::net::SetupError),
    /// The target did not answer the detection request.
    #[error("{0}")]
    Detect(String),
    /// A file could not be written.
    #[error("{}: {err}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What the OS said.
        err: std::io::Error,
    },
}

/// `--param NAME=VALUE`s as placeholders known from the start (the few names live as long as
/// the recorder).
fn params(raw: &[String]) -> Result<Placeholders, RecordError> {
    let mut p = Placeholders::default();
    for r in raw {
        let (name, value) = r
            .split_once('=')
            .filter(|(n, v)| {
                !n.is_empty()
                    && !v.is_empty()
                    && n.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
            })
            .ok_or_else(|| {
                RecordError::Usage(format!(
                    "--param {r}: expected NAME=VALUE (NAME: letters, digits, _)"
                ))
            })?;
        let placeholder: &'static str = Box::leak(format!("${{{name}}}").into_boxed_str());
        p.add(value, placeholder);
    }
    Ok(p)
}

/// A recording ready to start: target checked (TLS probe, Shiny detected), proxy listening,
/// recording.log created with its header. [`run`] takes it with a stop future, so a test runs a
/// recorder in-process; `main.rs` owns the flags, Ctrl-C and the messages.
pub struct RecordPlan {
    state: Arc<State>,
    listener: TcpListener,
    done_rx: watch::Receiver<bool>,
    /// The address the proxy listens on (the browser opens `http://<addr>/`).
    pub addr: std::net::SocketAddr,
    /// `R/Shiny` or `surge/http`, as detected or given.
    pub target_type: String,
}

/// What a finished recording wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct Recorded {
    /// Events written to recording.log (0: the file was not written, an existing one is
    /// untouched).
    pub events: u32,
    /// recording.log's path.
    pub output: PathBuf,
}

impl RecordPlan {
    /// Checks the target (URL, TLS probe, Shiny detection), binds `--listen` and writes the
    /// recording's header; each error is one line naming the flag or file.
    pub async fn from_args(args: &RecordArgs) -> Result<RecordPlan, RecordError> {
        let target = Target::parse(&args.target)
            .map_err(|e| RecordError::Usage(format!("--target {e}")))?
            .with_tls(&args.tls, crate::net::HANDSHAKE_TIMEOUT)?;
        target.probe().await?;
        let client = Client::builder(TokioExecutor::new()).build(Connector(target.dialer.clone()));
        let target_type = match args.target_type.as_str() {
            "auto" => detect(&client, &target).await?,
            t => t.to_string(),
        };
        let listener = TcpListener::bind(args.listen)
            .await
            .map_err(|e| RecordError::Usage(format!("--listen {}: {e}", args.listen)))?;
        let listen_err =
            |e: std::io::Error| RecordError::Usage(format!("--listen {}: {e}", args.listen));
        let addr = listener.local_addr().map_err(listen_err)?;
        let file_err = |err| RecordError::Io {
            path: args.output.clone(),
            err,
        };
        let file =
            output::Output::create(&args.output, &recording::header(&args.target, &target_type))
                .map_err(file_err)?;
        let (done, done_rx) = watch::channel(false);
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
            tokens: Mutex::new(params(&args.params)?),
            posts: AtomicU32::new(0),
            events: AtomicU32::new(0),
            next_req: AtomicU64::new(0),
            open: Mutex::new(HashMap::new()),
            client,
            done,
        });
        Ok(RecordPlan {
            state,
            listener,
            done_rx,
            addr,
            target_type,
        })
    }
}

/// Runs the proxy until the browser closes the session's WebSocket or `stop` resolves; every
/// open exchange is then written (recording.log stays valid). Installs no signal handler.
pub async fn run(plan: RecordPlan, stop: impl Future<Output = ()>) -> Recorded {
    let RecordPlan {
        state,
        listener,
        mut done_rx,
        ..
    } = plan;
    tokio::pin!(stop);
    loop {
        tokio::select! {
            acc = listener.accept() => {
                let Ok((tcp, _)) = acc else { continue };
                let _ = tcp.set_nodelay(true);
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
            () = &mut stop => break,
        }
    }
    state.close_all();
    if state.events.load(Ordering::Relaxed) == 0 {
        state.log().file.discard();
    }
    Recorded {
        events: state.events.load(Ordering::Relaxed),
        output: state.output.clone(),
    }
}

/// Shiny or not, from the target's home page. Reads until "shiny" shows up, 256 KB, the end, or
/// 3 s of waiting (a page may stream or never end).
async fn detect(
    client: &Client<Connector, Full<Bytes>>,
    target: &Target,
) -> Result<String, RecordError> {
    let uri = format!("{}{}/", target.origin(), target.base_path);
    let wait = std::time::Duration::from_secs(3);
    let parsed = (uri.parse()).map_err(|e| RecordError::Usage(format!("--target {uri}: {e}")))?;
    let resp = tokio::time::timeout(wait, client.get(parsed))
        .await
        .map_err(|_| RecordError::Detect(format!("target {uri} did not answer within {wait:?}")))?
        .map_err(|e| RecordError::Detect(format!("cannot reach target {uri}: {e}")))?;
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
        ws::websocket(st, req).await
    } else {
        http::http(st, req).await
    })
}
