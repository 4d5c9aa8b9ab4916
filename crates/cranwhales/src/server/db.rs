//! The store as the server uses it: a few open SQLite handles, used only on blocking threads (never
//! on the threads that serve requests), with a bound on how many queries run at once.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use tokio::sync::Semaphore;

use crate::store::Store;

/// Pooled read handles on the day store.
pub struct Db {
    path: PathBuf,
    pool: Mutex<Vec<Store>>,
    permits: Semaphore,
    read_only: Option<String>,
}

/// Queries in flight at most (each holds a connection and a blocking thread).
const MAX_QUERIES: usize = 8;

impl Db {
    /// Opens (creating if needed) the store at `path`.
    pub fn open(path: &Path) -> anyhow::Result<Arc<Db>> {
        let store = Store::open(path)?;
        Ok(Arc::new(Db {
            read_only: store.read_only().map(str::to_owned),
            path: path.to_owned(),
            pool: Mutex::new(vec![store]),
            permits: Semaphore::new(MAX_QUERIES),
        }))
    }

    /// Why the store can only be read, when it can only be read (then nothing is fetched).
    pub fn read_only(&self) -> Option<&str> {
        self.read_only.as_deref()
    }

    /// The database file (ingest opens its own writer on it).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs `f` with a store handle on a blocking thread.
    pub async fn read<R, F>(self: &Arc<Self>, f: F) -> anyhow::Result<R>
    where
        R: Send + 'static,
        F: FnOnce(&Store) -> anyhow::Result<R> + Send + 'static,
    {
        let _permit = self.permits.acquire().await?;
        let db = self.clone();
        tokio::task::spawn_blocking(move || {
            let store = db.pool.lock().unwrap_or_else(|e| e.into_inner()).pop();
            let store = match store {
                Some(s) => s,
                None => Store::open(&db.path)?,
            };
            let out = f(&store);
            db.pool
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(store);
            out
        })
        .await?
    }
}
