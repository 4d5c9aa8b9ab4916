#!/usr/bin/env python3
"""Burst client for manifold's FIFO check: N requests opened one after another (so they reach the
queue in a known order), all outstanding at once; reports errors, the longest wait and how far
the order in which workers started them (server-side `started` time from the plumber fixture)
strays from the sending order.

Usage: manifold_burst.py URL N WORKERS SERVICE_MS [GAP_MS]
"""
import json
import http.client
import sys
import threading
import time
from urllib.parse import urlparse

url, n, workers, service_ms = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
gap = float(sys.argv[5]) / 1000 if len(sys.argv) > 5 else 0.002
u = urlparse(url)
done = [None] * n
status = [None] * n
sent = [None] * n
started = [None] * n
connected = [threading.Event() for _ in range(n)]


def one(i):
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=120)
    try:
        c.connect()
        sent[i] = time.monotonic()
        c.request("GET", f"{u.path}?{u.query}&tag={i}")
        connected[i].set()
        r = c.getresponse()
        body = r.read()
        status[i] = r.status
        if r.status == 200:
            started[i] = json.loads(body)["started"][0]
    except Exception as e:  # counted as an error below
        status[i] = repr(e)
    finally:
        connected[i].set()
        done[i] = time.monotonic()
        c.close()


threads = []
for i in range(n):
    t = threading.Thread(target=one, args=(i,))
    t.start()
    connected[i].wait()
    # A short gap so request i is queued before request i+1 arrives.
    time.sleep(gap)
    threads.append(t)
for t in threads:
    t.join()

errors = sum(1 for s in status if s != 200)
waits = [done[i] - sent[i] for i in range(n)]
order = sorted(range(n), key=lambda i: started[i] or 0)
displacement = max(abs(rank - i) for rank, i in enumerate(order))
ideal_total = n / workers * service_ms / 1000
total = max(done) - min(sent)
print(f"burst {n} requests, {workers} workers x {service_ms:.0f} ms: errors {errors}, "
      f"all done in {total:.3f} s (ideal {ideal_total:.3f} s), longest wait {max(waits):.3f} s, "
      f"median wait {sorted(waits)[n // 2]:.3f} s (ideal {ideal_total / 2:.3f} s), "
      f"start-order displacement {displacement} (FIFO: ~{workers}, the batch size)")
sys.exit(1 if errors else 0)
