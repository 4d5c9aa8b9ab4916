//! `surge replay`: many simulated users, each replaying the recorded session in a loop, shinycannon
//! semantics (user w starts at w × interval; users loop until the loaded duration ends, then finish
//! their current session). One task per user; the parsed recording is shared, per-user state is a
//! few small buffers (target: ≤ 50 KB per user at 10,000 users).

use crate::checks::{self, CheckResult, Threshold};
use crate::output::{self, SessionLog};
use crate::recording::{Event, Kind, Recording, StreamEnd};
use crate::shiny::{self, Expect, Received};
use crate::stats::{self, Summary};
use crate::target::{self, Conn, CookieJar, Target};
use crate::timefmt::{self, parse_duration};
use crate::tokens::Tokens;
use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use hdrhistogram::Histogram;
use http_body_util::{BodyExt, Full};
use hyper::header::{HeaderName, HeaderValue};
use hyper::Request;
use serde::Serialize;
use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio::time::{sleep_until, Instant};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

/// Command-line options of `surge replay` (names follow shinycannon where it has one).
#[derive(clap::Args, Debug, Clone)]
pub struct ReplayArgs {
    /// recording.log to replay (from `surge record`, `surge import-har` or shinyloadtest)
    pub recording: PathBuf,
    /// Base URL of the app under test, e.g. http://127.0.0.1:3838/
    #[arg(long)]
    pub target: String,
    /// Number of simulated users (shinycannon's --workers)
    #[arg(long, alias = "workers", default_value_t = 1)]
    pub users: u32,
    /// Delay between user starts (default: recording length / users)
    #[arg(long, value_parser = parse_duration)]
    pub start_interval: Option<Duration>,
    /// How long to keep all users looping after the last one started
    #[arg(long, value_parser = parse_duration, default_value = "0s")]
    pub loaded_duration: Duration,
    /// Run directory (default: test-logs-<time>)
    #[arg(long)]
    pub output_dir: Option<PathBuf>,
    /// Replace the run directory if it exists
    #[arg(long)]
    pub overwrite_output: bool,
    /// Extra request header, 'Name: value' (repeatable)
    #[arg(short = 'H', long = "header")]
    pub headers: Vec<String>,
    /// Pauses between actions: recorded, none, or x<factor> (x0.5 = twice as fast)
    #[arg(long, default_value = "recorded")]
    pub think_time: ThinkTime,
    /// Fail a session when an expected message has not arrived within this time
    #[arg(long, value_parser = parse_duration, default_value = "30s")]
    pub message_timeout: Duration,
    /// Highest acceptable share of failed sessions (0.05 or 5%); above it exit status is 1
    #[arg(long, value_parser = checks::parse_rate, default_value = "0")]
    pub max_failure_rate: f64,
    /// Latency check, [SCOPE:]pNN<DURATION (SCOPE: all, session or an event type); exit 1 if missed
    #[arg(long = "threshold")]
    pub thresholds: Vec<Threshold>,
    /// Print summary.json to stdout instead of the text summary
    #[arg(long)]
    pub json: bool,
}

/// How think time (the pauses in the recording) is replayed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ThinkTime {
    Recorded,
    None,
    Factor(f64),
}

impl FromStr for ThinkTime {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "recorded" => Ok(ThinkTime::Recorded),
            "none" => Ok(ThinkTime::None),
            _ => s
                .strip_prefix('x')
                .and_then(|f| f.parse::<f64>().ok())
                .filter(|f| f.is_finite() && *f >= 0.0)
                .map(ThinkTime::Factor)
                .ok_or_else(|| format!("think time \"{s}\": expected recorded, none or x<factor>")),
        }
    }
}

impl ThinkTime {
    fn scale(self, ms: i64) -> i64 {
        match self {
            ThinkTime::Recorded => ms,
            ThinkTime::None => 0,
            ThinkTime::Factor(f) => (ms as f64 * f) as i64,
        }
    }
}

/// Everything users share, read-only except the counters and the aggregate.
struct Shared {
    rec: Recording,
    bodies: Vec<Option<Bytes>>,
    target: Target,
    headers: Vec<(HeaderName, HeaderValue)>,
    think: ThinkTime,
    message_timeout: Duration,
    out_dir: PathBuf,
    comment_lines: String,
    t0: Instant,
    interval: Duration,
    loaded_end: Instant,
    next_session: AtomicU32,
    running: AtomicU32,
    done: AtomicU32,
    failed: AtomicU32,
    agg: Mutex<Aggregate>,
}

/// Run-wide latency histograms (ms) and failure reasons, filled as sessions end.
struct Aggregate {
    per_kind: BTreeMap<Kind, Histogram<u64>>,
    overall: Histogram<u64>,
    session: Histogram<u64>,
    failures: BTreeMap<String, u64>,
    write_errors: u64,
}

/// summary.json: the machine-readable result of a run.
#[derive(Serialize, Debug)]
pub struct RunSummary {
    pub tool: String,
    pub recording: String,
    pub target: String,
    pub users: u32,
    pub start_interval_ms: u64,
    pub loaded_duration_ms: u64,
    pub think_time: String,
    pub message_timeout_ms: u64,
    /// Unix ms: run start, end of warm-up (last user started), planned end of the loaded phase, end.
    pub started_at_ms: i64,
    pub warmup_end_ms: i64,
    pub loaded_end_ms: i64,
    pub finished_at_ms: i64,
    pub duration_ms: i64,
    pub recording_duration_ms: i64,
    pub interrupted: bool,
    pub sessions: SessionCounts,
    pub failure_rate: f64,
    pub failures: Vec<FailureCount>,
    /// Per event type (REQ_HOME, WS_RECV, ...): durations in ms.
    pub events: BTreeMap<String, Summary>,
    /// All events together, ms.
    pub overall: Summary,
    /// Whole completed sessions, ms.
    pub session_duration: Summary,
    pub checks: Vec<CheckResult>,
    pub ok: bool,
}

/// Session counts of a run.
#[derive(Serialize, Debug)]
pub struct SessionCounts {
    pub started: u64,
    pub completed: u64,
    pub failed: u64,
}

/// One failure reason and how many sessions failed with it.
#[derive(Serialize, Debug)]
pub struct FailureCount {
    pub reason: String,
    pub count: u64,
}

/// Exit status: all good.
pub const EXIT_OK: u8 = 0;
/// Exit status: a check failed (failure rate or threshold).
pub const EXIT_CHECKS: u8 = 1;
/// Exit status: interrupted by Ctrl-C (results written so far are consistent).
pub const EXIT_INTERRUPTED: u8 = 130;

/// Runs a replay; returns the process exit status.
pub async fn run(args: ReplayArgs) -> anyhow::Result<u8> {
    let rec = Recording::load(&args.recording)?;
    let target = Target::parse(&args.target).map_err(anyhow::Error::msg)?;
    if args.users == 0 {
        anyhow::bail!("--users must be at least 1");
    }
    let mut bodies = Vec::with_capacity(rec.events.len());
    for ev in &rec.events {
        bodies.push(match &ev.datafile {
            Some(p) => Some(Bytes::from(std::fs::read(p).map_err(|e| {
                anyhow::anyhow!(
                    "{}:{}: datafile {}: {e}",
                    rec.path.display(),
                    ev.line,
                    p.display()
                )
            })?)),
            None => None,
        });
    }
    let mut headers = Vec::new();
    for h in &args.headers {
        let (k, v) = h
            .split_once(':')
            .ok_or_else(|| anyhow::anyhow!("-H \"{h}\": expected 'Name: value'"))?;
        headers.push((
            HeaderName::from_bytes(k.trim().as_bytes())
                .map_err(|e| anyhow::anyhow!("-H \"{h}\": {e}"))?,
            HeaderValue::from_str(v.trim()).map_err(|e| anyhow::anyhow!("-H \"{h}\": {e}"))?,
        ));
    }
    let out_dir = args.output_dir.clone().unwrap_or_else(|| {
        PathBuf::from(format!(
            "test-logs-{}",
            timefmt::format_iso(timefmt::now_ms()).replace(':', "-")
        ))
    });
    output::prepare_dir(&out_dir, args.overwrite_output).map_err(anyhow::Error::msg)?;
    output::copy_recording(&rec, &out_dir).map_err(anyhow::Error::msg)?;

    let interval = args.start_interval.unwrap_or_else(|| {
        Duration::from_millis((rec.duration_ms() / i64::from(args.users)).max(0) as u64)
    });
    let argv: Vec<String> = std::env::args().skip(2).collect();
    let config = serde_json::json!({
        "tool": format!("surge {}", env!("CARGO_PKG_VERSION")),
        "appUrl": args.target,
        "recordingPath": args.recording.display().to_string(),
        "outputDir": out_dir.display().to_string(),
        "overwriteOutput": args.overwrite_output,
        "workers": args.users,
        "startIntervalMs": interval.as_millis() as u64,
        "loadedDurationMinutes": args.loaded_duration.as_secs_f64() / 60.0,
        "thinkTime": think_name(args.think_time),
        "messageTimeoutMs": args.message_timeout.as_millis() as u64,
    });
    let comment_lines = format!("# {}\n# {}\n", argv.join(" "), config);

    let started_at_ms = timefmt::now_ms();
    let t0 = Instant::now();
    let warmup = interval * (args.users - 1);
    let loaded_end = t0 + warmup + args.loaded_duration;
    let sh = Arc::new(Shared {
        rec,
        bodies,
        target,
        headers,
        think: args.think_time,
        message_timeout: args.message_timeout,
        out_dir: out_dir.clone(),
        comment_lines,
        t0,
        interval,
        loaded_end,
        next_session: AtomicU32::new(0),
        running: AtomicU32::new(0),
        done: AtomicU32::new(0),
        failed: AtomicU32::new(0),
        agg: Mutex::new(Aggregate {
            per_kind: BTreeMap::new(),
            overall: stats::new_histogram(),
            session: stats::new_histogram(),
            failures: BTreeMap::new(),
            write_errors: 0,
        }),
    });

    let (stop_tx, stop_rx) = watch::channel(false);
    let stop_tx = Arc::new(stop_tx);
    let sigint = {
        let stop_tx = stop_tx.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                eprintln!("surge: interrupted, finishing partial results");
                let _ = stop_tx.send(true);
            }
        })
    };
    let progress = tokio::spawn(progress(sh.clone(), args.users));
    let mut workers = tokio::task::JoinSet::new();
    for w in 0..args.users {
        workers.spawn(worker(sh.clone(), w, stop_rx.clone()));
    }
    while workers.join_next().await.is_some() {}
    progress.abort();
    sigint.abort();
    let interrupted = *stop_rx.borrow();

    let summary = summarize(&sh, &args, started_at_ms, warmup, interrupted);
    let json = serde_json::to_string_pretty(&summary)?;
    std::fs::write(out_dir.join("summary.json"), format!("{json}\n"))?;
    if args.json {
        println!("{json}");
    } else {
        print!("{}", crate::printer::replay_text(&summary, &out_dir));
    }
    Ok(if interrupted {
        EXIT_INTERRUPTED
    } else if summary.ok {
        EXIT_OK
    } else {
        EXIT_CHECKS
    })
}

fn think_name(t: ThinkTime) -> String {
    match t {
        ThinkTime::Recorded => "recorded".into(),
        ThinkTime::None => "none".into(),
        ThinkTime::Factor(f) => format!("x{f}"),
    }
}

fn summarize(
    sh: &Shared,
    args: &ReplayArgs,
    started_at_ms: i64,
    warmup: Duration,
    interrupted: bool,
) -> RunSummary {
    let agg = sh.agg.lock().expect("aggregate lock");
    let done = u64::from(sh.done.load(Ordering::Relaxed));
    let failed = u64::from(sh.failed.load(Ordering::Relaxed));
    let started = done + failed;
    let failure_rate = if started == 0 {
        0.0
    } else {
        failed as f64 / started as f64
    };
    let mut failures: Vec<FailureCount> = agg
        .failures
        .iter()
        .map(|(r, c)| FailureCount {
            reason: r.clone(),
            count: *c,
        })
        .collect();
    failures.sort_by_key(|f| std::cmp::Reverse(f.count));
    let mut checks_out = vec![CheckResult {
        check: format!("failure_rate<={}", args.max_failure_rate),
        value: failure_rate,
        limit: args.max_failure_rate,
        ok: failure_rate <= args.max_failure_rate && started > 0,
    }];
    let empty = stats::new_histogram();
    for t in &args.thresholds {
        let h = match t.scope.as_str() {
            "all" => &agg.overall,
            "session" => &agg.session,
            s => Kind::parse(s)
                .and_then(|k| agg.per_kind.get(&k))
                .unwrap_or(&empty),
        };
        checks_out.push(t.eval(h));
    }
    let ok = checks_out.iter().all(|c| c.ok);
    let finished_at_ms = timefmt::now_ms();
    RunSummary {
        tool: format!("surge {}", env!("CARGO_PKG_VERSION")),
        recording: args.recording.display().to_string(),
        target: args.target.clone(),
        users: args.users,
        start_interval_ms: sh.interval.as_millis() as u64,
        loaded_duration_ms: args.loaded_duration.as_millis() as u64,
        think_time: think_name(args.think_time),
        message_timeout_ms: args.message_timeout.as_millis() as u64,
        started_at_ms,
        warmup_end_ms: started_at_ms + warmup.as_millis() as i64,
        loaded_end_ms: started_at_ms + (warmup + args.loaded_duration).as_millis() as i64,
        finished_at_ms,
        duration_ms: finished_at_ms - started_at_ms,
        recording_duration_ms: sh.rec.duration_ms(),
        interrupted,
        sessions: SessionCounts {
            started,
            completed: done,
            failed,
        },
        failure_rate,
        failures,
        events: agg
            .per_kind
            .iter()
            .map(|(k, h)| (k.name().to_string(), stats::summarize(h, 1.0)))
            .collect(),
        overall: stats::summarize(&agg.overall, 1.0),
        session_duration: stats::summarize(&agg.session, 1.0),
        checks: checks_out,
        ok,
    }
}

async fn progress(sh: Arc<Shared>, users: u32) {
    let line = |sh: &Shared| {
        format!(
            "{:>6.1}s  running {}  done {}  failed {}  (users {users})",
            sh.t0.elapsed().as_secs_f64(),
            sh.running.load(Ordering::Relaxed),
            sh.done.load(Ordering::Relaxed),
            sh.failed.load(Ordering::Relaxed)
        )
    };
    if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        let bar = indicatif::ProgressBar::new_spinner();
        loop {
            bar.set_message(line(&sh));
            bar.tick();
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    } else {
        loop {
            tokio::time::sleep(Duration::from_secs(5)).await;
            eprintln!("surge: {}", line(&sh));
        }
    }
}

async fn stopped(stop: &mut watch::Receiver<bool>) {
    while !*stop.borrow() {
        if stop.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

/// One simulated user: wait for its start time, then run sessions until the loaded phase is over.
async fn worker(sh: Arc<Shared>, w: u32, mut stop: watch::Receiver<bool>) {
    let start = sh.t0 + sh.interval * w;
    tokio::select! {
        _ = sleep_until(start) => {}
        _ = stopped(&mut stop) => return,
    }
    let mut rng = (u64::from(w) + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ timefmt::now_ms() as u64;
    let mut iteration = 0;
    loop {
        let sid = sh.next_session.fetch_add(1, Ordering::Relaxed);
        let ok = run_session(&sh, sid, w, iteration, &mut rng, &mut stop).await;
        iteration += 1;
        if *stop.borrow() || Instant::now() >= sh.loaded_end {
            break;
        }
        if !ok {
            // A failing target must not turn into a hot loop of empty sessions.
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_millis(500)) => {}
                _ = stopped(&mut stop) => break,
            }
            if Instant::now() >= sh.loaded_end {
                break;
            }
        }
    }
}

async fn run_session(
    sh: &Shared,
    sid: u32,
    w: u32,
    iteration: u32,
    rng: &mut u64,
    stop: &mut watch::Receiver<bool>,
) -> bool {
    sh.running.fetch_add(1, Ordering::Relaxed);
    let mut log = SessionLog::new(sid, w, iteration);
    log.push("PLAYER_SESSION_CREATE", 0);
    let mut line = 0u32;
    let result = {
        let mut player = Player {
            sh,
            tokens: Tokens::new_session(rng),
            jar: CookieJar::default(),
            http: Conn::default(),
            ws: None,
            pending: VecDeque::new(),
            streams: tokio::task::JoinSet::new(),
        };
        let play = player.play(&mut log, &mut line);
        tokio::select! {
            r = play => r,
            _ = stopped(stop) => Err("interrupted (SIGINT)".to_string()),
        }
    };
    let ok = result.is_ok();
    match result {
        Ok(()) => log.push("PLAYBACK_DONE", 0),
        Err(reason) => {
            log.push("PLAYBACK_FAIL", line);
            log.failure = Some(reason);
        }
    }
    let write = log.write(&sh.out_dir, &sh.comment_lines);
    sh.running.fetch_sub(1, Ordering::Relaxed);
    if ok {
        sh.done.fetch_add(1, Ordering::Relaxed);
    } else {
        sh.failed.fetch_add(1, Ordering::Relaxed);
    }
    record(sh, &log, write.is_err());
    ok
}

/// Adds one finished session's durations and outcome to the run aggregate.
fn record(sh: &Shared, log: &SessionLog, write_failed: bool) {
    let mut agg = sh.agg.lock().expect("aggregate lock");
    if write_failed {
        agg.write_errors += 1;
    }
    let mut open: Option<(Kind, i64)> = None;
    for r in &log.rows {
        if let Some(k) = Kind::ALL.iter().find(|k| k.start_name() == r.event) {
            open = Some((*k, r.ts));
        } else if let Some((k, ts)) = open {
            if k.end_name() == r.event {
                let d = (r.ts - ts).max(0) as u64;
                let _ = agg.overall.record(d);
                let _ = agg
                    .per_kind
                    .entry(k)
                    .or_insert_with(stats::new_histogram)
                    .record(d);
                open = None;
            }
        }
    }
    match &log.failure {
        None => {
            if let (Some(a), Some(b)) = (log.rows.first(), log.rows.last()) {
                let _ = agg.session.record((b.ts - a.ts).max(0) as u64);
            }
        }
        Some(reason) => *agg.failures.entry(reason.clone()).or_insert(0) += 1,
    }
}

type Ws = WebSocketStream<TcpStream>;

/// The state of one session being played: a few strings, one HTTP connection, one WebSocket, and
/// the streaming responses (SSE) playing in the background (aborted when the session is dropped).
struct Player<'a> {
    sh: &'a Shared,
    tokens: Tokens,
    jar: CookieJar,
    http: Conn,
    ws: Option<Ws>,
    pending: VecDeque<Received>,
    streams: tokio::task::JoinSet<(&'static str, u32, Result<(), String>)>,
}

/// Plays one streaming response in the background: reads (and drops) what the server sends.
/// `Client`: the browser closed it after the recorded time, so the server must keep it open for
/// `hold`; `Server`: the server ended it, so it must end within `hold` + the message timeout.
async fn play_stream(
    mut s: target::Stream,
    end: StreamEnd,
    hold: Duration,
    timeout: Duration,
) -> Result<(), String> {
    let deadline = Instant::now()
        + match end {
            StreamEnd::Client => hold,
            StreamEnd::Server => hold + timeout,
        };
    loop {
        tokio::select! {
            biased;
            _ = sleep_until(deadline) => {
                return match end {
                    StreamEnd::Client => Ok(()),
                    StreamEnd::Server => Err(format!(
                        "event stream not ended by the server within {hold:?} + {timeout:?} (--message-timeout)"
                    )),
                };
            }
            f = s.body.frame() => match f {
                Some(Ok(_)) => {}
                Some(Err(e)) => return Err(format!("event stream broke: {e}")),
                None => {
                    return match end {
                        StreamEnd::Server => Ok(()),
                        StreamEnd::Client => Err(format!(
                            "event stream ended by the server before the recorded {hold:?}"
                        )),
                    };
                }
            }
        }
    }
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
    async fn play(&mut self, log: &mut SessionLog, line: &mut u32) -> Result<(), String> {
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
            self.handle(i, ev)
                .await
                .map_err(|e| format!("{} line {}: {e}", ev.kind.name(), ev.line))?;
            log.push(ev.kind.end_name(), ev.line);
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
        let tcp = TcpStream::connect(&sh.target.authority)
            .await
            .map_err(|e| format!("connect {}: {e}", sh.target.authority))?;
        let _ = tcp.set_nodelay(true);
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

/// Loads a recording and reports whether it parses (used by `surge replay --check`-style tests).
pub fn validate(path: &Path) -> Result<usize, String> {
    Recording::load(path)
        .map(|r| r.events.len())
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn think_time_parses() {
        assert_eq!(
            "recorded".parse::<ThinkTime>().unwrap(),
            ThinkTime::Recorded
        );
        assert_eq!("x0.5".parse::<ThinkTime>().unwrap(), ThinkTime::Factor(0.5));
        assert!("fast".parse::<ThinkTime>().is_err());
        assert_eq!(ThinkTime::Factor(0.5).scale(1000), 500);
        assert_eq!(ThinkTime::None.scale(1000), 0);
    }

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
