//! Shutdown signals, as every long-running program of the workspace reads them: the first
//! SIGTERM or Ctrl-C (SIGINT) starts a graceful stop (cranwhales' drain, manifold's), a second
//! one stops at once without waiting for requests in flight.

use std::future::Future;
use tokio::signal::unix::{signal, Signal, SignalKind};

/// SIGTERM and SIGINT handlers, installed when this is made: a program that says it is ready
/// (prints its URL) after making one is never killed by a signal that comes right after, and
/// counts that signal.
struct Signals {
    term: Signal,
    int: Signal,
}

impl Signals {
    /// Installs the handlers now.
    fn install() -> Signals {
        Signals {
            term: signal(SignalKind::terminate()).expect("install SIGTERM handler"),
            int: signal(SignalKind::interrupt()).expect("install SIGINT handler"),
        }
    }

    /// Resolves on the next SIGTERM or SIGINT received since [`Signals::install`].
    async fn recv(&mut self) {
        tokio::select! {
            _ = self.term.recv() => {}
            _ = self.int.recv() => {}
        }
    }
}

/// The first and the second SIGTERM or SIGINT, as two futures: when to start stopping and when
/// to stop without waiting.
///
/// The handlers are installed when this is called (a signal right after it is counted, never
/// fatal), and one task counts every signal for both futures. Two listeners would each take
/// signals as tokio delivers them, which merges two signals that come before a listener is
/// polled again: a second SIGTERM sent just after the first one's effect was seen could be lost
/// (issue 35's CI run: `server_drain::second_sigterm_stops_at_once` waited out the drain).
///
/// # Panics
/// If the signal handlers cannot be installed (no signal driver: not on a tokio runtime).
pub fn stages() -> (
    impl Future<Output = ()> + Send + 'static,
    impl Future<Output = ()> + Send + 'static,
) {
    let mut signals = Signals::install();
    let (count, seen) = tokio::sync::watch::channel(0usize);
    tokio::spawn(async move {
        loop {
            signals.recv().await;
            count.send_modify(|n| *n += 1);
        }
    });
    let reached = move |n: usize| {
        let mut seen = seen.clone();
        async move {
            // Err only when the counting task is gone, i.e. the runtime is shutting down.
            let _ = seen.wait_for(|c| *c >= n).await;
        }
    };
    (reached(1), reached(2))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Signals go to every handler of the process: these tests take turns.
    static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

    /// Two real signals to this process (SIGTERM, then SIGINT): the second future resolves
    /// after the second only. Handlers are installed before the first is raised, so it is not
    /// fatal.
    #[tokio::test]
    async fn the_second_signal_of_either_kind_resolves_the_second_stage() {
        let _turn = SERIAL.lock().await;
        let (first, second) = stages();
        let mut second = Box::pin(second);
        // SAFETY: raising a signal this process handles (tokio's handler is installed above).
        unsafe { libc::raise(libc::SIGTERM) };
        first.await;
        assert!(
            !futures_poll(&mut second).await,
            "resolved after one signal"
        );
        // SAFETY: as above.
        unsafe { libc::raise(libc::SIGINT) };
        bounded(second).await;
    }

    /// A second signal raised the moment the first one's effect is seen, before anything polls
    /// the second stage, still counts (two listeners merged the two and waited for a third).
    #[tokio::test]
    async fn a_second_signal_right_after_the_first_is_counted() {
        let _turn = SERIAL.lock().await;
        let (first, second) = stages();
        // SAFETY: as above.
        unsafe { libc::raise(libc::SIGTERM) };
        first.await;
        // SAFETY: as above.
        unsafe { libc::raise(libc::SIGTERM) };
        bounded(second).await;
    }

    /// Installed handlers count a signal raised before the future is first polled.
    #[tokio::test]
    async fn installed_handlers_count_a_signal_sent_before_the_first_poll() {
        let _turn = SERIAL.lock().await;
        let (first, _second) = stages();
        // SAFETY: raising a signal this process handles (installed just above).
        unsafe { libc::raise(libc::SIGTERM) };
        bounded(first).await;
    }

    /// Awaits `f` for at most 10 s: a lost signal fails the test instead of hanging it.
    async fn bounded(f: impl std::future::Future<Output = ()>) {
        tokio::time::timeout(std::time::Duration::from_secs(10), f)
            .await
            .expect("the signal was not counted");
    }

    /// Polls `f` once; true if it completed.
    async fn futures_poll<F: std::future::Future + Unpin>(f: &mut F) -> bool {
        tokio::select! {
            biased;
            _ = f => true,
            _ = tokio::task::yield_now() => false,
        }
    }
}
