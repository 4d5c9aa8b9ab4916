//! A Shiny session through manifold as a browser makes one: the page (sticky cookie, the
//! worker's pid shown by the fixture app), its script fetched with the cookie, then the WebSocket
//! until the app renders its `clicks` output.

use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::Message;

use super::{request, Resp};

/// What a session's page gave: its sticky cookie (`name=value`), the worker it names, the pid the
/// page shows, and the page's `shiny.min.js` fetched with the cookie.
pub struct Page {
    pub page: Resp,
    pub cookie: String,
    pub worker: u64,
    pub pid: u32,
    pub script: Resp,
}

/// GETs the app's page at `prefix` (`/`, or an `[[app]]` prefix) and its script with the cookie;
/// both must answer 200.
pub fn open(addr: &str, prefix: &str) -> Page {
    let page = request(addr, "GET", prefix, &[], "");
    assert_eq!(page.status, 200, "{}", page.body);
    let cookie = page.cookie();
    let worker = cookie.split_once('=').unwrap().1.parse().unwrap();
    let pid = page
        .body
        .split("<span id=\"pid\">")
        .nth(1)
        .and_then(|r| r.split('<').next())
        .unwrap()
        .parse()
        .unwrap();
    let src = page
        .body
        .split("src=\"")
        .filter_map(|r| r.split('"').next())
        .find(|p| p.ends_with("shiny.min.js"))
        .unwrap()
        .to_string();
    let script = request(
        addr,
        "GET",
        &format!("{prefix}{src}"),
        &[("Cookie", &cookie)],
        "",
    );
    assert_eq!(script.status, 200);
    Page {
        page,
        cookie,
        worker,
        pid,
        script,
    }
}

/// Opens the session's WebSocket under `prefix` (cookie sent) and returns the first rendered
/// `clicks` output, within 60 s.
pub fn output(addr: &str, prefix: &str, cookie: &str) -> String {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        tokio::time::timeout(Duration::from_secs(60), ws_output(addr, prefix, cookie))
            .await
            .expect("shiny answered over the websocket")
    })
}

async fn ws_output(addr: &str, prefix: &str, cookie: &str) -> String {
    let mut req = format!("ws://{addr}{prefix}websocket/")
        .into_client_request()
        .unwrap();
    req.headers_mut().insert("Cookie", cookie.parse().unwrap());
    let (mut ws, resp) = tokio_tungstenite::connect_async(req)
        .await
        .expect("websocket handshake");
    assert_eq!(resp.status(), 101);
    let init = r#"{"method":"init","data":{"go:shiny.action":0,".clientdata_output_clicks_hidden":false}}"#;
    ws.send(Message::text(init)).await.unwrap();
    loop {
        let msg = ws
            .next()
            .await
            .expect("websocket open")
            .expect("websocket message");
        if let Message::Text(t) = msg {
            if t.contains("clicks:") {
                let _ = ws.close(None).await;
                return t.to_string();
            }
        }
    }
}
