//! The response body the browser gets: the target's body relayed frame by frame, writing the
//! request's event once, when the body ends or is dropped.

use super::state::State;
use crate::shiny;
use bytes::Bytes;
use hyper::body::{Body, Frame, Incoming, SizeHint};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

/// Relays the target's response body frame by frame and writes the request's event when the body
/// ends: the target finished (or failed), or the browser went away (hyper drops the body). Keeps at
/// most `keep` bytes, for the values REQ_HOME / REQ_TOK bodies carry.
pub(super) struct Tap {
    pub inner: Incoming,
    pub st: Arc<State>,
    pub id: Option<u64>,
    pub head: Vec<u8>,
    pub keep: usize,
    /// A home page: learn `${WORKER}` as soon as its `<base href>` has passed, since the browser
    /// fetches `_w_<worker>/` assets while the page is still streaming.
    pub find_worker: bool,
}

impl Tap {
    fn finish(&mut self, by_server: bool) {
        if let Some(id) = self.id.take() {
            self.st.close_req(id, &self.head, by_server);
        }
    }
}

impl Body for Tap {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        let this = &mut *self;
        let r = Pin::new(&mut this.inner).poll_frame(cx);
        match &r {
            Poll::Ready(Some(Ok(f))) => {
                if let Some(d) = f.data_ref() {
                    if this.head.len() < this.keep {
                        let n = (this.keep - this.head.len()).min(d.len());
                        this.head.extend_from_slice(&d[..n]);
                    }
                    if this.find_worker {
                        if let Some(w) = shiny::worker_id(&this.head) {
                            this.st.add_token(&w, "${WORKER}");
                            this.find_worker = false;
                        }
                    }
                }
            }
            Poll::Ready(_) => this.finish(true),
            Poll::Pending => {}
        }
        r
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for Tap {
    fn drop(&mut self) {
        // Dropped before its end: the browser went away (closed an EventSource, left the page).
        self.finish(false);
    }
}
