#!/usr/bin/env python3
"""The peers of `make bench-ingest`: Polars (lazy, streaming engine) or DuckDB reading one CRAN
log .csv.gz and computing what cranwhales stores for a day: totals (downloads, downloaders, bytes,
packages, skipped rows), downloads per UTC hour, and the top N downloaders (downloads desc, ip_id
asc). Prints one JSON line with the answers so the bench can check every engine agrees.

usage: ingest_peers.py polars|duckdb FILE.csv.gz [N]
       ingest_peers.py polars-days FILE.csv.gz...   (the backfill peer: one JSON object per file,
                                                    keyed by file name, N = 6)
"""
import json
import sys


def polars_run(path, n):
    import polars as pl

    lf = pl.scan_csv(
        path,
        schema_overrides={"size": pl.Int64, "ip_id": pl.Int64, "time": pl.Utf8, "package": pl.Utf8},
        null_values=["NA"],
    ).select("time", "size", "package", "ip_id")
    skipped = lf.filter(pl.col("package").is_null()).select(pl.len().alias("skipped"))
    rows = lf.filter(pl.col("package").is_not_null())
    totals = rows.select(
        pl.len().alias("downloads"),
        pl.col("ip_id").n_unique().alias("downloaders"),
        pl.col("size").sum().alias("bytes"),
        pl.col("package").n_unique().alias("packages"),
    )
    hourly = (
        rows.group_by(pl.col("time").str.slice(0, 2).cast(pl.Int32).alias("hour"))
        .agg(pl.len().alias("n"))
        .sort("hour")
    )
    top = (
        rows.group_by("ip_id")
        .agg(pl.len().alias("downloads"), pl.col("size").sum().alias("bytes"))
        .sort(["downloads", "ip_id"], descending=[True, False])
        .head(n)
    )
    t, s, h, w = pl.collect_all([totals, skipped, hourly, top], engine="streaming")
    out = t.to_dicts()[0]
    out["skipped_rows"] = s["skipped"][0]
    hours = [0] * 24
    for hour, cnt in h.iter_rows():
        hours[hour] = cnt
    return out, hours, [list(r) for r in w.iter_rows()]


def duckdb_run(path, n):
    import duckdb

    con = duckdb.connect()
    con.execute(
        f"""CREATE TEMP TABLE t AS SELECT CAST(substr(time, 1, 2) AS INTEGER) AS hour, size, package, ip_id
        FROM read_csv('{path}', header = true, nullstr = 'NA',
            columns = {{'date': 'VARCHAR', 'time': 'VARCHAR', 'size': 'BIGINT', 'r_version': 'VARCHAR',
                        'r_arch': 'VARCHAR', 'r_os': 'VARCHAR', 'package': 'VARCHAR', 'version': 'VARCHAR',
                        'country': 'VARCHAR', 'ip_id': 'BIGINT'}})"""
    )
    d, dl, b, p, s = con.execute(
        """SELECT count(package), count(DISTINCT CASE WHEN package IS NOT NULL THEN ip_id END),
        sum(CASE WHEN package IS NOT NULL THEN size END), count(DISTINCT package),
        count(*) - count(package) FROM t"""
    ).fetchone()
    out = {"downloads": d, "downloaders": dl, "bytes": int(b), "packages": p, "skipped_rows": s}
    hours = [0] * 24
    for hour, cnt in con.execute("SELECT hour, count(*) FROM t WHERE package IS NOT NULL GROUP BY hour").fetchall():
        hours[hour] = cnt
    top = con.execute(
        f"""SELECT ip_id, count(*) AS downloads, sum(size) AS bytes FROM t WHERE package IS NOT NULL
        GROUP BY ip_id ORDER BY downloads DESC, ip_id LIMIT {n}"""
    ).fetchall()
    return out, hours, [[ip, dn, int(by)] for ip, dn, by in top]


def main():
    if sys.argv[1] == "polars-days":
        out = {}
        for path in sys.argv[2:]:
            totals, hours, top = polars_run(path, 6)
            out[path.rsplit("/", 1)[-1][:10]] = {"totals": totals, "top": [list(r) for r in top]}
        print(json.dumps(out, sort_keys=True))
        return
    engine, path = sys.argv[1], sys.argv[2]
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 10
    totals, hours, top = (polars_run if engine == "polars" else duckdb_run)(path, n)
    if engine == "polars":
        top = [[ip, dn, by] for ip, dn, by in top]
    print(json.dumps({"totals": totals, "hourly": hours, "top": top}, sort_keys=True))


if __name__ == "__main__":
    main()
