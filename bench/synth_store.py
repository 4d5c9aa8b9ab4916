#!/usr/bin/env python3
"""A synthetic store of CRAN's whole history (5,200+ days, 2012-10-01 on) for `make bench-serve`:
not in git, made once into target/bench-data.

Each day's size follows bench/store_history.py's growth model (rows log-linear, packages linear
through the real days and the published 2021 point). Its content is a real day scaled: the
template (a real 2015 day ingested by cranwhales) gives the whales (rows, profiles, hourly, their
whale log blob, copied as stored), the per-package download distribution and whale counts; the
day's packages are the template's names plus `synth-N` names up to the model's count, downloads
scaled to the model's rows (never below the template's: its whales, small and repeated downloads
are kept as they are). Tables are cranwhales' own (schema from a real ingest), written with
plain SQL in one transaction per 100 days; package_totals and package_months (each month's
downloads and days per package, keyed month number * 2^20 + id) are kept as cranwhales keeps them.

usage: synth_store.py CRANLOGS_DIR BIN WORK_DIR OUT.db [DAYS]
"""
import datetime as dt
import os
import random
import sqlite3
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import store_history as hist  # noqa: E402  (the growth model)

SRC, BIN, WORK, OUT = sys.argv[1:5]
NDAYS = int(sys.argv[5]) if len(sys.argv) > 5 else 5_200
TEMPLATE = "2015-01-08"
FIRST = dt.date(2012, 10, 1)
PACKAGE_IDS = 1 << 20  # store::codec::PACKAGE_IDS: packages.day_package = day * this + id


def main():
    os.makedirs(WORK, exist_ok=True)
    real_db, days = hist.real_days()
    pts, _ = hist.anchors(days)
    rows_at, pk_at = hist.model(pts)
    tmp = OUT + ".tmp"
    for f in (tmp, tmp + "-wal", tmp + "-shm"):
        if os.path.exists(f):
            os.remove(f)
    # cranwhales creates the schema (and stores the template day, copied from below).
    subprocess.run([BIN, "ingest", "--db", tmp, os.path.join(SRC, TEMPLATE + ".csv.gz")],
                   check=True, stdout=subprocess.DEVNULL)
    c = sqlite3.connect(tmp, isolation_level=None)
    c.execute("PRAGMA journal_mode=WAL")
    c.execute("PRAGMA synchronous=OFF")
    t = {name: c.execute(f"SELECT * FROM {name} WHERE date = ?", (TEMPLATE,)).fetchall()
         for name in ("days", "hourly", "whales", "whale_hourly", "whale_log")}
    # packages rows as (name, downloads, whale_downloads, downloaders, whale_ranks, small,
    # repeats); stored keyed by day number * 2^20 + the name's package_totals id.
    t["packages"] = c.execute(
        "SELECT t.package, p.downloads, p.whale_downloads, p.downloaders, p.whale_ranks, p.small, "
        "p.repeats FROM packages p JOIN package_totals t ON t.id = p.day_package % ?",
        (PACKAGE_IDS,)).fetchall()
    for name in t:
        c.execute(f"DELETE FROM {name}")
    c.execute("DELETE FROM package_totals")
    c.execute("DELETE FROM package_months")
    cols = {name: len(t[name][0]) for name in t}
    day_row = list(t["days"][0])
    t_rows = day_row[6]
    pk_rows = sorted(t["packages"], key=lambda r: (-r[1], r[0]))
    totals, ids = {}, {}
    month, month_rows = None, {}  # the month being written: {package id: [downloads, days]}

    def flush_month():
        c.executemany("INSERT INTO package_months (month_package, downloads, days) VALUES (?, ?, ?)",
                      sorted((month * PACKAGE_IDS + i, n, dn) for i, (n, dn) in month_rows.items()))
        month_rows.clear()

    rnd = random.Random(21)
    c.execute("BEGIN")
    for k in range(NDAYS):
        d = FIRST + dt.timedelta(days=k)
        date = d.isoformat()
        # Never below the template: its whales, small and repeated downloads stay as they are.
        scale = max(1.0, rows_at(d) / t_rows)
        npk = int(pk_at(d))
        ins = lambda name, rows: c.executemany(
            f"INSERT INTO {name} VALUES ({','.join('?' * cols[name])})", rows)
        packages = []
        for i in range(npk):
            if i < len(pk_rows):
                r = list(pk_rows[i])
            else:
                r = list(pk_rows[len(pk_rows) // 2 + rnd.randrange(len(pk_rows) // 2)])
                r[0] = f"synth-{i:05d}"
                r[4] = None
            r[1] = r[2] + int((r[1] - r[2]) * scale)
            packages.append(r)
        packages.sort(key=lambda r: r[0])
        m = (d.year - 1970) * 12 + d.month - 1  # store::codec::month_package's month number
        if m != month:
            if month is not None:
                flush_month()
            month = m
        for r in packages:
            ids.setdefault(r[0], len(ids) + 1)
            n, days_ = totals.get(r[0], (0, 0))
            totals[r[0]] = (n + r[1], days_ + 1)
            mr = month_rows.setdefault(ids[r[0]], [0, 0])
            mr[0] += r[1]
            mr[1] += 1
        day0 = (d - dt.date(1970, 1, 1)).days * PACKAGE_IDS
        c.executemany("INSERT INTO packages VALUES (?, ?, ?, ?, ?, ?, ?)",
                      sorted((day0 + ids[r[0]], *r[1:]) for r in packages))
        row = list(day_row)
        row[0], row[1], row[4], row[6] = date, sum(r[1] for r in packages), npk, int(t_rows * scale)
        row[2] = max(1, int(row[2] * scale))
        row[7] = "synthetic"
        ins("days", [row])
        ins("hourly", [(date, *r[1:]) for r in t["hourly"]])
        ins("whales", [(date, *r[1:]) for r in t["whales"]])
        ins("whale_hourly", [(date, *r[1:]) for r in t["whale_hourly"]])
        ins("whale_log", [(date, *r[1:]) for r in t["whale_log"]])
        if k % 100 == 99:
            c.execute("COMMIT")
            c.execute("BEGIN")
            print(f"synth_store: {k + 1}/{NDAYS} days ({date}: {npk:,} packages)", file=sys.stderr)
    flush_month()
    c.executemany("INSERT INTO package_totals (id, package, downloads, days) VALUES (?, ?, ?, ?)",
                  sorted((ids[p], p, n, dn) for p, (n, dn) in totals.items()))
    c.execute("COMMIT")
    c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    c.close()
    os.replace(tmp, OUT)
    print(f"synth_store: {OUT}: {NDAYS:,} days, {os.path.getsize(OUT) / 1e9:.1f} GB", file=sys.stderr)


if __name__ == "__main__":
    main()
