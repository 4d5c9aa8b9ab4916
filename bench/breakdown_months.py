"""The months line of `make bench-ingest` (PART=months), for issue 34's store budget: what would
packing a closed month's breakdowns by package save, exactly (every day's counts kept)?

Breakdowns are stored a day at a time (`store::breakdown`): per day, its packages' parts in zstd
chunks that fill a 16 KB page, its keys numbered for the day. This ingests the real days of the
months with most stored days (the test data holds 14-16 days of each) into a store of their own,
decodes each month's stored chunks, and encodes the same counts two ways, each compressed with
zstd level 9 in chunks of ~15.6 KB (a page each):
  A: each package's parts of the month's days, as stored, one after another;
  B: a month matrix per package: its keys once (country and build strings numbered over the
     month), then per key a bitmap of the package's days it has and its counts on those days.
It prints, per month, the stored chunks and pages against each form; the budget's projection of
the breakdowns (`store_history.py`'s by-table line) scales by the pages ratio.

Usage: breakdown_months.py CRANLOGS_DIR CRANWHALES_BIN WORK_DIR (needs the `zstandard` module).
"""
import collections, os, sqlite3, subprocess, sys
import zstandard

PIDS = 1 << 20
PAGE = 16384

def rv(b, i):
    """A varint of b at i: (value, next i)."""
    v = s = 0
    while True:
        x = b[i]; i += 1; v |= (x & 0x7f) << s; s += 7
        if x < 0x80: return v, i

def wv(out, v):
    """Appends varint v."""
    while v >= 0x80: out.append(v & 0x7f | 0x80); v >>= 7
    out.append(v)

def rcounts(b, i):
    """A key's counts (`store::breakdown::counts`): (downloads, whales, small, repeats, whale_small, whale_repeats)."""
    x, i = rv(b, i); d, tag = x >> 2, x & 3
    w = s = r = ws = wr = 0
    if tag == 1: w = d
    if tag >= 2: w, i = rv(b, i)
    if tag == 3:
        s, i = rv(b, i); r, i = rv(b, i)
        if w: ws, i = rv(b, i); wr, i = rv(b, i)
    return (d, w, s, r, ws, wr), i

def wcounts(out, c):
    """Appends counts as the store writes them."""
    d, w, s, r, ws, wr = c
    tag = 3 if s + r else (0 if w == 0 else (1 if w == d else 2))
    wv(out, d << 2 | tag)
    if tag >= 2: wv(out, w)
    if tag == 3:
        wv(out, s); wv(out, r)
        if w: wv(out, ws); wv(out, wr)

def rtext(b, i):
    """A version: varint length + 1 (0: missing), then its bytes."""
    n, i = rv(b, i)
    if n == 0: return None, i
    return bytes(b[i:i+n-1]), i + n - 1

def decode_keys(b):
    """A day's `breakdown_keys` blob (version 11): its key strings and its R builds."""
    n, i = rv(b, 0); keys = [None]
    for _ in range(n):
        t, i = rtext(b, i); keys.append(t)
    flags, i = rv(b, i); assert flags & 6 == 6, flags
    nu, i = rv(b, i)
    for _ in range(nu):
        _, i = rv(b, i); mask, i = rv(b, i)
        for d in range(4):
            if mask >> d & 1: _, i = rv(b, i)
    nb, i = rv(b, i); builds = []
    for _ in range(nb):
        a, i = rv(b, i); c, i = rv(b, i); e, i = rv(b, i); builds.append((keys[a], keys[c], keys[e]))
    return keys, builds

def decode_part(b, keys, builds):
    """A package's part of a day: its versions, countries and builds, each [(key, counts)]."""
    i = 0; n, i = rv(b, i); vers = []
    for _ in range(n):
        t, i = rtext(b, i); c, i = rcounts(b, i); vers.append((t, c))
    dims = []
    for table in (keys, builds):
        n, i = rv(b, i); last = 0; ents = []
        for _ in range(n):
            d, i = rv(b, i); last += d; c, i = rcounts(b, i); ents.append((table[last], c))
        dims.append(ents)
    assert i == len(b)
    return vers, dims[0], dims[1]

def measure(con, month):
    """The stored bytes of `month`'s breakdowns and those of forms A and B."""
    days = [r[0] for r in con.execute("select unixepoch(date)/86400 from days where substr(date,1,7)=? order by date", (month,))]
    base_chunks = base_pages = base_keys = n_chunks = 0
    parts = collections.defaultdict(dict)   # id -> day -> raw part bytes
    dec = collections.defaultdict(dict)     # id -> day -> decoded
    dz = zstandard.ZstdDecompressor()
    for n in days:
        kb = con.execute("select keys from breakdown_keys where day=?", (n,)).fetchone()[0]
        base_keys += len(kb)
        keys, builds = decode_keys(kb)
        for key, data in con.execute("select day_chunk, data from breakdowns where day_chunk between ? and ?", (n * PIDS, n * PIDS + PIDS - 1)):
            base_chunks += len(data); n_chunks += 1; base_pages += 16384 * max(1, -(-len(data) // 16300))
            raw = dz.decompress(data); first = key % PIDS; i = 0
            while i < len(raw):
                k, i = rv(raw, i); ln, i = rv(raw, i); p = raw[i:i+ln]; i += ln
                parts[first + k][n] = p
                dec[first + k][n] = decode_part(p, keys, builds)
        # The decode checked against the store's own totals: a package's versions hold each of
        # its downloads once (no whale is left out of versions).
        for pid, total in con.execute("select day_package % ?, downloads from packages where day_package between ? and ?",
                                      (PIDS, n * PIDS, n * PIDS + PIDS - 1)):
            got = sum(c[0] for _, c in dec[pid][n][0]) if n in dec.get(pid, {}) else 0
            assert got == total, f"day {n} package {pid}: versions sum to {got}, packages says {total}"
    def fill(items, level=9, target=15600):
        """Compress byte strings (one per package) in chunks of ~target compressed bytes."""
        cz = zstandard.ZstdCompressor(level=level); total = chunks = 0; cur = bytearray(); ratio = 0.5
        for it in items:
            cur += it
            if len(cur) * ratio >= target:
                c = cz.compress(bytes(cur)); ratio = len(c) / len(cur); total += len(c); chunks += 1; cur = bytearray()
        if cur: c = cz.compress(bytes(cur)); total += len(c); chunks += 1
        return total, chunks
    # A: day parts concatenated per package
    A = []
    for pid in sorted(parts):
        out = bytearray(); wv(out, pid); wv(out, len(parts[pid]))
        for n, p in sorted(parts[pid].items()):
            wv(out, n - days[0]); wv(out, len(p)); out += p
        A.append(bytes(out))
    a_bytes, a_chunks = fill(A)
    # B: month matrix, keys renumbered over the month (strings once a month)
    ctab, btab = {}, {}
    def num(tab, k):
        return tab.setdefault(k, len(tab) + 1)
    B = []
    for pid in sorted(dec):
        out = bytearray(); wv(out, pid)
        dmap = dec[pid]; dlist = sorted(dmap)
        bitmap = sum(1 << (n - days[0]) for n in dlist); wv(out, bitmap)
        for dim in range(3):
            cells = collections.defaultdict(dict)
            for n in dlist:
                for k, c in dmap[n][dim]: cells[k][n] = c
            if dim == 0:
                ks = sorted(cells, key=lambda k: (k is not None, k or b""))
            else:
                tab = ctab if dim == 1 else btab
                ks = sorted(cells, key=lambda k: num(tab, k))
            wv(out, len(ks)); last = 0
            for k in ks:
                if dim == 0:
                    if k is None: wv(out, 0)
                    else: wv(out, len(k) + 1); out += k
                else:
                    kn = num(tab, k); wv(out, kn - last); last = kn
                # which of the package's days have this key (bit j: its j-th day)
                bm = sum(1 << j for j, n in enumerate(dlist) if n in cells[k]); wv(out, bm)
                for n in dlist:
                    if n in cells[k]: wcounts(out, cells[k][n])
        B.append(bytes(out))
    b_bytes, b_chunks = fill(B)
    keytab = bytearray()
    for tab in (ctab, btab):
        for k in tab:
            for s in (k if isinstance(k, tuple) else (k,)):
                if s is None: wv(keytab, 0)
                else: wv(keytab, len(s) + 1); keytab += s
    b19, _ = fill(B, level=19)
    ktab = len(zstandard.ZstdCompressor(level=9).compress(bytes(keytab)))
    raw_a = sum(map(len, A)); raw_b = sum(map(len, B))
    return dict(days=len(days), packages=len(parts), stored=base_chunks + base_keys,
                stored_pages=base_pages, a=a_bytes, b=b_bytes + ktab, b19=b19 + ktab,
                b_pages=b_chunks * PAGE, chunk_avg=base_chunks / max(1, n_chunks))


def main():
    src, binary, work = sys.argv[1:4]
    files = sorted(f for f in os.listdir(src) if f.endswith(".csv.gz"))
    per_month = collections.Counter(f[:7] for f in files)
    months = sorted(m for m, n in per_month.items() if n >= 14)
    db = os.path.join(work, "months-real.db")
    if not os.path.exists(db):
        tmp = db + ".tmp"
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(tmp + suffix):
                os.remove(tmp + suffix)
        days = [os.path.join(src, f) for f in files if f[:7] in months]
        print(f"ingesting the {len(days)} real days of {', '.join(months)} into {db}", flush=True)
        subprocess.run([binary, "ingest", "--db", tmp, "--jobs", "2", *days], check=True,
                       stdout=subprocess.DEVNULL)
        os.rename(tmp, db)
    con = sqlite3.connect(db)
    big = []
    for m in months:
        r = measure(con, m)
        pages = r["b_pages"] / r["stored_pages"]
        # A chunk near a page's size takes a page of its own; smaller ones share pages, so
        # their pages ratio overstates the saving and only the bytes ratio holds.
        full = r["chunk_avg"] >= 12_000
        if full:
            big.append((r["b"] / r["stored"], pages))
        print(f"ratio: {m} ({r['days']} days, {r['packages']:,} packages) breakdowns stored "
              f"{r['stored']:,} B | by month as stored parts {r['a'] / r['stored']:.2f}x | "
              f"month matrix {r['b'] / r['stored']:.2f}x (level 19: {r['b19'] / r['stored']:.2f}x)"
              + (f", pages {pages:.2f}x (chunks of {r['chunk_avg'] / 1000:.1f} KB, a page each)"
                 if full else f" (chunks of {r['chunk_avg'] / 1000:.1f} KB share pages)"))
    if big:
        print(f"month matrix on the {len(big)} months of page-sized chunks: bytes "
              f"{min(b for b, _ in big):.2f}-{max(b for b, _ in big):.2f}x, pages "
              f"{min(p for _, p in big):.2f}-{max(p for _, p in big):.2f}x of the daily chunks "
              f"(14-16 stored days a month; a whole month amortises its keys over more days)")

if __name__ == "__main__":
    main()
