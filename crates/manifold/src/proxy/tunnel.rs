//! WebSocket (any upgraded connection) tunnels: bytes copied both ways while the lease is held,
//! closed after `--ws-idle-timeout` of silence both ways.

use std::time::Duration;

use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::pool::Lease;

/// Copies bytes both ways between an upgraded client and worker connection, holding the lease.
pub(super) async fn tunnel(
    client: hyper::upgrade::OnUpgrade,
    worker: hyper::upgrade::OnUpgrade,
    lease: Lease,
    idle: Duration,
) {
    let (c, w) = match tokio::try_join!(client, worker) {
        Ok(pair) => pair,
        Err(e) => {
            tracing::warn!(worker = lease.worker, error = %e, "websocket upgrade failed");
            return;
        }
    };
    let (mut c, mut w) = (TokioIo::new(c), TokioIo::new(w));
    if idle.is_zero() {
        let _ = tokio::io::copy_bidirectional(&mut c, &mut w).await;
    } else if copy_until_idle(&mut c, &mut w, idle).await {
        tracing::info!(worker = lease.worker, idle = ?idle, "websocket closed: silent both ways (--ws-idle-timeout)");
    }
    drop(lease);
}

/// Copies both ways until one side closes (false) or nothing moved for `idle` (true).
async fn copy_until_idle(
    c: &mut (impl AsyncRead + AsyncWrite + Unpin),
    w: &mut (impl AsyncRead + AsyncWrite + Unpin),
    idle: Duration,
) -> bool {
    let (mut cb, mut wb) = (vec![0u8; 16 * 1024], vec![0u8; 16 * 1024]);
    loop {
        // Both reads are cancel-safe: a read that lost the race consumed nothing.
        tokio::select! {
            r = c.read(&mut cb) => match r {
                Ok(n) if n > 0 => if w.write_all(&cb[..n]).await.is_err() { return false },
                _ => { let _ = w.shutdown().await; return false }
            },
            r = w.read(&mut wb) => match r {
                Ok(n) if n > 0 => if c.write_all(&wb[..n]).await.is_err() { return false },
                _ => { let _ = c.shutdown().await; return false }
            },
            _ = tokio::time::sleep(idle) => return true,
        }
    }
}
