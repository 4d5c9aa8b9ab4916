//! The JSON API on real days, checked against an independent count of the raw logs. The server
//! runs in-process on port 0; downloads come from a real source server on loopback.

use crate::engine_support;
use crate::server_support;

use server_support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Summary of a sample day (ingested at start) and of a day fetched on demand match a simple
/// recount of the raw log: totals, hourly (all and top-N), the top 10 whales.
#[tokio::test]
async fn day_summaries_match_independent_count() {
    let source = Source::start();
    let server = App::start(&["2012-10-17"], &["--source-url", &source.url]).await;
    for date in ["2012-10-17", "2013-12-04"] {
        let s = fetch_day(server.addr, date, 10).await;
        let r = Reference::of(date);
        assert_eq!(s["date"], date);
        assert_eq!(s["count"], 10);
        let t = &s["totals"];
        assert_eq!(t["downloads"], r.downloads, "{date} downloads");
        assert_eq!(t["bytes"], r.bytes, "{date} bytes");
        assert_eq!(t["downloaders"], r.ips.len() as u64, "{date} downloaders");
        assert_eq!(t["packages"], r.packages() as u64, "{date} packages");
        assert_eq!(t["skipped_rows"], r.skipped, "{date} skipped");
        let top = r.top(10);
        let whales = s["whales"].as_array().unwrap();
        assert_eq!(whales.len(), top.len().min(10));
        for (i, (w, ip)) in whales.iter().zip(&top).enumerate() {
            let e = &r.ips[ip];
            assert_eq!(w["rank"], i as u64 + 1);
            assert_eq!(w["ip_id"], *ip, "{date} rank {}", i + 1);
            assert_eq!(w["downloads"], e.0);
            assert_eq!(w["bytes"], e.1);
            assert_eq!(w["packages"], e.2.len() as u64);
            let hourly: Vec<u64> = w["hourly"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_u64().unwrap())
                .collect();
            assert_eq!(hourly, e.3.to_vec());
        }
        let hourly = s["hourly"].as_array().unwrap();
        assert_eq!(hourly.len(), 24);
        for (h, row) in hourly.iter().enumerate() {
            assert_eq!(row["hour"], h as u64);
            assert_eq!(row["downloads"], r.hourly[h], "{date} hour {h}");
            let whales_h: u64 = top.iter().map(|ip| r.ips[ip].3[h]).sum();
            assert_eq!(row["whale_downloads"], whales_h, "{date} hour {h} whales");
        }
    }
    assert_eq!(
        source.hits("2012-10-17"),
        0,
        "sample day came from the sample dir"
    );
    assert_eq!(source.hits("2013-12-04"), 1);
}

/// A whale's detail lists every one of its rows; the day list shows what is stored.
#[tokio::test]
async fn whale_detail_and_day_list() {
    let server = App::start(
        &["2012-10-17", "2012-10-10"],
        &["--source-url", "http://127.0.0.1:9"],
    )
    .await;
    let r = Reference::of("2012-10-10");
    let top = r.top(3);
    for ip in &top {
        let d = get(
            server.addr,
            &format!("/api/days/2012-10-10/whales/{ip}"),
            &[],
        )
        .await;
        assert_eq!(d.status, 200, "{}", d.text());
        let d = d.json();
        let rows = d["downloads"].as_array().unwrap();
        let e = &r.ips[ip];
        assert_eq!(rows.len() as u64, e.0, "whale {ip} rows");
        assert_eq!(d["whale"]["ip_id"], *ip);
        assert_eq!(
            rows.iter()
                .map(|x| x["size"].as_u64().unwrap())
                .sum::<u64>(),
            e.1
        );
        let pk: std::collections::HashSet<String> = rows
            .iter()
            .map(|x| x["package"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(pk, e.2);
        assert!(d["first"].as_str().unwrap() <= d["last"].as_str().unwrap());
    }
    // Not a top-100 downloader / day not stored: 404 with a JSON error.
    let nope = get(server.addr, "/api/days/2012-10-10/whales/987654321", &[]).await;
    assert_eq!(nope.status, 404);
    assert!(nope.json()["error"].as_str().unwrap().contains("987654321"));
    let unstored = get(server.addr, "/api/days/2014-05-01/whales/1", &[]).await;
    assert_eq!(unstored.status, 404);

    let days = get(server.addr, "/api/days", &[]).await.json()["days"].clone();
    let dates: Vec<&str> = days
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["date"].as_str().unwrap())
        .collect();
    assert_eq!(dates, ["2012-10-10", "2012-10-17"]);
    assert_eq!(days[0]["totals"]["downloads"], r.downloads);
}

/// Summaries carry an ETag and `no-cache` (a day may be re-ingested while the server runs), answer 304 to a matching If-None-Match,
/// and are gzipped when the client accepts it (the gzip inflates to the same JSON).
#[tokio::test]
async fn summaries_are_cached_with_etag_and_gzip() {
    let server = App::start(&["2012-10-17"], &[]).await;
    let plain = get(server.addr, "/api/days/2012-10-17?count=6", &[]).await;
    assert_eq!(plain.status, 200);
    assert_eq!(plain.header("content-type"), Some("application/json"));
    assert_eq!(plain.header("cache-control"), Some("no-cache"));
    let etag = plain.header("etag").unwrap().to_owned();
    let again = get(
        server.addr,
        "/api/days/2012-10-17?count=6",
        &[("If-None-Match", &etag)],
    )
    .await;
    assert_eq!(again.status, 304);
    assert!(again.body.is_empty());
    let gz = get(
        server.addr,
        "/api/days/2012-10-17?count=6",
        &[("Accept-Encoding", "gzip, br")],
    )
    .await;
    assert_eq!(gz.status, 200);
    assert_eq!(gz.header("content-encoding"), Some("gzip"));
    let mut inflated = Vec::new();
    std::io::Read::read_to_end(
        &mut flate2::read::GzDecoder::new(&gz.body[..]),
        &mut inflated,
    )
    .unwrap();
    assert_eq!(inflated, plain.body);
    assert!(gz.body.len() < plain.body.len());
    // A different count is a different body and ETag.
    let other = get(server.addr, "/api/days/2012-10-17?count=7", &[]).await;
    assert_ne!(other.header("etag").unwrap(), etag);
    assert_eq!(other.json()["whales"].as_array().unwrap().len(), 7);
    // The home page is the embedded UI.
    let home = get(server.addr, "/", &[]).await;
    assert_eq!(home.status, 200);
    assert!(home.text().contains("CRAN whales"));
}

/// A day the source does not have: 202, then an error event with status 404, then 404 at once
/// (remembered for 10 minutes on the paused clock, no second download before); days outside
/// 2012-10-01..yesterday are 404 without asking.
#[tokio::test(start_paused = true)]
async fn missing_day_is_404() {
    let source = Source::start();
    let server = App::start(&[], &["--source-url", &source.url, "--no-sample"]).await;
    let first = get(server.addr, "/api/days/2012-10-02?count=6", &[]).await;
    assert_eq!(first.status, 202, "{}", first.text());
    assert_eq!(first.json()["progress"], "/api/days/2012-10-02/progress");
    let events = follow(server.addr, "2012-10-02").await;
    let last = events.last().unwrap();
    assert_eq!(last["phase"], "error");
    assert_eq!(last["status"], 404);
    let again = get(server.addr, "/api/days/2012-10-02", &[]).await;
    assert_eq!(again.status, 404);
    assert!(again.error().contains("2012-10-02"));
    assert_eq!(source.hits("2012-10-02"), 1);
    tokio::time::advance(std::time::Duration::from_secs(599)).await;
    assert_eq!(
        get(server.addr, "/api/days/2012-10-02", &[]).await.status,
        404
    );
    assert_eq!(source.hits("2012-10-02"), 1, "remembered");
    tokio::time::advance(std::time::Duration::from_secs(2)).await;
    assert_eq!(
        get(server.addr, "/api/days/2012-10-02", &[]).await.status,
        202
    );
    assert_eq!(
        follow(server.addr, "2012-10-02").await.last().unwrap()["status"],
        404
    );
    assert_eq!(source.hits("2012-10-02"), 2, "asked again after 10 minutes");
    for date in ["2012-09-30", "2999-01-01"] {
        let r = get(server.addr, &format!("/api/days/{date}"), &[]).await;
        assert_eq!(r.status, 404, "{date}");
        assert!(r.error().contains("2012-10-01"));
    }
    assert_eq!(source.hits("2012-09-30") + source.hits("2999-01-01"), 0);
    assert_eq!(
        get(server.addr, "/api/days", &[]).await.json()["days"],
        serde_json::json!([])
    );
}

/// Many clients asking for the same new day while its download is held by the source cause one
/// download, and all of them see the day once it is stored.
#[tokio::test]
async fn concurrent_requests_for_a_new_day_download_once() {
    let source = Source::start();
    source.set("2012-10-05", Behaviour::Hold);
    let server = App::start(&[], &["--source-url", &source.url, "--no-sample"]).await;
    let addr = server.addr;
    // Each client says when its 202 came (an event), and the source when it holds the download.
    let (asked, mut answered) = tokio::sync::mpsc::unbounded_channel();
    let clients: Vec<_> = (0..40)
        .map(|_| {
            let asked = asked.clone();
            tokio::spawn(async move {
                let r = get(addr, "/api/days/2012-10-05?count=6", &[]).await;
                assert_eq!(r.status, 202, "{}", r.text());
                asked.send(()).unwrap();
                fetch_day(addr, "2012-10-05", 6).await
            })
        })
        .collect();
    for _ in 0..40 {
        answered.recv().await.unwrap();
    }
    source.held("2012-10-05").await;
    source.release("2012-10-05");
    let r = Reference::of("2012-10-05");
    for c in clients {
        assert_eq!(c.await.unwrap()["totals"]["downloads"], r.downloads);
    }
    assert_eq!(source.hits("2012-10-05"), 1, "exactly one download");
}

/// The progress stream shows the phases in order: downloading (with the size, while the source
/// holds the second half), parsing, storing, done.
#[tokio::test]
async fn progress_stream_reports_phases() {
    let source = Source::start();
    source.set("2012-10-10", Behaviour::Hold);
    let server = App::start(&[], &["--source-url", &source.url, "--no-sample"]).await;
    assert_eq!(
        get(server.addr, "/api/days/2012-10-10", &[]).await.status,
        202
    );
    let mut stream = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    let req = "GET /api/days/2012-10-10/progress HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    stream.write_all(req.as_bytes()).await.unwrap();
    source.held("2012-10-10").await;
    // The event: the stream has passed on a downloading status while the source holds the
    // second half; only then does the rest arrive.
    let mut seen = Vec::new();
    let mid_download = |seen: &[u8]| {
        String::from_utf8_lossy(seen)
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str::<serde_json::Value>(d.trim()).ok())
            .any(|e| e["phase"] == "downloading")
    };
    while !mid_download(&seen) {
        let mut buf = [0u8; 4096];
        let n = stream.read(&mut buf).await.unwrap();
        assert!(n > 0, "stream closed before a downloading event");
        seen.extend_from_slice(&buf[..n]);
    }
    source.release("2012-10-10");
    stream.read_to_end(&mut seen).await.unwrap();
    let resp = parse_response(&seen);
    assert_eq!(resp.status, 200);
    let events = events(&resp.text());
    let phases: Vec<&str> = events
        .iter()
        .map(|e| e["phase"].as_str().unwrap())
        .collect();
    assert_eq!(phases.last(), Some(&"done"), "{phases:?}");
    let size = std::fs::metadata(cranlogs().join("2012-10-10.csv.gz"))
        .unwrap()
        .len();
    let dl = events
        .iter()
        .find(|e| e["phase"] == "downloading")
        .expect("a downloading event");
    assert_eq!(dl["total"], size);
    assert!(
        dl["done"].as_u64().unwrap() < size,
        "seen mid-download: {dl}"
    );
    let order = |p: &str| phases.iter().position(|x| *x == p);
    assert!(order("downloading") < order("done"));
    if let (Some(a), Some(b)) = (order("parsing"), order("storing")) {
        assert!(a < b);
    }
    assert_eq!(
        get(server.addr, "/api/days/2012-10-10", &[]).await.status,
        200
    );
}

/// The API serves exactly what the CLI prints: `show --json` for a day (a percent-encoded count
/// too), `days --json` for the list.
#[tokio::test]
async fn api_matches_cli_json() {
    let server = App::start(&["2012-10-17", "2012-10-10"], &[]).await;
    let db = server.dir.path().join("cw.db");
    // The CLI reads the same store file while the server is idle.
    let cli = |args: &[&str]| -> serde_json::Value {
        serde_json::from_str(&engine_support::cli_ok(&db, args)).unwrap()
    };
    // `%31%32` is 12 percent-encoded: the count is decoded as `from` and `q` are.
    for (query, count) in [("1", "1"), ("6", "6"), ("25", "25"), ("%31%32", "12")] {
        let api = get(
            server.addr,
            &format!("/api/days/2012-10-10?count={query}"),
            &[],
        )
        .await
        .json();
        assert_eq!(
            api,
            cli(&["show", "2012-10-10", "--count", count, "--json"]),
            "count {count}"
        );
    }
    assert_eq!(
        get(server.addr, "/api/days", &[]).await.json()["days"],
        cli(&["days", "--json"])
    );
}
