//! Reload with no downtime (SIGHUP): a new generation of workers runs the re-read command; every
//! worker of older generations is marked due (see `recycle`), so each gets a replacement of the
//! new generation and drains once one is ready; new sessions prefer the newest generation
//! (`pick`). If the new generation cannot start ([`super::FAILING_AFTER`] failures in a row
//! before any of it is ready), the reload is given up: the old workers stay in service, the
//! command and generation go back, and `last_error` says why.

use std::sync::Arc;

use super::recycle::Recycle;
use super::{Inner, LastError, Pool, State, FAILING_AFTER};

impl Pool {
    /// Starts generation `n + 1` with `command`.
    pub(super) fn start_reload(&self, st: &mut Inner, command: Vec<String>) {
        if st.shutting_down {
            return;
        }
        let previous = (st.generation, st.command.clone());
        // A reload during a reload goes back to the last generation that was in service.
        st.reloading = Some(st.reloading.take().unwrap_or(previous));
        st.generation += 1;
        st.command = Arc::from(command);
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
        let Some((generation, command)) = st.reloading.take() else {
            return;
        };
        let failed = st.generation;
        st.generation = generation;
        st.command = command;
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
    }
}

impl Pool {
    /// Starts a reload: new workers run `command`, old ones drain once replaced (see the module
    /// docs). Returns at once; progress shows in status (`generation`, each worker's).
    pub fn reload(&self, command: Vec<String>) {
        let _ = self.events.send(super::Event::Reload(command));
    }
}
