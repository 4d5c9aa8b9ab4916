#!/usr/bin/env python3
"""Independent recount of the per-package breakdowns for the cranwhales tests (issue 34; standard
library only, no code shared with the engine).

Each data line is split by a plain CSV field parser (quoted fields keep their quoting known, so
an unquoted NA or empty field is missing, a quoted "NA" is the text NA). Rows without a package
are left out. Whales are the day's top 100 downloaders (most downloads, ties by the lower
ip_id). Small: under 1,000 bytes. Repeats: per package and ip_id, its not-small downloads in
time order (the same second: in file order), each one within 300 seconds after the previous one.
Per package and day, per field (version, country, os = r_os, r_version, arch = r_arch):
{key: [downloads, by whales, small, repeats, small by whales, repeats by whales]}, the key null
when the field was missing.

usage: breakdown.py [--packages a,b] DAY.csv.gz...
  prints one JSON list, a {date, packages: {name: {by: {key: [n, whales]}}}} per day; a missing
  field's key is the string "\\u0000" (JSON object keys are strings).
"""
import gzip
import json
import re
import sys
from collections import Counter, defaultdict

TOP = 100
SMALL = 1000
WINDOW = 300
FIELD = re.compile(r'"((?:[^"]|"")*)"|([^,]*)')
BY = {"version": 7, "country": 8, "os": 5, "r_version": 3, "arch": 4}
MISSING = "\u0000"


def fields(line):
    """[(text, quoted)] of one CSV line."""
    out, at = [], 0
    while True:
        m = FIELD.match(line, at)
        if m.group(1) is not None:
            out.append((m.group(1).replace('""', '"'), True))
        else:
            out.append((m.group(2), False))
        at = m.end()
        if at >= len(line):
            return out
        assert line[at] == ",", line
        at += 1


def value(f):
    text, quoted = f
    if not quoted and text in ("NA", ""):
        return None
    return text


def day(path, only):
    rows = []
    date = None
    with gzip.open(path, "rt", encoding="utf-8", newline="") as fh:
        next(fh)
        for line in fh:
            line = line.rstrip("\r\n")
            if not line:
                continue
            f = fields(line)
            date = f[0][0]
            package = value(f[6])
            if package is None or (f[6] == ("", True)):
                continue
            rows.append((package, int(f[9][0]), f))
    per_ip = Counter(r[1] for r in rows)
    whales = set(sorted(per_ip, key=lambda ip: (-per_ip[ip], ip))[:TOP])
    # Each row's kind: 0 clean, 1 small, 2 repeat.
    kind = [0] * len(rows)
    times = defaultdict(list)  # (package, ip) -> [(secs, row index)] of not-small rows
    for i, (package, ip, f) in enumerate(rows):
        if int(f[2][0]) < SMALL:
            kind[i] = 1
        else:
            t = f[1][0]
            secs = int(t[0:2]) * 3600 + int(t[3:5]) * 60 + int(t[6:8])
            times[(package, ip)].append((secs, i))
    for ts in times.values():
        ts.sort()  # by time, then file order
        for (a, _), (b, i) in zip(ts, ts[1:]):
            if b - a <= WINDOW:
                kind[i] = 2
    out = defaultdict(lambda: {b: defaultdict(lambda: [0] * 6) for b in BY})
    for i, (package, ip, f) in enumerate(rows):
        if only is not None and package not in only:
            continue
        w = 1 if ip in whales else 0
        s, r = int(kind[i] == 1), int(kind[i] == 2)
        for b, col in BY.items():
            k = value(f[col])
            c = out[package][b][MISSING if k is None else k]
            for j, x in enumerate((1, w, s, r, s * w, r * w)):
                c[j] += x
    return {"date": date, "packages": out}


if __name__ == "__main__":
    args = sys.argv[1:]
    only = None
    if args[:1] == ["--packages"]:
        only = set(args[1].split(","))
        args = args[2:]
    json.dump([day(a, only) for a in args], sys.stdout)
