#!/usr/bin/env bash
# bench-serve, the whole-history part (issue 21 item 2): `cranwhales serve` (release) on a
# synthetic store of 5,200 days (bench/synth_store.py, made once into target/bench-data, not in
# git) vs nginx serving the same bytes as static files, wrk at 16 connections, side by side:
# /api/days, one package over all days, the trends of all days, and any of PATHS (more read APIs:
# top lists over a year, the calendar; a path the server answers 404 is reported and skipped).
# Prints p99 per path (target < 20 ms) and the server's peak RSS (VmHWM, target <= 500 MB).
# First, a package over all days on a cold cache (issue 34 item 5, target <= 100 ms): for each of
# COLD_PACKAGES, the server restarted and the store file's pages dropped from the page cache
# (posix_fadvise DONTNEED on the file and its WAL; all caches with DROP_CACHES=1, as root), the
# first answer timed; with COLD_BEFORE=1 also as before version 10 (the packed months of
# store::history marked unpacked for that run, then restored).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BIN=${CRANWHALES_BIN:-$ROOT/target/release/cranwhales}
DURATION=${DURATION:-10s}
CONNS=${CONNS:-16}
THREADS=${THREADS:-2}
NDAYS=${NDAYS:-5200}
SHARED=${CRANWHALES_TEST_DATA:-$(scripts/test-data.py)}/cranlogs
DATA=${BENCH_DATA:-$ROOT/target/bench-data}
STORE=$DATA/history-$NDAYS.db
BD=/api/packages/${PACKAGE:-ggplot2}
# The year's top list counted every download and without whales, small and repeats (issue 31:
# the filtered list reads the same month rows' other columns).
TOP="/api/top?from=2024-01-01&to=2024-12-31"
PATHS=${PATHS:-"$TOP $TOP&without=whales,small,repeats /api/calendar $BD/breakdown?by=version $BD/breakdown?by=country $BD/breakdown?by=os $BD/breakdown?by=r_version $BD/breakdown?by=arch $BD/releases"}
COLD_PACKAGES=${COLD_PACKAGES:-"ggplot2 dplyr MASS"}

for tool in wrk nginx curl; do
  command -v "$tool" >/dev/null || { echo "bench-serve: $tool not found (apt-get install wrk nginx-light curl)" >&2; exit 1; }
done
[ -x "$BIN" ] || { echo "bench-serve: $BIN missing (cargo build --release -p cranwhales)" >&2; exit 1; }
mkdir -p "$DATA"
if [ ! -f "$STORE" ]; then
  echo "bench-serve: making the synthetic $NDAYS-day store (once, a few minutes): $STORE"
  python3 bench/synth_store.py "$SHARED" "$BIN" "$DATA" "$STORE" "$NDAYS"
fi
# A store made by an older cranwhales is brought up to date first (serve would migrate it
# silently before listening, past the wait for its address below): its last line only.
"$BIN" migrate --db "$STORE" --no-vacuum 2>&1 | tail -1

. "$(dirname "${BASH_SOURCE[0]}")/lib.sh" serve-history
chmod 755 "$TMP"

# Starts the server on the store; sets SERVER, URL.
start_server() {
  local log=$TMP/serve.$RANDOM.log
  "$BIN" serve --db "$STORE" --no-sample --cache-dir "$TMP/cache" --addr 127.0.0.1:0 >"$log" 2>&1 &
  SERVER=$!
  PIDS+=($SERVER)
  URL=
  for _ in $(seq 600); do
    URL=$(grep -o 'http://[0-9.:]*' "$log" 2>/dev/null | head -1 || true)
    [ -n "$URL" ] && break
    sleep 0.1
  done
  [ -n "$URL" ] || { echo "bench-serve: server did not start:" >&2; cat "$log" >&2; exit 1; }
}

# Drops the store's pages from the page cache (the whole page cache with DROP_CACHES=1).
drop_cache() {
  if [ "${DROP_CACHES:-0}" = 1 ]; then
    sync; echo 1 >/proc/sys/vm/drop_caches
  else
    python3 -c 'import os, sys
for f in sys.argv[1:]:
    if os.path.exists(f):
        fd = os.open(f, os.O_RDONLY)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED); os.close(fd)' "$STORE" "$STORE-wal" "$STORE-shm"
  fi
}

# Milliseconds of one GET.
timed_get() {
  curl -s -o /dev/null -w '%{time_total}' "$1" | awk '{printf "%.0f", $1 * 1000}'
}

# Marks the packed months unpacked (0) or restores them (1), outside any server.
set_packed() {
  python3 -c 'import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
if sys.argv[2] == "0":
    c.execute("CREATE TABLE IF NOT EXISTS bench_was_packed AS SELECT month FROM history_months WHERE valid = 1")
    c.execute("UPDATE history_months SET valid = 0")
else:
    c.execute("UPDATE history_months SET valid = 1 WHERE month IN (SELECT month FROM bench_was_packed)")
    c.execute("DROP TABLE bench_was_packed")
c.commit()' "$STORE" "$1"
}

packed=$(python3 -c 'import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute("SELECT count(*) FROM history_months WHERE valid = 1").fetchone()[0])' "$STORE")
echo "== a package over all days, cold (server restarted, $([ "${DROP_CACHES:-0}" = 1 ] && echo 'all page caches dropped' || echo 'the store file dropped from the page cache: posix_fadvise DONTNEED')), $packed packed months =="
for mode in ${COLD_BEFORE:+unpacked} packed; do
  [ "$mode" = unpacked ] && set_packed 0
  for pkg in $COLD_PACKAGES; do
    drop_cache
    start_server
    cold=$(timed_get "$URL/api/packages/$pkg?whales=6")
    warm=$(timed_get "$URL/api/packages/$pkg?whales=7")
    kill "$SERVER"; wait "$SERVER" 2>/dev/null || true
    printf 'ratio: cold /api/packages/%-10s %-8s first answer %5s ms (then another whale count, warm cache: %4s ms) %s\n' \
      "$pkg" "$mode" "$cold" "$warm" "$(awk -v c="$cold" 'BEGIN{print (c <= 100 ? "ok (<= 100 ms)" : "OVER (target <= 100 ms)")}')"
  done
  [ "$mode" = unpacked ] && set_packed 1
done

start_server
port=$(free_port)
mkdir -p "$TMP/nginx" "$TMP/www"
cat >"$TMP/nginx/nginx.conf" <<EOF
worker_processes auto;
pid $TMP/nginx/nginx.pid;
error_log $TMP/nginx/error.log warn;
events { worker_connections 4096; }
http {
  client_body_temp_path $TMP/nginx; proxy_temp_path $TMP/nginx;
  fastcgi_temp_path $TMP/nginx; uwsgi_temp_path $TMP/nginx; scgi_temp_path $TMP/nginx;
  sendfile on; tcp_nopush on; tcp_nodelay on; keepalive_requests 1000000;
  server { listen 127.0.0.1:$port; root $TMP/www; default_type application/json;
           location = / { try_files /\$arg_f =404; }
           location = /gz { add_header Content-Encoding gzip; try_files /\$arg_f =404; } }
}
EOF
nginx -p "$TMP/nginx" -c "$TMP/nginx/nginx.conf" -g 'daemon off;' &
PIDS+=($!)
NGINX_URL=http://127.0.0.1:$port
for _ in $(seq 100); do curl -s -o /dev/null "$NGINX_URL/" && break; sleep 0.05; done

# wrk one URL (extra wrk args after it); sets RPS, P99_MS.
bench() {
  local out p99 url=$1; shift
  out=$(wrk -t"$THREADS" -c"$CONNS" -d"$DURATION" --latency "$@" "$url")
  RPS=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
  p99=$(awk '$1=="99%" {print $2}' <<<"$out")
  P99_MS=$(awk -v v="$p99" 'BEGIN{ if (v ~ /us$/) {sub(/us/,"",v); print v/1000} else if (v ~ /ms$/) {sub(/ms/,"",v); print v+0} else {sub(/s/,"",v); print v*1000} }')
}

echo "== bench-serve (whole history): $NDAYS-day store $(du -h "$STORE" | cut -f1), wrk -t$THREADS -c$CONNS -d$DURATION =="
paths="/api/days /api/packages/${PACKAGE:-ggplot2}?whales=6 /api/trends $PATHS"
k=0
for p in $paths; do
  k=$((k + 1))
  start=$(date +%s.%N)
  code=$(curl -s -o "$TMP/www/body$k" -w '%{http_code}' "$URL$p")
  first=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN{printf "%.0f", (b-a)*1000}')
  if [ "$code" != 200 ]; then
    printf '%-48s HTTP %s: skipped (not served by this build)\n' "$p" "$code"
    continue
  fi
  curl -s -H 'Accept-Encoding: gzip' "$URL$p" -o "$TMP/www/body$k.gz"
  cmp -s "$TMP/www/body$k" <(curl -s "$NGINX_URL/?f=body$k") || { echo "bench-serve: nginx does not serve the same bytes for $p" >&2; exit 1; }
  cmp -s "$TMP/www/body$k" <(gzip -dc "$TMP/www/body$k.gz") || { echo "bench-serve: the gzip body of $p is not the same JSON" >&2; exit 1; }
  # As a browser asks (gzip), then as wrk asks by default (identity: ~1 MB bodies).
  for enc in gzip identity; do
    if [ $enc = gzip ]; then
      nurl="$NGINX_URL/gz?f=body$k.gz"; size=$(stat -c %s "$TMP/www/body$k.gz")
    else
      nurl="$NGINX_URL/?f=body$k"; size=$(stat -c %s "$TMP/www/body$k")
    fi
    bench "$nurl" -H "Accept-Encoding: $enc"; n_rps=$RPS; n_p99=$P99_MS
    bench "$URL$p" -H "Accept-Encoding: $enc"; c_rps=$RPS; c_p99=$P99_MS
    printf 'ratio: %-40s %-8s %8s B, first %4s ms | cranwhales %6.0f req/s p99 %6.2f ms | nginx %6.0f req/s p99 %6.2f ms | p99 %s\n' \
      "$p" "$enc" "$size" "$first" "$c_rps" "$c_p99" "$n_rps" "$n_p99" \
      "$(awk -v p="$c_p99" 'BEGIN{print (p < 20 ? "ok (< 20 ms)" : "OVER (target < 20 ms)")}')"
  done
done
hwm=$(awk '/VmHWM/ {print $2}' "/proc/$SERVER/status")
echo "ratio: server peak RSS $((hwm / 1024)) MB $([ "$hwm" -le $((500 * 1024)) ] && echo '(target <= 500 MB: ok)' || echo '(target <= 500 MB: OVER)')"
echo "(load average now: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores)"
