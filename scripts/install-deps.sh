#!/usr/bin/env bash
# Installs what `make test` needs on a fresh machine; skips whatever is already there.
set -euo pipefail
APT_PACKAGES=(chromium r-base-core r-cran-shiny r-cran-shinydashboard r-cran-plumber r-cran-vroom nginx-light wrk unzip time fonts-dejavu-core python3 python3-venv libisal-dev haproxy prometheus)
missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: apt packages: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# deploy/check.py: Kubernetes API schemas (bundled, checked offline) in the project's venv.
VENV="$(cd "$(dirname "$0")/.." && pwd)/.venv"
if ! [ -x "$VENV/bin/kubernetes-validate" ]; then
  echo "install-deps: python venv $VENV (kubernetes-validate)"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q --disable-pip-version-check kubernetes-validate==1.37.0
fi
rustup component list --installed 2>/dev/null | grep -q '^clippy' || rustup component add clippy
rustup component list --installed 2>/dev/null | grep -q '^rustfmt' || rustup component add rustfmt
echo "install-deps: ok"
