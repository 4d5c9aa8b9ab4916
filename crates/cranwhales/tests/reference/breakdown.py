#!/usr/bin/env python3
"""Independent recount of the per-package breakdowns for the cranwhales tests (issue 34; standard
library only, no code shared with the engine).

Each data line is split by a plain CSV field parser (quoted fields keep their quoting known, so
an unquoted NA or empty field is missing, a quoted "NA" is the text NA). Rows without a package
are left out. Whales are the day's top 100 downloaders (most downloads, ties by the lower
ip_id). Per package and day, per field (version, country, os = r_os, r_version, arch = r_arch):
{key: [downloads, of which by whales]}, the key null when the field was missing.

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
    out = defaultdict(lambda: {b: defaultdict(lambda: [0, 0]) for b in BY})
    for package, ip, f in rows:
        if only is not None and package not in only:
            continue
        w = 1 if ip in whales else 0
        for b, col in BY.items():
            k = value(f[col])
            c = out[package][b][MISSING if k is None else k]
            c[0] += 1
            c[1] += w
    return {"date": date, "packages": out}


if __name__ == "__main__":
    args = sys.argv[1:]
    only = None
    if args[:1] == ["--packages"]:
        only = set(args[1].split(","))
        args = args[2:]
    json.dump([day(a, only) for a in args], sys.stdout)
