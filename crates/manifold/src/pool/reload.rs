//! Reload with no downtime (SIGHUP): the re-read settings replace the pool's at once (what each
//! one changes, and when, is in `config::live`) and a new generation of workers runs the re-read
//! command; every worker of older generations is marked due (see `recycle`), so each gets a
//! replacement of the new generation and drains once one is ready; new sessions prefer the
//! newest generation (`pick`). If the new generation cannot start ([`super::FAILING_AFTER`]
//! failures in a row before any of it is ready), the reload is given up: the old workers stay in
//! service, the settings and generation go back, and `last_error` says why.

use std::sync::Arc;

use super::recycle::Recycle;
use super::{Inner, LastError, Pool, State, FAILING_AFTER};
use crate::config::{live, Config};

impl Pool {
    /// Starts generation `n + 1` with the re-read settings `cfg` (in force from now on).
    pub(super) fn start_reload(&self, st: &mut Inner, cfg: Config) {
        if st.shutting_down {
            return;
        }
        let running = self.cfg();
        let cfg = live::keep_process_settings(&running, cfg);
        for c in live::changes(&running, &cfg) {
            tracing::info!(
                setting = c.flag,
                from = %c.old,
                to = %c.new,
                "reload: {}",
                c.when.as_str()
            );
        }
        let previous = (st.generation, running);
        // A reload during a reload goes back to the last generation that was in service.
        st.reloading = Some(st.reloading.take().unwrap_or(previous));
        st.generation += 1;
        self.set_cfg(Arc::new(cfg));
        // A fresh start: old back-off does not delay the new generation.
        st.failures_in_row = 0;
        st.retry_at = None;
        let old: Vec<u64> = st
            .slots
            .values()
            .filter(|s| s.generation < st.generation && s.state == State::Ready)
            .map(|s| s.worker.id)
            .collect();
        tracing::info!(
            generation = st.generation,
            old_workers = old.len(),
            "reload: starting a new generation"
        );
        for id in old {
            if let Some(s) = st.slots.get_mut(&id) {
                // Reload takes over any other recycling reason.
                s.due = Some(Recycle::Reload);
            }
        }
        // Old workers still starting will never be needed.
        for s in st.slots.values_mut() {
            if s.generation < st.generation && s.state == State::Starting {
                s.state = State::Stopping;
                s.worker.stop();
            }
        }
    }

    /// Worker `id` became ready: if it is the first of a reload's generation, the reload is done.
    pub(super) fn reload_ready(&self, st: &mut Inner, id: u64) {
        let is_new = st
            .slots
            .get(&id)
            .is_some_and(|s| s.generation == st.generation);
        if is_new && st.reloading.take().is_some() {
            st.totals.reloads += 1;
            st.reload_error = None;
            tracing::info!(
                generation = st.generation,
                "reload: new generation in service"
            );
        }
    }

    /// After a failed start: gives the reload up once the new generation failed
    /// [`FAILING_AFTER`] times in a row with none of it ready.
    pub(super) fn abort_reload_if_failing(&self, st: &mut Inner) {
        if st.failures_in_row < FAILING_AFTER {
            return;
        }
        let Some((generation, cfg)) = st.reloading.take() else {
            return;
        };
        let failed = st.generation;
        st.generation = generation;
        self.set_cfg(cfg);
        st.failures_in_row = 0;
        st.retry_at = None;
        st.totals.reload_failures += 1;
        for s in st.slots.values_mut() {
            if s.due == Some(Recycle::Reload) && s.state == State::Ready {
                s.due = None;
            }
        }
        let why = st
            .last_error
            .as_ref()
            .map(|e| e.message.clone())
            .unwrap_or_default();
        let message =
            format!("reload to generation {failed} failed, keeping generation {generation}: {why}");
        tracing::error!("{message}");
        st.last_error = Some(LastError::now(message));
        st.reload_error = st.last_error.clone();
    }
}

impl Pool {
    /// Starts a reload: `cfg`'s settings apply, new workers run its command, old ones drain once
    /// replaced (see the module docs). Returns at once; progress shows in status (`generation`,
    /// each worker's, and the settings).
    pub fn reload(&self, cfg: Config) {
        let _ = self.events.send(super::Event::Reload(Box::new(cfg)));
    }
}
