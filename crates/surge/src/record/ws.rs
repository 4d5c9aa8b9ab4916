//! Recording a WebSocket: the upgrade handshake with the browser, the connection to the
//! target, and the relay that writes WS_SEND / WS_RECV* / WS_CLOSE events.

use super::state::State;
use super::{full, text_response, ProxyBody};
use crate::recording::{EventLine, Kind};
use crate::shiny;
use crate::timefmt::now_ms;
use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use hyper::body::Incoming;
use hyper::header::{self, HeaderValue};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use std::sync::Arc;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::Role;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

/// `<server>/<session>` of a SockJS WebSocket path `.../<a>/<b>/websocket`.
fn sockjs_id(path: &str) -> Option<String> {
    let p = path.strip_suffix("/websocket")?;
    let mut segs = p.rsplit('/');
    let b = segs.next()?;
    let a = segs.next()?;
    let word = |s: &str| !s.is_empty() && s.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_');
    (word(a) && word(b)).then(|| format!("{a}/{b}"))
}

/// Accepts the browser's WebSocket upgrade and relays it to the target, recording as it goes.
pub(super) async fn websocket(st: Arc<State>, mut req: Request<Incoming>) -> Response<ProxyBody> {
    let Some(key) = req.headers().get(header::SEC_WEBSOCKET_KEY).cloned() else {
        return text_response(StatusCode::BAD_REQUEST, "missing Sec-WebSocket-Key".into());
    };
    let pq = req
        .uri()
        .path_and_query()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| "/".into());
    let url = st.target.ws_url(&pq);
    let mut up_req = match url.as_str().into_client_request() {
        Ok(r) => r,
        Err(e) => return text_response(StatusCode::BAD_REQUEST, format!("bad URL {url}: {e}")),
    };
    for h in [
        header::COOKIE,
        header::USER_AGENT,
        header::SEC_WEBSOCKET_PROTOCOL,
    ] {
        if let Some(v) = req.headers().get(&h) {
            up_req.headers_mut().insert(h, v.clone());
        }
    }
    let begin = now_ms();
    let upstream = match crate::net::ws_connect(&st.target.dialer, up_req).await {
        Ok(ws) => ws,
        Err(e) => {
            return text_response(StatusCode::BAD_GATEWAY, format!("WebSocket to {url}: {e}"))
        }
    };
    let path = pq.split('?').next().unwrap_or("").to_string();
    if let Some(id) = sockjs_id(&path) {
        st.add_token(&id, "${SOCKJSID}");
    }
    st.write(&EventLine {
        url: Some(st.apply(&pq)),
        ..EventLine::new(Kind::WsOpen, begin)
    });
    let upgrade = hyper::upgrade::on(&mut req);
    let st2 = st.clone();
    tokio::spawn(async move {
        let Ok(upgraded) = upgrade.await else { return };
        let client =
            WebSocketStream::from_raw_socket(TokioIo::new(upgraded), Role::Server, None).await;
        relay(st2, client, upstream).await;
    });
    let mut resp = Response::new(full(Bytes::new()));
    *resp.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let h = resp.headers_mut();
    h.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
    h.insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
    if let Ok(v) = HeaderValue::from_str(&derive_accept_key(key.as_bytes())) {
        h.insert(header::SEC_WEBSOCKET_ACCEPT, v);
    }
    resp
}

fn ws_event(kind: Kind, message: Option<String>) -> EventLine {
    EventLine {
        message,
        ..EventLine::new(kind, now_ms())
    }
}

async fn relay<C, U>(
    st: Arc<State>,
    mut client: WebSocketStream<C>,
    mut upstream: WebSocketStream<U>,
) where
    C: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
    U: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    loop {
        tokio::select! {
            m = client.next() => match m {
                Some(Ok(Message::Text(t))) => {
                    if !shiny::ignorable_frame(t.as_str()) {
                        st.write(&ws_event(Kind::WsSend, Some(st.apply(t.as_str()))));
                    }
                    if upstream.send(Message::Text(t)).await.is_err() { break; }
                }
                Some(Ok(Message::Binary(b))) => { if upstream.send(Message::Binary(b)).await.is_err() { break; } }
                Some(Ok(Message::Ping(_))) | Some(Ok(Message::Pong(_))) | Some(Ok(Message::Frame(_))) => {}
                Some(Ok(Message::Close(_))) | Some(Err(_)) | None => {
                    let _ = upstream.close(None).await;
                    st.write(&ws_event(Kind::WsClose, None));
                    let _ = st.done.send(true);
                    break;
                }
            },
            m = upstream.next() => match m {
                Some(Ok(Message::Text(t))) => {
                    record_recv(&st, t.as_str());
                    if client.send(Message::Text(t)).await.is_err() { break; }
                }
                Some(Ok(Message::Binary(b))) => { if client.send(Message::Binary(b)).await.is_err() { break; } }
                Some(Ok(Message::Ping(_))) | Some(Ok(Message::Pong(_))) | Some(Ok(Message::Frame(_))) => {}
                Some(Ok(Message::Close(_))) | Some(Err(_)) | None => {
                    let _ = client.close(None).await;
                    break;
                }
            },
        }
    }
}

fn record_recv(st: &State, frame: &str) {
    if frame == "o" {
        st.write(&ws_event(Kind::WsRecv, Some(frame.into())));
        return;
    }
    if shiny::ignorable_frame(frame) {
        return;
    }
    let first = shiny::payloads(frame)
        .into_iter()
        .next()
        .unwrap_or_default();
    let obj = shiny::parse_object(&first);
    let get = |o: &serde_json::Map<String, serde_json::Value>, path: &[&str]| -> Option<String> {
        let mut v = o.get(path[0])?;
        for p in &path[1..] {
            v = v.get(p)?;
        }
        v.as_str().map(str::to_string)
    };
    let kind = match &obj {
        Some(o) if o.contains_key("config") => {
            if let Some(s) = get(o, &["config", "sessionId"]) {
                st.add_token(&s, "${SESSION}");
            }
            Kind::WsRecvInit
        }
        Some(o) if get(o, &["response", "value", "jobId"]).is_some() => {
            if let Some(j) = get(o, &["response", "value", "jobId"]) {
                st.add_token(&j, "${UPLOAD_JOB_ID}");
            }
            Kind::WsRecvBeginUpload
        }
        _ => Kind::WsRecv,
    };
    st.write(&ws_event(kind, Some(st.apply(frame))));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sockjs_ids() {
        assert_eq!(
            sockjs_id("/__sockjs__/n=a/t=b/w=c/s=0/000/xyz12345/websocket").as_deref(),
            Some("000/xyz12345")
        );
        assert_eq!(sockjs_id("/websocket/"), None);
    }
}
