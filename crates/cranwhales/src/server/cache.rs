//! Immutable response bodies kept in memory: the JSON (or asset) bytes, their gzip form and an ETag,
//! computed once, so a hot request is a map lookup and a write. A small byte-bounded cache holds them.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock, RwLockWriteGuard};

use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;

/// `Cache-Control` for bodies that never change (assets whose name holds their hash).
pub const IMMUTABLE: &str = "public, max-age=31536000, immutable";
/// `Cache-Control` for bodies that may change (the day list, index.html, a day another process may
/// re-ingest with `--force`): revalidate with the ETag, a `304` when unchanged.
pub const REVALIDATE: &str = "no-cache";

/// One response body, ready to send plain or gzipped.
#[derive(Debug)]
pub struct Body {
    plain: Bytes,
    /// Present only when gzip actually saves bytes.
    gzip: Option<Bytes>,
    etag: HeaderValue,
    content_type: HeaderValue,
    cache_control: HeaderValue,
}

impl Body {
    /// Compresses once and derives the ETag from the content.
    pub fn new(plain: Vec<u8>, content_type: &str, cache_control: &'static str) -> Body {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        plain.hash(&mut h);
        let etag = format!("\"{:016x}-{:x}\"", h.finish(), plain.len());
        let gzip = (plain.len() > 256)
            .then(|| gzip(&plain))
            .filter(|g| g.len() < plain.len());
        Body {
            plain: Bytes::from(plain),
            gzip: gzip.map(Bytes::from),
            etag: HeaderValue::from_str(&etag).expect("ascii etag"),
            content_type: HeaderValue::from_str(content_type).expect("ascii content type"),
            cache_control: HeaderValue::from_static(cache_control),
        }
    }

    /// A JSON body.
    pub fn json<T: serde::Serialize>(value: &T, cache_control: &'static str) -> Body {
        let bytes = serde_json::to_vec(value).expect("serialisable");
        Body::new(bytes, "application/json", cache_control)
    }

    /// Bytes held (for the cache budget).
    pub fn size(&self) -> usize {
        self.plain.len() + self.gzip.as_ref().map_or(0, |g| g.len())
    }

    /// Answers a request: 304 when the client's ETag matches, gzip when accepted.
    pub fn respond(&self, req: &HeaderMap) -> Response {
        let mut headers = HeaderMap::with_capacity(5);
        headers.insert(header::ETAG, self.etag.clone());
        headers.insert(header::CACHE_CONTROL, self.cache_control.clone());
        if self.gzip.is_some() {
            headers.insert(header::VARY, HeaderValue::from_static("accept-encoding"));
        }
        if req
            .get(header::IF_NONE_MATCH)
            .is_some_and(|v| etag_matches(v.as_bytes(), self.etag.as_bytes()))
        {
            return (StatusCode::NOT_MODIFIED, headers).into_response();
        }
        headers.insert(header::CONTENT_TYPE, self.content_type.clone());
        match &self.gzip {
            Some(gz) if accepts_gzip(req) => {
                headers.insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
                (headers, gz.clone()).into_response()
            }
            _ => (headers, self.plain.clone()).into_response(),
        }
    }
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    enc.write_all(data).expect("write to memory");
    enc.finish().expect("write to memory")
}

fn etag_matches(header: &[u8], etag: &[u8]) -> bool {
    header == b"*"
        || header.split(|&c| c == b',').any(|t| {
            let t = t.trim_ascii();
            t.strip_prefix(b"W/").unwrap_or(t) == etag
        })
}

/// `Accept-Encoding` lists gzip (and does not refuse it with `q=0`).
fn accepts_gzip(req: &HeaderMap) -> bool {
    req.get_all(header::ACCEPT_ENCODING).iter().any(|v| {
        v.to_str().unwrap_or("").split(',').any(|item| {
            let mut parts = item.split(';').map(str::trim);
            let name = parts.next().unwrap_or("");
            (name.eq_ignore_ascii_case("gzip") || name == "*")
                && !parts.any(|p| {
                    p.strip_prefix("q=")
                        .and_then(|q| q.trim().parse::<f32>().ok())
                        .is_some_and(|q| q <= 0.0)
                })
        })
    })
}

struct Entry {
    body: Arc<Body>,
    last_used: AtomicU64,
}

/// A byte-bounded map of immutable bodies; lookups take only a read lock, and the least recently
/// used entries go when the budget is exceeded.
///
/// Entries dropped because the store changed must not come back from a request that read the
/// store before the change: each drop moves the cache's epoch on, and `insert_at` keeps a body
/// only if the epoch is still the one its request saw before reading.
pub struct Cache<K> {
    map: RwLock<HashMap<K, Entry>>,
    clock: AtomicU64,
    budget: usize,
    used: AtomicU64,
    /// Moved on (under the write lock) by every `clear`, `remove` and `retain`.
    epoch: AtomicU64,
}

impl<K: Eq + Hash + Clone> Cache<K> {
    /// An empty cache holding at most `budget` bytes of bodies.
    pub fn new(budget: usize) -> Self {
        Cache {
            map: RwLock::new(HashMap::new()),
            clock: AtomicU64::new(0),
            budget,
            used: AtomicU64::new(0),
            epoch: AtomicU64::new(0),
        }
    }

    /// The current epoch: read it before reading the store for a body, pass it to `insert_at`.
    pub fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::Acquire)
    }

    /// Stores a body built from a store read begun at `epoch`, unless entries were dropped since
    /// (the body may be older than the drop); returns it either way. Bodies larger than a quarter
    /// of the budget are not kept.
    pub fn insert_at(&self, epoch: u64, key: K, body: Body) -> Arc<Body> {
        let body = Arc::new(body);
        let map = self.map.write().unwrap_or_else(|e| e.into_inner());
        if self.epoch.load(Ordering::Acquire) == epoch {
            self.put(map, key, body.clone());
        }
        body
    }

    /// The cached body, marking it used.
    pub fn get(&self, key: &K) -> Option<Arc<Body>> {
        let map = self.map.read().unwrap_or_else(|e| e.into_inner());
        let e = map.get(key)?;
        // The clock only moves on insert, so hot lookups read shared memory and write nothing
        // (no cache-line ping-pong between cores); recency is per insert "epoch".
        let now = self.clock.load(Ordering::Relaxed);
        if e.last_used.load(Ordering::Relaxed) != now {
            e.last_used.store(now, Ordering::Relaxed);
        }
        Some(e.body.clone())
    }

    fn put(&self, mut map: RwLockWriteGuard<'_, HashMap<K, Entry>>, key: K, body: Arc<Body>) {
        let size = body.size();
        if size > self.budget / 4 {
            return;
        }
        let tick = self.clock.fetch_add(1, Ordering::Relaxed);
        if let Some(old) = map.insert(
            key,
            Entry {
                body: body.clone(),
                last_used: AtomicU64::new(tick),
            },
        ) {
            self.used
                .fetch_sub(old.body.size() as u64, Ordering::Relaxed);
        }
        let mut used = self.used.fetch_add(size as u64, Ordering::Relaxed) + size as u64;
        if used > self.budget as u64 {
            // Evict the least recently used until at three quarters of the budget.
            let mut order: Vec<(u64, K)> = map
                .iter()
                .map(|(k, e)| (e.last_used.load(Ordering::Relaxed), k.clone()))
                .collect();
            order.sort_by_key(|(t, _)| *t);
            for (_, k) in order {
                if used <= (self.budget as u64) * 3 / 4 {
                    break;
                }
                if let Some(e) = map.remove(&k) {
                    used -= e.body.size() as u64;
                }
            }
            self.used.store(used, Ordering::Relaxed);
        }
    }

    /// Drops every entry (bodies that depend on which days are stored, after an ingest).
    pub fn clear(&self) {
        let mut map = self.map.write().unwrap_or_else(|e| e.into_inner());
        map.clear();
        self.used.store(0, Ordering::Relaxed);
        self.epoch.fetch_add(1, Ordering::AcqRel);
    }

    /// Keeps only the entries whose key passes `keep` (e.g. drops a re-ingested day's bodies).
    pub fn retain(&self, mut keep: impl FnMut(&K) -> bool) {
        let mut map = self.map.write().unwrap_or_else(|e| e.into_inner());
        map.retain(|k, e| {
            let kept = keep(k);
            if !kept {
                self.used.fetch_sub(e.body.size() as u64, Ordering::Relaxed);
            }
            kept
        });
        self.epoch.fetch_add(1, Ordering::AcqRel);
    }

    /// Drops one entry (e.g. the day list after an ingest).
    pub fn remove(&self, key: &K) {
        let mut map = self.map.write().unwrap_or_else(|e| e.into_inner());
        if let Some(e) = map.remove(key) {
            self.used.fetch_sub(e.body.size() as u64, Ordering::Relaxed);
        }
        self.epoch.fetch_add(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn gzip_negotiation() {
        assert!(accepts_gzip(&headers(&[(
            "accept-encoding",
            "gzip, deflate, br"
        )])));
        assert!(accepts_gzip(&headers(&[(
            "accept-encoding",
            "br;q=1.0, gzip;q=0.5"
        )])));
        assert!(!accepts_gzip(&headers(&[("accept-encoding", "gzip;q=0")])));
        assert!(!accepts_gzip(&headers(&[("accept-encoding", "br")])));
        assert!(!accepts_gzip(&headers(&[])));
    }

    #[test]
    fn cache_stays_within_budget() {
        let cache = Cache::new(40_000);
        for i in 0..100u32 {
            cache.insert_at(
                cache.epoch(),
                i,
                Body::new(vec![b'x'; 1000 + i as usize], "text/plain", IMMUTABLE),
            );
        }
        assert!(cache.used.load(Ordering::Relaxed) <= 40_000);
        assert!(cache.get(&99).is_some(), "newest entry kept");
        assert!(cache.get(&0).is_none(), "oldest entry evicted");
    }
}
