#!/usr/bin/env python3
"""Row (f) of make bench-manifold: manifold --preload (issue 32) against the same pool without it.

  worker start  time from a request that needs a new worker (the one worker is held busy,
                --per-worker 1) to that worker's answer: plumber /hello and the Shiny app's page
                (the replay app of the case study, held by an open WebSocket); median of ROUNDS
  cold burst    200 x 100 ms into --min 1 --max 4 --spare 0 (ideal 5.00 s): excess over the ideal,
                over the same burst sent straight to 4 plumber processes (no proxy: the floor the
                app's own per-request cost sets) and over it into --min 4 ready --preload workers
                (no start); medians of ROUNDS
  memory        8 workers of the Shiny app: total PSS (/proc/PID/smaps_rollup) of every process
                manifold started (the preload parent included), 5 s after each answered a page
  valve         (if `valve` is on PATH) the same worker start and cold burst with valve -n 2 /
                -n 4 --n-min 1 over the same plumber API, in the same run, for the ratio lines

Usage: manifold_preload.py MANIFOLD_BINARY [ROUNDS]
"""
import http.client
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
API = f"{ROOT}/crates/manifold/tests/fixtures/plumber/api.R"
SHINY = f"{ROOT}/crates/manifold/tests/fixtures/shiny-replay"
MANIFOLD = sys.argv[1]
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 3


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def get(port, path, timeout=120):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    c.request("GET", path)
    r = c.getresponse()
    body = r.read()
    c.close()
    return r.status, body


def status(port):
    return json.loads(get(port, "/__manifold__/status", 5)[1])


class Pool:
    """manifold in its own session; stopped (the whole group) on exit."""

    def __init__(self, args):
        self.port = free_port()
        self.p = subprocess.Popen([MANIFOLD, "--listen", f"127.0.0.1:{self.port}", *args],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                  start_new_session=True)

    def __enter__(self):
        for _ in range(1200):
            try:
                s = status(self.port)
                if sum(w["state"] == "ready" for w in s["workers"]) >= s["min"]:
                    return self
            except OSError:
                pass
            time.sleep(0.1)
        raise SystemExit("manifold did not start")

    def wait(self, what, f):
        for _ in range(1200):
            s = status(self.port)
            if f(s):
                return s
            time.sleep(0.05)
        raise SystemExit(f"timed out: {what}")

    def __exit__(self, *exc):
        self.p.send_signal(signal.SIGTERM)
        try:
            self.p.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(self.p.pid, signal.SIGKILL)


def hold_websocket(port):
    """Opens the Shiny app's WebSocket (it holds its worker while open)."""
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"GET /websocket/ HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
              b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
    assert b" 101 " in s.recv(4096)
    return s


def worker_start(kind, preload):
    """Median seconds from a request needing a new worker to its answer."""
    extra = ["--preload"] if preload else []
    app = ["plumber", API] if kind == "plumber" else ["shiny", SHINY]
    args = ["--min", "1", "--max", "2", "--per-worker", "1", "--idle-timeout", "1s", *extra, *app]
    took = []
    with Pool(args) as m:
        for _ in range(ROUNDS):
            m.wait("one worker", lambda s: len(s["workers"]) == 1)
            if kind == "plumber":
                blocker = threading.Thread(target=get, args=(m.port, "/sleep?ms=20000"))
                blocker.start()
                hold = None
                path = "/hello"
            else:
                hold = hold_websocket(m.port)
                path = "/"
            m.wait("the one worker busy", lambda s: s["workers"][0]["busy"] == 1)
            t = time.monotonic()
            code, _ = get(m.port, path)
            took.append(time.monotonic() - t)
            assert code == 200, code
            if hold:
                hold.close()
            else:
                blocker.join()
    return statistics.median(took)


def wait_hello(port, what):
    """Waits (up to 2 minutes) until the API on `port` answers /hello, or stops the bench."""
    for _ in range(1200):
        try:
            if get(port, "/hello", 5)[0] == 200:
                return
        except OSError:
            pass
        time.sleep(0.1)
    raise SystemExit(f"{what} did not start")


class Valve:
    """valve (https://github.com/JosiahParry/valve) over the plumber API, in its own session."""

    def __init__(self, n, n_min):
        self.port = free_port()
        self.dir = tempfile.mkdtemp()
        shutil.copy(API, f"{self.dir}/plumber.R")
        self.p = subprocess.Popen(["valve", "-f", "plumber.R", "-n", str(n), "--n-min", str(n_min),
                                   "-p", str(self.port), "-h", "127.0.0.1"], cwd=self.dir,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                  start_new_session=True)

    def __enter__(self):
        wait_hello(self.port, "valve")
        time.sleep(2)  # why: valve starts its --n-min workers; let the pool settle idle
        return self

    def __exit__(self, *exc):
        os.killpg(self.p.pid, signal.SIGTERM)
        try:
            self.p.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(self.p.pid, signal.SIGKILL)
        shutil.rmtree(self.dir, ignore_errors=True)


def valve_start():
    """valve's cold start: median seconds from a request needing a second worker (the first is
    held by a 20 s request) to its answer, with a fresh valve each round (valve keeps a started
    worker for minutes)."""
    took = []
    for _ in range(ROUNDS):
        with Valve(2, 1) as v:
            blocker = threading.Thread(target=get, args=(v.port, "/sleep?ms=20000"))
            blocker.start()
            time.sleep(0.5)  # why: valve has no status page; the blocker reaches its worker first
            t = time.monotonic()
            code, _ = get(v.port, "/hello")
            took.append(time.monotonic() - t)
            assert code == 200, code
            blocker.join()
    return statistics.median(took)


def valve_burst():
    with Valve(4, 1) as v:
        out = subprocess.run([sys.executable, f"{ROOT}/bench/manifold_burst.py",
                              f"http://127.0.0.1:{v.port}/sleep?ms=100", "200", "4", "100"],
                             capture_output=True, text=True).stdout
    done = float(re.search(r"all done in ([0-9.]+) s", out).group(1))
    return done - 5.0, out.strip()


class Straight:
    """N plumber processes of the same API served straight by Rscript, no proxy: the burst's floor
    that the app itself sets (its own cost per request), with nothing of manifold in it."""

    def __init__(self, n):
        self.ports = [free_port() for _ in range(n)]
        self.ps = [subprocess.Popen(["Rscript", "-e", f"plumber::pr_run(plumber::pr('{API}'), "
                                     f"host='127.0.0.1', port={port})"],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                    start_new_session=True) for port in self.ports]

    def __enter__(self):
        for port in self.ports:
            wait_hello(port, "plumber")
        time.sleep(2)  # why: settle idle, as the pools do
        return self

    def __exit__(self, *exc):
        for p in self.ps:
            os.killpg(p.pid, signal.SIGTERM)
        for p in self.ps:
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)


def straight_burst():
    """The same 200 x 100 ms sent straight to 4 plumber processes, no proxy: each process gets 50
    requests from two client threads of 25 in turn, each on one kept-alive connection (as
    manifold keeps its connections to workers), so one request always waits in the process while
    it serves the other, as the pool's queue keeps one ready. Seconds from the first send to the last answer, less the ideal: the
    app's own cost per request, the floor of any pool."""
    with Straight(4) as s:
        def closed_loop(port):
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
            for _ in range(25):
                c.request("GET", "/sleep?ms=100")
                r = c.getresponse()
                r.read()
                assert r.status == 200, r.status
            c.close()
        t = time.monotonic()
        threads = [threading.Thread(target=closed_loop, args=(port,)) for port in s.ports * 2]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        took = time.monotonic() - t
    return took - 5.0, f"200 requests, 4 processes x 2 kept-alive client connections x 25 in turn: all done in {took:.3f} s (ideal 5.000 s)"


def cold_burst(preload, warm=False):
    """The burst into --min 1 (cold: three workers start on demand), or with warm=True into
    --min 4 (no start at all: the floor that plumber's own per-request cost leaves above 5.00 s)."""
    extra = ["--preload"] if preload else []
    least = "4" if warm else "1"
    with Pool(["--min", least, "--max", "4", "--spare", "0", *extra, "plumber", API]) as m:
        time.sleep(2)  # why: the pool settles idle, as row (d) does
        out = subprocess.run([sys.executable, f"{ROOT}/bench/manifold_burst.py",
                              f"http://127.0.0.1:{m.port}/sleep?ms=100", "200", "4", "100"],
                             capture_output=True, text=True).stdout
    done = float(re.search(r"all done in ([0-9.]+) s", out).group(1))
    return done - 5.0, out.strip()


def tree(root):
    parent_of = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                stat = open(f"/proc/{d}/stat").read()
            except OSError:
                continue
            parent_of[int(d)] = int(stat[stat.rfind(")") + 2:].split()[1])
    out, frontier = [], [root]
    while frontier:
        p = frontier.pop()
        kids = [c for c, pp in parent_of.items() if pp == p]
        out += kids
        frontier += kids
    return out


def pss_kb(pid):
    try:
        text = open(f"/proc/{pid}/smaps_rollup").read()
    except OSError:
        return 0
    return int(re.search(r"^Pss:\s+(\d+)", text, re.M).group(1))


def memory(preload):
    extra = ["--preload"] if preload else []
    with Pool(["--min", "8", "--max", "8", *extra, "shiny", SHINY]) as m:
        m.wait("8 ready", lambda s: sum(w["state"] == "ready" for w in s["workers"]) == 8)
        for _ in range(8):
            get(m.port, "/")
        time.sleep(5)  # why: idle workers a while later, not just after their answer (a busy loop shows)
        return sum(pss_kb(p) for p in tree(m.p.pid)) / 1024


def main():
    starts = {}
    for kind in ["plumber", "shiny"]:
        for preload in [False, True]:
            starts[kind, preload] = worker_start(kind, preload)
            print(f"   worker start {kind} {'with' if preload else 'without'} --preload: "
                  f"{starts[kind, preload] * 1000:.0f} ms (median of {ROUNDS})", flush=True)
    valve = shutil.which("valve") is not None
    if valve:
        starts["valve"] = valve_start()
        print(f"   worker start plumber, valve -n 2 --n-min 1: {starts['valve'] * 1000:.0f} ms "
              f"(median of {ROUNDS})", flush=True)
    bursts = {}
    runs = [straight_burst() for _ in range(ROUNDS)]
    bursts["straight"] = statistics.median(r[0] for r in runs)
    for _, line in runs:
        print(f"   burst straight into 4 plumber processes (no proxy): {line}", flush=True)
    # Each burst's excess is the median of ROUNDS runs: one run's spread is ~0.05 s, the goal's size.
    for key, preload, warm, what in [("warm", True, True, "warm (--min 4 --preload, no start)"),
                                     (False, False, False, "cold without --preload"),
                                     (True, True, False, "cold with --preload")]:
        runs = [cold_burst(preload, warm) for _ in range(ROUNDS)]
        bursts[key] = statistics.median(r[0] for r in runs)
        for _, line in runs:
            print(f"   burst {what}: {line}", flush=True)
    if valve:
        bursts["valve"], line = valve_burst()
        print(f"   cold burst valve -n 4 --n-min 1: {line}", flush=True)
    mem = {}
    for preload in [False, True]:
        mem[preload] = memory(preload)
        print(f"   8 Shiny workers {'with' if preload else 'without'} --preload: PSS {mem[preload]:.0f} MB",
              flush=True)
    print("== ratio lines (f) --preload")
    for kind in ["plumber", "shiny"]:
        w, wo = starts[kind, True], starts[kind, False]
        ok = "OK" if w <= 0.2 else "MISSED"
        v = (f", valve {starts['valve'] * 1000:.0f} ms ({starts['valve'] / w:.1f}x --preload)"
             if kind == "plumber" and valve else "")
        print(f"(f) worker start {kind}: {w * 1000:.0f} ms with --preload vs {wo * 1000:.0f} ms without "
              f"({wo / w:.1f}x faster{v}; goal <= 200 ms: {ok})")
    ok = "OK" if bursts[True] <= 0.05 else "MISSED"
    if bursts[True] > 0.05 and bursts["straight"] > 0.05:
        ok += ", out of reach: with no proxy at all the app ends further over, next line"
    v = f", valve --n-min 1 {bursts['valve']:.3f} s" if valve else ", valve: not on PATH"
    print(f"(f) cold burst excess over the ideal 5.00 s (--spare 0): {bursts[True]:.3f} s with --preload vs "
          f"{bursts[False]:.3f} s without{v} (goal <= 0.05 s: {ok})")
    st = bursts["straight"]
    ok = "OK" if bursts[True] - st <= 0.05 else "MISSED"
    print(f"(f) cold burst over the same burst sent straight to 4 ready plumber processes, no proxy "
          f"({st:.3f} s over the ideal: the app's own cost per request): {bursts[True] - st:+.3f} s with "
          f"--preload vs {bursts[False] - st:+.3f} s without (goal <= 0.05 s: {ok})")
    w = bursts["warm"]
    ok = "OK" if bursts[True] - w <= 0.05 else "MISSED"
    print(f"(f) cold burst over the same burst into 4 ready --preload workers ({w:.3f} s over the ideal: "
          f"plumber's own cost per request, no start): {bursts[True] - w:+.3f} s with --preload vs "
          f"{bursts[False] - w:+.3f} s without (what the starts cost; goal <= 0.05 s: {ok})")
    ratio = mem[True] / mem[False]
    ok = "OK" if ratio <= 0.5 else "MISSED"
    print(f"(f) memory of 8 Shiny workers, total PSS: {mem[True]:.0f} MB with --preload vs {mem[False]:.0f} MB "
          f"without: {ratio:.2f}x (goal <= 0.5x: {ok})")
    print(f"   load average: {' '.join(open('/proc/loadavg').read().split()[:3])}")


if __name__ == "__main__":
    main()
