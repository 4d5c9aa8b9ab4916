//! The progress of a replay: on a terminal a live indicatif display (users, sessions, failures,
//! event p50/p95 of the last 5 s), redrawn 5 times a second; otherwise a line every 5 s (tests
//! and logs read those lines).

use super::Shared;
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

/// Event latencies of the last [`WINDOW`]: the values each event kind gained since then (the
/// aggregate keeps each kind's exact durations in the order they ended).
#[derive(Default)]
struct Window {
    /// How many durations each kind had, one snapshot a second, oldest first.
    snaps: std::collections::VecDeque<std::collections::BTreeMap<crate::recording::Kind, usize>>,
    /// p50 and p95 (ms) of the window, when it has events.
    current: Option<(u64, u64)>,
}

impl Window {
    /// Takes this second's snapshot and recomputes the window's percentiles.
    fn advance(&mut self, sh: &Shared) {
        let agg = sh.agg.lock().unwrap_or_else(|p| p.into_inner());
        let old = self.snaps.front();
        let mut recent: Vec<u32> = (agg.per_kind.iter())
            .flat_map(|(k, v)| {
                let from = old.and_then(|o| o.get(k)).copied().unwrap_or(0);
                v[from.min(v.len())..].iter().copied()
            })
            .collect();
        let now = (agg.per_kind.iter()).map(|(k, v)| (*k, v.len())).collect();
        drop(agg);
        self.current = (!recent.is_empty()).then(|| {
            recent.sort_unstable();
            let q = |p| u64::from(crate::stats::rank(&recent, p));
            (q(50.0), q(95.0))
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
