//! A test hook for one race that no real worker can be timed to hit: a kept-alive connection
//! that passed its check (`retry::connect_leased`) and is closed by its worker before the request
//! is written on it. The tests that run manifold in-process arm it for one worker port; the
//! request then waits, after the check, until the worker has closed that connection, and goes on
//! to meet the closed connection as the race would have it (`retry::attempt`).
//!
//! Inert unless armed: the manifold binary never arms it, and a request pays one atomic load.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use tokio::time::Instant;

use crate::upstream::Conn;

/// The worker port whose next request on a kept-alive connection is held (0: none).
static ARMED: AtomicU32 = AtomicU32::new(0);
/// The worker port whose request is held now, or was last (0: none yet).
static HELD: AtomicU32 = AtomicU32::new(0);

/// How long a held request waits for its worker to close the connection before it goes on.
const LIMIT: Duration = Duration::from_secs(30);

/// Arms the hook for the worker on `port`: its next request on a kept-alive connection waits,
/// after the connection passed its check, until the worker closes that connection (or 30 s).
/// For in-process tests of the retry rule; see the module doc.
pub fn hold_next_kept_alive_send(port: u16) {
    ARMED.store(u32::from(port), Ordering::SeqCst);
}

/// Whether a request to the worker on `port` is held by [`hold_next_kept_alive_send`] (or was:
/// it stays true after the request went on), so a test knows when to close the connection.
pub fn held(port: u16) -> bool {
    HELD.load(Ordering::SeqCst) == u32::from(port)
}

/// Holds the request about to be sent on `conn`, a kept-alive connection to `port` that passed
/// its check, if the hook is armed for `port`: until the worker has closed `conn`.
pub(super) async fn hold(port: u16, conn: &Conn) {
    if ARMED.load(Ordering::Relaxed) == 0 {
        return;
    }
    let port = u32::from(port);
    if ARMED
        .compare_exchange(port, 0, Ordering::SeqCst, Ordering::SeqCst)
        .is_err()
    {
        return;
    }
    HELD.store(port, Ordering::SeqCst);
    let until = Instant::now() + LIMIT;
    while !conn.is_closed() && Instant::now() < until {
        // why: hyper's connection handle has no future that ends when the connection closes.
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}
