//! Per-client-address rate limit for on-demand fetches: each one starts a download of up to
//! hundreds of MB, which is exactly what a rogue script would abuse. A token bucket per address.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::Duration;

// tokio's clock, so tests on a paused clock can move time.
use tokio::time::Instant;

/// Token buckets keyed by client address.
pub struct RateLimit {
    burst: f64,
    per_sec: f64,
    buckets: Mutex<HashMap<IpAddr, (f64, Instant)>>,
}

/// Addresses remembered at most; beyond this, full (idle) buckets are forgotten.
const MAX_TRACKED: usize = 10_000;

impl RateLimit {
    /// Allows `burst` fetches at once, refilled at `per_minute`.
    pub fn new(burst: u32, per_minute: u32) -> Self {
        RateLimit {
            burst: f64::from(burst.max(1)),
            per_sec: f64::from(per_minute) / 60.0,
            buckets: Mutex::new(HashMap::new()),
        }
    }

    /// Takes one token for `ip`, or says how long until one is available.
    pub fn check(&self, ip: IpAddr) -> Result<(), Duration> {
        let now = Instant::now();
        let mut buckets = self.buckets.lock().unwrap_or_else(|e| e.into_inner());
        if buckets.len() >= MAX_TRACKED {
            let (burst, rate) = (self.burst, self.per_sec);
            buckets.retain(|_, (tokens, at)| {
                *tokens + now.duration_since(*at).as_secs_f64() * rate < burst
            });
        }
        let (tokens, at) = buckets.entry(ip).or_insert((self.burst, now));
        *tokens = (*tokens + now.duration_since(*at).as_secs_f64() * self.per_sec).min(self.burst);
        *at = now;
        if *tokens >= 1.0 {
            *tokens -= 1.0;
            Ok(())
        } else if self.per_sec > 0.0 {
            Err(Duration::from_secs_f64(
                ((1.0 - *tokens) / self.per_sec).max(1.0),
            ))
        } else {
            Err(Duration::from_secs(3600))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn burst_then_refused_per_address() {
        let limit = RateLimit::new(2, 1);
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "10.0.0.2".parse().unwrap();
        assert!(limit.check(a).is_ok());
        assert!(limit.check(a).is_ok());
        let wait = limit.check(a).unwrap_err();
        assert!(wait >= Duration::from_secs(1) && wait <= Duration::from_secs(60));
        assert!(limit.check(b).is_ok(), "other addresses are not affected");
    }
}
