#!/usr/bin/env python3
"""Slow-client row of `make bench-manifold` (issue 32): CRAWLERS clients that each ask for a
SIZE_KB answer and read it at RATE bytes/s (4 KiB receive buffers, so the kernel cannot soak it
up), beside a closed loop of FAST clients asking /hello for SECONDS. Prints the fast clients'
requests, req/s, p50 and p99, and how many of them failed.

Usage: manifold_slow.py URL CRAWLERS FAST SECONDS [SIZE_KB] [RATE]   (CRAWLERS may be 0: the baseline)
"""
import socket
import sys
import threading
import time
from urllib.parse import urlparse

url = urlparse(sys.argv[1])
crawlers, fast, seconds = int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
size_kb = int(sys.argv[5]) if len(sys.argv) > 5 else 2048
rate = int(sys.argv[6]) if len(sys.argv) > 6 else 2048
host, port = url.hostname, url.port
stop = threading.Event()


def crawl():
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.settimeout(seconds + 30)
    try:
        s.connect((host, port))
        s.sendall(f"GET /big?kb={size_kb} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
        while not stop.is_set():
            if not s.recv(rate):
                return
            time.sleep(1)  # RATE bytes a second
    except OSError:
        pass
    finally:
        s.close()


def get_hello():
    s = socket.create_connection((host, port), timeout=30)
    try:
        s.sendall(b"GET /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        raw = b""
        while True:
            b = s.recv(65536)
            if not b:
                break
            raw += b
        return raw.startswith(b"HTTP/1.1 200")
    finally:
        s.close()


lat, failed = [], [0]
lock = threading.Lock()


def loop():
    while not stop.is_set():
        t = time.monotonic()
        try:
            ok = get_hello()
        except OSError:
            ok = False
        d = time.monotonic() - t
        with lock:
            if ok:
                lat.append(d)
            else:
                failed[0] += 1


threads = [threading.Thread(target=crawl, daemon=True) for _ in range(crawlers)]
for t in threads:
    t.start()
time.sleep(1 if crawlers else 0)  # the crawlers' answers have started
loops = [threading.Thread(target=loop) for _ in range(fast)]
start = time.monotonic()
for t in loops:
    t.start()
time.sleep(seconds)
stop.set()
for t in loops:
    t.join()
took = time.monotonic() - start
lat.sort()
if not lat:
    print(f"crawlers {crawlers}: no fast request answered ({failed[0]} failed)")
    sys.exit(1)
p = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))] * 1000
print(f"crawlers {crawlers}: fast {len(lat)} ok, {failed[0]} failed, {len(lat) / took:.0f} req/s, "
      f"p50 {p(0.5):.1f} ms, p99 {p(0.99):.1f} ms")
