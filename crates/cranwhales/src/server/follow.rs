//! `serve --follow`: the follower ([`crate::follow`]) on its own task, storing each new day
//! through the fetcher (the same single flight as a browser's fetch, the server's one writer);
//! readers keep answering meanwhile, and `/api/days` reports where it is.

use std::sync::Arc;

use super::fetch::Fetcher;
use crate::date::Day;
use crate::follow::{Attempt, Event, Target};

/// The server as the follower's target.
pub struct Server {
    /// Stores days and knows which are stored (kept current by `watch`).
    pub fetcher: Arc<Fetcher>,
}

impl Target for Server {
    async fn newest(&self) -> Option<Day> {
        self.fetcher.newest()
    }

    async fn attempt(&self, day: Day) -> Attempt {
        self.fetcher.follow(day).await
    }

    fn event(&self, event: &Event) {
        match event {
            Event::Stored { .. } => tracing::info!("{event}"),
            Event::BackOff { .. } => tracing::warn!("{event}"),
        }
    }
}
