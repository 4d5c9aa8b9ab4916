#!/usr/bin/env bash
# make bench-ingest: our ingest of a >= 10M-row day vs decompression alone (libdeflate-gunzip,
# gzip -dc) and vs Polars (lazy, streaming) and DuckDB computing the same totals, hourly and top-N;
# then the backfill line: the 78 real days with --jobs 2 vs one at a time vs Polars (ingest_backfill.py).
# Builds the stitched day once into target/bench-data (outside git) and installs the peers into a
# venv in target/bench-venv. RUNS=N (default 5) interleaved rounds; ratios are medians of per-round ratios.
# PART=day runs only the single-day line, PART=backfill only the backfill line (RUNS_BACKFILL=N rounds),
# PART=store only the store line: bytes per stored day and per source row on the real days, and the
# whole history projected from synthetic days that grow like the real logs (store_history.py);
# PART=months what packing a closed month's breakdowns by package would save (breakdown_months.py).
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=target/bench-data
DAY=$DATA/2015-12-31.csv.gz
VENV=target/bench-venv
mkdir -p "$DATA"

SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
need_apt=()
command -v libdeflate-gunzip >/dev/null || need_apt+=(libdeflate-tools)
command -v pigz >/dev/null || need_apt+=(pigz)
[ -x /usr/bin/time ] || need_apt+=(time)
python3 -c 'import ensurepip' 2>/dev/null || need_apt+=(python3-venv)
if [ ${#need_apt[@]} -gt 0 ]; then
  $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi
cargo build --release -p cranwhales --bin cranwhales
PART=${PART:-all}
case "$PART" in all|day|backfill|store|months) ;; *) echo "bench-ingest: PART must be day, backfill, store, months or all (got $PART)" >&2; exit 2 ;; esac
TEST_DATA=${CRANWHALES_TEST_DATA:-$(scripts/test-data.py)}
if [ "$PART" = store ]; then
  echo "== store: bytes per stored day and per source row; the whole history projected =="
  exec python3 bench/store_history.py "$TEST_DATA/cranlogs" target/release/cranwhales "$DATA"
fi
if ! "$VENV/bin/python" -c 'import polars, duckdb, zstandard' 2>/dev/null; then
  echo "bench-ingest: installing polars, duckdb and zstandard into $VENV"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q polars duckdb zstandard
fi
if [ "$PART" = months ]; then
  echo "== months: a closed month's breakdowns packed by package, against the daily chunks =="
  exec "$VENV/bin/python" bench/breakdown_months.py "$TEST_DATA/cranlogs" target/release/cranwhales "$DATA"
fi
if [ "$PART" != backfill ]; then
if [ ! -f "$DAY" ]; then
  echo "bench-ingest: building the stitched day (once)"
  python3 bench/ingest_make_day.py "$TEST_DATA/cranlogs" "$DAY"
fi
"$VENV/bin/python" bench/ingest_bench.py "$DAY" "${RUNS:-5}"
fi
[ "$PART" = day ] && exit 0
echo
echo "== backfill: the 78 real days, --jobs 2 vs one at a time vs Polars =="
"$VENV/bin/python" bench/ingest_backfill.py "$TEST_DATA/cranlogs" target/release/cranwhales "$DATA" "${RUNS_BACKFILL:-3}"
[ "$PART" = backfill ] && exit 0
echo
echo "== store: bytes per stored day and per source row; the whole history projected =="
exec python3 bench/store_history.py "$TEST_DATA/cranlogs" target/release/cranwhales "$DATA"
