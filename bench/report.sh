#!/usr/bin/env bash
# surge report at synthetic size: 1,000 sessions x 100 events (100 users x 10 iterations, 1% failed),
# replaying the first 100 events of the real case-study recording. Prints time, peak RSS and file
# size against the targets (< 5 s, < 5 MB). No peer runs here: shinyloadtest's R report needs CRAN
# packages and pandoc, which this machine does not have.
set -euo pipefail
cd "$(dirname "$0")/.."
SESSIONS=${SESSIONS:-1000}
EVENTS=${EVENTS:-100}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cargo build --release -p surge --bin surge >/dev/null 2>&1 || cargo build --release -p surge --bin surge
TEST_DATA=${CRANWHALES_TEST_DATA:-$(scripts/test-data.py)}
unzip -q -o "$TEST_DATA/shinyloadtest/runs/scaling_case_study_run1.zip" -d "$work"

python3 - "$work" "$SESSIONS" "$EVENTS" <<'PY'
import json, os, random, sys
work, n_sessions, n_events = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
src = os.path.join(work, "scaling_case_study_run1", "recording.log")
lines = open(src).read().splitlines()
# Keep the header and the first n_events event lines; line numbers stay those of the file.
events, out = [], []
for i, l in enumerate(lines, 1):
    if l.startswith("#"):
        out.append(l)
    elif len(events) < n_events:
        out.append(l); events.append((i, json.loads(l)["type"]))
run = os.path.join(work, "synthetic")
os.makedirs(os.path.join(run, "sessions"))
open(os.path.join(run, "recording.log"), "w").write("\n".join(out) + "\n")
rng = random.Random(42)
users = 100
iters = n_sessions // users
t0 = 1_700_000_000_000
sid = 0
for w in range(users):
    t = t0 + w * 2_000
    for it in range(iters):
        rows = [f"{sid},{w},{it},PLAYER_SESSION_CREATE,{t},0,"]
        fail_at = rng.randrange(n_events) if rng.random() < 0.01 else -1
        for k, (ln, typ) in enumerate(events):
            if typ in ("WS_SEND", "WS_RECV") and k > 0:
                sleep = int(rng.expovariate(1 / 800))
                rows.append(f"{sid},{w},{it},PLAYBACK_SLEEPBEFORE_START,{t},{ln},")
                t += sleep
                rows.append(f"{sid},{w},{it},PLAYBACK_SLEEPBEFORE_END,{t},{ln},")
            rows.append(f"{sid},{w},{it},{typ}_START,{t},{ln},")
            if k == fail_at:
                t += 30_000
                rows.append(f"{sid},{w},{it},PLAYBACK_FAIL,{t},{ln},timeout waiting for message")
                break
            t += int(rng.lognormvariate(4.5, 1.0)) if typ != "WS_SEND" else 0
            rows.append(f"{sid},{w},{it},{typ}_END,{t},{ln},")
        else:
            rows.append(f"{sid},{w},{it},PLAYBACK_DONE,{t},0,")
        with open(os.path.join(run, "sessions", f"{sid}_{w}_{it}.csv"), "w") as f:
            f.write("# synthetic\n# {}\nsession_id,worker_id,iteration,event,timestamp,input_line_number,comment\n")
            f.write("\n".join(rows) + "\n")
        sid += 1
        t += 500
PY

echo "bench-report: $SESSIONS sessions x $EVENTS events, release build"
/usr/bin/time -f "%e %M" -o "$work/time" ./target/release/surge report "$work/synthetic" -o "$work/report.html"
read -r secs rss_kb < "$work/time"
bytes=$(stat -c %s "$work/report.html")
awk -v s="$secs" -v b="$bytes" -v r="$rss_kb" 'BEGIN {
  printf "report time   %.2f s    target 5 s    ratio %.2f\n", s, s / 5
  printf "report size   %.2f MB   target 5 MB   ratio %.2f\n", b / 1e6, b / 5e6
  printf "peak RSS      %.0f MB\n", r / 1024
}'
if [ -n "${KEEP:-}" ]; then cp "$work/report.html" "$KEEP"; echo "kept $KEEP"; fi
if [ -n "${KEEP_RUN:-}" ]; then rm -rf "$KEEP_RUN"; cp -r "$work/synthetic" "$KEEP_RUN"; echo "kept run in $KEEP_RUN"; fi
