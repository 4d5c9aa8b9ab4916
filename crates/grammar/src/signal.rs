//! Shutdown signals, as every long-running program of the workspace reads them: the first
//! SIGTERM or Ctrl-C (SIGINT) starts a graceful stop (cranwhales' drain, manifold's), a second
//! one stops at once without waiting for requests in flight.

use tokio::signal::unix::{signal, Signal, SignalKind};

/// SIGTERM and SIGINT handlers, installed when this is made: a program that says it is ready
/// (prints its URL) after making one is never killed by a signal that comes right after, and
/// counts that signal.
pub struct Signals {
    term: Signal,
    int: Signal,
}

impl Signals {
    /// Installs the handlers now.
    ///
    /// # Panics
    /// If the signal handlers cannot be installed (no signal driver: not on a tokio runtime).
    pub fn install() -> Signals {
        Signals {
            term: signal(SignalKind::terminate()).expect("install SIGTERM handler"),
            int: signal(SignalKind::interrupt()).expect("install SIGINT handler"),
        }
    }

    /// Resolves on the next SIGTERM or SIGINT received since [`Signals::install`].
    pub async fn recv(&mut self) {
        tokio::select! {
            _ = self.term.recv() => {}
            _ = self.int.recv() => {}
        }
    }

    /// Resolves on the `n`th SIGTERM or SIGINT received since [`Signals::install`].
    pub async fn nth(mut self, n: usize) {
        for _ in 0..n {
            self.recv().await;
        }
    }
}

/// Resolves on the `n`th SIGTERM or SIGINT counted from its first poll (both kinds count).
///
/// # Panics
/// If the signal handlers cannot be installed (no signal driver: not on a tokio runtime).
pub async fn nth(n: usize) {
    Signals::install().nth(n).await
}

/// Resolves on the first SIGTERM or SIGINT: when to start stopping.
pub async fn once() {
    nth(1).await
}

/// Resolves on the second SIGTERM or SIGINT (counted from this future's first poll): when to
/// stop without waiting.
pub async fn twice() {
    nth(2).await
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Signals go to every handler of the process: these tests take turns.
    static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

    /// Two real signals to this process (SIGTERM, then SIGINT): `twice` resolves after the
    /// second only. Handlers are installed before the first is raised, so it is not fatal.
    #[tokio::test]
    async fn the_second_signal_of_either_kind_resolves_twice() {
        let _turn = SERIAL.lock().await;
        let mut both = Box::pin(twice());
        let mut first = Box::pin(once());
        // Poll both once so their handlers are installed before any signal is raised.
        let ready = futures_poll(&mut both).await || futures_poll(&mut first).await;
        assert!(!ready);
        // SAFETY: raising a signal this process handles (tokio's handler is installed above).
        unsafe { libc::raise(libc::SIGTERM) };
        first.await;
        assert!(!futures_poll(&mut both).await, "resolved after one signal");
        // SAFETY: as above.
        unsafe { libc::raise(libc::SIGINT) };
        both.await;
    }

    /// Signals installed eagerly count one raised before the future is first polled.
    #[tokio::test]
    async fn installed_handlers_count_a_signal_sent_before_the_first_poll() {
        let _turn = SERIAL.lock().await;
        let first = Signals::install();
        // SAFETY: raising a signal this process handles (installed just above).
        unsafe { libc::raise(libc::SIGTERM) };
        first.nth(1).await;
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
