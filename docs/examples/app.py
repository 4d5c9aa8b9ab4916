#!/usr/bin/env python3
"""A single-threaded Python web app (standard library only): what manifold turns into a pool.

Usage: app.py --port PORT (manifold passes it: `manifold -- python3 app.py --port {port}`), or
PORT in the environment. GET / answers "hello from PID"; GET /slow?ms=N sleeps N ms first.
"""
import argparse
import os
import time
from http.server import BaseHTTPRequestHandler, HTTPServer
from urllib.parse import parse_qs, urlparse


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        url = urlparse(self.path)
        if url.path == "/slow":
            time.sleep(int(parse_qs(url.query).get("ms", ["100"])[0]) / 1000)
        body = f"hello from {os.getpid()}\n".encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
    args = ap.parse_args()
    HTTPServer(("127.0.0.1", args.port), Handler).serve_forever()


if __name__ == "__main__":
    main()
