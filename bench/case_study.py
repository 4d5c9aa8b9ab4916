#!/usr/bin/env python3
"""Helpers of bench/case-study.sh (make case-study).

  case_study.py day CRANLOGS_DIR          the date of the largest day (most rows) in the logs
  case_study.py cpu SID...                CPU seconds used so far by every process of those sessions
  case_study.py procs SID...              the processes of those sessions, by name
  case_study.py stop SID...               stop every process of those sessions (TERM, then KILL)
  case_study.py sessions RUN_DIR          "done failed" counts of a run directory so far
  case_study.py analyze RUNS.tsv OUT.md   the results table, written to OUT.md and printed, then the
                                          PASS/MISS target lines

Page load and first plot are measured per session from the run's CSVs (shinycannon's format):
- page load: REQ_HOME start -> end of the asset requests right after it (the report's rule);
- first plot: REQ_HOME start -> end of the first recording line that carries a chart: the first
  WS_RECV with a plot image (Shiny) or the first GET of /api/days/<date> (cranwhales' JSON API).
Both leave out the replay's sleeps before requests and sends in between (the recorded browser and
think time), so they are time spent waiting for the server.
"""
import csv
import json
import os
import re
import sys

CLK = os.sysconf("SC_CLK_TCK")
ASSET = re.compile(r"\.(m?js|css|map|woff2?|ttf|otf|eot|png|jpe?g|gif|svg|ico|webp|avif)$", re.I)
DAY_API = re.compile(r"^/api/days/\d{4}-\d{2}-\d{2}(\?|$)")


def largest_day(cranlogs):
    """The day with the most rows, from the SOURCES.md table beside the logs (../shared/data); a data
    root filled by scripts/test-data.py has no SOURCES.md: then the largest file ("rows ?")."""
    sources = os.path.join(cranlogs, "SOURCES.md")
    best = None
    if os.path.exists(sources):
        for line in open(sources):
            m = re.match(r"\|\s*(\d{4}-\d{2}-\d{2})\s*\|\s*\w+\s*\|\s*(\d+)\s*\|", line)
            if m and (best is None or int(m.group(2)) > best[1]):
                best = (m.group(1), int(m.group(2)))
    else:
        logs = [f for f in os.listdir(cranlogs) if re.fullmatch(r"\d{4}-\d{2}-\d{2}\.csv\.gz", f)]
        if logs:
            f = max(logs, key=lambda f: os.path.getsize(os.path.join(cranlogs, f)))
            best = (f[:10], "?")
    if not best:
        sys.exit(f"{cranlogs}: no CRAN log days found")
    print(best[0], best[1])


def stat_of(pid):
    try:
        raw = open(f"/proc/{pid}/stat").read()
    except OSError:
        return None
    f = raw[raw.rindex(")") + 2 :].split()  # fields from 3 (state) on
    return {"state": f[0], "ppid": int(f[1]), "sid": int(f[3]), "cpu": int(f[11]) + int(f[12]), "reaped": int(f[13]) + int(f[14])}


def session_cpu(sids):
    """utime+stime of every live process in the sessions, plus what their reaped children used."""
    total = 0
    for d in os.listdir("/proc"):
        if d.isdigit():
            s = stat_of(d)
            if s and s["sid"] in sids:
                total += s["cpu"] + s["reaped"]
    return total / CLK


def session_pids(sids):
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            s = stat_of(d)
            if s and s["sid"] in sids and s["state"] != "Z":
                out.append(int(d))
    return out


def stop_sessions(sids, grace=10.0):
    """SIGTERM every process of the sessions, SIGKILL what is left after `grace` seconds."""
    import signal
    import time

    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
        pids = session_pids(sids)
        for p in pids:
            try:
                os.kill(p, sig)
            except OSError:
                pass
        deadline = time.monotonic() + wait
        while pids and time.monotonic() < deadline:
            time.sleep(0.1)
            pids = session_pids(sids)
        if not pids:
            return
    print(f"case-study: processes still alive after SIGKILL: {session_pids(sids)}", file=sys.stderr)


def read_recording(path):
    """{line number: event dict} with the file's own line numbers (1-based, header included)."""
    out = {}
    for i, line in enumerate(open(path), 1):
        if line.startswith("{"):
            out[i] = json.loads(line)
    return out


def chart_line(rec):
    for n in sorted(rec):
        e = rec[n]
        if e["type"] == "WS_RECV" and '"values"' in e.get("message", "") and "data:image" in e["message"]:
            return n
        if e["type"] == "REQ_GET" and DAY_API.match(e.get("url", "")):
            return n
    raise SystemExit("recording has no line that draws a chart (WS_RECV with a plot, GET /api/days/<date>)")


def read_session(path):
    rows = [r for r in csv.reader(l for l in open(path) if not l.startswith("#")) if r and r[0] != "session_id"]
    return [(r[3], int(r[4]), int(r[5]), r[6]) for r in rows]


def session_times(rows, rec, chart):
    """(ok, reason, page_load_ms, first_plot_ms) for one session."""
    last = rows[-1][0]
    if last != "PLAYBACK_DONE":
        reason = rows[-1][3] if last == "PLAYBACK_FAIL" else "unfinished"
        # surge's comment starts with the failure's kind (`kind=timeout ...`); the table shows the reason.
        reason = re.sub(r"^kind=\S+ ", "", reason)
        return False, reason or f"failed at recording line {rows[-1][2]}", None, None
    home = next((t for ev, t, _, _ in rows if ev == "REQ_HOME_START"), None)
    if home is None:
        return True, None, None, None
    # The replay's sleeps before a request or a send are the recorded user/browser time: not server
    # time. A sleep before a receive is kept (the server may be answering meanwhile).
    sleeps = []
    start = None
    for ev, t, line, _ in rows:
        if ev == "PLAYBACK_SLEEPBEFORE_START":
            start = t
        elif ev == "PLAYBACK_SLEEPBEFORE_END" and start is not None:
            if not rec.get(line, {}).get("type", "").startswith("WS_RECV"):
                sleeps.append((start, t))
            start = None

    def waited(end):
        return end - home - sum(min(b, end) - max(a, home) for a, b in sleeps if b > home and a < end)

    # Page load: the home page and the asset requests that follow it with no other step between.
    page_end, open_lines = None, set()
    for ev, t, line, _ in rows:
        if ev.startswith("PLAYBACK") or ev == "PLAYER_SESSION_CREATE":
            continue
        if ev.endswith("_START"):
            e = rec.get(line, {})
            is_asset = e.get("type") == "REQ_GET" and ASSET.search(e.get("url", "").split("?")[0])
            if page_end is not None and not is_asset:
                break
            open_lines.add(line)
        elif ev.endswith("_END") and line in open_lines:
            page_end = t if page_end is None else max(page_end, t)
    first_plot = next((t for ev, t, line, _ in rows if line == chart and ev.endswith("_END")), None)
    return (
        True,
        None,
        waited(page_end) if page_end is not None else None,
        waited(first_plot) if first_plot is not None else None,
    )


def pct(xs, p):
    if not xs:
        return None
    xs = sorted(xs)
    k = max(0, min(len(xs) - 1, -(-p * len(xs) // 100) - 1))  # nearest rank
    return xs[int(k)]


def dist(xs):
    return {"p50": pct(xs, 50), "p90": pct(xs, 90), "p99": pct(xs, 99), "max": max(xs) if xs else None}


def times(x):
    """A ratio to R sync: "2.1x", or "1/350" (0.00286x) when far below 1."""
    if x >= 0.1:
        return f"{x:.2g}x"
    return f"1/{1 / x:.0f}" if x > 0 else "0x"


def ms(v):
    if v is None:
        return "–"
    if v >= 10000:
        return f"{v / 1000:.1f} s"
    if v >= 1000:
        return f"{v / 1000:.2f} s"
    return f"{v:.0f} ms"


def analyze_run(run_dir):
    rec = read_recording(os.path.join(run_dir, "recording.log"))
    chart = chart_line(rec)
    sdir = os.path.join(run_dir, "sessions")
    loads, plots, reasons, n, failed = [], [], {}, 0, 0
    for f in sorted(os.listdir(sdir)):
        if not f.endswith(".csv"):
            continue
        n += 1
        ok, reason, load, plot = session_times(read_session(os.path.join(sdir, f)), rec, chart)
        if not ok:
            failed += 1
            reasons[reason] = reasons.get(reason, 0) + 1
            continue
        if load is not None:
            loads.append(load)
        if plot is not None:
            plots.append(plot)
    return {"sessions": n, "failed": failed, "reasons": reasons, "page": dist(loads), "plot": dist(plots), "chart_line": chart}


def count_sessions(run_dir):
    done = failed = 0
    sdir = os.path.join(run_dir, "sessions")
    for f in os.listdir(sdir) if os.path.isdir(sdir) else []:
        if f.endswith(".csv"):
            with open(os.path.join(sdir, f), "rb") as fh:
                fh.seek(max(0, os.path.getsize(fh.name) - 200))
                tail = fh.read().decode(errors="replace")
            if "PLAYBACK_FAIL" in tail:
                failed += 1
            else:
                done += 1
    print(done, failed)


def analyze(runs_tsv, out_md):
    """RUNS.tsv: seq, name, label, users, run_dir, cpu_seconds, server_log (one run per line; rows
    with users 'skipped' carry the reason in the run_dir column)."""
    runs, skipped = [], []
    for line in open(runs_tsv):
        if not line.strip():
            continue
        _, name, label, users, run_dir, cpu, log = line.rstrip("\n").split("\t")
        if users == "skipped":
            skipped.append((label, run_dir))
            continue
        r = analyze_run(run_dir)
        r.update(name=name, label=label, users=int(users), cpu=float(cpu), log=log)
        runs.append(r)
    base = {r["users"]: r for r in runs if r["name"] == "r-sync"}
    head = (
        "| configuration | users | sessions | failed | page load p50 / p90 / p99 / max | first plot p50 / p90 / p99 / max"
        " | first plot p90 vs R sync | server CPU per session |"
    )
    lines = [head, "|" + "---|" * 8]
    for r in runs:
        b = base.get(r["users"])
        ratio = "–"
        if b and b["plot"]["p90"] and r["plot"]["p90"] is not None:
            ratio = times(r["plot"]["p90"] / b["plot"]["p90"])
        per = r["cpu"] / r["sessions"] if r["sessions"] else None
        cpu = "–" if per is None else f"{per:.2f} s" if per >= 1 else f"{per * 1000:.1f} ms"
        d = lambda x: " / ".join(ms(x[k]) for k in ("p50", "p90", "p99", "max"))
        lines.append(
            f"| {r['label']} | {r['users']} | {r['sessions']} | {r['failed']} | {d(r['page'])} | {d(r['plot'])} | {ratio} | {cpu} |"
        )
    for label, why in skipped:
        lines.append(f"| {label} | – | skipped: {why} | | | | | |")
    targets = target_lines(runs)
    body = "\n".join(lines)
    print(body)
    print()
    for t in targets:
        print(t)
    with open(out_md, "w") as f:
        f.write(body + "\n\n```\n" + "\n".join(targets) + "\n```\n")


def target_lines(runs):
    out = []
    by = lambda name, users=None: [r for r in runs if r["name"] == name and (users is None or r["users"] == users)]
    big = sorted({r["users"] for r in by("ours") if r["users"] >= 1000}) or [1000]
    for users in [50, big[-1]]:
        rs = by("ours", users)
        what = f"ours at {users} users: 0 failed sessions and first plot p99 < 100 ms"
        if not rs:
            out.append(f"MISS {what} (not run in this selection)")
            continue
        r = rs[-1]
        p99 = r["plot"]["p99"]
        ok = r["failed"] == 0 and p99 is not None and p99 < 100
        out.append(f"{'PASS' if ok else 'MISS'} {what} (failed {r['failed']}, p99 {ms(p99)})")
    pairs = [(m, a) for m in by("r-sync-manifold4") for a in by("r-async2") if m["users"] == a["users"]]
    if not pairs:
        out.append("MISS R sync behind manifold (4 workers) beats R async2 at first-plot p90 (not both run in this selection)")
    for m, a in pairs:
        mp, ap = m["plot"]["p90"], a["plot"]["p90"]
        ok = mp is not None and ap is not None and mp < ap
        out.append(
            f"{'PASS' if ok else 'MISS'} R sync behind manifold (4 workers) beats R async2 at first-plot p90, "
            f"{m['users']} users ({ms(mp)} vs {ms(ap)})"
        )
    bad = [r for r in runs if r["failed"]]
    if not bad:
        out.append(f"PASS no failed session in any configuration ({len(runs)} runs)")
    else:
        out.append(f"MISS failed sessions in {len(bad)} of {len(runs)} runs:")
        for r in bad:
            top = sorted(r["reasons"].items(), key=lambda kv: -kv[1])[:3]
            out.append(f"     {r['label']} ({r['users']} users): {r['failed']} failed: " + "; ".join(f"{n}x {why}" for why, n in top))
            for e in app_errors(r["log"])[:3]:
                out.append(f"       app log: {e}")
    return out


def app_errors(log):
    """Error lines the server itself printed (R's 'Error in ...', 'Warning: Error', panics)."""
    try:
        text = open(log, errors="replace").read().splitlines()
    except OSError:
        return []
    pat = re.compile(r"(^|\] )(Error|Warning: Error|Execution halted|thread .* panicked)")
    seen = []
    for l in text:
        if pat.search(l) and l not in seen:
            seen.append(l.strip()[:200])
    return seen


def main(argv):
    if len(argv) >= 2 and argv[0] == "day":
        largest_day(argv[1])
    elif len(argv) >= 2 and argv[0] == "cpu":
        print(f"{session_cpu({int(s) for s in argv[1:]}):.2f}")
    elif len(argv) >= 2 and argv[0] == "procs":
        names = {}
        for pid in session_pids({int(s) for s in argv[1:]}):
            try:
                n = open(f"/proc/{pid}/comm").read().strip()
            except OSError:
                continue
            names[n] = names.get(n, 0) + 1
        print(", ".join(f"{n} x{k}" for n, k in sorted(names.items())) or "none")
    elif len(argv) == 2 and argv[0] == "chart":
        print(chart_line(read_recording(argv[1])))
    elif len(argv) >= 2 and argv[0] == "stop":
        stop_sessions({int(s) for s in argv[1:]})
    elif len(argv) == 2 and argv[0] == "sessions":
        count_sessions(argv[1])
    elif len(argv) == 3 and argv[0] == "analyze":
        analyze(argv[1], argv[2])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
