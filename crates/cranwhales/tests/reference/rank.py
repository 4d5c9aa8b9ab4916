#!/usr/bin/env python3
"""Independent recount of package ranks for the cranwhales tests (Python standard library only).

Reads raw `.csv.gz` day files, counts each package's downloads (rows with a package) over all of
them and prints JSON: how many packages, each asked package's rank (1 + packages with more
downloads) and percentile (percent of packages with fewer, one decimal, as packageRank), the top
list and the 1-2-5 log histogram. With --before FILES, also the trending list: packages with at
least 100 downloads whose downloads per day grew most against the days of FILES.

usage: rank.py DAY.csv.gz... --packages A,B [--before DAY.csv.gz...] [--limit N]
"""
import csv
import gzip
import json
import math
import sys
from collections import Counter


def count(files):
    c = Counter()
    for f in files:
        with gzip.open(f, "rt", newline="") as fh:
            rows = csv.reader(fh)
            col = next(rows).index("package")
            for row in rows:
                p = row[col]
                if p and p != "NA":
                    c[p] += 1
    return c


def main(argv):
    files, before, packages, limit, target = [], [], [], 20, None
    it = iter(argv)
    for a in it:
        if a == "--packages":
            packages = next(it).split(",")
        elif a == "--limit":
            limit = int(next(it))
        elif a == "--before":
            target = before
        else:
            (files if target is None else target).append(a)
    c = count(files)
    values = list(c.values())
    n = len(values)
    out = {"of": n, "total": sum(values), "ranks": {}}
    for p in packages:
        x = c.get(p, 0)
        more = sum(1 for v in values if v > x)
        fewer = sum(1 for v in values if v < x)
        out["ranks"][p] = {"rank": more + 1, "percentile": ((2000 * fewer + n) // (2 * n)) / 10, "downloads": x}
    top = sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]
    out["top"] = [[p, v] for p, v in top]
    edges = [1]
    k = 1
    while edges[-1] <= max(values):
        for s in (2, 5, 10):
            edges.append(k * s)
            if edges[-1] > max(values):
                break
        k *= 10
    out["edges"] = edges
    out["counts"] = [sum(1 for v in values if lo <= v < hi) for lo, hi in zip(edges, edges[1:])]
    if before:
        b = count(before)
        scale = len(before) / len(files)
        trend = [(p, math.floor(v * scale / max(b.get(p, 0), 1) * 100 + 0.5) / 100, v) for p, v in c.items() if v >= 100]
        trend.sort(key=lambda t: (-t[1], -t[2], t[0]))
        out["trending"] = [[p, g, v, b.get(p, 0)] for p, g, v in trend[:limit]]
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1:])
