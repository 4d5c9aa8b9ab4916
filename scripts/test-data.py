#!/usr/bin/env python3
"""Make the real test data available and print where it is.

The tests read real CRAN logs and real shinyloadtest files. On the team's machines they sit in
../shared/data beside the checkout; anyone else gets the same files from their public sources (the
CRAN log server, shinyloadtest's repository at a pinned commit), downloaded once into a cache and
checked against the SHA-256 sums committed in data/test-data.tsv.

    scripts/test-data.py [--locate] [--root DIR] [--manifest FILE]

Prints the data root (holding cranlogs/ and shinyloadtest/) on stdout. The root is --root, else
$CRANWHALES_TEST_DATA, else ../shared/data when that exists, else the cache
($XDG_CACHE_HOME or ~/.cache)/cranwhales/test-data. Missing files are downloaded into it, except
into ../shared/data, which is only checked. A file whose sum does not match is never kept.
--locate prints the root without checking anything. Errors are one line on stderr, exit status 1.
"""

import argparse
import gzip
import hashlib
import os
import sys
import tempfile
import urllib.error
import urllib.request

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TIMEOUT_S = 60


class DataError(Exception):
    """A missing or wrong file, said in one line."""


def read_manifest(path):
    rows = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            parts = line.split("\t")
            if len(parts) != 3 or len(parts[1]) != 64:
                raise DataError(f"{path}:{n}: expected 'path<TAB>sha256<TAB>url'")
            rows.append(tuple(parts))
    return rows


def digest(path, rel):
    """SHA-256 of a file; of its decompressed content for a .csv.gz `rel` (see the manifest)."""
    h = hashlib.sha256()
    opener = gzip.open if rel.endswith(".csv.gz") else open
    try:
        with opener(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
    except (OSError, EOFError) as e:
        return f"unreadable ({e})"
    return h.hexdigest()


def download(url, dest, want, rel):
    """Fetch url into dest through a temp file; keep it only if its sum matches."""
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(dest), suffix=".part")
    try:
        with os.fdopen(fd, "wb") as out:
            try:
                with urllib.request.urlopen(url, timeout=TIMEOUT_S) as resp:
                    while block := resp.read(1 << 20):
                        out.write(block)
            except urllib.error.HTTPError as e:
                raise DataError(f"test data {rel}: {url}: HTTP {e.code}") from None
            except (urllib.error.URLError, OSError) as e:
                reason = getattr(e, "reason", e)
                raise DataError(
                    f"test data {rel} is missing and cannot be downloaded from {url} ({reason}); "
                    "put the shared data at ../shared/data or connect to the internet"
                ) from None
        got = digest(tmp, rel)
        if got != want:
            raise DataError(f"test data {rel}: {url}: SHA-256 {got[:16]}… is not the expected {want[:16]}…")
        os.replace(tmp, dest)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def ensure(root, rows, fetch):
    missing = []
    for i, (rel, want, url) in enumerate(rows, 1):
        path = os.path.join(root, rel)
        if os.path.exists(path) and digest(path, rel) == want:
            continue
        if not fetch:
            state = "differs from its SHA-256" if os.path.exists(path) else "is missing"
            missing.append(f"{rel} {state}")
            continue
        print(f"test-data: downloading {rel} ({i}/{len(rows)})", file=sys.stderr, flush=True)
        download(url, path, want, rel)
    if missing:
        more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
        raise DataError(f"test data in {root}: {missing[0]}{more}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", help="data root to fill (default: ../shared/data or the cache)")
    ap.add_argument("--manifest", default=os.path.join(REPO, "data", "test-data.tsv"))
    ap.add_argument("--locate", action="store_true", help="print the root, check nothing")
    args = ap.parse_args()
    shared = os.path.realpath(os.path.join(REPO, "..", "shared", "data"))
    root = args.root or os.environ.get("CRANWHALES_TEST_DATA")
    if not root:
        if os.path.isdir(os.path.join(shared, "cranlogs")):
            root = shared
        else:
            cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
            root = os.path.join(cache, "cranwhales", "test-data")
    root = os.path.realpath(root)
    if args.locate:
        print(root)
        return 0
    try:
        # The team's copy is read-only: check it, never write into it.
        ensure(root, read_manifest(args.manifest), fetch=root != shared)
    except DataError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(root)
    return 0


if __name__ == "__main__":
    sys.exit(main())
