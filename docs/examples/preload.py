#!/usr/bin/env python3
"""A Python app that opts in to `manifold --preload` (the preload protocol, docs/manifold.md).

Usage: `manifold --preload -- python3 preload.py`. This process is the parent: it imports and
builds the app once, prints "manifold-preload ready", then for each "fork PORT" line on stdin
forks a worker serving 127.0.0.1:PORT and prints "manifold-preload forked PORT PID". At EOF
on stdin it exits; a worker exits when its parent is gone. GET / answers "hello from PID",
GET /random a number drawn in the worker (each worker seeds its own generator after the fork).
"""
import os
import random
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer

# Before the fork: everything that is loaded once and shared (imports, data, the app itself).
# Nothing here may start a thread or open a socket: a fork keeps only the thread that forked.
BOOT = time.time()


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path == "/random":
            body = f"{random.random()}\n".encode()
        else:
            body = f"hello from {os.getpid()}\n".encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def lifeline(parent):
    """Ends this worker once its parent is gone (the parent dies with manifold)."""
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(1)


def serve(port, parent):
    """After the fork: a fresh seed, the lifeline, then the server."""
    random.seed()
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    threading.Thread(target=lifeline, args=(parent,), daemon=True).start()
    HTTPServer(("127.0.0.1", port), Handler).serve_forever()


def main():
    parent = os.getpid()
    # The parent never waits for its workers: the kernel reaps them.
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    print("manifold-preload ready", flush=True)
    for line in sys.stdin:
        if not line.startswith("fork "):
            continue
        port = int(line.split()[1])
        pid = os.fork()
        if pid == 0:
            try:
                serve(port, parent)
            finally:
                os._exit(1)
        print(f"manifold-preload forked {port} {pid}", flush=True)


if __name__ == "__main__":
    main()
