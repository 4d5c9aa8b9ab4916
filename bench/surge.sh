#!/usr/bin/env bash
# make bench-surge: (1) surge bench vs wrk vs oha against nginx serving a small static file — same
# connections and duration, generator pinned to CPU 0, nginx (1 worker) pinned to CPU 1 — printing
# req/s, p99 and generator CPU time per request, plus ratio lines; (2) a 10,000-user replay of a real
# cranwhales recording (made here through `surge record` + headless Chromium) reporting surge's peak
# RSS per session; (3) one --rate plan as 2 segments (one process per CPU, `surge merge`) vs 1
# process with 2 threads on both CPUs: merged p99 vs single p99 and lost requests (oha likewise). Everything on 127.0.0.1;
# every process started here is stopped on exit. PART=gen|replay|segments runs one part.
# TLS (https) rows sit next to the http ones: part 1 again against the same nginx over TLS
# (TLS_CONNS=64 keep-alive connections; a certificate made here by openssl, surge given its CA with
# --ca-cert), and part 2's replay again through nginx terminating TLS in front of cranwhales.
# TLS=0 leaves them out. oha is installed with cargo unless NO_OHA_INSTALL=1; absent, its rows say so.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
CONNS="${CONNS:-50}"
DUR="${DUR:-5}"
USERS="${USERS:-10000}"
export PATH="$HOME/.cargo/bin:$PATH"

TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
echo "== building surge and cranwhales (release, $TARGET_DIR)"
[ -n "${SKIP_BUILD:-}" ] || cargo build --release -p surge -p cranwhales --bins 2>&1 | tail -1
SURGE="$TARGET_DIR/release/surge"
if ! command -v oha >/dev/null && [ -z "${NO_OHA_INSTALL:-}" ]; then
  echo "== installing oha (cargo install --locked oha)"
  CARGO_TARGET_DIR=/tmp/oha-build cargo install --locked oha || echo "oha: install failed"
fi
HAVE_OHA=1
command -v oha >/dev/null || HAVE_OHA=0
TLS="${TLS:-1}"
TLS_CONNS="${TLS_CONNS:-64}"

. "$(dirname "${BASH_SOURCE[0]}")/lib.sh" surge
# nginx's workers run as nobody when started by root: they must reach the served files.
chmod 755 "$TMP"

# A private CA and a P-256 certificate for 127.0.0.1 (what surge's --ca-cert is for).
mkdir -p "$TMP/pki"
make_cert() {
  ( cd "$TMP/pki"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout ca.key \
      -out ca.pem -days 2 -subj "/CN=surge bench CA" 2>/dev/null
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout srv.key \
      -out srv.csr -subj "/CN=127.0.0.1" 2>/dev/null
    printf 'subjectAltName=IP:127.0.0.1,DNS:bench.surge.test\n' > srv.ext
    openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out srv.crt -days 2 \
      -extfile srv.ext 2>/dev/null )
}
make_cert

# ---------- nginx for parts 1 and 3 ----------
if [ "${PART:-all}" != replay ]; then
PORT="$(free_port)"
mkdir -p "$TMP/www" "$TMP/nginx/logs"
head -c 1024 /dev/urandom | base64 -w 76 > "$TMP/www/index.html"   # ~1.4 KB static file
TPORT="$(free_port)"
cat > "$TMP/nginx/nginx.conf" <<CONF
worker_processes 1;
daemon off;
pid $TMP/nginx/nginx.pid;
error_log $TMP/nginx/logs/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path $TMP/nginx/cb; proxy_temp_path $TMP/nginx/px; fastcgi_temp_path $TMP/nginx/fc;
  uwsgi_temp_path $TMP/nginx/uw; scgi_temp_path $TMP/nginx/sc;
  keepalive_requests 100000000;
  server { listen 127.0.0.1:$PORT; root $TMP/www; }
  server { listen 127.0.0.1:$TPORT ssl; root $TMP/www;
           ssl_certificate $TMP/pki/srv.crt; ssl_certificate_key $TMP/pki/srv.key; }
}
CONF
taskset -c 1 nginx -p "$TMP/nginx" -c "$TMP/nginx/nginx.conf" &
PIDS+=($!)
wait_port "$PORT"
wait_port "$TPORT"
URL="http://127.0.0.1:$PORT/index.html"
TURL="https://127.0.0.1:$TPORT/index.html"
fi

# ---------- 1. generators vs nginx ----------  (PART=gen: only this part)
if [ "${PART:-all}" = all ] || [ "${PART:-all}" = gen ]; then
echo "== nginx 1 worker on CPU 1 serving $(wc -c < "$TMP/www/index.html") bytes at $URL; generators on CPU 0, -c $CONNS, ${DUR}s"


run_gen() { # name, command...
  local name="$1"; shift
  /usr/bin/time -f "%U %S" -o "$TMP/time.$name" taskset -c 0 "$@" > "$TMP/out.$name" 2>"$TMP/err.$name" \
    || { echo "$name failed:"; cat "$TMP/err.$name"; return 1; }
}

# ROUNDS rounds (default 6, DUR seconds each), each running wrk, oha and surge back to back in a rotating order; every
# ratio is the median of the per-round ratios, because this shared host's speed drifts (wrk alone
# has measured 34k..132k req/s within an hour): generators timed minutes apart are not comparable.
# gen_rounds LABEL URL CONNS [surge flags...]: one table of rounds and ratios, rows prefixed LABEL.
ROUNDS="${ROUNDS:-6}"
gen_rounds() {
local label="$1" url="$2" conns="$3"; shift 3
local sflags=("$@")
local GENS=(wrk oha surge)
[ "$HAVE_OHA" = 1 ] || GENS=(wrk surge)
local oha_tls=()
case $url in https*) oha_tls=(--insecure) ;; esac
: > "$TMP/rounds.tsv"
for r in $(seq 1 "$ROUNDS"); do
  local k=$(( (r - 1) % ${#GENS[@]} ))
  local order=("${GENS[@]:$k}" "${GENS[@]:0:$k}")
  for g in "${order[@]}"; do
    case $g in
      wrk) run_gen wrk wrk -t1 -c"$conns" -d"${DUR}s" --latency "$url" ;;
      oha) run_gen oha oha -c "$conns" -z "${DUR}s" --no-tui --output-format json "${oha_tls[@]}" "$url" ;;
      surge) run_gen surge "$SURGE" bench -c "$conns" -d "${DUR}s" --json "${sflags[@]}" "$url" ;;
    esac
    python3 - "$g" "$r" "$TMP" >> "$TMP/rounds.tsv" <<'PY'
import json, re, sys
g, r, tmp = sys.argv[1], sys.argv[2], sys.argv[3]
out = open(f"{tmp}/out.{g}").read()
u, s = map(float, open(f"{tmp}/time.{g}").read().split()[-2:])
if g == "wrk":
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    n = int(re.search(r"(\d+) requests in", out).group(1))
    v = re.search(r"^\s+99%\s+([\d.]+)(us|ms|s)\s*$", out, re.M)
    p99 = float(v.group(1)) * {"us": 1e-3, "ms": 1, "s": 1e3}[v.group(2)]
elif g == "oha":
    d = json.loads(out)
    rps, n = d["summary"]["requestsPerSec"], sum(d.get("statusCodeDistribution", {}).values())
    p99 = d["latencyPercentiles"]["p99"] * 1000
else:
    d = json.loads(out)
    rps, n, p99 = d["rps"], d["ok"], d["latency_ms"]["p99"]
print(f"{g}\t{r}\t{rps}\t{n}\t{p99}\t{u + s}")
PY
  done
done
echo
echo "== $label: -c $conns, ${DUR}s x $ROUNDS rounds$([ "$HAVE_OHA" = 1 ] || echo '; oha: not installed, its rows are absent (NO_OHA_INSTALL or install failed)')"
python3 - "$TMP/rounds.tsv" "$label" <<'PY'
import statistics, sys
rows = [l.split("\t") for l in open(sys.argv[1]).read().split("\n") if l]
label = sys.argv[2]
by = {}
for g, r, rps, n, p99, cpu in rows:
    by.setdefault(g, {})[int(r)] = (float(rps), int(n), float(p99), float(cpu), float(cpu) / int(n) * 1e6)
gens = [g for g in ("wrk", "oha", "surge") if g in by]
for r in sorted(by["wrk"]):
    print(f"{label} round {r}: " + "   ".join(f"{g} {by[g][r][0]:8.0f} req/s {by[g][r][4]:6.2f} us/req" for g in gens))
print()
med = lambda g, i: statistics.median(v[i] for v in by[g].values())
for g in gens:
    print(f"{label} {g:<6} req/s {med(g, 0):10.0f}   p99 {med(g, 2):8.3f} ms   CPU/request {med(g, 4):6.2f} us   (medians of {len(by[g])} rounds)")
ratio = lambda a, b, i: statistics.median(by[a][r][i] / by[b][r][i] for r in by[a])
print()
tgt = "1.0" if label == "https" else "0.98"
print(f"ratio: {label} surge/wrk req/s = {ratio('surge', 'wrk', 0):.3f} (target >= {tgt})")
if "oha" in by:
    print(f"ratio: {label} surge/oha req/s = {ratio('surge', 'oha', 0):.3f}")
else:
    print(f"ratio: {label} surge/oha: oha not installed")
print(f"ratio: {label} surge/wrk CPU per request = {ratio('surge', 'wrk', 4):.3f} (target <= 1.0)")
if "oha" in by:
    print(f"ratio: {label} surge/oha CPU per request = {ratio('surge', 'oha', 4):.3f} (target < 1.0)")
print("(ratios: medians of per-round ratios)")
PY
}
gen_rounds http "$URL" "$CONNS"
if [ "$TLS" = 1 ]; then
  echo
  echo "== the same over TLS: nginx https (ECDSA P-256, TLS 1.3) at $TURL; surge --ca-cert (verified), wrk/oha do not verify"
  gen_rounds https "$TURL" "$TLS_CONNS" --ca-cert "$TMP/pki/ca.pem"
fi

fi

# ---------- 3. one plan as 2 segments on 2 CPUs vs 1 process ----------  (PART=segments: only this)
# The same open-model plan (SEG_RATE req/s for SEG_DUR s, SEG_CONNS connections in all) on the same
# CPU budget: once by one process with 2 threads on CPUs 0,1 (surge pins one per CPU), once as
# --segment 1/2 (1 thread, CPU 0) + --segment 2/2 (1 thread, CPU 1) with one --start-at, joined by
# `surge merge` (histograms added exactly), and the 1 process again as a control: its ratio to the
# first shows how far two identical runs differ here. nginx stays on CPU 1 throughout. The peer:
# one oha -q with 2 worker threads vs two oha -q at half the rate with 1 thread each, percentiles
# from all their rows. Each round runs the five in a rotating order; ratios are medians of the
# per-round ratios, with their range. On this shared host other work (builds) preempts the
# measured processes and sets the p99 (2..50 ms, either way round), so nginx and the generators
# run SCHED_FIFO here when allowed (SEG_FIFO=0: not).
if [ "${PART:-all}" = all ] || [ "${PART:-all}" = segments ]; then
SEG_RATE="${SEG_RATE:-4000}"; SEG_DUR="${SEG_DUR:-10}"; SEG_CONNS="${SEG_CONNS:-40}"; SEG_ROUNDS="${SEG_ROUNDS:-6}"
RT=()
if [ "${SEG_FIFO:-1}" = 1 ] && chrt -f 1 true 2>/dev/null; then
  RT=(chrt -f 1)
  for p in "${PIDS[0]}" $(pgrep -P "${PIDS[0]}"); do chrt -f -p 1 "$p"; done
fi
echo
echo "== one plan (--rate $SEG_RATE, ${SEG_DUR}s, -c $SEG_CONNS): 1 process, 2 threads (CPUs 0,1) vs 2 segments," \
  "1 thread each (CPU 0 | CPU 1) + surge merge; oha the same way; nginx on CPU 1; ${RT[*]:-no realtime priority}"
half() { # k (1|2) command...: the k-th half of the plan on CPU k-1
  local k="$1"; shift
  "${RT[@]}" taskset -c $((k - 1)) "$@"
}
oha_q() { # cpus threads rate conns out
  "${RT[@]}" taskset -c "$1" oha -q "$3" -c "$4" -z "${SEG_DUR}s" --latency-correction --worker-threads "$2" \
    --no-tui --output-format csv "$URL" > "$5"
}
run_seg() {
  case $1 in
    one|same) "${RT[@]}" taskset -c 0,1 "$SURGE" bench --rate "$SEG_RATE" -d "${SEG_DUR}s" -c "$SEG_CONNS" -t 2 \
           --json "$URL" > "$TMP/$1.json" ;;
    seg)
      local at; at="$(date -u -d '+1 sec' +%Y-%m-%dT%H:%M:%S.%3NZ)"
      local pids=()
      for k in 1 2; do
        half "$k" "$SURGE" bench --rate "$SEG_RATE" -d "${SEG_DUR}s" -c $((SEG_CONNS / 2)) -t 1 \
          --segment "$k/2" --start-at "$at" --json "$URL" > "$TMP/seg$k.json" &
        pids+=($!)
      done
      wait "${pids[@]}"
      "$SURGE" merge "$TMP/seg1.json" "$TMP/seg2.json" -o "$TMP/merged.json" --overwrite-output > /dev/null ;;
    oha1) oha_q 0,1 2 "$SEG_RATE" "$SEG_CONNS" "$TMP/oha1.csv" ;;
    oha2)
      oha_q 0 1 $((SEG_RATE / 2)) $((SEG_CONNS / 2)) "$TMP/oha2a.csv" &
      local a=$!
      oha_q 1 1 $((SEG_RATE / 2)) $((SEG_CONNS / 2)) "$TMP/oha2b.csv"
      wait "$a" ;;
  esac
}
: > "$TMP/seg.tsv"
CFGS=(one seg oha1 same oha2)
for r in $(seq 1 "$SEG_ROUNDS"); do
  k=$(( (r - 1) % ${#CFGS[@]} ))
  for m in "${CFGS[@]:$k}" "${CFGS[@]:0:$k}"; do run_seg "$m"; done
  python3 - "$TMP" "$r" >> "$TMP/seg.tsv" <<'PY'
import json, sys
tmp, r = sys.argv[1], sys.argv[2]
def rows(*names):  # oha CSV: request-duration (s) and status of every request
    out = []
    for n in names:
        for l in open(f"{tmp}/{n}.csv").read().split("\n")[1:]:
            if l:
                f = l.split(",")
                out.append((float(f[4]) * 1000, f[6]))
    return out
def pct(v, q):  # nearest rank, as HdrHistogram reports it
    v = sorted(v)
    return v[max(0, -(-len(v) * q // 100) - 1)]
one, seg = json.load(open(f"{tmp}/one.json")), json.load(open(f"{tmp}/merged.json"))
same = json.load(open(f"{tmp}/same.json"))
barrier = max(json.load(open(f"{tmp}/seg{k}.json"))["late_start_ms"] for k in (1, 2))
vals = [r, one["requests"], one["ok"], one["latency_ms"]["p50"], one["latency_ms"]["p99"],
        seg["requests"], seg["ok"], seg["latency_ms"]["p50"], seg["latency_ms"]["p99"],
        one["late_starts"], seg["late_starts"], barrier, same["requests"], same["ok"],
        same["latency_ms"]["p99"]]
for rs in (rows("oha1"), rows("oha2a", "oha2b")):
    ms = [x for x, st in rs]
    vals += [len(rs), sum(st == "200" for _, st in rs), pct(ms, 50), pct(ms, 99)]
print("\t".join(map(str, vals)))
PY
done
if [ ${#RT[@]} -gt 0 ]; then
  for p in "${PIDS[0]}" $(pgrep -P "${PIDS[0]}"); do chrt -o -p 0 "$p"; done
fi
python3 - "$TMP/seg.tsv" "$SEG_RATE" "$SEG_DUR" <<'PY'
import statistics, sys
rows = [[float(x) for x in l.split("\t")] for l in open(sys.argv[1]).read().split("\n") if l]
planned = round(float(sys.argv[2]) * float(sys.argv[3]))
for (r, n1, ok1, a50, a99, n2, ok2, b50, b99, late1, late2, barrier, n3, ok3, c99,
     on1, ook1, o150, o199, on2, ook2, o250, o299) in rows:
    print(f"round {r:.0f}: surge 1 process p99 {a99:.3f} ms, 2 segments merged p99 {b99:.3f} ms "
          f"({b99 / a99:.2f}), 1 process again {c99:.3f} ms ({c99 / a99:.2f}) | oha 1 process p99 {o199:.3f} ms, 2 processes {o299:.3f} ms "
          f"({o299 / o199:.2f}) | late sends {late1:.0f} vs {late2:.0f}, segments' late start {barrier:.0f} ms")
def line(name, i, j, target=""):
    v = sorted(r[j] / r[i] for r in rows)
    q = statistics.quantiles(v, n=4) if len(v) > 1 else [v[0]] * 3
    print(f"ratio: {name} = {statistics.median(v):.3f} ({target}median of {len(v)} rounds; "
          f"quartiles {q[0]:.2f}..{q[2]:.2f}, range {v[0]:.2f}..{v[-1]:.2f})")
print()
print("medians, ms: surge 1 process p50 %.3f p99 %.3f | 2 segments p50 %.3f p99 %.3f | "
      "oha 1 process p50 %.3f p99 %.3f | 2 processes p50 %.3f p99 %.3f" % tuple(
      statistics.median(r[i] for r in rows) for i in (3, 4, 7, 8, 17, 18, 21, 22)))
line("2 segments merged / 1 process p99", 4, 8, "target 0.95..1.05; ")
line("1 process again / 1 process p99 (control: the noise of the line above)", 4, 14)
line("2 segments merged / 1 process p50", 3, 7)
line("oha 2 processes / 1 process p99 (peer)", 18, 22)
lost = sum(3 * planned - r[1] - r[5] - r[12] for r in rows)
failed = sum(r[1] - r[2] + r[5] - r[6] + r[12] - r[13] for r in rows)
print(f"requests: planned {planned} per run; lost {lost:.0f} and failed {failed:.0f} over "
      f"{len(rows)} rounds x 3 surge runs (target 0)")
PY
fi

# ---------- 2. 10,000-user replay memory ----------  (PART=replay: only this part)
[ "${PART:-all}" = all ] || [ "${PART:-all}" = replay ] || exit 0
echo
echo "== cranwhales: record a real UI session (surge record + headless Chromium), replay with $USERS users"
CW="$TARGET_DIR/release/cranwhales"
[ -x "$CW" ] || CW="$ROOT/target/debug/cranwhales"
CWPORT="$(free_port)"
"$CW" serve --db "$TMP/cw.db" --addr "127.0.0.1:$CWPORT" --sample-dir "$ROOT/data/sample" \
  --cache-dir "$TMP/cwcache" >"$TMP/cw.log" 2>&1 &
PIDS+=($!)
wait_port "$CWPORT"
"$SURGE" record --target "http://127.0.0.1:$CWPORT/" --listen 127.0.0.1:0 -o "$TMP/cw-recording.log" > "$TMP/record.out" &
RECPID=$!
PIDS+=($RECPID)
for _ in $(seq 1 100); do grep -q "listening on" "$TMP/record.out" 2>/dev/null && break; sleep 0.1; done
PROXY=$(grep -o 'http://127.0.0.1:[0-9]*/' "$TMP/record.out" | head -1)
node web/e2e/surge-record.mjs cranwhales "$PROXY" > /dev/null
kill -INT "$RECPID"; wait "$RECPID" || true
echo "recorded $(grep -c '^{' "$TMP/cw-recording.log") events"

ulimit -n "$(ulimit -Hn)"
# Think time x10 stretches the ~2 s session to ~20 s; starting all users takes USERS ms, so they
# are all alive together. replay_mem LABEL TARGET [flags...]: one replay, its RSS per session.
replay_mem() {
local label="$1" target="$2"; shift 2
local run="$TMP/run-$label"
/usr/bin/time -v -o "$TMP/time.replay" "$SURGE" replay "$TMP/cw-recording.log" \
  --target "$target" --users "$USERS" --start-interval 1ms --think-time x10 \
  --message-timeout 60s --output-dir "$run" "$@" > "$TMP/replay.out" 2>"$TMP/replay.err" || true
tail -n +1 "$TMP/replay.out" | head -3
python3 - "$run" "$TMP/time.replay" "$USERS" "$label" <<'PY'
import csv, os, re, sys
run, timef, users, label = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
rss_kb = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", open(timef).read()).group(1))
spans = []
for f in os.listdir(os.path.join(run, "sessions")):
    ts = [int(r[4]) for r in csv.reader(l for l in open(os.path.join(run, "sessions", f)) if not l.startswith("#")) if r and r[0] != "session_id"]
    spans.append((min(ts), max(ts)))
ev = sorted([(a, 1) for a, _ in spans] + [(b, -1) for _, b in spans])
cur = peak = 0
for _, d in ev:
    cur += d; peak = max(peak, cur)
print(f"{label}: sessions {len(spans)}, peak concurrent sessions {peak}, surge peak RSS {rss_kb/1024:.1f} MB")
target = "60" if label == "https" else "50"
print(f"ratio: {label} surge peak RSS per concurrent session = {rss_kb/peak:.1f} KB (target <= {target} KB)")
PY
}
replay_mem http "http://127.0.0.1:$CWPORT/"

[ "$TLS" = 1 ] || exit 0
# The same replay over TLS: nginx (1 worker) terminates TLS in front of cranwhales (keep-alive
# upstream); surge verifies its certificate with --ca-cert.
CWTPORT="$(free_port)"
mkdir -p "$TMP/nginx-cw/logs"
cat > "$TMP/nginx-cw/nginx.conf" <<CONF
worker_processes 1;
worker_rlimit_nofile 65536;
daemon off;
pid $TMP/nginx-cw/nginx.pid;
error_log $TMP/nginx-cw/logs/error.log warn;
events { worker_connections 30000; }
http {
  access_log off;
  client_body_temp_path $TMP/nginx-cw/cb; proxy_temp_path $TMP/nginx-cw/px; fastcgi_temp_path $TMP/nginx-cw/fc;
  uwsgi_temp_path $TMP/nginx-cw/uw; scgi_temp_path $TMP/nginx-cw/sc;
  keepalive_requests 100000000; keepalive_timeout 300s;
  upstream cw { server 127.0.0.1:$CWPORT; keepalive 256; }
  server { listen 127.0.0.1:$CWTPORT ssl backlog=8192;
           ssl_certificate $TMP/pki/srv.crt; ssl_certificate_key $TMP/pki/srv.key;
           location / { proxy_pass http://cw; proxy_http_version 1.1; proxy_set_header Connection "";
                        proxy_set_header Host \$host; proxy_read_timeout 120s; } }
}
CONF
nginx -p "$TMP/nginx-cw" -c "$TMP/nginx-cw/nginx.conf" &
PIDS+=($!)
wait_port "$CWTPORT"
echo
echo "== the same replay over TLS: nginx terminating TLS at https://127.0.0.1:$CWTPORT/ in front of cranwhales"
replay_mem https "https://127.0.0.1:$CWTPORT/" --ca-cert "$TMP/pki/ca.pem"
