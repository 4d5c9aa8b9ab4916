#!/usr/bin/env python3
"""The store line of `make bench-ingest` (PART=store): bytes per stored day and per source row on
the real days, then a projection for CRAN's whole history (2012-10-01 to yesterday) from
synthetic days whose rows and packages grow like the real logs.

Growth, stated: rows and distinct packages per day are read off the 78 real days (2012-10 to
2015-03: monthly medians), and one published point, 2021-06: "a single CSV file of about 40
megabytes" a day and "over 17,713 R-packages" (Zhang, ETC5543 CRAN analysis, 2021,
yiwen-zhang-259.github.io/ETC5543-cran-analysis), 40 MB turned into rows with the real days'
own gzip bytes per row. Rows grow log-linearly between those points and at the 2015 → 2021 rate
after 2021; packages linearly (CRAN adds packages at a roughly steady pace). Both are printed.

Synthetic days: whole real days (the largest first, cycling) stitched into one, each copy with
its own ip_id range (as bench/ingest_make_day.py) and a share of its packages renamed into the
copy's namespace (`pkg~1`, `pkg~2`, … so that the day has about the model's distinct packages): real
rows, real whales, real sizes. One synthetic day per sample date is ingested on its own; bytes
per day between samples are interpolated log-linearly in time and summed over every day.

usage: store_history.py CRANLOGS_DIR BIN WORK_DIR [SAMPLES]   (SAMPLES: dates, comma-separated)
"""
import datetime as dt
import gzip
import hashlib
import math
import os
import sqlite3
import statistics
import subprocess
import sys

SRC, BIN, WORK = sys.argv[1], sys.argv[2], sys.argv[3]
SAMPLES = (sys.argv[4] if len(sys.argv) > 4 else
           "2013-06-01,2015-01-08,2017-01-01,2019-01-01,2021-06-07,2023-06-01,2025-06-01").split(",")
FIRST = dt.date(2012, 10, 1)
YESTERDAY = dt.date.today() - dt.timedelta(days=1)
PUBLISHED = (dt.date(2021, 6, 7), 40_000_000, 17_713)  # date, gzip bytes a day, packages
HEADER = '"date","time","size","r_version","r_arch","r_os","package","version","country","ip_id"\n'
GB = 1e9
DAYS_A_MONTH = 365.25 / 12


def run(*args):
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def store_bytes(db):
    """Bytes the store's pages take once its WAL is folded in (free pages not counted)."""
    c = sqlite3.connect(db)
    c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    n = c.execute("SELECT page_count * page_size FROM pragma_page_count, pragma_page_size").fetchone()[0]
    free = c.execute("SELECT freelist_count * page_size FROM pragma_freelist_count, pragma_page_size").fetchone()[0]
    c.close()
    return n - free


BREAKDOWN_TABLES = ("breakdowns", "breakdown_keys", "breakdown_months", "breakdown_month_keys")


def by_table(db):
    """{table: bytes of its pages} (a table's own indexes counted with it; `dbstat`)."""
    c = sqlite3.connect(db)
    c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    owner = dict(c.execute("SELECT name, tbl_name FROM sqlite_schema"))
    out = {}
    for name, size in c.execute("SELECT name, pgsize FROM dbstat WHERE aggregate = TRUE"):
        t = owner.get(name, name)
        out[t] = out.get(t, 0) + size
    c.close()
    return out


def breakdown(after, before=None):
    """`table bytes (share)`, largest first: what `after` holds beyond `before`."""
    before = before or {}
    d = {t: n - before.get(t, 0) for t, n in after.items()}
    d = {t: n for t, n in d.items() if n > 0}
    total = sum(d.values()) or 1
    return ", ".join(f"{t} {n:,} ({100 * n / total:.0f}%)"
                     for t, n in sorted(d.items(), key=lambda kv: -kv[1]))


def real_days():
    """(date, rows, packages, gz bytes) of every real day, from a store of all of them."""
    db = os.path.join(WORK, "history-real.db")
    for f in (db, db + "-wal", db + "-shm"):
        if os.path.exists(f):
            os.remove(f)
    files = sorted(os.path.join(SRC, f) for f in os.listdir(SRC) if f.endswith(".csv.gz"))
    run(BIN, "ingest", "--db", db, "--jobs", "2", *files)
    c = sqlite3.connect(db)
    days = [(dt.date.fromisoformat(d), r, p, os.path.getsize(os.path.join(SRC, d + ".csv.gz")))
            for d, r, p in c.execute("SELECT date, rows, packages FROM days ORDER BY date")]
    c.close()
    return db, days


def anchors(days):
    """Monthly medians of (rows, packages) of the real days from 2013 on, plus the published point."""
    by_month = {}
    for d, r, p, _ in days:
        if d.year >= 2013:
            by_month.setdefault((d.year, d.month), []).append((d, r, p))
    pts = []
    for k in sorted(by_month):
        v = by_month[k]
        mid = v[len(v) // 2][0]
        pts.append((mid, statistics.median(x[1] for x in v), statistics.median(x[2] for x in v)))
    gz_per_row = sum(x[3] for x in days) / sum(x[1] for x in days)
    d, gz, pk = PUBLISHED
    pts.append((d, gz / gz_per_row, pk))
    return pts, gz_per_row


def model(pts):
    """rows(date), packages(date): log-linear rows, linear packages through the anchors."""
    def interp(x, xs, ys, log):
        f = (lambda v: math.log(v)) if log else (lambda v: v)
        g = math.exp if log else (lambda v: v)
        if x <= xs[0]:
            i = 0
        elif x >= xs[-1]:
            i = len(xs) - 2
        else:
            i = max(k for k in range(len(xs) - 1) if xs[k] <= x)
        if x < xs[0] and not log:
            return ys[0]
        t = (x - xs[i]) / (xs[i + 1] - xs[i])
        return g(f(ys[i]) + t * (f(ys[i + 1]) - f(ys[i])))
    xs = [p[0].toordinal() for p in pts]
    # After 2015-03 the next anchor is the published one: one segment from the last real month.
    rows = lambda d: interp(d.toordinal(), xs, [p[1] for p in pts], True)
    pk = lambda d: max(1.0, interp(d.toordinal(), xs, [p[2] for p in pts], False))
    return rows, pk


def make_day(date, rows, packages, out):
    """A synthetic day of about `rows` rows and `packages` packages from whole real days."""
    src = sorted((f for f in os.listdir(SRC) if f.endswith(".csv.gz") and f >= "2014-12"),
                 key=lambda f: -os.path.getsize(os.path.join(SRC, f)))
    # k = packages / a real day's: copy j > 0 renames a package into its namespace with chance
    # (k - 1) / (copies - 1) (by a hash of the name), so the day has about k real days' packages.
    per_src_packages = 6_700
    k_real = max(1.0, packages / per_src_packages)
    copies = math.ceil(k_real)
    share = (k_real - 1) / (copies - 1) if copies > 1 else 0.0
    tmp = out + ".tmp"
    with open(tmp, "wb") as raw:
        z = subprocess.Popen(["pigz", "-1", "-c"], stdin=subprocess.PIPE, stdout=raw)
        z.stdin.write(HEADER.encode())
        written, k, ip_base = 0, 0, 0
        quoted = f'"{date}"'
        while written < rows:
            f = src[k % len(src)]
            suffix = "" if k % copies == 0 else f"~{k % copies}"
            renamed = {}
            top = 0
            lines = []
            with gzip.open(os.path.join(SRC, f), "rt", encoding="utf-8") as fh:
                next(fh)
                for line in fh:
                    c = line.rstrip("\n").split(",")
                    if len(c) != 10:
                        continue
                    ip = int(c[9])
                    top = max(top, ip)
                    c[0] = quoted
                    if suffix and c[6] != "NA":
                        r = renamed.get(c[6])
                        if r is None:
                            h = int.from_bytes(hashlib.blake2b(c[6].encode(), digest_size=4).digest(), "big")
                            r = renamed[c[6]] = h / 2**32 < share
                        if r:
                            c[6] = c[6][:-1] + suffix + '"'
                    c[9] = str(ip + ip_base)
                    lines.append(",".join(c))
                    written += 1
                    if written >= rows:
                        break
            z.stdin.write(("\n".join(lines) + "\n").encode())
            ip_base += top
            k += 1
        z.stdin.close()
        z.wait()
    os.replace(tmp, out)
    return written


def history_ratio(real_db):
    """Bytes `package_history` takes per byte of the `packages` rows it packs: a closed month's
    rows are kept twice, by day and packed by package (schema 10), and a single-day store packs
    nothing. Measured on a copy of the real days' store after `cranwhales migrate` packs every
    month before the newest day's (the real months hold 14-16 stored days, not 30: a month's
    per-row costs are spread over fewer days than in a whole month, so this errs high)."""
    db = os.path.join(WORK, "history-packed.db")
    for f in (db, db + "-wal", db + "-shm"):
        if os.path.exists(f):
            os.remove(f)
    c = sqlite3.connect(real_db)
    c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    c.execute("VACUUM INTO ?", (db,))
    c.close()
    kinds_before = sum(by_table(db).get(t, 0) for t in BREAKDOWN_TABLES)
    run(BIN, "migrate", "--db", db)
    c = sqlite3.connect(db)
    packed, rows = c.execute(
        "SELECT sum((day_package >> 20) IN (SELECT day FROM (SELECT unixepoch(date) / 86400 AS day,"
        " CAST(strftime('%Y', date) AS INT) * 12 + CAST(strftime('%m', date) AS INT) - 1 - 1970 * 12"
        " AS month FROM days) WHERE month IN (SELECT month FROM history_months))), count(*)"
        " FROM packages").fetchone()
    c.close()
    tables = by_table(db)
    ratio = tables.get("package_history", 0) / (tables["packages"] * packed / rows)
    print(f"package_history: {tables.get('package_history', 0):,} bytes for the real days' "
          f"{packed:,} of {rows:,} packages rows in packed months ({tables['packages']:,} bytes "
          f"of packages pages in all): {ratio:.2f} bytes per byte of packages, added to every "
          f"sample day below")
    # Schema 12 packs a closed month's breakdowns by package too (`store::breakdown::month`).
    kinds_after = sum(tables.get(t, 0) for t in BREAKDOWN_TABLES)
    kinds_ratio = kinds_after / kinds_before
    print(f"breakdowns packed by month: {kinds_after:,} bytes for the real days' {kinds_before:,} "
          f"of daily chunks: {kinds_ratio:.2f} of a sample day's breakdowns kept (the real months "
          f"hold 14-16 stored days, so this errs high)")
    os.remove(db)
    return ratio, kinds_ratio


def sample(date, rows, packages, ratios):
    day = os.path.join(WORK, f"history-{date}.csv.gz")
    n = make_day(date, int(rows), int(packages), day)
    db = os.path.join(WORK, f"history-{date}.db")
    for f in (db, db + "-wal", db + "-shm"):
        if os.path.exists(f):
            os.remove(f)
    run(BIN, "ingest", "--db", db, day)
    b = store_bytes(db)
    c = sqlite3.connect(db)
    stored_packages, whale_rows = c.execute(
        "SELECT d.packages, w.rows FROM days d JOIN whale_log w USING (date)").fetchone()
    c.close()
    # package_totals (a row per package name over all days, with its name index) is kept once
    # per store, not per day, and package_months once per month (a row per package downloaded
    # that month, shared by the month's days): counted apart.
    tables = by_table(db)
    totals = tables.pop("package_totals", 0)
    months = tables.pop("package_months", 0)
    # The breakdowns (schema 6, issue 34; by R build in zstd chunks since schema 9) are per day
    # like the rest: kept in the day's bytes, and also returned apart so that their share of the
    # projection is printed.
    ratio, kinds_ratio = ratios
    kinds = tables.get("breakdowns", 0) + tables.get("breakdown_keys", 0)
    # Once its month closes: the day's rows packed again, and its breakdowns packed with the
    # month's (`history_ratio`).
    packed = int(ratio * tables.get("packages", 0))
    tables["package_history"] = tables.get("package_history", 0) + packed
    shrunk = int(kinds * (1 - kinds_ratio))
    for t in ("breakdowns", "breakdown_keys"):
        tables[t] = int(tables.get(t, 0) * kinds_ratio)
    kinds -= shrunk
    os.remove(day)
    return (n, stored_packages, whale_rows, b - totals - months + packed - shrunk, totals, months,
            tables, kinds)


def main():
    os.makedirs(WORK, exist_ok=True)
    db, days = real_days()
    total = store_bytes(db)
    rows = sum(d[1] for d in days)
    # The schema's fixed pages (one per table and index): a store of the smallest real day.
    small = min(days, key=lambda d: d[1])
    fixed_db = os.path.join(WORK, "history-fixed.db")
    for f in (fixed_db, fixed_db + "-wal", fixed_db + "-shm"):
        if os.path.exists(f):
            os.remove(f)
    run(BIN, "ingest", "--db", fixed_db, os.path.join(SRC, small[0].isoformat() + ".csv.gz"))
    fixed = store_bytes(fixed_db)
    fixed_tables = by_table(fixed_db)
    print(f"real days: {len(days)} days, {rows:,} rows: {total:,} bytes stored = "
          f"{(total - fixed) / len(days):,.0f} bytes per day beyond the schema's {fixed:,}, "
          f"{(total - fixed) / rows:.2f} bytes per source row")
    # A day's own bytes: a store holding a neighbour day, before and after adding it (the
    # schema's pages and package_totals' names are shared by all days).
    base = os.path.join(WORK, "history-base.db")
    for d, r, p, _ in days:
        if d.isoformat() in ("2015-01-08", "2015-01-15", "2014-12-17"):
            for f in (base, base + "-wal", base + "-shm"):
                if os.path.exists(f):
                    os.remove(f)
            run(BIN, "ingest", "--db", base, os.path.join(SRC, "2015-01-09.csv.gz"))
            before, tables = store_bytes(base), by_table(base)
            run(BIN, "ingest", "--db", base, os.path.join(SRC, d.isoformat() + ".csv.gz"))
            b = store_bytes(base) - before
            print(f"  {d}: {r:,} rows, {p:,} packages: {b:,} bytes added ({b / r:.2f} per row; "
                  f"target <= 1,000,000)")
            print(f"    by table: {breakdown(by_table(base), tables)}")
    ratios = history_ratio(db)
    pts, gz_per_row = anchors(days)
    rows_at, pk_at = model(pts)
    print(f"growth anchors (real monthly medians; 2021-06-07 published: 40 MB/day at the real "
          f"days' {gz_per_row:.1f} gzip bytes a row, 17,713 packages):")
    for d, r, p in pts:
        print(f"  {d}: {r:,.0f} rows, {p:,.0f} packages")
    print("synthetic sample days (real days stitched; rows, packages, whale rows, bytes stored):")
    measured, per_month, once, split, per_table = [], [], 0, [], []
    for s in SAMPLES:
        d = dt.date.fromisoformat(s)
        n, pk, whales, b, totals, months, tables, kinds = sample(s, rows_at(d), pk_at(d), ratios)
        split.append((d, max(kinds, 1)))
        per_table.append((d, tables))
        b -= fixed
        measured.append((d, b))
        # A month's package_months rows: the day's packages, twice (a month has more distinct
        # packages than a day).
        per_month.append((d, 2 * months))
        # The names table of the whole history: about the last day's, twice (names come and go).
        once = max(once, 2 * totals)
        print(f"  {s}: {n:,} rows, {pk:,} packages, {whales:,} whale rows: {b:,} bytes "
              f"({b / n:.2f} per row; package_totals {totals:,} and package_months {months:,} "
              f"apart)")
        print(f"    by table: {breakdown(tables)}")
    # package_months over the history: a month's rows per month (summed per day / days a month).
    month_rows = project(per_month, None)[0] / DAYS_A_MONTH
    month_flat = project(per_month, PUBLISHED[0])[0] / DAYS_A_MONTH
    print(f"package_months over the history: {month_rows / GB:.2f} GB (a month's rows twice a "
          f"sample day's packages' rows, per month)")
    kinds_proj = project(split, None)[0]
    print(f"breakdowns (breakdowns + breakdown_keys) over the history: {kinds_proj / GB:.2f} GB "
          f"(in the projection below; the days' other tables: "
          f"{(project(measured, None)[0] - kinds_proj) / GB:.2f} GB)")
    print(f"by table over the history (each projected on its own): {by_table_projected(per_table, fixed_tables)}")
    proj = project(measured, None)
    flat = project(measured, PUBLISHED[0])
    proj = (proj[0] + once + month_rows + fixed, proj[1])
    flat = (flat[0] + once + month_flat + fixed, flat[1])
    print(f"projection {FIRST}..{YESTERDAY}: {proj[1]:,} days, {proj[0] / GB:.1f} GB growing at the "
          f"2015 -> 2021 rate to the end (target <= 10 GB: {'PASS' if proj[0] <= 10 * GB else 'MISS'}); "
          f"{flat[0] / GB:.1f} GB if days stop growing after {PUBLISHED[0]} (the last published point)")


def by_table_projected(per_table, fixed):
    """`table GB`, largest first: each table's sample-day bytes beyond its pages in the `fixed`
    store (as the total leaves out the schema's fixed pages), projected over the history like the
    total (the breakdowns' two tables as one). What a cut to one table would save."""
    merged = []
    for d, tables in per_table:
        t = {name: n - fixed.get(name, 0) for name, n in tables.items()}
        t["breakdowns"] = t.get("breakdowns", 0) + t.pop("breakdown_keys", 0)
        merged.append((d, t))
    names = {name for _, t in merged for name in t}
    gb = {name: project([(d, max(t.get(name, 0), 1)) for d, t in merged], None)[0] / GB
          for name in names}
    big = sorted(((n, v) for n, v in gb.items() if v >= 0.2), key=lambda kv: -kv[1])
    rest = sum(v for v in gb.values() if v < 0.2)
    return (", ".join(f"{n} {v:.2f} GB" for n, v in big)
            + f", {len(gb) - len(big)} smaller tables {rest:.2f} GB")


def project(measured, flat_after):
    """Bytes of every day from FIRST to YESTERDAY: log-linear in time between the sampled days
    (the first sample's before it, the last segment's rate after the last one, or flat after
    `flat_after`)."""
    xs = [m[0].toordinal() for m in measured]
    total, day, n = 0.0, FIRST, 0
    while day <= YESTERDAY:
        x = day.toordinal()
        if flat_after is not None:
            x = min(x, flat_after.toordinal())
        i = 0 if x <= xs[0] else (len(xs) - 2 if x >= xs[-1] else
                                  max(k for k in range(len(xs) - 1) if xs[k] <= x))
        t = max((x - xs[i]) / (xs[i + 1] - xs[i]), 0.0)
        b0, b1 = math.log(measured[i][1]), math.log(measured[i + 1][1])
        total += math.exp(b0 + t * (b1 - b0))
        n += 1
        day += dt.timedelta(days=1)
    return total, n


if __name__ == "__main__":
    main()
