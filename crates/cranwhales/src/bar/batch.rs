//! One progress display for a batch of days ingested N at a time (`cranwhales ingest FROM..TO
//! --jobs N`): a bar of days done with the days in flight and their phase, and one result line per
//! day printed above it as each finishes. Without a terminal: the result lines on stdout and a
//! progress line on stderr at most once a second.

use std::io::IsTerminal;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::numfmt::thousands;
use crate::progress::{Event, Progress};

/// The batch's display; shared by the worker threads.
pub struct BatchBar {
    total: usize,
    bar: Option<ProgressBar>,
    state: Mutex<State>,
}

struct State {
    done: usize,
    failed: usize,
    rows: u64,
    /// Days in flight: (label, what it is doing).
    running: Vec<(String, String)>,
    last_log: Instant,
}

impl BatchBar {
    /// A display for `total` days.
    pub fn new(total: usize) -> BatchBar {
        let bar = std::io::stderr().is_terminal().then(|| {
            let b = ProgressBar::with_draw_target(Some(total as u64), ProgressDrawTarget::stderr());
            b.set_style(
                ProgressStyle::with_template("[{bar:30}] {pos}/{len} days {elapsed} {msg}")
                    .expect("valid template")
                    .progress_chars("=> "),
            );
            b.enable_steady_tick(Duration::from_millis(200));
            b
        });
        BatchBar {
            total,
            bar,
            state: Mutex::new(State {
                done: 0,
                failed: 0,
                rows: 0,
                running: Vec::new(),
                last_log: Instant::now() - Duration::from_secs(1),
            }),
        }
    }

    /// The progress of one day of the batch.
    pub fn job(&self, label: &str) -> Job<'_> {
        self.lock()
            .running
            .push((label.to_owned(), "starting".into()));
        self.redraw(false);
        Job {
            batch: self,
            label: label.to_owned(),
        }
    }

    /// A day is over: its result `line` (stdout, or stderr when `failed`) above the bar.
    pub fn finish(&self, label: &str, line: &str, rows: u64, failed: bool) {
        {
            let mut s = self.lock();
            s.running.retain(|(l, _)| l != label);
            s.done += 1;
            s.failed += usize::from(failed);
            s.rows += rows;
        }
        let print = || {
            if failed {
                eprintln!("{line}");
            } else {
                println!("{line}");
            }
        };
        match &self.bar {
            Some(b) => b.suspend(print),
            None => print(),
        }
        self.redraw(true);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn update(&self, label: &str, event: &Event) {
        let pct = |done: u64, total: Option<u64>| match total {
            Some(t) if t > 0 => format!(" {:.0}%", done as f64 * 100.0 / t as f64),
            _ => String::new(),
        };
        let what = match *event {
            Event::Downloading { done, total } => format!("downloading{}", pct(done, total)),
            Event::Parsing { bytes, total, .. } => format!("reading{}", pct(bytes, total)),
            Event::Storing => "storing".into(),
            Event::Done { .. } => "done".into(),
        };
        if let Some(r) = self.lock().running.iter_mut().find(|(l, _)| l == label) {
            r.1 = what;
        }
        self.redraw(false);
    }

    /// Redraws the bar, or logs a plain line (at most once a second unless `force`).
    fn redraw(&self, force: bool) {
        let mut s = self.lock();
        let now: Vec<String> = s.running.iter().map(|(l, w)| format!("{l} {w}")).collect();
        let msg = format!(
            "{} rows{}{}",
            thousands(s.rows),
            if s.failed > 0 {
                format!(", {} failed", s.failed)
            } else {
                String::new()
            },
            if now.is_empty() {
                String::new()
            } else {
                format!("; now: {}", now.join(", "))
            }
        );
        match &self.bar {
            Some(b) => {
                b.set_position(s.done as u64);
                b.set_message(msg);
            }
            None if force || s.last_log.elapsed() >= Duration::from_secs(1) => {
                s.last_log = Instant::now();
                eprintln!("batch: {}/{} days, {msg}", s.done, self.total);
            }
            None => {}
        }
    }
}

impl Drop for BatchBar {
    fn drop(&mut self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

/// The progress of one day, reported into its batch.
pub struct Job<'a> {
    batch: &'a BatchBar,
    label: String,
}

impl Progress for Job<'_> {
    fn event(&self, event: Event) {
        self.batch.update(&self.label, &event);
    }
}
