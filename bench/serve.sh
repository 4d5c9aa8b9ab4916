#!/usr/bin/env bash
# bench-serve: `cranwhales serve` (release) vs nginx serving the same bytes as static files, with
# wrk at 100 connections, side by side in one run: a day's summary, the home page, and (on a store
# of all the real days, backfilled first) one package over every stored day and the trends of every
# stored day. Then 200 concurrent requests for one day that is not stored yet, counting downloads at
# the source (nginx again, rate-limited, serving the real logs of scripts/test-data.py).
# Everything on 127.0.0.1, bounded in time, cleaned up on exit.
#
# Targets (issues 3 and 12): >= 0.8x nginx req/s, p99 < 5 ms.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BIN=${CRANWHALES_BIN:-$ROOT/target/release/cranwhales}
DURATION=${DURATION:-10s}
CONNS=${CONNS:-100}
THREADS=${THREADS:-2}
SHARED=${CRANWHALES_TEST_DATA:-$(scripts/test-data.py)}/cranlogs
NEW_DAY=${NEW_DAY:-2014-05-06}

for tool in wrk nginx curl; do
  command -v "$tool" >/dev/null || { echo "bench-serve: $tool not found (apt-get install wrk nginx-light curl)" >&2; exit 1; }
done
[ -x "$BIN" ] || { echo "bench-serve: $BIN missing (cargo build --release -p cranwhales)" >&2; exit 1; }

. "$(dirname "${BASH_SOURCE[0]}")/lib.sh" serve
chmod 755 "$TMP"  # nginx workers (www-data) read the static files

# Starts cranwhales serve with extra args (DB=path to use a given store); sets URL.
start_server() {
  local log=$TMP/serve.$1.log; shift
  "$BIN" serve --db "${DB:-$TMP/cw.$RANDOM.db}" --cache-dir "$TMP/cache.$RANDOM" --addr 127.0.0.1:0 "$@" >"$log" 2>&1 &
  PIDS+=($!)
  for _ in $(seq 600); do
    URL=$(grep -o 'http://[0-9.:]*' "$log" 2>/dev/null | head -1 || true)
    [ -n "$URL" ] && return 0
    sleep 0.1
  done
  echo "bench-serve: server did not start:" >&2; cat "$log" >&2; exit 1
}

# Starts nginx with a server block; sets NGINX_URL.
start_nginx() {
  local name=$1 body=$2 port
  port=$(free_port)
  mkdir -p "$TMP/nginx-$name"
  cat >"$TMP/nginx-$name/nginx.conf" <<EOF
worker_processes auto;
pid $TMP/nginx-$name/nginx.pid;
error_log $TMP/nginx-$name/error.log warn;
events { worker_connections 4096; }
http {
  client_body_temp_path $TMP/nginx-$name; proxy_temp_path $TMP/nginx-$name;
  fastcgi_temp_path $TMP/nginx-$name; uwsgi_temp_path $TMP/nginx-$name; scgi_temp_path $TMP/nginx-$name;
  sendfile on; tcp_nopush on; tcp_nodelay on; keepalive_requests 1000000;
  server {
    listen 127.0.0.1:$port;
    $body
  }
}
EOF
  nginx -p "$TMP/nginx-$name" -c "$TMP/nginx-$name/nginx.conf" -g 'daemon off;' &
  PIDS+=($!)
  NGINX_URL=http://127.0.0.1:$port
  for _ in $(seq 100); do curl -s -o /dev/null "$NGINX_URL/" && return 0; sleep 0.05; done
}

# wrk one URL; prints "label  req/s  p99" and sets RPS, P99_MS.
bench() {
  local label=$1 url=$2 out
  out=$(wrk -t"$THREADS" -c"$CONNS" -d"$DURATION" --latency "$url")
  RPS=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
  local p99 errs
  p99=$(awk '$1=="99%" {print $2}' <<<"$out")
  errs=$(awk '/Non-2xx|Socket errors/ {print}' <<<"$out" | tr '\n' ' ')
  P99_MS=$(awk -v v="$p99" 'BEGIN{ if (v ~ /us$/) {sub(/us/,"",v); print v/1000} else if (v ~ /ms$/) {sub(/ms/,"",v); print v+0} else {sub(/s/,"",v); print v*1000} }')
  printf '%-22s %10.0f req/s   p99 %7.2f ms  %s\n' "$label" "$RPS" "$P99_MS" "$errs"
}

echo "== bench-serve: wrk -t$THREADS -c$CONNS -d$DURATION, one run, side by side =="
start_server main --sample-dir "$ROOT/data/sample"
DAY=$(curl -s "$URL/api/days" | python3 -c 'import json,sys; print(json.load(sys.stdin)["days"][-1]["date"])')
API_PATH="/api/days/$DAY?count=6"

# A store of every real day (a backfill from a cache of links to the shared files), served by a
# second server for the cross-day queries.
mkdir -p "$TMP/links"
for f in "$SHARED"/*.csv.gz; do ln -s "$f" "$TMP/links/"; done
DATES=$(ls "$TMP/links" | cut -c1-10)
# shellcheck disable=SC2086
"$BIN" ingest --db "$TMP/all.db" --cache-dir "$TMP/links" --source-url http://127.0.0.1:9 --jobs 2 $DATES >/dev/null 2>"$TMP/backfill.log" \
  || { cat "$TMP/backfill.log" >&2; exit 1; }
MAIN_URL=$URL
DB=$TMP/all.db start_server all --no-sample
ALL_URL=$URL; URL=$MAIN_URL
PKG_PATH="/api/packages/${PACKAGE:-ggplot2}?whales=6"
TRENDS_PATH="/api/trends"

# The same bytes as static files for nginx.
mkdir -p "$TMP/www/api/days" "$TMP/www/api/packages"
curl -s "$URL$API_PATH" -o "$TMP/www/api/days/$DAY"
curl -s "$URL/" -o "$TMP/www/index.html"
curl -s "$ALL_URL$PKG_PATH" -o "$TMP/www/api/packages/${PACKAGE:-ggplot2}"
curl -s "$ALL_URL$TRENDS_PATH" -o "$TMP/www/api/trends"
start_nginx static "root $TMP/www; location /api/ { default_type application/json; } location = / { default_type text/html; try_files /index.html =404; }"
cmp -s <(curl -s "$URL$API_PATH") <(curl -s "$NGINX_URL$API_PATH") || { echo "bench-serve: nginx does not serve the same API bytes" >&2; exit 1; }
cmp -s <(curl -s "$URL/") <(curl -s "$NGINX_URL/") || { echo "bench-serve: nginx does not serve the same home page" >&2; exit 1; }
for p in "$PKG_PATH" "$TRENDS_PATH"; do
  cmp -s <(curl -s "$ALL_URL$p") <(curl -s "$NGINX_URL$p") || { echo "bench-serve: nginx does not serve the same $p" >&2; exit 1; }
done
echo "day $DAY: API body $(stat -c %s "$TMP/www/api/days/$DAY") bytes, home page $(stat -c %s "$TMP/www/index.html") bytes"
# The first view's JS: the scripts and module preloads of the home page, as sent gzipped (the
# browser suite measures the same from Chromium's transfer sizes; budget 100 KB).
FIRST_JS=0
for js in $(grep -oE '(src|href)="/assets/[^"]+\.js"' "$TMP/www/index.html" | cut -d'"' -f2); do
  FIRST_JS=$((FIRST_JS + $(curl -s -H 'Accept-Encoding: gzip' "$URL$js" | wc -c)))
done
echo "first view JS: $FIRST_JS bytes gzipped ($(awk -v b="$FIRST_JS" 'BEGIN{print (b <= 102400 ? "ok" : "OVER")}') against 100 KB)"
echo "all $(wc -w <<<"$DATES") real days stored: $PKG_PATH $(stat -c %s "$TMP/www/api/packages/${PACKAGE:-ggplot2}") bytes, $TRENDS_PATH $(stat -c %s "$TMP/www/api/trends") bytes"

# Alternate the two servers over several rounds so background load hits both alike; report the
# median round of each.
ROUNDS=${ROUNDS:-3}
declare -A RPS_OF P99_OF
for r in $(seq "$ROUNDS"); do
  for target in "nginx-api|$NGINX_URL$API_PATH" "cw-api|$URL$API_PATH" "nginx-home|$NGINX_URL/" "cw-home|$URL/" \
    "nginx-pkg|$NGINX_URL$PKG_PATH" "cw-pkg|$ALL_URL$PKG_PATH" "nginx-trends|$NGINX_URL$TRENDS_PATH" "cw-trends|$ALL_URL$TRENDS_PATH"; do
    key=${target%%|*}
    bench "round $r $key" "${target#*|}"
    RPS_OF[$key]+="$RPS "; P99_OF[$key]+="$P99_MS "
  done
done
median() { tr ' ' '\n' <<<"$1" | grep . | sort -g | awk '{v[NR]=$1} END{print v[int((NR+1)/2)]}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.2f", a/b}'; }
verdict() {
  awk -v r="$1" -v p="$2" 'BEGIN{
    printf "throughput %s (target >=0.8x), p99 %s (target <5ms)", (r>=0.8 ? "ok" : "BELOW"), (p<5 ? "ok" : "OVER") }'
}
echo
for what in api home pkg trends; do
  n=$(median "${RPS_OF[nginx-$what]}"); c=$(median "${RPS_OF[cw-$what]}")
  np=$(median "${P99_OF[nginx-$what]}"); cp=$(median "${P99_OF[cw-$what]}")
  case $what in
    api) label="GET $API_PATH" ;;
    home) label="GET / (home page)" ;;
    pkg) label="GET $PKG_PATH (all stored days)" ;;
    trends) label="GET $TRENDS_PATH (all stored days)" ;;
  esac
  printf 'ratio: %-40s cranwhales %7.0f req/s p99 %6.2f ms | nginx %7.0f req/s p99 %6.2f ms | %sx  %s\n' \
    "$label" "$c" "$cp" "$n" "$np" "$(ratio "$c" "$n")" "$(verdict "$(ratio "$c" "$n")" "$cp")"
done
echo "(median of $ROUNDS alternating rounds; load average now: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores)"

echo
echo "== single flight: 200 concurrent requests for $NEW_DAY (not stored) =="
SOURCE_CONF='access_log ACCESS; location ~ "^/[0-9]{4}/(?<file>[^/]+)$" { alias SHARED/$file; limit_rate 1m; }'
SOURCE_CONF=${SOURCE_CONF/ACCESS/$TMP/source-access.log}
start_nginx source "${SOURCE_CONF/SHARED/$SHARED}"
SOURCE_URL=$NGINX_URL
start_server flight --no-sample --source-url "$SOURCE_URL"
codes=$TMP/codes
for _ in $(seq 200); do
  curl -s -o /dev/null -w '%{http_code}\n' --max-time 30 "$URL/api/days/$NEW_DAY?count=6" >>"$codes" &
done
wait_curls() { while [ "$(wc -l <"$codes")" -lt 200 ]; do sleep 0.05; done; }
wait_curls
for _ in $(seq 600); do
  [ "$(curl -s -o /dev/null -w '%{http_code}' "$URL/api/days/$NEW_DAY?count=6")" = 200 ] && break
  sleep 0.1
done
DOWNLOADS=$(grep -c "/$NEW_DAY.csv.gz" "$TMP/source-access.log" || true)
echo "responses: $(sort "$codes" | uniq -c | awk '{printf "%s x%s  ", $2, $1}')"
echo "ratio: single flight: 200 concurrent requests -> $DOWNLOADS download(s) at the source $([ "$DOWNLOADS" = 1 ] && echo '(target: exactly 1: ok)' || echo '(target: exactly 1: FAILED)')"
[ "$DOWNLOADS" = 1 ]
