#!/usr/bin/env python3
"""Builds one >= 10M-row CRAN log day by stitching the real days in ../shared/data/cranlogs.

Each source day keeps its rows but gets its own ip_id range (ids are offset past the previous
day's largest id) and the date is rewritten to DATE, so the result looks like one very busy day.
Days are taken largest first, cycling, until MIN_ROWS is reached. Output is gzip -6 (pigz).

usage: ingest_make_day.py SRC_DIR OUT.csv.gz [MIN_ROWS]
"""
import gzip
import os
import subprocess
import sys

DATE = "2015-12-31"
HEADER = '"date","time","size","r_version","r_arch","r_os","package","version","country","ip_id"\n'


def main():
    src, out = sys.argv[1], sys.argv[2]
    min_rows = int(sys.argv[3]) if len(sys.argv) > 3 else 10_000_000
    days = sorted(
        (f for f in os.listdir(src) if f.endswith(".csv.gz")),
        key=lambda f: -os.path.getsize(os.path.join(src, f)),
    )
    tmp = out + ".tmp"
    with open(tmp, "wb") as raw:
        z = subprocess.Popen(["pigz", "-6", "-c"], stdin=subprocess.PIPE, stdout=raw)
        w = z.stdin
        w.write(HEADER.encode())
        rows, offset, i = 0, 0, 0
        prefix = f'"{DATE}",'.encode()
        while rows < min_rows:
            name = days[i % len(days)]
            i += 1
            top = 0
            buf = []
            with gzip.open(os.path.join(src, name), "rb") as f:
                f.readline()
                for line in f:
                    rest, ip = line.rstrip(b"\r\n").rsplit(b",", 1)
                    ip = int(ip)
                    top = max(top, ip)
                    # rest starts with the quoted date: 12 bytes '"YYYY-MM-DD",'... replaced.
                    buf.append(prefix + rest[13:] + b"," + str(ip + offset).encode() + b"\n")
                    if len(buf) >= 100_000:
                        w.write(b"".join(buf))
                        buf.clear()
                    rows += 1
            w.write(b"".join(buf))
            offset += top
        w.close()
        if z.wait() != 0:
            sys.exit("pigz failed")
    os.rename(tmp, out)
    print(f"{out}: {rows} rows from {i} source days, ip_ids up to {offset}")


if __name__ == "__main__":
    main()
