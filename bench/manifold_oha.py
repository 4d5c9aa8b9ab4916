#!/usr/bin/env python3
"""Prints one summary line from an oha JSON result: req/s, p50, p99, errors.

Usage: manifold_oha.py LABEL FILE.json
"""
import json
import sys

label, path = sys.argv[1], sys.argv[2]
d = json.load(open(path))
s = d["summary"]
pct = d.get("latencyPercentiles", {})
codes = d.get("statusCodeDistribution", {})
errors = sum(d.get("errorDistribution", {}).values()) + sum(
    v for k, v in codes.items() if not k.startswith("2"))
p50 = (pct.get("p50") or 0) * 1000
p99 = (pct.get("p99") or 0) * 1000
print(f"{label:<28} {s['requestsPerSec']:9.2f} req/s   p50 {p50:9.3f} ms   p99 {p99:9.3f} ms   errors {errors}")
with open(path + ".line", "w") as f:
    f.write(f"{s['requestsPerSec']} {p50} {p99} {errors}\n")
