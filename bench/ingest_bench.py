#!/usr/bin/env python3
"""Runs every tool once per round, RUNS rounds, on the same file under /usr/bin/time; checks that
the engines give the same answers; prints medians, peak RSS and the ratio lines.

Rounds interleave the tools and each ratio is the median of the per-round ratios: this shared
machine's speed drifts by up to ~2x within minutes, which skews tools timed minutes apart.
usage: ingest_bench.py DAY RUNS"""
import json
import os
import statistics
import subprocess
import sys
import tempfile

DAY, RUNS = sys.argv[1], int(sys.argv[2])
BIN = "target/release/cranwhales"
DB = "target/bench-data/bench.db"
PY = sys.executable
N = 10


def run(cmd, stdout=subprocess.DEVNULL):
    """(seconds, peak RSS in MiB, stdout) of one run."""
    with tempfile.NamedTemporaryFile("r") as t:
        p = subprocess.run(["/usr/bin/time", "-f", "%e %M", "-o", t.name] + cmd, stdout=stdout, stderr=subprocess.PIPE)
        if p.returncode != 0:
            sys.exit(f"{cmd[0]} failed: {p.stderr.decode()[-500:]}")
        secs, kb = t.read().split()[-2:]
    return float(secs), int(kb) / 1024, p.stdout


def ours():
    for f in (DB, DB + "-wal", DB + "-shm"):
        if os.path.exists(f):
            os.remove(f)
    return run([BIN, "ingest", "--db", DB, DAY])


TOOLS = [
    ("cranwhales ingest", ours),
    ("libdeflate-gunzip -c", lambda: run(["libdeflate-gunzip", "-c", DAY])),
    ("gzip -dc", lambda: run(["gzip", "-dc", DAY])),
    ("polars streaming", lambda: run([PY, "bench/ingest_peers.py", "polars", DAY, str(N)], subprocess.PIPE)),
    ("duckdb", lambda: run([PY, "bench/ingest_peers.py", "duckdb", DAY, str(N)], subprocess.PIPE)),
]

times = {name: [] for name, _ in TOOLS}
rss = {name: [] for name, _ in TOOLS}
answers = {}
# why: the first tool of round 1 read the file from a cold page cache (7.56 s against 1.83 s after
# a build); every tool should read it from memory, as the later rounds do.
with open(DAY, "rb") as f:
    while f.read(1 << 24):
        pass
for r in range(RUNS):
    for name, fn in TOOLS:
        secs, mib, out = fn()
        times[name].append(secs)
        rss[name].append(mib)
        if out:
            answers[name] = json.loads(out)
    print(f"round {r + 1}/{RUNS}: " + ", ".join(f"{n.split()[0]} {times[n][-1]:.2f} s" for n, _ in TOOLS), flush=True)
print()
for name, _ in TOOLS:
    print(f"{name:<22} {statistics.median(times[name]):7.2f} s   peak RSS {max(rss[name]):7.0f} MiB   runs {times[name]}")

# Same answers from every engine: ours from the store, the peers from their JSON.
s = json.loads(subprocess.run([BIN, "show", "--db", DB, "--json", "--count", str(N), DAY.split("/")[-1][:10]],
                              check=True, stdout=subprocess.PIPE).stdout)
mine = {"totals": s["totals"], "hourly": [h["downloads"] for h in s["hourly"]],
        "top": [[w["ip_id"], w["downloads"], w["bytes"]] for w in s["whales"]]}
for peer, a in answers.items():
    same = a == mine
    print(f"answers: cranwhales vs {peer}: {'same' if same else 'DIFFERENT'}")
    if not same:
        print(json.dumps(mine)[:400], "\n", json.dumps(a)[:400])

OURS = "cranwhales ingest"


def paired(peer, ours_over_peer=True):
    """Median over rounds of ours/peer (or peer/ours)."""
    rs = [(o / p if ours_over_peer else p / o) for o, p in zip(times[OURS], times[peer])]
    return statistics.median(rs)


rows = s["totals"]["downloads"] + s["totals"]["skipped_rows"]
print(f"\nday: {DAY} ({rows:,} rows, {os.path.getsize(DAY) / 1e6:.1f} MB gzip), {RUNS} interleaved rounds, "
      f"{os.cpu_count()} cores; ratios are medians of per-round ratios")
print(f"ratio ours / libdeflate-gunzip: {paired('libdeflate-gunzip -c'):.2f}x  (target <= 2.0 with the breakdowns, issue 34)")
print(f"ratio ours / gzip -dc:          {paired('gzip -dc'):.2f}x")
print(f"ratio polars / ours:            {paired('polars streaming', False):.2f}x  (target > 1: faster than Polars streaming)")
print(f"ratio duckdb / ours:            {paired('duckdb', False):.2f}x  (target >= 2.5)")
print(f"peak RSS ours:                  {max(rss[OURS]):.0f} MiB  (target <= 500)")
