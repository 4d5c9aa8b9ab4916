#!/usr/bin/env python3
"""The backfill line of `make bench-ingest`: the 78 real days (test data's cranlogs/) ingested
with `cranwhales ingest --jobs 2` vs one at a time (`--jobs 1`: one day read at a time, on two
threads, its write overlapping the next day's read), and vs Polars computing the totals and top
downloaders of the same files one after the other (its own threads per file). The days come from
a download cache of links to the shared files (no network). RUNS interleaved rounds; ratios are
medians of per-round ratios; each run waits (up to 2 min) for the machine to be quiet. Prints the
CPU time of each run and the cores it kept busy, and the bound that CPU time puts on the ratio:
--jobs 2 cannot take less than its CPU time / cores. Checks the stores agree with each other and
with Polars on every day's totals.

usage: ingest_backfill.py CRANLOGS_DIR BIN WORK_DIR RUNS"""
import json
import os
import resource
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


def idle_share(seconds):
    """The share of all cores' time spent idle over the next `seconds` (from /proc/stat)."""
    def sample():
        f = [int(x) for x in open("/proc/stat").readline().split()[1:9]]
        return sum(f), f[3] + f[4]
    t0, i0 = sample()
    time.sleep(seconds)
    t1, i1 = sample()
    return (i1 - i0) / max(1, t1 - t0)


def wait_quiet(limit=120):
    """Waits (at most `limit` s) until other work leaves >= 90% of the cores idle: on this shared
    machine a build beside a run halves what it measures. Returns False when it never got quiet."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if idle_share(1.0) >= 0.9:
            return True
    return False


busy_runs = 0


def ours(jobs):
    global busy_runs
    busy_runs += not wait_quiet()
    db = os.path.join(WORK, f"backfill-{jobs}.db")
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(db + suffix):
            os.remove(db + suffix)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run([BIN, "ingest", "--db", db, "--cache-dir", cache, "--source-url", "http://127.0.0.1:9",
                    "--jobs", str(jobs)] + dates, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu[f"jobs {jobs}"].append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return wall, db


def polars():
    global busy_runs
    busy_runs += not wait_quiet()
    t = time.perf_counter()
    p = subprocess.run([PY, "bench/ingest_peers.py", "polars-days"] + [os.path.join(SRC, f) for f in files],
                       check=True, stdout=subprocess.PIPE)
    return time.perf_counter() - t, json.loads(p.stdout)


times = {"jobs 1": [], "jobs 2": [], "polars": []}
cpu = {"jobs 1": [], "jobs 2": []}
for r in range(RUNS):
    t1, db1 = ours(1)
    t2, db2 = ours(2)
    tp, answers = polars()
    times["jobs 1"].append(t1)
    times["jobs 2"].append(t2)
    times["polars"].append(tp)
    print(f"backfill round {r + 1}/{RUNS}: --jobs 1 {t1:.2f} s ({cpu['jobs 1'][-1] / t1:.2f} cores), "
          f"--jobs 2 {t2:.2f} s ({cpu['jobs 2'][-1] / t2:.2f} cores), polars {tp:.2f} s", flush=True)

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
if busy_runs:
    print(f"note: {busy_runs} of {3 * RUNS} runs started while other work kept the cores busy")
spread = {k: f"{min(v):.2f}..{max(v):.2f}" for k, v in times.items()}
print(f"spread (min..max): --jobs 1 {spread['jobs 1']} s, --jobs 2 {spread['jobs 2']} s, polars {spread['polars']} s")
cores = os.cpu_count()
c1, c2 = statistics.median(cpu["jobs 1"]), statistics.median(cpu["jobs 2"])
# --jobs 2 needs its CPU time spread over every core at best; --jobs 1 already keeps c1/wall busy.
bound = statistics.median(w / (c / cores) for w, c in zip(times["jobs 1"], cpu["jobs 2"]))
print(f"cpu medians: --jobs 1 {c1:.2f} s ({c1 / med['jobs 1']:.2f} of {cores} cores busy), "
      f"--jobs 2 {c2:.2f} s ({c2 / med['jobs 2']:.2f} cores busy)")
print(f"bound: --jobs 1 / (--jobs 2 CPU / {cores} cores) = {bound:.2f}x is the most --jobs 2 could gain")
print(f"ratio backfill --jobs 1 / --jobs 2:   {speedup:.2f}x  (target >= 1.7)")
print(f"ratio backfill polars / --jobs 2:     {vs_polars:.2f}x  (> 1: faster than Polars)")
