#!/usr/bin/env bash
# make bench-manifold: manifold side by side with one plumber, valve and faucet (see issue 6).
#  (a) 100 x /sleep?ms=500 at concurrency 5 (valve's benchmark): req/s, p50, p99 per contender, each
#      pool started with all 5 workers and warmed alike; plus the machine's ceiling: 5 plumbers hit
#      directly by 5 separate clients (no proxy at all)
#  (b) hello latency direct vs through manifold (added p50): a steady single-threaded hello worker
#      (bench/manifold_hello.py) isolates manifold's own cost; plumber /hello figures alongside
#  (c) burst: 200 requests at once, --max 4 workers, 100 ms each: errors, FIFO order, longest wait
#  (d) cold burst: the same burst into pools that start with ONE R worker and may grow to 4:
#      manifold --spare 0/1/3, valve --n-min 1; faucet (no autoscaling: all 4 started) alongside.
#      At rest nothing is busy, so the --min worker is itself the one idle spare: --spare 1 only
#      differs once a request runs; --spare 3 has all 4 waiting (measured here at load 0.3:
#      longest wait 5.00 s vs 5.40 s with --spare 0, ideal 5.00 s)
#  (e) slow clients (issue 32): a closed loop of 4 fast /hello clients for 10 s against the Python
#      fixture worker with --min 2 --max 2 --per-worker 1, alone, then beside 20 clients crawling
#      through a 16 MiB answer at 2 KB/s, buffered (the default) and with --buffer-response 0
#      (streamed, as before issue 32). 16 MiB because on loopback the kernel's socket buffers
#      soak up a 2 MiB answer whole, buffered or not.
#  (f) --preload (issue 32, bench/manifold_preload.py): worker start with and without it for
#      plumber and the Shiny replay app, the cold burst's excess over the ideal, 8 Shiny workers'
#      total PSS, with valve's worker start and cold burst in the same run for the ratio; it
#      prints its own ratio lines after the others.
# Every server runs in its own session (setsid) and is stopped as a whole group at the end.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
export PATH="$HOME/.cargo/bin:$PATH"
PEERS_TARGET=${MANIFOLD_PEERS_TARGET:-/tmp/manifold-bench-peers}
API="$ROOT/crates/manifold/tests/fixtures/plumber/api.R"
N=${N:-100}
C=${C:-5}
WARM=${WARM:-10}  # warm-up requests per worker
ROUNDS=${ROUNDS:-5}
HN=${HN:-500}
SN=${SN:-2000}
SROUNDS=${SROUNDS:-9}
WORK=$(mktemp -d)
GROUPS_STARTED=()

cleanup() {
  for g in "${GROUPS_STARTED[@]}"; do kill -TERM -- "-$g" 2>/dev/null || true; done
  sleep 1
  for g in "${GROUPS_STARTED[@]}"; do kill -KILL -- "-$g" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT

install_peer() { # binary, cargo install args...
  local bin=$1; shift
  if ! command -v "$bin" >/dev/null; then
    echo "installing $bin (cargo install --locked $*) ..."
    CARGO_TARGET_DIR="$PEERS_TARGET" cargo install --locked "$@"
  fi
}
install_peer oha oha
install_peer valve valve-rs --no-default-features
install_peer faucet faucet-server
cargo build --release -q -p manifold
MANIFOLD="$ROOT/target/release/manifold"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

start() { # log-name, command... ; runs in a new session, remembers its group
  local name=$1; shift
  setsid "$@" >"$WORK/$name.log" 2>&1 &
  GROUPS_STARTED+=("$!")
  LAST_GROUP=$!
}

stop() { # group
  kill -TERM -- "-$1" 2>/dev/null || true
  for _ in $(seq 50); do kill -0 -- "-$1" 2>/dev/null || return 0; sleep 0.1; done
  kill -KILL -- "-$1" 2>/dev/null || true
}

http_get() { # url -> body on stdout (python3 is needed anyway; no curl dependency)
  python3 -c 'import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=2).read().decode())' "$1" 2>/dev/null
}

wait_http() { # url
  for _ in $(seq 1200); do
    if http_get "$1" >/dev/null; then return 0; fi
    sleep 0.1
  done
  echo "no answer from $1" >&2
  return 1
}

oha_run() { # label, url, extra oha args...
  local label=$1 url=$2; shift 2
  oha --no-tui --output-format json "$@" "$url" >"$WORK/$label.json"
  python3 bench/manifold_oha.py "$label" "$WORK/$label.json"
}

sleep_round() { # label, base url, workers
  oha_run "$1-warmup" "$2/sleep?ms=500" -n $((WARM * $3)) -c "$C" >/dev/null
  oha_run "$1" "$2/sleep?ms=500" -n "$N" -c "$C"
}

echo "== (a) $N x /sleep?ms=500 at concurrency $C ($WARM warm-up requests per worker first; ideal 10 req/s, p99 ~501 ms)"
P=$(free_port)
start plumber Rscript -e "plumber::pr_run(plumber::pr('$API'), host='127.0.0.1', port=$P, docs=FALSE, quiet=TRUE)"
G=$LAST_GROUP; wait_http "http://127.0.0.1:$P/hello"
sleep_round "one-plumber" "http://127.0.0.1:$P" 1
stop "$G"

# The ceiling: C plumbers, each hit by its own sequential client (new connection per request, so
# no delayed-ACK stall), all at once. No proxy can beat this on this machine.
CP=(); CG=()
for i in $(seq "$C"); do
  P=$(free_port); CP+=("$P")
  start "ceiling-$i" Rscript -e "plumber::pr_run(plumber::pr('$API'), host='127.0.0.1', port=$P, docs=FALSE, quiet=TRUE)"
  CG+=("$LAST_GROUP")
done
for P in "${CP[@]}"; do wait_http "http://127.0.0.1:$P/hello"; done
PIDS=()
for P in "${CP[@]}"; do oha --no-tui -n "$WARM" -c 1 --disable-keepalive "http://127.0.0.1:$P/sleep?ms=500" >/dev/null & PIDS+=($!); done
wait "${PIDS[@]}"  # (a bare `wait` would also wait for the servers)
PIDS=()
for i in $(seq "$C"); do
  oha --no-tui --output-format json -n $((N / C)) -c 1 --disable-keepalive "http://127.0.0.1:${CP[$((i - 1))]}/sleep?ms=500" >"$WORK/ceiling-$i.json" &
  PIDS+=($!)
done
wait "${PIDS[@]}"
python3 - "$WORK" "$C" "$N" <<'PY'
import json, sys
work, c, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
runs = [json.load(open(f"{work}/ceiling-{i}.json")) for i in range(1, c + 1)]
wall = max(r["summary"]["total"] for r in runs)
p50 = sorted(r["latencyPercentiles"]["p50"] for r in runs)[c // 2] * 1000
p99 = max(r["latencyPercentiles"]["p99"] for r in runs) * 1000
print(f"{'ceiling: ' + str(c) + ' plumbers direct':<28} {n / wall:9.2f} req/s   p50 {p50:9.3f} ms   p99 {p99:9.3f} ms   (slowest of {c} clients)")
open(f"{work}/ceiling.json.line", "w").write(f"{n / wall} {p50} {p99} 0\n")
PY
for g in "${CG[@]}"; do stop "$g"; done

P=$(free_port)
start manifold "$MANIFOLD" --listen "127.0.0.1:$P" --min "$C" --max "$C" plumber "$API"
G=$LAST_GROUP; wait_http "http://127.0.0.1:$P/__manifold__/status"
sleep_round "manifold --min 5 --max 5" "http://127.0.0.1:$P" "$C"
http_get "http://127.0.0.1:$P/__manifold__/status" | python3 -c 'import json,sys; d=json.load(sys.stdin); print("   manifold workers after the run:", [(w["id"], w["state"], w["served"]) for w in d["workers"]])'
stop "$G"

P=$(free_port)
mkdir -p "$WORK/valve" && cp "$API" "$WORK/valve/plumber.R"
start valve bash -c "cd '$WORK/valve' && exec valve -f plumber.R -n $C --n-min $C -p $P -h 127.0.0.1"
G=$LAST_GROUP
if wait_http "http://127.0.0.1:$P/hello"; then
  sleep_round "valve -n 5" "http://127.0.0.1:$P" "$C"
fi
stop "$G"

P=$(free_port)
mkdir -p "$WORK/faucet" && cp "$API" "$WORK/faucet/plumber.R"
start faucet faucet --host "127.0.0.1:$P" start --workers "$C" --dir "$WORK/faucet"
G=$LAST_GROUP
if wait_http "http://127.0.0.1:$P/hello"; then
  sleep_round "faucet -w 5" "http://127.0.0.1:$P" "$C"
fi
stop "$G"

echo "== (b) hello latency, one request at a time: the same worker directly vs through manifold --max 1 (access log + histograms on)"
echo "   steady worker (bench/manifold_hello.py, one thread), keep-alive client: $SROUNDS alternating rounds of $SN"
P=$(free_port)
# Everything on: access log (a real file) and the latency histograms (always kept).
start manifold-steady "$MANIFOLD" --listen "127.0.0.1:$P" --max 1 --access-log "$WORK/steady-access.jsonl" -- python3 "$ROOT/bench/manifold_hello.py" "{port}"
G=$LAST_GROUP; wait_http "http://127.0.0.1:$P/__manifold__/status"
W=$(http_get "http://127.0.0.1:$P/__manifold__/status" | python3 -c 'import json,sys; print(json.load(sys.stdin)["workers"][0]["port"])')
oha --no-tui -n "$SN" -c 1 "http://127.0.0.1:$P/hello" >/dev/null
for r in $(seq "$SROUNDS"); do
  oha_run "steady-direct-$r" "http://127.0.0.1:$W/hello" -n "$SN" -c 1 >/dev/null
  oha_run "steady-manifold-$r" "http://127.0.0.1:$P/hello" -n "$SN" -c 1 >/dev/null
done
stop "$G"
echo "   plumber /hello (new client connection per request, oha --disable-keepalive): $ROUNDS alternating rounds of $HN"
P=$(free_port)
start manifold-hello "$MANIFOLD" --listen "127.0.0.1:$P" --max 1 plumber "$API"
G=$LAST_GROUP; wait_http "http://127.0.0.1:$P/__manifold__/status"
W=$(http_get "http://127.0.0.1:$P/__manifold__/status" | python3 -c 'import json,sys; print(json.load(sys.stdin)["workers"][0]["port"])')
for r in $(seq "$ROUNDS"); do
  oha_run "hello-direct-$r" "http://127.0.0.1:$W/hello" -n "$HN" -c 1 --disable-keepalive
  oha_run "hello-manifold-$r" "http://127.0.0.1:$P/hello" -n "$HN" -c 1 --disable-keepalive
done
echo "   keep-alive client connection (shows httpuv's delayed-ACK stall on direct reuse):"
oha_run "hello-direct-keepalive" "http://127.0.0.1:$W/hello" -n 200 -c 1
oha_run "hello-manifold-keepalive" "http://127.0.0.1:$P/hello" -n 200 -c 1
stop "$G"

echo "== (c) burst: 200 requests at once, --max 4, 100 ms each"
P=$(free_port)
start manifold-burst "$MANIFOLD" --listen "127.0.0.1:$P" --min 4 --max 4 plumber "$API"
G=$LAST_GROUP; wait_http "http://127.0.0.1:$P/__manifold__/status"
{ python3 bench/manifold_burst.py "http://127.0.0.1:$P/sleep?ms=100" 200 4 100 || true; } | tee "$WORK/burst.txt"
stop "$G"

echo "== (d) cold burst: 200 requests at once into a pool started with 1 worker (up to 4), 100 ms each"
for spare in 0 1 3; do
  P=$(free_port)
  start "manifold-cold-$spare" "$MANIFOLD" --listen "127.0.0.1:$P" --min 1 --max 4 --spare "$spare" plumber "$API"
  G=$LAST_GROUP; wait_http "http://127.0.0.1:$P/__manifold__/status"
  sleep 3  # the spare (if any) starts; the pool is otherwise idle
  echo -n "   manifold --min 1 --max 4 --spare $spare: "
  { python3 bench/manifold_burst.py "http://127.0.0.1:$P/sleep?ms=100" 200 4 100 || true; } | tee "$WORK/cold-manifold-$spare.txt"
  stop "$G"
done
P=$(free_port)
mkdir -p "$WORK/valve-cold" && cp "$API" "$WORK/valve-cold/plumber.R"
start valve-cold bash -c "cd '$WORK/valve-cold' && exec valve -f plumber.R -n 4 --n-min 1 -p $P -h 127.0.0.1"
G=$LAST_GROUP
if wait_http "http://127.0.0.1:$P/hello"; then
  sleep 3
  echo -n "   valve -n 4 --n-min 1: "
  { python3 bench/manifold_burst.py "http://127.0.0.1:$P/sleep?ms=100" 200 4 100 || true; } | tee "$WORK/cold-valve.txt"
fi
stop "$G"
P=$(free_port)
mkdir -p "$WORK/faucet-cold" && cp "$API" "$WORK/faucet-cold/plumber.R"
start faucet-cold faucet --host "127.0.0.1:$P" start --workers 4 --dir "$WORK/faucet-cold"
G=$LAST_GROUP
if wait_http "http://127.0.0.1:$P/hello"; then
  sleep 3
  echo -n "   faucet -w 4 (all started; no autoscaling): "
  { python3 bench/manifold_burst.py "http://127.0.0.1:$P/sleep?ms=100" 200 4 100 || true; } | tee "$WORK/cold-faucet.txt"
fi
stop "$G"

echo "== (e) slow clients: fast /hello p50/p99 and req/s, alone and beside 20 crawlers of a 16 MiB answer"
FIXTURE="$ROOT/crates/manifold/tests/fixtures/worker.py"
for mode in "buffered:64MiB" "streamed:0"; do
  P=$(free_port)
  start "manifold-slow-${mode%%:*}" "$MANIFOLD" --listen "127.0.0.1:$P" --min 2 --max 2 --per-worker 1 \
    --buffer-response "${mode#*:}" --queue-timeout 10s -- python3 "$FIXTURE" "{port}"
  G=$LAST_GROUP; wait_http "http://127.0.0.1:$P/__manifold__/status"
  if [ "${mode%%:*}" = buffered ]; then
    echo -n "   alone:                    "; python3 bench/manifold_slow.py "http://127.0.0.1:$P" 0 4 10 || true
  fi
  echo -n "   ${mode%%:*} (--buffer-response ${mode#*:}): "
  python3 bench/manifold_slow.py "http://127.0.0.1:$P" 20 4 10 16384 2048 || true
  stop "$G"
done

echo "== (f) --preload: worker start, cold burst, memory of 8 Shiny workers"
python3 bench/manifold_preload.py "$MANIFOLD" | tee "$WORK/preload.txt" || true

echo "== ratio lines"
line() { cat "$WORK/$1.json.line"; }
read -r d_rps d_p50 d_p99 _ < <(line one-plumber)
read -r m_rps m_p50 m_p99 m_err < <(line "manifold --min 5 --max 5")
python3 - "$d_rps" "$m_rps" "$m_p99" "$m_err" <<'PY'
import sys
d, m, p99, err = map(float, sys.argv[1:])
ok = "OK" if m >= 9.9 and p99 <= 520 and err == 0 else "MISSED"
print(f"(a) manifold --max 5 (--min 5, warm) / one plumber: {m / d:.2f}x req/s ({m:.2f} vs {d:.2f}); p99 {p99:.1f} ms; targets >= 9.9 req/s, p99 <= 520 ms: {ok}")
PY
read -r c_rps _ c_p99 _ < <(line ceiling)
python3 -c "import sys; m,c,mp,cp=map(float,sys.argv[1:5]); print(f'(a) manifold / ceiling ({sys.argv[5]} plumbers direct, no proxy): {m/c:.3f}x req/s ({m:.2f} vs {c:.2f}), p99 {mp:.1f} vs {cp:.1f} ms')" "$m_rps" "$c_rps" "$m_p99" "$c_p99" "$C"
for peer in "valve -n 5" "faucet -w 5"; do
  if [ -f "$WORK/$peer.json.line" ]; then
    read -r p_rps _ p_p99 _ < <(line "$peer")
    python3 -c "import sys; m,p,mp,pp=map(float,sys.argv[1:5]); print(f'(a) manifold / {sys.argv[5]}: {m/p:.2f}x req/s, p99 {mp:.1f} vs {pp:.1f} ms')" "$m_rps" "$p_rps" "$m_p99" "$p_p99" "$peer"
  else
    echo "(a) $peer: did not run (see its log above)"
  fi
done
python3 - "$WORK" "$ROUNDS" "$SROUNDS" <<'PY'
import statistics, sys
work, rounds, srounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
p50 = lambda name: float(open(f"{work}/{name}.json.line").read().split()[1])
def paired(kind, n):
    d = [p50(f"{kind}-direct-{r}") for r in range(1, n + 1)]
    m = [p50(f"{kind}-manifold-{r}") for r in range(1, n + 1)]
    added = [(b - a) * 1000 for a, b in zip(d, m)]
    return statistics.median(d), statistics.median(m), statistics.median(added), min(added), max(added)
d, m, added, lo, hi = paired("steady", srounds)
ok = "OK" if added <= 100 else "MISSED"
print(f"(b) steady hello worker p50 direct {d * 1000:.0f} us, via manifold {m * 1000:.0f} us: added {added:.0f} us "
      f"(median of {srounds} paired rounds, range {lo:.0f}..{hi:.0f}; target <= 100 us: {ok})")
d, m, added, lo, hi = paired("hello", rounds)
print(f"(b) plumber /hello p50 direct {d:.3f} ms, via manifold {m:.3f} ms: added {added:.0f} us "
      f"(new client connection each; median of {rounds} paired rounds, range {lo:.0f}..{hi:.0f})")
ka_d, ka_m = p50("hello-direct-keepalive"), p50("hello-manifold-keepalive")
print(f"(b) plumber keep-alive client: direct {ka_d:.3f} ms (delayed-ACK stall) vs via manifold {ka_m:.3f} ms: {ka_d / ka_m:.1f}x faster")
PY
echo "(c) $(cat "$WORK/burst.txt")"
python3 - "$WORK" <<'PY'
import re, sys
work = sys.argv[1]
def longest(name):
    try:
        m = re.search(r"longest wait ([0-9.]+) s", open(f"{work}/{name}.txt").read())
        return float(m.group(1)) if m else None
    except OSError:
        return None
base = longest("cold-manifold-0")
for name, label in [("cold-manifold-1", "manifold --spare 1"), ("cold-manifold-0", "manifold --spare 0"),
                    ("cold-valve", "valve --n-min 1"), ("cold-faucet", "faucet -w 4 (warm)")]:
    w = longest(name)
    if w is None:
        print(f"(d) cold burst {label}: did not run")
    elif base:
        print(f"(d) cold burst {label}: longest wait {w:.3f} s ({w / base:.2f}x manifold --spare 0)")
PY
grep '^(f)' "$WORK/preload.txt" || echo "(f) --preload: did not run (see its output above)"
echo "   load average: $(cut -d' ' -f1-3 /proc/loadavg)"
