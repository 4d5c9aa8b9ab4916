//! Recording one HTTP exchange: forward the request, classify it (REQ_HOME, REQ_TOK, …), save
//! POST bodies, and stream the response back through a [`Tap`].

use super::state::{OpenReq, State};
use super::tap::Tap;
use super::{text_response, ProxyBody};
use crate::recording::{EventLine, Kind, StreamEnd};
use crate::timefmt::now_ms;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;

const HOP_BY_HOP: [&str; 9] = [
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "host",
];

fn strip_hop(h: &mut HeaderMap) {
    for n in HOP_BY_HOP {
        h.remove(n);
    }
}

/// Request bodies are collected (they are saved to recording.log.post.N); response bodies stream to
/// the browser frame by frame, so Server-Sent Events, long polls and big downloads pass through with
/// bounded memory. The event is written when the response ends (see [`Tap`]).
pub(super) async fn http(st: Arc<State>, req: Request<Incoming>) -> Response<ProxyBody> {
    let begin = now_ms();
    let (parts, body) = req.into_parts();
    let pq = parts
        .uri
        .path_and_query()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| "/".into());
    let body = match body.collect().await {
        Ok(b) => b.to_bytes(),
        Err(e) => return text_response(StatusCode::BAD_REQUEST, format!("reading request: {e}")),
    };
    let uri = format!("{}{}", st.target.origin(), st.target.path(&pq));
    let mut up = Request::new(Full::new(body.clone()));
    *up.method_mut() = parts.method.clone();
    *up.uri_mut() = match uri.parse() {
        Ok(u) => u,
        Err(e) => return text_response(StatusCode::BAD_REQUEST, format!("bad URL {uri}: {e}")),
    };
    let mut headers = parts.headers.clone();
    strip_hop(&mut headers);
    if let Ok(v) = HeaderValue::from_str(&st.target.authority) {
        headers.insert(header::HOST, v);
    }
    *up.headers_mut() = headers;
    let resp = match st.client.request(up).await {
        Ok(r) => r,
        Err(e) => {
            return text_response(
                StatusCode::BAD_GATEWAY,
                format!("surge record: target {}: {e}", st.target_url),
            )
        }
    };
    let (rparts, rbody) = resp.into_parts();
    let open = open_http(
        &st,
        &parts.method,
        pq,
        &body,
        &rparts.headers,
        rparts.status.as_u16(),
        begin,
    );
    let home = open.as_ref().is_some_and(|o| o.ev.kind == Kind::ReqHome);
    let keep = match open.as_ref().map(|o| o.ev.kind) {
        Some(Kind::ReqHome) => 512 * 1024,
        Some(Kind::ReqTok) => 4096,
        _ => 0,
    };
    if home {
        st.log().homes_open += 1;
    }
    let id = open.map(|o| {
        let id = st.next_req.fetch_add(1, Ordering::Relaxed);
        st.open_reqs().insert(id, o);
        id
    });
    let tap = Tap {
        inner: rbody,
        st: st.clone(),
        id,
        head: Vec::new(),
        keep,
        find_worker: home,
    };
    let mut out = Response::new(tap.boxed());
    *out.status_mut() = rparts.status;
    let mut h = rparts.headers;
    strip_hop(&mut h);
    *out.headers_mut() = h;
    out
}

/// True for a Server-Sent Events response (it stays open while the page is).
fn is_event_stream(h: &HeaderMap) -> bool {
    h.get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().starts_with("text/event-stream"))
}

/// The event for a request whose response head has arrived; None for what is not recorded.
fn open_http(
    st: &State,
    method: &Method,
    pq: String,
    body: &Bytes,
    resp_headers: &HeaderMap,
    status: u16,
    begin: i64,
) -> Option<OpenReq> {
    let path = pq.split('?').next().unwrap_or("");
    if path.ends_with("favicon.ico") {
        return None;
    }
    let kind = if *method == Method::GET {
        get_kind(st, path, resp_headers)
    } else {
        Kind::ReqPost
    };
    let mut ev = EventLine {
        status: Some(status),
        ..EventLine::new(kind, begin)
    };
    if kind == Kind::ReqPost {
        if *method != Method::POST {
            ev.method = Some(method.as_str().to_string());
        }
        if !body.is_empty() {
            let n = st.posts.fetch_add(1, Ordering::Relaxed);
            let file = PathBuf::from(format!("{}.post.{n}", st.output.display()));
            if let Err(e) = std::fs::write(&file, body) {
                eprintln!("surge record: cannot write {}: {e}", file.display());
            }
            ev.datafile = file.file_name().map(|f| f.to_string_lossy().into_owned());
        }
    }
    if is_event_stream(resp_headers) {
        // Ended by whom is filled in when it ends.
        ev.stream = Some(StreamEnd::Client);
    }
    Some(OpenReq { ev, pq })
}

/// What a GET is: the page (a Shiny app's `/` or `.Rmd`; otherwise an HTML `/`), Shiny's token
/// or SockJS info request (learning `${ROBUST_ID}`), or any other GET.
fn get_kind(st: &State, path: &str, resp_headers: &HeaderMap) -> Kind {
    let html = resp_headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/html"));
    let lower = path.to_ascii_lowercase();
    if (st.shiny && (lower.ends_with('/') || lower.ends_with(".rmd")))
        || (!st.shiny && html && lower.ends_with('/'))
    {
        Kind::ReqHome
    } else if st.shiny && path.contains("__token__") {
        Kind::ReqTok
    } else if let Some(n) = st.shiny.then(|| robust_id(path)).flatten() {
        st.add_token(n, "${ROBUST_ID}");
        Kind::ReqSinf
    } else {
        Kind::ReqGet
    }
}

/// `n=<id>` segment of a SockJS info URL.
fn robust_id(path: &str) -> Option<&str> {
    let rest = &path[path.find("/__sockjs__/")? + 12..];
    rest.split('/')
        .find_map(|seg| seg.strip_prefix("n="))
        .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn robust_ids() {
        assert_eq!(
            robust_id("/__sockjs__/n=AbC123/t=x/w=1/s=0/info"),
            Some("AbC123")
        );
        assert_eq!(robust_id("/shared/shiny.js"), None);
    }
}
