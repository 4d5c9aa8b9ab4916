#!/usr/bin/env bash
# make capacity-scaling: how many users the original R app (rstudio/cranwhales, branch sync, code
# untouched, from CRANWHALES_R_DIR) holds behind manifold with 1, 2 and 4 workers at first-plot
# p95 < 2 s, and so how many workers an audience needs. One journey is recorded in headless
# Chromium (as make case-study records it, on the largest real day), then one command:
#   surge capacity REC URL --slo 'until@<first plot line>:p95<2s' --manifold URL \
#     --workers 1,2,4 --manifold-cmd 'manifold shiny APP --min {workers} --max {workers} …' --audience N
# prints the scaling table (also in OUT/capacity/scaling.json, each count's steps under it).
#
#   CRANWHALES_R_DIR=~/cranwhales make capacity-scaling
# Knobs: WORKERS (1,2,4), AUDIENCE (100), LIMIT (2s), STEP_SESSIONS (20: sessions judged per
# step), STEP_MAX (4m), GROWTH (2), PAUSE_MS (2000: the journey's pause between steps, the
# recorded think time), REPEAT (1: searches on the same recording, with their spread), OUT
# (bench/capacity-scaling/out). Debug builds are enough: surge and
# manifold wait on R, which does the work (one R process parses the day for every session).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
export PATH="$HOME/.cargo/bin:$PATH"
die() { echo "capacity-scaling: $*" >&2; exit 2; }
say() { printf '[%s] %s\n' "$(date -u +%H:%M:%S)" "$*"; }
WORKERS="${WORKERS:-1,2,4}"; AUDIENCE="${AUDIENCE:-100}"; LIMIT="${LIMIT:-2s}"
STEP_SESSIONS="${STEP_SESSIONS:-20}"; STEP_MAX="${STEP_MAX:-4m}"; GROWTH="${GROWTH:-2}"
PAUSE_MS="${PAUSE_MS:-2000}"; REPEAT="${REPEAT:-1}"; OUT="${OUT:-$ROOT/bench/capacity-scaling/out}"
[ -n "${CRANWHALES_R_DIR:-}" ] || die "CRANWHALES_R_DIR is not set: a git clone of rstudio/cranwhales"
git -C "$CRANWHALES_R_DIR" rev-parse -q --verify "sync^{commit}" >/dev/null ||
  git -C "$CRANWHALES_R_DIR" rev-parse -q --verify "origin/sync^{commit}" >/dev/null ||
  die "$CRANWHALES_R_DIR has no sync branch"
APT=(chromium r-base-core r-cran-shiny r-cran-shinydashboard r-cran-readr r-cran-dplyr r-cran-ggplot2 r-cran-dt
  r-cran-glue r-cran-lubridate r-cran-gdata r-cran-promises r-cran-future r-cran-magrittr r-cran-hms r-cran-withr)
missing=()
for p in "${APT[@]}"; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  say "installing Debian packages: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
[ -n "${SKIP_BUILD:-}" ] || cargo build -p surge -p manifold --bins 2>&1 | tail -1
TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
SURGE="$TARGET_DIR/debug/surge"; MANIFOLD="$TARGET_DIR/debug/manifold"
. "$ROOT/bench/lib.sh" capacity-scaling
SID=""
stop_app() { [ -z "$SID" ] || python3 bench/case_study.py stop "$SID"; SID=""; }
trap 'stop_app; cleanup' EXIT
trap 'exit 130' INT TERM
CRANLOGS="${CRANLOGS:-$(python3 scripts/test-data.py)/cranlogs}"
read -r DAY ROWS < <(python3 bench/case_study.py day "$CRANLOGS")
APP="$TMP/r-sync"; mkdir -p "$APP/data_cache"
REF=sync; git -C "$CRANWHALES_R_DIR" rev-parse -q --verify "origin/sync^{commit}" >/dev/null && REF=origin/sync
git -C "$CRANWHALES_R_DIR" archive "$REF" | tar -x -C "$APP"
cp "$CRANLOGS/$DAY.csv.gz" "$APP/data_cache/"
# The app opens on Sys.Date() - N: "today" pinned so that it opens on the day (as make case-study).
N=$(grep -o 'Sys.Date() *- *[0-9]*' "$APP/app.R" | head -1 | grep -o '[0-9]*$' || echo 0)
cat > "$TMP/pin-today.R" <<'R'
local({
  today <- as.Date(Sys.getenv("CASESTUDY_TODAY"))
  if (!is.na(today)) assign("Sys.Date", function() today, envir = globalenv())
})
R
R_ENV="TZ=UTC R_PROFILE_USER=$TMP/pin-today.R CASESTUDY_TODAY=$(date -u -d "$DAY + ${N:-0} days" +%F)"
rm -rf "$OUT"; mkdir -p "$OUT"
say "R sync $(git -C "$CRANWHALES_R_DIR" rev-parse --short "$REF") on $DAY ($ROWS rows)"

# ---------- the journey, recorded through surge record from headless Chromium ----------
PORT=$(free_port)
setsid env $R_ENV Rscript -e "shiny::runApp('$APP', host='127.0.0.1', port=$PORT, launch.browser=FALSE)" > "$OUT/record-app.log" 2>&1 &
SID=$!
for _ in $(seq 1 600); do
  (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break
  kill -0 "$SID" 2>/dev/null || die "the R app exited: $(tail -3 "$OUT/record-app.log")"
  sleep 0.2
done
"$SURGE" record --target "http://127.0.0.1:$PORT/" --listen 127.0.0.1:0 -o "$OUT/recording.log" > "$TMP/record.out" 2>&1 &
RP=$!; PIDS+=("$RP")
for _ in $(seq 1 100); do grep -q "listening on" "$TMP/record.out" && break; sleep 0.1; done
PROXY=$(grep -o 'http://127.0.0.1:[0-9]*/' "$TMP/record.out" | head -1)
node web/e2e/case-study-journey.mjs shiny "$PROXY" "$PAUSE_MS" | sed 's/^/  /'
for _ in $(seq 1 100); do kill -0 "$RP" 2>/dev/null || break; sleep 0.1; done
wait "$RP" || die "surge record failed: $(cat "$TMP/record.out")"
stop_app
LINE=$(python3 bench/case_study.py chart "$OUT/recording.log")
say "recorded $(grep -c '^{' "$OUT/recording.log") events; the first plot is line $LINE"

# ---------- the search at each worker count ----------
PORT=$(free_port)
URL="http://127.0.0.1:$PORT"
say "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
search() { # $1: output directory
  "$SURGE" capacity "$OUT/recording.log" "$URL/" --slo "until@$LINE:p95<$LIMIT" \
    --step-sessions "$STEP_SESSIONS" --step-max "$STEP_MAX" --growth "$GROWTH" --message-timeout 120s \
    --manifold "$URL" --workers "$WORKERS" --audience "$AUDIENCE" \
    --manifold-cmd "env $R_ENV $MANIFOLD shiny $APP --min {workers} --max {workers} --idle-timeout 1h --ready-timeout 120s --queue-timeout 300s --listen 127.0.0.1:$PORT" \
    --output-dir "$1" ${DASHBOARD:+--dashboard "$DASHBOARD"}
}
set +e
search "$OUT/capacity" | tee "$OUT/table.txt"
code=${PIPESTATUS[0]}
# REPEAT=N: the same search N times on the same recording and app (repeatability: do they agree
# within one step?); each in capacity-K, then one line per worker count with every answer.
for k in $(seq 2 "$REPEAT"); do
  say "repeat $k of $REPEAT; load average $(cut -d' ' -f1-3 /proc/loadavg)"
  search "$OUT/capacity-$k" | tee "$OUT/table-$k.txt"
done
set -e
if [ "$REPEAT" -gt 1 ]; then
  python3 - "$OUT" "$REPEAT" <<'PY' | tee "$OUT/repeats.txt"
import json, sys
out, n = sys.argv[1], int(sys.argv[2])
runs = [json.load(open(f"{out}/capacity{'' if k == 1 else f'-{k}'}/scaling.json")) for k in range(1, n + 1)]
for i, row in enumerate(runs[0]["rows"]):
    rows = [r["rows"][i] for r in runs]
    held = [r["holds"] for r in rows]
    steps = [r["breaks"] - r["holds"] for r in rows if r["holds"] is not None and r["breaks"] is not None]
    fmt = lambda x: "none" if x is None else f"{x:g}"
    line = f"{row['workers']} workers: holds {', '.join(fmt(h) for h in held)} users"
    if None not in held:
        spread = max(held) - min(held)
        step = max(steps) if steps else None
        within = "" if step is None else (" (within one step)" if spread <= step else " (more than one step)")
        line += f"; spread {spread:g}, last step {fmt(step)}{within}"
    print(line)
PY
fi
say "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
exit "$code"
