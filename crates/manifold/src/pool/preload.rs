//! The preload parents of a pool (`--preload`, see `worker::preload`): one per generation,
//! started by the first fork of that generation and again if it died; a reload's new generation
//! gets a new parent, and the old one stops once its last fork is gone. Shutdown stops and reaps
//! every parent after the workers.

use std::sync::{Arc, PoisonError};
use std::time::Duration;

use super::snapshot::ParentStatus;
use super::Pool;
use crate::config::Config;
use crate::worker::preload::{Parent, ParentHandle};
use crate::worker::WorkerError;

/// The current generation's parent and a handle on every parent started.
#[derive(Default)]
pub(super) struct Parents {
    current: Option<(u64, Arc<Parent>)>,
    all: Vec<ParentHandle>,
}

impl Pool {
    /// With `--preload`, the running parent of `generation` (started if there is none or it
    /// died); without it, `None`: the worker is spawned from its command.
    pub(super) fn parent_for(
        &self,
        generation: u64,
        cfg: &Config,
    ) -> Result<Option<Arc<Parent>>, WorkerError> {
        if !cfg.preload {
            return Ok(None);
        }
        // Every change under this lock leaves the list valid: taken back if poisoned.
        let mut p = self.parents.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((g, parent)) = &p.current {
            if *g == generation && parent.handle().is_alive() {
                return Ok(Some(parent.clone()));
            }
        }
        let dir = self
            .tmp
            .dir(&format!("p{generation}"))
            .map_err(|source| WorkerError::TempDir { id: 0, source })?;
        let parent = Arc::new(Parent::start(
            generation,
            &cfg.command,
            (cfg.stop_timeout, dir),
            &self.output,
        )?);
        p.all.retain(ParentHandle::is_alive);
        p.all.push(parent.handle());
        p.current = Some((generation, parent.clone()));
        Ok(Some(parent))
    }

    /// The running parents for the status page, oldest generation first.
    pub(super) fn parent_statuses(&self) -> Vec<ParentStatus> {
        let p = self.parents.lock().unwrap_or_else(PoisonError::into_inner);
        p.all
            .iter()
            .filter(|h| h.is_alive())
            .map(|h| ParentStatus {
                generation: h.generation,
                pid: h.pid,
            })
            .collect()
    }

    /// Stops every preload parent (and with it any fork left in its group) within `grace` and
    /// waits until each is reaped.
    pub(super) async fn stop_parents(&self, grace: Duration) {
        let all = {
            let mut p = self.parents.lock().unwrap_or_else(PoisonError::into_inner);
            p.current = None;
            std::mem::take(&mut p.all)
        };
        for h in all {
            h.stop_within(grace).await;
        }
    }
}
