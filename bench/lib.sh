# Shared by the bench/*.sh scripts (sourced): a temp dir and the background processes started
# here, both cleaned up on exit, and loopback port helpers.
# usage: . bench/lib.sh NAME   -> sets TMP=/tmp/bench-NAME.XXXXXX; append server pids to PIDS.
TMP="$(mktemp -d "/tmp/bench-$1.XXXXXX")"
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$TMP"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 1 600); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.2; done; echo "port $1 never opened" >&2; return 1; }
