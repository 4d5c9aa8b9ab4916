//! Slow clients never hold a worker (issue 32): a request body is read whole before a worker is
//! leased (408 from its own `--body-timeout`, never a 504, no worker replaced), and a response
//! is taken from the worker at the worker's pace while clients read it at theirs.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use crate::common::*;

/// Sends the head of a POST /echo with `Content-Length: len`, no body yet.
fn post_head(addr: &str, len: usize) -> TcpStream {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(DEADLINE)).unwrap();
    write!(
        s,
        "POST /echo HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: {len}\r\n\r\n"
    )
    .unwrap();
    s
}

fn read_resp(mut s: TcpStream) -> Resp {
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    parse(&raw).unwrap_or_else(|| panic!("bad response {:?}", String::from_utf8_lossy(&raw)))
}

/// A client sending its body at one byte a second: no worker is leased until the body is whole
/// (the only worker serves others meanwhile), a 3 s body passes a 1 s `--request-timeout` (200,
/// never 504), a body that never ends gets 408 from `--body-timeout`, and no worker is replaced.
#[test]
fn a_body_at_one_byte_a_second_never_holds_a_worker() {
    let m = start(&base(&[
        "--min",
        "1",
        "--max",
        "1",
        "--request-timeout",
        "1s",
        "--body-timeout",
        "3s",
    ]));
    let pid = m.get("/pid").body;
    // A whole body, one byte a second for 2.x s: longer than --request-timeout, yet a 200.
    let mut s = post_head(&m.addr, 3);
    for (i, b) in b"abc".iter().enumerate() {
        if i > 0 {
            // why: the test is a client sending one body byte a second.
            thread::sleep(Duration::from_secs(1));
        }
        s.write_all(&[*b]).unwrap();
        if i == 2 {
            break; // the body is whole: its request may be leased a worker from now on
        }
        // Mid-body: the only worker is not leased for it, and answers someone else.
        let st = m.status();
        assert_eq!(st["capacity"]["busy"], 0, "leased mid-body: {st}");
        assert_eq!(m.get("/pid").body, pid);
    }
    let r = read_resp(s);
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.body.contains("\"body\": \"abc\""), "{}", r.body);
    // A body that never ends: 408 from --body-timeout, the worker left alone.
    let mut s = post_head(&m.addr, 10);
    let writer = s.try_clone().unwrap();
    let drip = thread::spawn(move || {
        let mut w = writer;
        for _ in 0..9 {
            if w.write_all(b"z").is_err() {
                return;
            }
            // why: the test is a client sending one body byte a second.
            thread::sleep(Duration::from_secs(1));
        }
    });
    s.flush().unwrap();
    let r = read_resp(s);
    assert_eq!(r.status, 408, "{}", r.body);
    assert!(r.body.contains("--body-timeout"), "{}", r.body);
    drip.join().unwrap();
    let st = m.status();
    assert_eq!(st["totals"]["request_timeouts"], 0, "{st}");
    assert_eq!(st["totals"]["worker_starts"], 1, "no worker replaced: {st}");
    assert_eq!(m.get("/pid").body, pid);
}

/// A body above `--max-body` gets 413; one above `--buffer-size` goes through a temporary file
/// and reaches the worker whole.
#[test]
fn a_body_above_max_body_is_413() {
    let m = InProc::start(&base(&["--min", "1", "--max", "1", "--max-body", "1KiB"]));
    let big = "y".repeat(2048);
    let r = request(&m.addr, "POST", "/echo", &[], &big);
    assert_eq!(r.status, 413, "{}", r.body);
    // Spooled to a temporary file beyond --buffer-size, and sent whole.
    let m2 = InProc::start(&base(&["--min", "1", "--max", "1", "--buffer-size", "100"]));
    let r = request(&m2.addr, "POST", "/echo", &[], &big);
    assert_eq!(r.status, 200);
    assert!(r.body.contains(&big), "{}", r.body.len());
}

/// One client reading `/big?kb=16384` (16 MiB: on loopback the kernel's socket buffers soak up
/// a 2 MiB answer whole, buffered by manifold or not): it reads the head and a little, then stops until told.
fn crawler(addr: String, started: mpsc::Sender<usize>, go: mpsc::Receiver<()>) -> usize {
    let mut s = small_window(&addr);
    s.set_read_timeout(Some(DEADLINE)).unwrap();
    write!(
        s,
        "GET /big?kb=16384 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut raw = vec![0u8; 4096];
    let n = s.read(&mut raw).unwrap();
    started.send(n).unwrap();
    go.recv().unwrap();
    let mut rest = Vec::new();
    s.read_to_end(&mut rest).unwrap();
    let mut all = raw[..n].to_vec();
    all.extend(rest);
    parse(&all).unwrap().body.len()
}

/// A process's resident memory in bytes (VmRSS in /proc).
fn vm_rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kb = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .unwrap();
    kb.parse::<u64>().unwrap() * 1024
}

/// A connection whose receive buffer is 4 KiB, set before connecting (so the window it offers
/// stays small): the kernel cannot soak up the answer for a client that does not read.
fn small_window(addr: &str) -> TcpStream {
    use std::os::fd::FromRawFd;
    let sa: std::net::SocketAddrV4 = addr.parse().unwrap();
    // SAFETY: plain socket calls on a descriptor we own; the sockaddr is a local of its size.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0);
        assert!(fd >= 0);
        let size: libc::c_int = 4096;
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_RCVBUF,
            &size as *const libc::c_int as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
        let sin = libc::sockaddr_in {
            sin_family: libc::AF_INET as libc::sa_family_t,
            sin_port: sa.port().to_be(),
            sin_addr: libc::in_addr {
                s_addr: u32::from(*sa.ip()).to_be(),
            },
            sin_zero: [0; 8],
        };
        let rc = libc::connect(
            fd,
            &sin as *const libc::sockaddr_in as *const libc::sockaddr,
            std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
        );
        assert_eq!(rc, 0, "connect {addr}");
        TcpStream::from_raw_fd(fd)
    }
}

/// Four clients that stop reading a 16 MiB answer, with `--max 2 --per-worker 1`: all four get
/// their answers started, a fast GET is answered while every crawler is still reading, status
/// shows no busy worker meanwhile, manifold's RSS stays below the 64 MiB it holds for them
/// (`--buffer-memory 8MiB`), the crawlers then get every byte, and the access log marks
/// only the SSE response as streamed.
#[test]
fn crawling_readers_leave_the_workers_free() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("access.jsonl");
    let m = start(&base(&[
        "--min",
        "2",
        "--max",
        "2",
        "--per-worker",
        "1",
        "--buffer-memory",
        "8MiB",
        "--access-log",
        log.to_str().unwrap(),
    ]));
    const CRAWLERS: usize = 4;
    let (started_tx, started) = mpsc::channel();
    let mut gos = Vec::new();
    let mut crawlers = Vec::new();
    for _ in 0..CRAWLERS {
        let (go_tx, go) = mpsc::channel();
        gos.push(go_tx);
        let (addr, tx) = (m.addr.clone(), started_tx.clone());
        crawlers.push(thread::spawn(move || crawler(addr, tx, go)));
    }
    // Every crawler has its head; none reads on. With a worker held per crawler, the third and
    // fourth would wait for a worker forever.
    for _ in 0..CRAWLERS {
        started
            .recv_timeout(DEADLINE)
            .expect("every crawler got its answer started");
    }
    // A fast client is served while all crawlers are still reading.
    let r = m.get("/hello");
    assert_eq!(r.status, 200);
    // And no worker is busy: each finished its answer, which waits in manifold.
    m.wait_status("no busy worker while the crawlers crawl", |s| {
        s["capacity"]["busy"] == 0
    });
    // 64 MiB wait for the crawlers; memory holds at most --buffer-memory of it, the rest is in
    // temporary files: manifold's resident memory stays well below what it holds.
    let rss = vm_rss(m.child.id());
    assert!(
        rss < 40 << 20,
        "manifold's RSS {rss} bytes while holding 64 MiB of answers"
    );
    let sse = m.get("/sse");
    assert_eq!(sse.body, "data: one\n\ndata: two\n\n");
    for go in gos {
        go.send(()).unwrap();
    }
    for c in crawlers {
        assert_eq!(
            c.join().unwrap(),
            16384 * 1024,
            "every crawler gets it whole"
        );
    }
    // The access log says which responses streamed (held their worker).
    wait_until("the access log lines", || {
        std::fs::read_to_string(&log).is_ok_and(|t| t.lines().count() >= CRAWLERS + 2)
    });
    let text = std::fs::read_to_string(&log).unwrap();
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let sse = v["path"] == "/sse";
        assert_eq!(v["streamed"], sse, "{line}");
    }
}
