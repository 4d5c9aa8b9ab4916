#!/usr/bin/env bash
# What `make demo` needs before it builds: says exactly what is missing and how to get it (exit 1),
# and installs the one optional library (ISA-L, faster ingest) when it may (root, or sudo without a
# password); otherwise it notes that the build falls back to zlib.
set -uo pipefail
missing=()

# version_ge A B: A >= B for dotted versions.
version_ge() { [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n1)" = "$2" ]; }

rust=$(rustc --version 2>/dev/null | awk '{print $2}')
if [ -z "$rust" ] || ! command -v cargo >/dev/null; then
  missing+=("Rust >= 1.85 (cargo, rustc): install with rustup (https://rustup.rs), then open a new shell")
elif ! version_ge "$rust" 1.85.0; then
  missing+=("Rust >= 1.85, found $rust: run 'rustup update stable'")
fi

node=$(node --version 2>/dev/null | tr -d v)
if [ -z "$node" ] || ! command -v npm >/dev/null; then
  missing+=("Node.js >= 20.19 with npm (the web UI is built with Vite 8): from nodejs.org or your distribution's nodejs 20.19+/22.12+")
elif ! { version_ge "$node" 22.12.0 || { version_ge "$node" 20.19.0 && ! version_ge "$node" 21.0.0; }; }; then
  missing+=("Node.js ^20.19 or >= 22.12 (Vite 8 needs it), found $node: Debian 12's own nodejs is too old; use nodejs.org's build")
fi

command -v cc >/dev/null || missing+=("a C compiler (cc; SQLite and the inflate shim are compiled): apt-get install build-essential")

if [ ${#missing[@]} -gt 0 ]; then
  for m in "${missing[@]}"; do echo "missing: $m" >&2; done
  exit 1
fi

# Optional: ISA-L inflate (~1.7x zlib). Without it the build uses zlib-rs, prints a cargo warning and
# ingests about 25% slower; the answers are the same.
if ! [ -e /usr/include/isa-l/igzip_lib.h ]; then  # the header build.rs looks for
  if command -v apt-get >/dev/null && { [ "$(id -u)" -eq 0 ] || sudo -n true 2>/dev/null; }; then
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo -n"
    echo "prereqs: installing libisal-dev (faster ingest)"
    $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq libisal-dev >/dev/null \
      || echo "prereqs: could not install libisal-dev; building with zlib instead (about 25% slower ingest)"
  else
    echo "prereqs: note: libisal-dev is not installed; building with zlib instead (about 25% slower ingest;" \
      "'sudo apt-get install libisal-dev', then make demo again, to use it)"
  fi
fi
echo "prereqs: ok (rust $rust, node $node)"
