#!/usr/bin/env python3
"""The backfill line of `make bench-ingest`: the real days of ../shared/data/cranlogs ingested
with `cranwhales ingest --jobs 2` vs one at a time (`--jobs 1`), and vs Polars computing the
totals and top downloaders of the same files one after the other (its own threads per file).
The days come from a download cache of links to the shared files (no network). RUNS interleaved
rounds; ratios are medians of per-round ratios. Checks the stores agree with each other and with
Polars on every day's totals.

usage: ingest_backfill.py CRANLOGS_DIR BIN WORK_DIR RUNS"""
import json
import os
import statistics
import subprocess
import sys
import time

SRC, BIN, WORK, RUNS = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
PY = sys.executable
files = sorted(f for f in os.listdir(SRC) if f.endswith(".csv.gz"))
dates = [f[:10] for f in files]
cache = os.path.join(WORK, "backfill-cache")
os.makedirs(cache, exist_ok=True)
for f in files:
    link = os.path.join(cache, f)
    if not os.path.lexists(link):
        os.symlink(os.path.abspath(os.path.join(SRC, f)), link)


def ours(jobs):
    db = os.path.join(WORK, f"backfill-{jobs}.db")
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(db + suffix):
            os.remove(db + suffix)
    t = time.perf_counter()
    subprocess.run([BIN, "ingest", "--db", db, "--cache-dir", cache, "--source-url", "http://127.0.0.1:9",
                    "--jobs", str(jobs)] + dates, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t, db


def polars():
    t = time.perf_counter()
    p = subprocess.run([PY, "bench/ingest_peers.py", "polars-days"] + [os.path.join(SRC, f) for f in files],
                       check=True, stdout=subprocess.PIPE)
    return time.perf_counter() - t, json.loads(p.stdout)


times = {"jobs 1": [], "jobs 2": [], "polars": []}
for r in range(RUNS):
    t1, db1 = ours(1)
    t2, db2 = ours(2)
    tp, answers = polars()
    times["jobs 1"].append(t1)
    times["jobs 2"].append(t2)
    times["polars"].append(tp)
    print(f"backfill round {r + 1}/{RUNS}: --jobs 1 {t1:.2f} s, --jobs 2 {t2:.2f} s, polars {tp:.2f} s", flush=True)

days = [json.loads(subprocess.run([BIN, "days", "--db", db, "--json"], check=True, stdout=subprocess.PIPE).stdout)
        for db in (db1, db2)]
same = days[0] == days[1] and len(days[0]) == len(dates)
agree = all(answers[d["date"]]["totals"] == d["totals"] for d in days[1])
print(f"answers: --jobs 2 store vs --jobs 1 store: {'same' if same else 'DIFFERENT'}; "
      f"vs polars totals on {len(dates)} days: {'same' if agree else 'DIFFERENT'}")
med = {k: statistics.median(v) for k, v in times.items()}
speedup = statistics.median(a / b for a, b in zip(times["jobs 1"], times["jobs 2"]))
vs_polars = statistics.median(p / b for p, b in zip(times["polars"], times["jobs 2"]))
rows = sum(d["totals"]["downloads"] + d["totals"]["skipped_rows"] for d in days[1])
print(f"backfill: {len(dates)} days ({rows:,} rows), medians: --jobs 1 {med['jobs 1']:.2f} s, "
      f"--jobs 2 {med['jobs 2']:.2f} s, polars {med['polars']:.2f} s ({os.cpu_count()} cores)")
print(f"ratio backfill --jobs 1 / --jobs 2:   {speedup:.2f}x  (target >= 1.7)")
print(f"ratio backfill polars / --jobs 2:     {vs_polars:.2f}x  (> 1: faster than Polars)")
