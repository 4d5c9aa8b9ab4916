//! A replay's plan: everything a run needs, checked and loaded before any user starts, so
//! `replay::run` can be called in-process (by `surge capacity` or a test) with no flags, no
//! logger and no signal handler of its own.

use super::flags::{self, ReplayArgs};
use super::journey::{self, Journey};
use super::shape::Shape;
use super::ThinkTime;
use crate::capture::Capture;
use crate::checks::Threshold;
use crate::data::DataSet;
use crate::recording::{Recording, RecordingError};
use crate::rundir;
use crate::segment::{self, Segment, SegmentError};
use crate::signin::SignIn;
use crate::target::{Conn, CookieJar, Target};
use crate::timefmt;
use bytes::Bytes;
use hyper::header::{HeaderName, HeaderValue};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// Why a replay could not start or finish. Each message is one line naming the flag or file.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// A flag's value or a combination of flags is wrong.
    #[error("{0}")]
    Usage(String),
    /// The recording cannot be read or parsed.
    #[error(transparent)]
    Recording(#[from] RecordingError),
    /// `--segment` / `--start-at` wrong.
    #[error(transparent)]
    Segment(#[from] SegmentError),
    /// The run directory cannot be prepared.
    #[error(transparent)]
    Output(#[from] rundir::OutputError),
    /// The target cannot be reached or its certificate is refused (one line naming the host),
    /// or a TLS flag is wrong.
    #[error(transparent)]
    Target(#[from] crate::net::SetupError),
    /// The target URL is not one.
    #[error("{flag} {err}")]
    Url {
        /// `APP-URL` or `--target`.
        flag: &'static str,
        /// What is wrong with it.
        err: Box<crate::target::TargetError>,
    },
    /// The first sign-in failed: the request, the server's status and the first line of its
    /// answer (never a secret).
    #[error("sign-in failed: {0}")]
    SignIn(crate::signin::SignInError),
    /// The sign-in flags or their environment variables are wrong, or the target cannot be
    /// asked what it is.
    #[error(transparent)]
    SignInSetup(crate::signin::SignInError),
    /// The `--data` file cannot be used.
    #[error(transparent)]
    Data(#[from] crate::data::DataError),
    /// A `${name}` of the recording (or a `-H` header) that nothing would fill.
    #[error(transparent)]
    Placeholder(#[from] super::placeholders::UnfilledPlaceholder),
    /// A file could not be read or written.
    #[error("{path}: {err}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What the OS said.
        err: std::io::Error,
    },
}

/// A checked replay: recording loaded, URL parsed, run directory prepared.
#[derive(Debug)]
pub struct ReplayPlan {
    /// The recordings to replay, each with its weight (one, unless a mix of journeys).
    pub journeys: Vec<Journey>,
    /// Their weights, in order (each session picks by them).
    pub weights: Vec<u32>,
    /// The app's base URL as given.
    pub url: String,
    /// The app's base URL, parsed.
    pub target: Target,
    /// `-H` headers, then the sign-in's (sensitive: never printed).
    pub headers: Vec<(HeaderName, HeaderValue)>,
    /// What each session does before its first request to sign in (shinycannon's variables or
    /// surge's sign-in flags).
    pub signin: SignIn,
    /// `--data`: per-session values of `${column}` placeholders.
    pub data: Option<DataSet>,
    /// `--capture`s.
    pub captures: Vec<Capture>,
    /// `--expect`s.
    pub expects: Vec<crate::expect::ContentCheck>,
    /// Placeholder names the run declares (data columns, then captures), set per session.
    pub vars: Vec<Arc<str>>,
    /// How users are started and stopped.
    pub shape: Shape,
    /// Users of this process (a segment's share of a ramp; every slot otherwise).
    pub users: Vec<u32>,
    /// `--think-time`.
    pub think: ThinkTime,
    /// `--message-timeout`.
    pub message_timeout: Duration,
    /// `--max-failure-rate`.
    pub max_failure_rate: f64,
    /// `--threshold`s.
    pub thresholds: Vec<Threshold>,
    /// The run directory (prepared: exists, with `sessions/` and the recording copied).
    pub out_dir: PathBuf,
    /// `--segment`.
    pub segment: Option<Segment>,
    /// `--start-at` (Unix ms).
    pub start_at: Option<i64>,
    /// The two `#` lines heading each session CSV.
    pub comment_lines: String,
    /// Stop starting sessions once this many have started after the warm-up (a capacity step's
    /// size); None: no limit.
    pub max_sessions: Option<u32>,
    /// Print the progress line on stderr (off for capacity steps, which print their own).
    pub progress: bool,
    /// `--stop-grace`: how long running sessions may go on after the stop before they are cut.
    pub stop_grace: Duration,
    /// Keep every session's rows for the caller ([`super::Replayed::sessions`]): a capacity
    /// step is judged on them.
    pub keep_sessions: bool,
    /// `--dashboard`'s metrics, fed as users start and sessions end.
    pub live: Option<std::sync::Arc<crate::metrics::LiveMetrics>>,
    /// `--manifold`'s status URL, polled into manifold.csv during the run.
    pub manifold: Option<String>,
}

impl ReplayPlan {
    /// Checks `args`, loads the recording, prepares the run directory; `argv` is the command
    /// line written into the session CSVs' first line.
    /// An https:// target's certificate is checked here, by one probe connection, before the run
    /// directory is touched.
    pub async fn from_args(args: &ReplayArgs, argv: &[String]) -> Result<ReplayPlan, ReplayError> {
        let url = args
            .app_url()
            .map_err(|e| ReplayError::Usage(e.to_string()))?;
        let flag = if args.url_is_positional() {
            "APP-URL"
        } else {
            "--target"
        };
        let target = Target::parse(url).map_err(|e| ReplayError::Url {
            flag,
            err: Box::new(e),
        })?;
        let target = target.with_tls(&args.session.tls, args.session.message_timeout)?;
        let manifold = (args.manifold.as_deref())
            .map(crate::manifold_poll::status_url)
            .transpose()
            .map_err(|e| ReplayError::Usage(e.to_string()))?;
        let journeys = load_journeys(args)?;
        let rec = &journeys[0].rec;
        if args.users == 0 {
            return Err(ReplayError::Usage("--users must be at least 1".into()));
        }
        let shape = shape_of(args, rec)?;
        let (segment, start_at) =
            segment::parse_flags(args.segment.as_deref(), args.start_at.as_deref())?;
        let users = users_of(args, &shape, segment)?;
        let (data, vars) = data_and_vars(args, &journeys)?;
        let (captures, headers) = (&args.session.captures, &args.session.headers);
        super::placeholders::check(&journeys, data.as_ref(), captures, headers)?;
        let mut headers = flags::parse_headers(&args.session.headers)
            .map_err(|e| ReplayError::Usage(e.to_string()))?;
        let out_dir = args.output_dir.clone().unwrap_or_else(|| {
            PathBuf::from(format!(
                "test-logs-{}",
                timefmt::format_iso(timefmt::now_ms()).replace(':', "-")
            ))
        });
        target.probe().await?;
        let signin = check_signin(args, &target, &mut headers).await?;
        rundir::prepare_dir(&out_dir, args.overwrite_output)?;
        rundir::copy_recording(rec, &out_dir)?;
        journey::copy_journeys(&journeys, &out_dir)?;
        let comment_lines = comment_lines(args, argv, url, &out_dir, &shape, segment, start_at);
        Ok(ReplayPlan {
            weights: journeys.iter().map(|j| j.weight).collect(),
            journeys,
            url: url.to_string(),
            target,
            headers,
            signin,
            data,
            captures: args.session.captures.clone(),
            expects: args.session.expects.clone(),
            vars,
            shape,
            users,
            think: args.session.think_time,
            message_timeout: args.session.message_timeout,
            max_failure_rate: args.max_failure_rate,
            thresholds: args.thresholds.clone(),
            out_dir,
            segment,
            start_at,
            comment_lines,
            max_sessions: None,
            progress: true,
            keep_sessions: false,
            stop_grace: args.stop_grace,
            live: None,
            manifold,
        })
    }

    /// The (first) recording: the run's recording.log.
    pub fn rec(&self) -> &Recording {
        &self.journeys[0].rec
    }

    /// The interval between user starts of a ramp (0 for other shapes).
    pub fn interval(&self) -> Duration {
        match &self.shape {
            Shape::Ramp { interval, .. } => *interval,
            _ => Duration::ZERO,
        }
    }
}

/// The run's sign-in, tried once before the run directory is touched: a refused sign-in stops
/// the run here with the server's answer instead of failing every session. Its headers join
/// `headers`.
async fn check_signin(
    args: &ReplayArgs,
    target: &Target,
    headers: &mut Vec<(HeaderName, HeaderValue)>,
) -> Result<SignIn, ReplayError> {
    let env = |v: &str| std::env::var(v).ok();
    let timeout = args.session.message_timeout;
    let signin = SignIn::resolve(&args.session.signin, &env, target, headers, timeout)
        .await
        .map_err(ReplayError::SignInSetup)?;
    headers.extend(signin.headers.iter().cloned());
    if signin.per_session() {
        let (mut conn, mut jar) = (Conn::default(), CookieJar::default());
        (signin
            .sign_in(target, &mut conn, &mut jar, headers, timeout)
            .await)
            .map_err(ReplayError::SignIn)?;
    }
    if let Some(d) = &signin.description {
        tracing::info!("each session signs in first: {d}");
    }
    Ok(signin)
}

/// The recordings of the run (`FILE[:WEIGHT]` each), loaded with their bodies.
fn load_journeys(args: &ReplayArgs) -> Result<Vec<Journey>, ReplayError> {
    let specs = args.recordings();
    let mut parsed = Vec::new();
    for s in &specs {
        parsed.push(journey::parse_spec(s).map_err(|e| ReplayError::Usage(e.to_string()))?);
    }
    if specs.len() == 1 {
        // One recording: its name as given (a weight means nothing alone).
        parsed[0] = (args.recording.clone(), 1);
    }
    let paths: Vec<PathBuf> = parsed.iter().map(|p| p.0.clone()).collect();
    let names = journey::names(&paths);
    let mut out = Vec::new();
    for ((path, weight), name) in parsed.into_iter().zip(names) {
        let rec = Recording::load(&path)?;
        let bodies = load_bodies(&rec)?;
        out.push(Journey {
            name,
            weight,
            rec,
            bodies,
        });
    }
    Ok(out)
}

/// `--data` loaded, and the names the run declares; a `--capture NAME@LINE` must name an HTTP
/// event's line, and no name may be both a column and a capture.
fn data_and_vars(
    args: &ReplayArgs,
    journeys: &[Journey],
) -> Result<(Option<DataSet>, Vec<Arc<str>>), ReplayError> {
    let data = match &args.session.data {
        Some(p) => Some(DataSet::load(p, args.session.data_mode)?),
        None => None,
    };
    let mut vars: Vec<Arc<str>> = data.as_ref().map_or_else(Vec::new, |d| d.columns.clone());
    for c in &args.session.captures {
        if let Some(line) = c.line {
            let http = (journeys.iter().flat_map(|j| &j.rec.events))
                .any(|e| e.line == line && e.kind.is_http());
            if !http {
                return Err(ReplayError::Usage(format!(
                    "--capture {}@{line}: line {line} of {} is not an HTTP request",
                    c.name,
                    journeys[0].rec.path.display()
                )));
            }
        }
        if vars.contains(&c.name) {
            return Err(ReplayError::Usage(format!(
                "--capture {}: the name is already a --data column or another capture",
                c.name
            )));
        }
        vars.push(c.name.clone());
    }
    for x in &args.session.expects {
        let checkable = (journeys.iter().flat_map(|j| &j.rec.events))
            .any(|e| e.line == x.line && (e.kind.is_http() || e.kind.is_recv()));
        if !checkable {
            return Err(ReplayError::Usage(format!(
                "--expect {x}: line {} of {} is not an HTTP request nor a received message",
                x.line,
                journeys[0].rec.path.display()
            )));
        }
    }
    Ok((data, vars))
}

/// The load shape the flags ask for.
fn shape_of(args: &ReplayArgs, rec: &Recording) -> Result<Shape, ReplayError> {
    if let Some(st) = &args.stages {
        return Ok(Shape::Stages(st.0.clone()));
    }
    if let Some(per_sec) = args.arrival_rate {
        let duration = args.loaded_duration();
        if duration.is_zero() {
            return Err(ReplayError::Usage(
                "--arrival-rate needs --loaded-duration (how long sessions keep arriving)".into(),
            ));
        }
        if args.max_users == 0 {
            return Err(ReplayError::Usage("--max-users must be at least 1".into()));
        }
        return Ok(Shape::Arrivals {
            per_sec,
            duration,
            max_users: args.max_users,
        });
    }
    let interval = args.start_interval.unwrap_or_else(|| {
        Duration::from_millis((rec.duration_ms() / i64::from(args.users)).max(0) as u64)
    });
    Ok(Shape::Ramp {
        users: args.users,
        interval,
        loaded: args.loaded_duration(),
    })
}

/// The user slots this process runs: a segment's share of a ramp, else all.
fn users_of(
    args: &ReplayArgs,
    shape: &Shape,
    segment: Option<Segment>,
) -> Result<Vec<u32>, ReplayError> {
    let plan_users = shape.peak_users();
    let users: Vec<u32> = match segment {
        Some(s) => s.users(plan_users).collect(),
        None => (0..plan_users).collect(),
    };
    if users.is_empty() {
        return Err(ReplayError::Usage(format!(
            "--segment {}: the plan has {plan_users} users, so this segment has none (use at most {plan_users} segments)",
            args.segment.as_deref().unwrap_or_default(),
        )));
    }
    Ok(users)
}

/// The request bodies of the recording's events (`datafile`s), read once for all users.
fn load_bodies(rec: &Recording) -> Result<Vec<Option<Bytes>>, ReplayError> {
    let mut bodies = Vec::with_capacity(rec.events.len());
    for ev in &rec.events {
        bodies.push(match &ev.datafile {
            Some(p) => Some(Bytes::from(std::fs::read(p).map_err(|e| {
                ReplayError::Usage(format!(
                    "{}:{}: datafile {}: {e}",
                    rec.path.display(),
                    ev.line,
                    p.display()
                ))
            })?)),
            None => None,
        });
    }
    Ok(bodies)
}

/// The two `#` lines heading every session CSV: the command line and the run's settings in
/// shinycannon's JSON shape. A segment adds `segment` ("K/N") and `startAt`, which `surge merge`
/// and `surge report` read; a shape other than a ramp adds `shape`.
fn comment_lines(
    args: &ReplayArgs,
    argv: &[String],
    url: &str,
    out_dir: &Path,
    shape: &Shape,
    segment: Option<Segment>,
    start_at: Option<i64>,
) -> String {
    let interval = match shape {
        Shape::Ramp { interval, .. } => *interval,
        _ => Duration::ZERO,
    };
    let config = segment::RunConfig {
        tool: format!("surge {}", env!("CARGO_PKG_VERSION")),
        app_url: url.to_string(),
        recording_path: args.recording.display().to_string(),
        output_dir: out_dir.display().to_string(),
        overwrite_output: args.overwrite_output,
        workers: shape.peak_users(),
        start_interval_ms: interval.as_millis() as u64,
        loaded_duration_minutes: args.loaded_duration().as_secs_f64() / 60.0,
        debug_log: args.debug_log,
        log_level: args.log_level.name().to_string(),
        think_time: args.session.think_time.name(),
        message_timeout_ms: args.session.message_timeout.as_millis() as u64,
        shape: (!matches!(shape, Shape::Ramp { .. })).then(|| shape.to_string()),
        segment: segment.map(|s| s.to_string()),
        start_at: start_at.map(timefmt::format_iso),
        merged: None,
    };
    format!("# {}\n# {}\n", argv.join(" "), config.to_line())
}
