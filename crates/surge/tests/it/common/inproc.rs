//! surge's commands driven in-process (issue 19): the terminal layer's own flag parsing
//! (`surge::terminal::Cli`) and its `run_command`, with a [`Terminal`] of the test's (no logger,
//! no signal handler, a stop the test triggers), on a tokio runtime of their own. Tests that
//! assert results use these; the binary stays for exit statuses, stderr and stdout lines,
//! signals, environment variables and shinycannon's command lines.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;
use surge::replay::Replayed as Outcome;
use surge::terminal::{run_command, Cli, Command, CommandError, Finished, Signal, Stop, Terminal};
use tokio::sync::oneshot;

/// The runtime `main.rs` gives replay, record and capacity (one worker per CPU).
fn runtime() -> tokio::runtime::Runtime {
    surge::runtime().unwrap()
}

/// `surge ARGS…` parsed by the library's own command line (a bad one fails the test).
pub fn command<S: AsRef<str>>(args: &[S]) -> Command {
    let argv: Vec<&str> = args.iter().map(AsRef::as_ref).collect();
    Cli::parse_args(&argv)
        .unwrap_or_else(|e| panic!("surge {argv:?}: {e}"))
        .command
}

/// `surge SUB ARGS…` parsed (see [`command`]).
fn sub<S: AsRef<str>>(name: &str, args: &[S]) -> Command {
    let argv: Vec<&str> = std::iter::once(name)
        .chain(args.iter().map(AsRef::as_ref))
        .collect();
    command(&argv)
}

/// A test's terminal: no logger, no progress lines, `argv` as the session CSVs' command line,
/// and a stop that `stop` triggers (as SIGINT would). Must be called inside a runtime.
fn terminal(
    argv: &[String],
    stop: impl std::future::Future<Output = ()> + Send + 'static,
) -> Terminal {
    let term = Terminal {
        stop: Stop::new(),
        logger: false,
        progress: false,
        argv: argv.to_vec(),
    };
    let s = term.stop.clone();
    tokio::spawn(async move {
        stop.await;
        s.trigger(Signal::Interrupt);
    });
    term
}

/// `surge replay ARGS` in-process, on the caller's runtime: the plan from the flags (the session
/// CSVs' command line is `args`, as the binary writes it), then the run until its end or `stop`.
/// No progress lines on stderr (the tests that read those start the binary).
pub async fn replay_async(
    args: &[String],
    stop: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<Outcome, CommandError> {
    let term = terminal(args, stop);
    match run_command(sub("replay", args), &term).await? {
        Finished::Replay(o) => Ok(*o),
        other => panic!("surge replay finished as {other:?}"),
    }
}

/// The flags of `surge replay RECORDING --target TARGET --users N --output-dir RUN EXTRA…`.
pub fn replay_argv(
    recording: &Path,
    target: &str,
    users: u32,
    run: &Path,
    extra: &[&str],
) -> Vec<String> {
    let mut v = vec![
        recording.display().to_string(),
        "--target".into(),
        target.into(),
        "--users".into(),
        users.to_string(),
        "--output-dir".into(),
        run.display().to_string(),
    ];
    v.extend(extra.iter().map(|s| s.to_string()));
    v
}

/// `surge replay ARGS` in-process to its end: the outcome (its `exit_code()` is the binary's
/// status); a plan error fails the test.
pub fn replay_with(args: &[String]) -> Outcome {
    runtime()
        .block_on(replay_async(args, std::future::pending()))
        .unwrap_or_else(|e| panic!("surge replay {args:?}: {e}"))
}

/// `surge replay RECORDING --target TARGET --users N --output-dir RUN EXTRA…` in-process to its
/// end (see [`replay_with`]).
pub fn replay_in_process(
    recording: &Path,
    target: &str,
    users: u32,
    run: &Path,
    extra: &[&str],
) -> Outcome {
    replay_with(&replay_argv(recording, target, users, run, extra))
}

/// Replays `recording` with `users` users (`extra` flags appended) in-process, asserts a clean
/// run (exit status 0, no failed session) and returns its summary.json.
pub fn replay_clean(
    recording: &Path,
    target: &str,
    users: u32,
    run: &Path,
    extra: &[&str],
) -> serde_json::Value {
    let outcome = replay_in_process(recording, target, users, run, extra);
    let text = surge::replay::replay_text(&outcome.summary, run);
    assert_eq!(outcome.exit_code(), 0, "{text}");
    let s = super::summary(run);
    assert_eq!(s["sessions"]["failed"].as_u64(), Some(0), "{text}");
    s
}

/// A command running in-process on a thread of its own (with its own runtime); dropping it stops
/// the command and waits for its end.
pub struct Background<T> {
    stop: Option<oneshot::Sender<()>>,
    done: mpsc::Receiver<T>,
}

impl<T> Background<T> {
    /// Waits (at most `within`) for the command to end by itself; None when it did not.
    pub fn wait(&mut self, within: Duration) -> Option<T> {
        self.done.recv_timeout(within).ok()
    }

    /// Sends the stop signal (what Ctrl-C is to the binary) and waits at most `within` for the end.
    pub fn stop(&mut self, within: Duration) -> Option<T> {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        self.wait(within)
    }
}

impl<T> Drop for Background<T> {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        let _ = self.done.recv_timeout(Duration::from_secs(30));
    }
}

/// Starts `task(stop)` on a new thread with its own runtime; its result comes back through
/// [`Background::wait`] or [`Background::stop`].
fn background<T, F, Fut>(task: F) -> Background<T>
where
    T: Send + 'static,
    F: FnOnce(oneshot::Receiver<()>) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = T>,
{
    let (stop_tx, stop_rx) = oneshot::channel();
    let (done_tx, done) = mpsc::channel();
    std::thread::spawn(move || {
        let out = runtime().block_on(task(stop_rx));
        let _ = done_tx.send(out);
    });
    Background {
        stop: Some(stop_tx),
        done,
    }
}

/// A stop future from the oneshot: resolves when told (or when the sender is gone).
async fn until(rx: oneshot::Receiver<()>) {
    let _ = rx.await;
}

/// [`replay_in_process`] on a thread of its own, so the test can act during the run (kill the
/// target, stop it as Ctrl-C would).
pub fn spawn_replay(
    recording: &Path,
    target: &str,
    users: u32,
    run: &Path,
    extra: &[&str],
) -> Background<Result<Outcome, CommandError>> {
    spawn_replay_with(replay_argv(recording, target, users, run, extra))
}

/// `surge replay ARGS` in-process on a thread of its own (see [`spawn_replay`]).
pub fn spawn_replay_with(args: Vec<String>) -> Background<Result<Outcome, CommandError>> {
    background(move |stop| async move { replay_async(&args, until(stop)).await })
}

/// `surge record --target TARGET --listen 127.0.0.1:0 -o OUT FLAGS…` in-process: the recorder
/// (stop it as Ctrl-C would, or wait for the browser's tab to close) and the proxy URL.
pub fn record_in_process(
    target: &str,
    out: &Path,
    flags: &[String],
) -> (Background<surge::record::Recorded>, String) {
    let argv = super::record_argv(target, out, flags);
    let Command::Record(args) = command(&argv) else {
        unreachable!("record_argv starts with record")
    };
    let (addr_tx, addr_rx) = mpsc::channel();
    let rec = background(move |stop| async move {
        let plan = surge::record::RecordPlan::from_args(&args).await;
        let plan = match plan {
            Ok(p) => p,
            Err(e) => {
                let _ = addr_tx.send(Err(format!("{e:#}")));
                return surge::record::Recorded {
                    events: 0,
                    output: PathBuf::new(),
                };
            }
        };
        let _ = addr_tx.send(Ok(plan.addr));
        surge::record::run(plan, until(stop)).await
    });
    let addr = addr_rx
        .recv()
        .unwrap()
        .unwrap_or_else(|e| panic!("surge record {argv:?}: {e}"));
    (rec, format!("http://{addr}/"))
}

/// `surge import-har HAR -o OUT` in-process, which must succeed; returns the recording it wrote.
pub fn import_har(har: &Path, out: &Path) -> surge::recording::Recording {
    let args = surge::har::ImportArgs {
        har: har.to_path_buf(),
        output: out.to_path_buf(),
        target: None,
    };
    let done = surge::har::run(args).unwrap();
    let rec = surge::recording::Recording::load(out).unwrap();
    // What the command says it wrote is what the file holds.
    assert_eq!(
        (done.output.as_path(), done.events),
        (out, rec.events.len())
    );
    rec
}

/// `surge ARGS` through the terminal layer on a runtime like the binary's (a current-thread one
/// for bench), to its end: the result and the exit status the binary gives.
fn finish(args: &[&str], bench: bool) -> Result<(Finished, u8), CommandError> {
    let rt = if bench {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    } else {
        runtime()
    };
    rt.block_on(async {
        let term = terminal(&owned(&args[1..]), std::future::pending());
        let done = run_command(command(args), &term).await?;
        let code = done.exit_code(term.stop.signal());
        Ok((done, code))
    })
}

/// `surge bench ARGS --json` in-process: the exit status the binary gives (1 when the verdict
/// says too many requests were not ok) and the JSON result.
pub fn bench_in_process(args: &[&str]) -> (Option<i32>, serde_json::Value) {
    let argv: Vec<&str> = std::iter::once("bench")
        .chain(args.iter().copied())
        .collect();
    let (done, code) = finish(&argv, true).unwrap_or_else(|e| panic!("surge {argv:?}: {e}"));
    let Finished::Bench(report, _) = done else {
        panic!("surge bench finished as {done:?}")
    };
    (
        Some(i32::from(code)),
        serde_json::to_value(&report).unwrap(),
    )
}

/// `surge report ARGS` in-process: the report's result (the HTML file written on success).
pub fn report_in_process(args: &[&str]) -> Result<(), CommandError> {
    let argv: Vec<&str> = std::iter::once("report")
        .chain(args.iter().copied())
        .collect();
    finish(&argv, false).map(|_| ())
}

/// `surge merge ARGS` in-process: the exit status the binary gives, or its error.
pub fn merge_in_process(args: &[&str]) -> Result<u8, CommandError> {
    let argv: Vec<&str> = std::iter::once("merge")
        .chain(args.iter().copied())
        .collect();
    finish(&argv, false).map(|(_, code)| code)
}

/// `&str`s as the owned flags [`replay_with`] takes.
pub fn owned(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

/// `surge capacity ARGS`' plan, from the flags as the binary parses and checks them.
pub fn capacity_plan(args: &[&str]) -> surge::capacity::CapacityPlan {
    let Command::Capacity(a) = sub("capacity", args) else {
        unreachable!("a capacity command line")
    };
    surge::capacity::CapacityPlan::from_args(*a).unwrap()
}

/// `surge replay ARGS`' flags, parsed as the binary parses them.
pub fn parse_replay_args(args: &[&str]) -> surge::replay::ReplayArgs {
    let Command::Replay(c) = sub("replay", args) else {
        unreachable!("a replay command line")
    };
    c.replay
}

/// Runs `f` to its end on the runtime `main.rs` gives replay, record and capacity.
pub fn block_on<F: std::future::Future>(f: F) -> F::Output {
    runtime().block_on(f)
}

/// `surge explain ARGS`' flags, parsed as the binary parses them.
pub fn explain_args(args: &[&str]) -> surge::capacity::explain::ExplainArgs {
    let Command::Explain(a) = sub("explain", args) else {
        unreachable!("an explain command line")
    };
    *a
}
