#!/usr/bin/env python3
"""Independent recount of the inflated-download filters for the cranwhales tests (standard
library only, no code shared with the engine).

Per package of each day:
- small: downloads of fewer than 1,000 bytes;
- repeats: downloads (not small) made by one ip_id within 300 seconds after that ip_id's previous
  not-small download of the same package (any version), in time order;
- by_rank: [rank, small + repeats] for each top-100 downloader (most downloads first, ties by the
  lower ip_id) that made some.

usage: filters.py DAY.csv.gz...   (prints one JSON list, a {date, small, repeats, packages} per day)
"""
import gzip
import json
import sys
from collections import Counter, defaultdict

SMALL = 1000
WINDOW = 300
TOP = 100


def day(path):
    rows = []  # (package, ip, secs, size)
    date = None
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        next(fh)
        for line in fh:
            f = line.rstrip("\n").split(",")
            if len(f) != 10:
                continue
            date = f[0].strip('"')
            package = f[6]
            if package in ("NA", '""', ""):
                continue
            t = f[1].strip('"')
            secs = int(t[0:2]) * 3600 + int(t[3:5]) * 60 + int(t[6:8])
            rows.append((package.strip('"'), int(f[9]), secs, int(f[2])))
    per_ip = Counter(r[1] for r in rows)
    rank = {ip: k for k, ip in enumerate(sorted(per_ip, key=lambda ip: (-per_ip[ip], ip))[:TOP], 1)}
    small, repeats = Counter(), Counter()
    by_rank = defaultdict(Counter)
    times = defaultdict(list)
    for package, ip, secs, size in rows:
        if size < SMALL:
            small[package] += 1
            if ip in rank:
                by_rank[package][rank[ip]] += 1
        else:
            times[(package, ip)].append(secs)
    for (package, ip), ts in times.items():
        ts.sort()
        n = sum(1 for a, b in zip(ts, ts[1:]) if b - a <= WINDOW)
        repeats[package] += n
        if n and ip in rank:
            by_rank[package][rank[ip]] += n
    packages = {
        p: {
            "downloads": n,
            "small": small[p],
            "repeats": repeats[p],
            "by_rank": sorted(by_rank[p].items()),
        }
        for p, n in Counter(r[0] for r in rows).items()
    }
    return {
        "date": date,
        "small": sum(small.values()),
        "repeats": sum(repeats.values()),
        "packages": packages,
    }


if __name__ == "__main__":
    json.dump([day(f) for f in sys.argv[1:]], sys.stdout)
