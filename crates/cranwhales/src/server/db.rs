//! The store as the server uses it: a few open SQLite handles, used only on blocking threads (never
//! on the threads that serve requests), with a bound on how many queries run at once; and the one
//! writing connection every day the server stores (fetched or sample) goes through, one day at
//! a time, as a `cranwhales ingest` batch's days go through its one writer.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::Semaphore;

use crate::store::{Store, StoreError};

/// Pooled read handles on the day store.
pub struct Db {
    path: PathBuf,
    pool: Mutex<Vec<Store>>,
    /// The one writing connection, opened at the first write and kept (closing the last
    /// connection to a WAL database checkpoints the whole log).
    writer: Mutex<Option<Store>>,
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
            writer: Mutex::new(None),
            permits: Semaphore::new(MAX_QUERIES),
        }))
    }

    /// Why the store can only be read, when it can only be read (then nothing is fetched).
    pub fn read_only(&self) -> Option<&str> {
        self.read_only.as_deref()
    }

    /// The database file (the watcher opens its own connection on it).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs `f` with the one writing connection, on the calling (blocking) thread: writes wait
    /// for each other here, never for SQLite's lock. Taken back after a panic: a day's write is
    /// one transaction, rolled back when dropped, so the connection is always usable.
    pub fn write<R>(&self, f: impl FnOnce(&mut Store) -> R) -> Result<R, StoreError> {
        let mut writer = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
        if writer.is_none() {
            let store = Store::open(&self.path)?;
            store.check_writable("cannot store days")?;
            *writer = Some(store);
        }
        Ok(f(writer.as_mut().expect("opened above")))
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
