//! The one stop signal of a run: fed by SIGINT and SIGTERM (in the binary) or by a test, and
//! remembering which signal came first, so the exit status says it (130 or 143).

use std::future::Future;
use std::sync::Arc;
use tokio::sync::watch;

/// The signal that stopped a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// SIGINT (Ctrl-C).
    Interrupt,
    /// SIGTERM (`docker stop`, a Kubernetes Job's deadline, `kill`).
    Terminate,
}

impl Signal {
    /// The exit status of a run it stopped: 128 + the signal's number, as shells report it.
    pub fn exit_code(self) -> u8 {
        match self {
            Signal::Interrupt => 130,
            Signal::Terminate => 143,
        }
    }

    /// `SIGINT`, `SIGTERM`.
    pub fn name(self) -> &'static str {
        match self {
            Signal::Interrupt => "SIGINT",
            Signal::Terminate => "SIGTERM",
        }
    }
}

/// A run's stop signal: every clone sees the first [`Signal`] given to any of them. A run is
/// handed [`Stop::wait`], a future that resolves once a signal came.
#[derive(Clone, Debug)]
pub struct Stop {
    tx: Arc<watch::Sender<Option<Signal>>>,
}

impl Default for Stop {
    fn default() -> Stop {
        Stop::new()
    }
}

impl Stop {
    /// A stop no signal has reached yet (a test triggers it with [`Stop::trigger`]).
    pub fn new() -> Stop {
        Stop {
            tx: Arc::new(watch::channel(None).0),
        }
    }

    /// Stops the run with `signal`; a later signal changes nothing (the first one is the reason).
    pub fn trigger(&self, signal: Signal) {
        self.tx.send_if_modified(|v| {
            let first = v.is_none();
            if first {
                *v = Some(signal);
            }
            first
        });
    }

    /// The signal that stopped the run, if one came.
    pub fn signal(&self) -> Option<Signal> {
        *self.tx.borrow()
    }

    /// Resolves once a signal came (at once if one already did).
    pub fn wait(&self) -> impl Future<Output = ()> + Send + 'static {
        let tx = self.tx.clone();
        async move {
            let mut rx = tx.subscribe();
            // The sender lives in `tx`, held here: wait_for cannot fail for a closed channel.
            let _ = rx.wait_for(Option::is_some).await;
        }
    }

    /// Feeds SIGINT and SIGTERM of this process into the stop, for as long as the runtime runs
    /// (a handler that cannot be installed leaves that signal's default action). Must be called
    /// inside the tokio runtime.
    pub fn listen_to_signals(&self) {
        use tokio::signal::unix::{signal, SignalKind};
        for (kind, sig) in [
            (SignalKind::interrupt(), Signal::Interrupt),
            (SignalKind::terminate(), Signal::Terminate),
        ] {
            let Ok(mut stream) = signal(kind) else {
                continue;
            };
            let stop = self.clone();
            tokio::spawn(async move {
                while stream.recv().await.is_some() {
                    stop.trigger(sig);
                }
            });
        }
    }
}
