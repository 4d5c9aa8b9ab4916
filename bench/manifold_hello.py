#!/usr/bin/env python3
"""A steady, single-threaded hello-world HTTP/1.1 server for bench (b) (standard library only).

Usage: manifold_hello.py PORT
Answers every GET with "hello" (keep-alive, TCP_NODELAY, one thread, one selector loop), so the
time it takes is small and the same whether the client is oha or manifold: the difference between
direct and proxied latency is manifold's own.
"""
import selectors
import socket
import sys

RESP = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello"

sel = selectors.DefaultSelector()
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", int(sys.argv[1])))
srv.listen(128)
srv.setblocking(False)
sel.register(srv, selectors.EVENT_READ)
bufs = {}
while True:
    for key, _ in sel.select():
        s = key.fileobj
        if s is srv:
            try:
                c, _ = srv.accept()
            except BlockingIOError:
                continue
            c.setblocking(False)
            c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sel.register(c, selectors.EVENT_READ)
            bufs[c] = b""
            continue
        try:
            data = s.recv(65536)
        except (BlockingIOError, InterruptedError):
            continue
        except OSError:
            data = b""
        if not data:
            sel.unregister(s)
            del bufs[s]
            s.close()
            continue
        buf = bufs[s] + data
        n = buf.count(b"\r\n\r\n")
        bufs[s] = buf[buf.rfind(b"\r\n\r\n") + 4:] if n else buf
        if n:
            s.sendall(RESP * n)
