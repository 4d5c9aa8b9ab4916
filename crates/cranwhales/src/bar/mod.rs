//! Shows ingest progress to a person: an indicatif bar on a terminal, plain log lines (at most one
//! a second, plus one per phase) when stderr is piped or redirected.

use std::io::IsTerminal;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::numfmt::thousands;
use crate::progress::{Event, Progress};

mod batch;
pub use batch::BatchBar;

/// A [`Progress`] that draws for one source (a file or a date).
pub struct Bar {
    label: String,
    bar: Option<ProgressBar>,
    plain: Mutex<Plain>,
}

struct Plain {
    phase: &'static str,
    last: Instant,
    started: Instant,
}

impl Bar {
    /// A bar on a terminal, log lines otherwise; `label` prefixes every line.
    pub fn new(label: &str) -> Bar {
        let bar = std::io::stderr().is_terminal().then(|| {
            let b = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
            b.set_prefix(label.to_owned());
            b.enable_steady_tick(Duration::from_millis(200));
            b
        });
        let now = Instant::now();
        Bar {
            label: label.to_owned(),
            bar,
            plain: Mutex::new(Plain {
                phase: "",
                last: now,
                started: now,
            }),
        }
    }

    fn draw(&self, bar: &ProgressBar, event: &Event) {
        let bytes_style = |verb: &str| {
            ProgressStyle::with_template(&format!(
                "{{prefix}} {verb} [{{bar:30}}] {{bytes}}/{{total_bytes}} {{bytes_per_sec}} {{msg}}"
            ))
            .expect("valid template")
            .progress_chars("=> ")
        };
        match *event {
            Event::Downloading { done, total } => {
                if bar.length() != total {
                    bar.set_style(bytes_style("downloading"));
                    bar.set_length(total.unwrap_or(0));
                }
                bar.set_position(done);
            }
            Event::Parsing { bytes, total, rows } => {
                if bar.message().is_empty() {
                    bar.set_style(bytes_style("reading"));
                    bar.set_length(total.unwrap_or(0));
                }
                bar.set_position(bytes);
                let secs = bar.elapsed().as_secs_f64().max(1e-3);
                bar.set_message(format!(
                    "{} rows ({:.1}M rows/s)",
                    thousands(rows),
                    rows as f64 / secs / 1e6
                ));
            }
            Event::Storing => {
                bar.set_style(
                    ProgressStyle::with_template("{prefix} {spinner} storing {msg}")
                        .expect("valid"),
                );
            }
            Event::Done { .. } => bar.finish_and_clear(),
        }
    }

    fn log(&self, event: &Event) {
        let mut p = self.plain.lock().unwrap_or_else(PoisonError::into_inner);
        let phase = match event {
            Event::Downloading { .. } => "downloading",
            Event::Parsing { .. } => "reading",
            Event::Storing => "storing",
            Event::Done { .. } => "done",
        };
        let changed = phase != p.phase;
        if !changed && p.last.elapsed() < Duration::from_secs(1) {
            return;
        }
        if changed {
            p.phase = phase;
            p.started = Instant::now();
        }
        p.last = Instant::now();
        let pct = |done: u64, total: Option<u64>| match total {
            Some(t) if t > 0 => format!(" {:.0}%", done as f64 * 100.0 / t as f64),
            _ => String::new(),
        };
        let line = match *event {
            Event::Downloading { done, total } => format!(
                "downloading{} ({} bytes)",
                pct(done, total),
                thousands(done)
            ),
            Event::Parsing { bytes, total, rows } => {
                let rate = rows as f64 / p.started.elapsed().as_secs_f64().max(1e-3) / 1e6;
                format!(
                    "reading{} ({} rows, {rate:.1}M rows/s)",
                    pct(bytes, total),
                    thousands(rows)
                )
            }
            Event::Storing => "storing".to_owned(),
            // The caller prints the outcome.
            Event::Done { .. } => return,
        };
        eprintln!("{}: {line}", self.label);
    }
}

impl Progress for Bar {
    fn event(&self, event: Event) {
        match &self.bar {
            Some(bar) => self.draw(bar, &event),
            None => self.log(&event),
        }
    }
}

impl Drop for Bar {
    fn drop(&mut self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}
