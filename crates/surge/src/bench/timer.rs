//! The open model's send timer. tokio's timer wheel ticks in whole milliseconds and rounds every
//! deadline up, so a request it wakes leaves up to ~2 ms after its intended send time; the open
//! model measures latency from that intended time, so the generator's own timer added ~1 ms to
//! every latency (p50 1.1 ms against an nginx that oha measures at 0.1 ms). On Linux each
//! connection instead arms its own timerfd, a high-resolution kernel timer read through tokio's
//! reactor; elsewhere, or if the kernel refuses one, tokio's timer.

use tokio::time::Instant;

#[cfg(target_os = "linux")]
type Timerfd = tokio::io::unix::AsyncFd<std::os::fd::OwnedFd>;

/// One connection's send timer (see the module doc); its timerfd is opened on first use, so the
/// closed model never opens one.
#[derive(Default)]
pub(super) struct SendTimer {
    #[cfg(target_os = "linux")]
    fd: Option<Option<Timerfd>>,
}

impl SendTimer {
    /// Returns at `t` (at once if it has passed), never before.
    pub(super) async fn sleep_until(&mut self, t: Instant) {
        #[cfg(target_os = "linux")]
        if let Some(fd) = self.fd.get_or_insert_with(open_timerfd) {
            if wait_timerfd(fd, t).await.is_ok() {
                return;
            }
        }
        tokio::time::sleep_until(t).await
    }

    #[cfg(all(test, target_os = "linux"))]
    fn is_precise(&self) -> bool {
        matches!(self.fd, Some(Some(_)))
    }
}

#[cfg(target_os = "linux")]
fn open_timerfd() -> Option<Timerfd> {
    use rustix::time::{timerfd_create, TimerfdClockId, TimerfdFlags};
    let fd = timerfd_create(
        TimerfdClockId::Monotonic,
        TimerfdFlags::NONBLOCK | TimerfdFlags::CLOEXEC,
    )
    .ok()?;
    // SAFETY: the AsyncFd owns the OwnedFd, so the descriptor stays open and the same for the
    // AsyncFd's whole life.
    unsafe { Timerfd::register_with_interest(fd, tokio::io::Interest::READABLE) }.ok()
}

/// Arms the timerfd for `t` (relative to now: tokio's `Instant` is not a kernel clock value) and
/// waits until it has expired. Arming resets the expiration count, so an expiry left by an
/// abandoned wait cannot end this one early (its stale readiness only costs one empty read).
#[cfg(target_os = "linux")]
async fn wait_timerfd(fd: &Timerfd, t: Instant) -> std::io::Result<()> {
    use rustix::time::{timerfd_settime, Itimerspec, TimerfdTimerFlags, Timespec};
    let left = t.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Ok(());
    }
    let spec = Itimerspec {
        it_interval: Timespec {
            tv_sec: 0,
            tv_nsec: 0,
        },
        it_value: Timespec::try_from(left).map_err(std::io::Error::other)?,
    };
    timerfd_settime(fd.get_ref(), TimerfdTimerFlags::empty(), &spec)?;
    loop {
        let mut ready = fd.readable().await?;
        let mut expirations = [0u8; 8];
        match rustix::io::read(fd.get_ref(), &mut expirations) {
            Ok(_) => return Ok(()),
            Err(rustix::io::Errno::AGAIN) => ready.clear_ready(),
            Err(e) => return Err(e.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::FutureExt;
    use std::time::Duration;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[tokio::test]
    async fn never_wakes_early_not_even_after_an_abandoned_wait() {
        let mut timer = SendTimer::default();
        for d in [0, 1, 3, 7] {
            let due = Instant::now() + ms(d);
            timer.sleep_until(due).await;
            assert!(Instant::now() >= due, "woke before a {d} ms deadline");
        }
        #[cfg(target_os = "linux")]
        assert!(timer.is_precise(), "the timerfd was not used");
        // A wait armed (polled once) and given up: its expiry still happens, unread, and must not
        // end the next, longer wait.
        let abandoned = Instant::now() + ms(5);
        assert!(timer.sleep_until(abandoned).now_or_never().is_none());
        // why: the abandoned wait's expiry must really happen (the kernel's timerfd, not tokio's
        // clock, so a paused clock cannot stand in) before the next wait is armed.
        std::thread::sleep(ms(10));
        let due = Instant::now() + ms(50);
        timer.sleep_until(due).await;
        assert!(
            Instant::now() >= due,
            "an abandoned wait's expiry ended the next one"
        );
    }
}
