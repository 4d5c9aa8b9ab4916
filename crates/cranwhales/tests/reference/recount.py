#!/usr/bin/env python3
"""Independent recount of CRAN daily logs for the cranwhales tests (Python standard library only).

Reads raw `.csv.gz` day files and prints one JSON object with, per day: totals, the top-100 whales
with every behaviour fact and label defined in docs/whale-behaviours.md, per-package counts
(downloads, unique downloaders, downloads by each whale rank) and the trend numbers. It shares no
code with the Rust engine; the tests compare the two.

usage: recount.py DAY.csv.gz... [--packages NAME,NAME] (default: every package)
"""
import gzip
import json
import sys
from collections import Counter, defaultdict

TOP = 100


def value(field):
    """Unquoted NA is missing; quotes are stripped."""
    return None if field == "NA" else field.strip('"')


def os_family(r_os):
    if r_os is None:
        return "none"
    for prefix, name in (("mingw", "windows"), ("darwin", "macos"), ("linux", "linux")):
        if r_os.startswith(prefix):
            return name
    return "other"


def arch_family(r_arch):
    if r_arch is None:
        return "none"
    if r_arch == "x86_64":
        return "x86_64"
    if r_arch in ("i386", "i486", "i586", "i686"):
        return "i386"
    return "other"


def quantile(sorted_values, p):
    """Lower nearest rank: element floor(p * (m - 1))."""
    return sorted_values[int(p * (len(sorted_values) - 1))]


def behaviour(f, day_packages):
    n, pk = f["downloads"], f["packages"]
    if pk >= 20 and 10 * f["versions"] >= 13 * pk:
        return "archive"
    if pk >= 500 or (pk >= 100 and 10 * pk >= day_packages):
        return "mirror"
    if n >= 10 * pk:
        return "loop"
    if pk >= 5 and n >= 3 * pk:
        return "classroom"
    if f["active_hours"] >= 20:
        return "steady"
    if 2 * f["burst"] >= n or f["last"] - f["first"] <= 900:
        return "burst"
    return "session"


def profile(rows, day_packages, whale_total):
    """rows: (secs, package, version, r_version, r_arch, r_os) of one whale."""
    n = len(rows)
    per_pkg = Counter(r[1] for r in rows)
    top_count = max(per_pkg.values())
    top_pkg = min(p for p, c in per_pkg.items() if c == top_count)
    times = sorted(r[0] for r in rows)
    # Longest burst: the most downloads in a window [t, t + 59] starting at a download's time.
    burst, burst_start, hi = 0, times[0], 0
    for lo in range(n):
        if lo > 0 and times[lo] == times[lo - 1]:
            continue
        hi = max(hi, lo)
        while hi + 1 < n and times[hi + 1] <= times[lo] + 59:
            hi += 1
        if hi - lo + 1 > burst:
            burst, burst_start = hi - lo + 1, times[lo]
    gaps = sorted(b - a for a, b in zip(times, times[1:]))
    f = {
        "downloads": n,
        "packages": len(per_pkg),
        "day_packages": day_packages,
        "top_package": top_pkg,
        "top_package_downloads": top_count,
        "versions": len({(r[1], r[2]) for r in rows}),
        "no_r_version": sum(1 for r in rows if r[3] is None),
        "os": dict(Counter(os_family(r[5]) for r in rows)),
        "arch": dict(Counter(arch_family(r[4]) for r in rows)),
        "active_hours": len({t // 3600 for t in times}),
        "first": times[0],
        "last": times[-1],
        "burst": burst,
        "burst_start": burst_start,
        "gap_median": quantile(gaps, 0.5) if gaps else None,
        "gap_q1": quantile(gaps, 0.25) if gaps else None,
        "gap_q3": quantile(gaps, 0.75) if gaps else None,
        "whale_downloads": whale_total,
    }
    f["behaviour"] = behaviour(f, day_packages)
    return f


def day(path, only_packages):
    ips = defaultdict(list)
    skipped = 0
    date = None
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        next(fh)
        for line in fh:
            line = line.rstrip("\n")
            if not line:
                continue
            f = line.split(",")
            assert len(f) == 10, f"reference needs simple rows: {line}"
            date = value(f[0])
            package = value(f[6])
            if package is None or package == "":
                skipped += 1
                continue
            t = value(f[1])
            secs = int(t[0:2]) * 3600 + int(t[3:5]) * 60 + int(t[6:8])
            ips[int(f[9])].append((secs, package, value(f[7]), value(f[3]), value(f[4]), value(f[5])))
    ranked = sorted(ips, key=lambda ip: (-len(ips[ip]), ip))[:TOP]
    downloads = Counter()
    downloaders = defaultdict(set)
    for ip, rows in ips.items():
        for r in rows:
            downloads[r[1]] += 1
            downloaders[r[1]].add(ip)
    day_packages = len(downloads)
    whale_total = sum(len(ips[ip]) for ip in ranked)
    whales = []
    by_rank = defaultdict(dict)
    for rank, ip in enumerate(ranked, 1):
        f = profile(ips[ip], day_packages, whale_total)
        f["rank"], f["ip_id"] = rank, ip
        whales.append(f)
        for p, c in Counter(r[1] for r in ips[ip]).items():
            by_rank[p][rank] = c
    total = sum(downloads.values())
    packages = {
        p: {
            "downloads": downloads[p],
            "downloaders": len(downloaders[p]),
            "by_rank": sorted(by_rank[p].items()),
        }
        for p in downloads
        if only_packages is None or p in only_packages
    }
    return {
        "date": date,
        "downloads": total,
        "downloaders": len(ips),
        "skipped": skipped,
        "packages": day_packages,
        "min_package_downloads": min(downloads.values()),
        # adjustedcranlogs' aggregate-only baseline over all packages: the 5% quantile.
        "baseline": sorted(downloads.values())[(len(downloads) - 1) * 5 // 100],
        "top_downloads": {str(k): sum(w["downloads"] for w in whales[:k]) for k in (1, 6, 25, 100)},
        "behaviours": dict(Counter(w["behaviour"] for w in whales)),
        "whales": whales,
        "package_counts": packages,
    }


def main(argv):
    only = None
    files = []
    it = iter(argv)
    for a in it:
        if a == "--packages":
            only = set(next(it).split(","))
        else:
            files.append(a)
    json.dump([day(f, only) for f in files], sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1:])
