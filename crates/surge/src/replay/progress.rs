//! The progress of a replay: on a terminal a live indicatif display (users, sessions, failures,
//! event p50/p95 of the last 5 s), redrawn 5 times a second; otherwise a line every 5 s (tests
//! and logs read those lines).

use super::Shared;
use hdrhistogram::Histogram;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// The window the terminal's current percentiles cover.
const WINDOW: Duration = Duration::from_secs(5);

/// Shows progress until aborted.
pub(super) async fn progress(sh: Arc<Shared>) {
    let line = |sh: &Shared| {
        format!(
            "{:>6.1}s  users {}  running {}  done {}  failed {}",
            sh.t0.elapsed().as_secs_f64(),
            sh.active_users.load(Ordering::Relaxed),
            sh.running.load(Ordering::Relaxed),
            sh.done.load(Ordering::Relaxed),
            sh.failed.load(Ordering::Relaxed)
        )
    };
    if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        let bar = indicatif::ProgressBar::new_spinner();
        bar.set_style(
            indicatif::ProgressStyle::with_template("{spinner} {msg}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
        );
        let mut window = Window::default();
        let mut ticks = 0u32;
        loop {
            if ticks % 5 == 0 {
                window.advance(&sh);
            }
            ticks += 1;
            bar.set_message(format!("{}  {}", line(&sh), window.text()));
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

/// Event latencies of the last [`WINDOW`]: the run-wide histogram now minus as it was then.
#[derive(Default)]
struct Window {
    /// Snapshots of the run-wide event histogram, one a second, oldest first.
    snaps: std::collections::VecDeque<Histogram<u64>>,
    /// p50 and p95 (ms) of the window, when it has events.
    current: Option<(u64, u64)>,
}

impl Window {
    /// Takes this second's snapshot and recomputes the window's percentiles.
    fn advance(&mut self, sh: &Shared) {
        let now = match sh.agg.lock() {
            Ok(a) => a.overall.clone(),
            Err(p) => p.into_inner().overall.clone(),
        };
        let mut recent = now.clone();
        if let Some(old) = self.snaps.front() {
            // `now` holds every value `old` did, so the subtraction cannot fail.
            let _ = recent.subtract(old);
        }
        self.current = (!recent.is_empty()).then(|| {
            (
                recent.value_at_quantile(0.5),
                recent.value_at_quantile(0.95),
            )
        });
        self.snaps.push_back(now);
        if self.snaps.len() > WINDOW.as_secs() as usize {
            self.snaps.pop_front();
        }
    }

    fn text(&self) -> String {
        match self.current {
            Some((p50, p95)) => {
                format!("events p50 {} p95 {} (last 5 s)", fmt_ms(p50), fmt_ms(p95))
            }
            None => "no event ended in the last 5 s".into(),
        }
    }
}

/// `850 ms`, `1.23 s`.
fn fmt_ms(ms: u64) -> String {
    if ms < 1000 {
        format!("{ms} ms")
    } else {
        format!("{:.2} s", ms as f64 / 1000.0)
    }
}
