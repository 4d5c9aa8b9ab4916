#!/usr/bin/env bash
# make bench-manifold: manifold side by side with one plumber, valve and faucet (see issue 6).
#  (a) 100 x /sleep?ms=500 at concurrency 5 (valve's benchmark): req/s, p50, p99 per contender
#  (b) /hello latency, one connection at a time: direct plumber vs through manifold (added p50)
#  (c) burst: 200 requests at once, --max 4 workers, 100 ms each: errors, FIFO order, longest wait
# Every server runs in its own session (setsid) and is stopped as a whole group at the end.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
export PATH="$HOME/.cargo/bin:$PATH"
PEERS_TARGET=${MANIFOLD_PEERS_TARGET:-/tmp/manifold-bench-peers}
API="$ROOT/crates/manifold/tests/fixtures/plumber/api.R"
N=${N:-100}
C=${C:-5}
WARM=${WARM:-25}
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

wait_http() { # url
  for _ in $(seq 1200); do
    if curl -s -o /dev/null -m 2 "$1"; then return 0; fi
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

sleep_round() { # label, base url
  oha_run "$1-warmup" "$2/sleep?ms=500" -n "$WARM" -c "$C" >/dev/null
  oha_run "$1" "$2/sleep?ms=500" -n "$N" -c "$C"
}

echo "== (a) $N x /sleep?ms=500 at concurrency $C (after $WARM warm-up requests each; ideal 10 req/s, p99 ~501 ms)"
P=$(free_port)
start plumber Rscript -e "plumber::pr_run(plumber::pr('$API'), host='127.0.0.1', port=$P, docs=FALSE, quiet=TRUE)"
G=$LAST_GROUP; wait_http "http://127.0.0.1:$P/hello"
sleep_round "one-plumber" "http://127.0.0.1:$P"
echo "== (b) /hello, one request at a time, new client connection each (oha --disable-keepalive)"
oha_run "hello-direct" "http://127.0.0.1:$P/hello" -n 2000 -c 1 --disable-keepalive
oha_run "hello-direct-keepalive" "http://127.0.0.1:$P/hello" -n 200 -c 1
stop "$G"

P=$(free_port)
start manifold "$MANIFOLD" --listen "127.0.0.1:$P" --max 5 plumber "$API"
G=$LAST_GROUP; wait_http "http://127.0.0.1:$P/__manifold__/status"
oha_run "hello-manifold" "http://127.0.0.1:$P/hello" -n 2000 -c 1 --disable-keepalive
oha_run "hello-manifold-keepalive" "http://127.0.0.1:$P/hello" -n 200 -c 1
echo "== (a) continued"
sleep_round "manifold --max 5" "http://127.0.0.1:$P"
stop "$G"

P=$(free_port)
mkdir -p "$WORK/valve" && cp "$API" "$WORK/valve/plumber.R"
start valve bash -c "cd '$WORK/valve' && exec valve -f plumber.R -n 5 --n-min 1 -p $P -h 127.0.0.1"
G=$LAST_GROUP
if wait_http "http://127.0.0.1:$P/hello"; then
  sleep_round "valve -n 5" "http://127.0.0.1:$P"
fi
stop "$G"

P=$(free_port)
mkdir -p "$WORK/faucet" && cp "$API" "$WORK/faucet/plumber.R"
start faucet faucet --host "127.0.0.1:$P" start --workers 5 --dir "$WORK/faucet"
G=$LAST_GROUP
if wait_http "http://127.0.0.1:$P/hello"; then
  sleep_round "faucet -w 5" "http://127.0.0.1:$P"
fi
stop "$G"

echo "== (c) burst: 200 requests at once, --max 4, 100 ms each"
P=$(free_port)
start manifold-burst "$MANIFOLD" --listen "127.0.0.1:$P" --min 4 --max 4 plumber "$API"
G=$LAST_GROUP; wait_http "http://127.0.0.1:$P/__manifold__/status"
python3 bench/manifold_burst.py "http://127.0.0.1:$P/sleep?ms=100" 200 4 100 | tee "$WORK/burst.txt"
stop "$G"

echo "== ratio lines"
line() { cat "$WORK/$1.json.line"; }
read -r d_rps d_p50 d_p99 _ < <(line one-plumber)
read -r m_rps m_p50 m_p99 m_err < <(line "manifold --max 5")
python3 - "$d_rps" "$m_rps" "$m_p99" "$m_err" <<'PY'
import sys
d, m, p99, err = map(float, sys.argv[1:])
ok = "OK" if m >= 9.9 and p99 <= 520 and err == 0 else "MISSED"
print(f"(a) manifold --max 5 / one plumber: {m / d:.2f}x req/s ({m:.2f} vs {d:.2f}); p99 {p99:.1f} ms; targets >= 9.9 req/s, p99 <= 520 ms: {ok}")
PY
for peer in "valve -n 5" "faucet -w 5"; do
  if [ -f "$WORK/$peer.json.line" ]; then
    read -r p_rps _ p_p99 _ < <(line "$peer")
    python3 -c "import sys; m,p,mp,pp=map(float,sys.argv[1:]); print(f'(a) manifold / {sys.argv[5]}: {m/p:.2f}x req/s, p99 {mp:.1f} vs {pp:.1f} ms')" "$m_rps" "$p_rps" "$m_p99" "$p_p99" "$peer"
  else
    echo "(a) $peer: did not run (see its log above)"
  fi
done
read -r _ hd _ _ < <(line hello-direct)
read -r _ hm _ _ < <(line hello-manifold)
python3 -c "import sys; d,m=map(float,sys.argv[1:]); a=(m-d)*1000; print(f'(b) /hello p50 direct {d:.3f} ms, via manifold {m:.3f} ms: added {a:.0f} us (target <= 100 us: {\"OK\" if a <= 100 else \"MISSED\"})')" "$hd" "$hm"
echo "(c) $(cat "$WORK/burst.txt")"
