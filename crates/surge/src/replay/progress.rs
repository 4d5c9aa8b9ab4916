//! The progress line of a replay: a spinner on a terminal, a line every 5 s otherwise.

use super::Shared;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

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
