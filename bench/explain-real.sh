#!/usr/bin/env bash
# surge explain on the real case-study app, against R's own timing (manual; not in `make test`: it
# needs rstudio/cranwhales's code and its R packages). The `sync` branch of rstudio/cranwhales (code
# untouched) runs behind `manifold shiny --min 2 --max 2` on the day 2015-01-15; the case study's
# journey is recorded in headless Chromium by `surge record`; then `surge explain --users N`. An
# R_PROFILE_USER file pins the app's date and, when shiny loads, makes its session class log each
# client message R handles and each message R sends (with the outputs it names), so R's time per
# output is known without changing the app. The script prints explain's table, then its rank-1
# line's time alone against R's for the same outputs in the same (solo) session: from the first of
# them starting to compute to R sending them, and from R reading the client's message to that send.
#
#   CRANWHALES_R_DIR=~/cranwhales bench/explain-real.sh       # a clone (or bare mirror) of the repo
#   PORT=39431 USERS=4 OUT=/tmp/explain-real bench/explain-real.sh
#
# Needs: R with shiny, shinydashboard, readr, dplyr, ggplot2, DT, glue, lubridate, gdata, hms;
# chromium and web/node_modules (playwright-core); ../shared/data/cranlogs/2015-01-15.csv.gz (or
# CRANWHALES_TEST_DATA); built surge and manifold (release if present, else debug).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
die() { echo "explain-real: $*" >&2; exit 2; }
[ -n "${CRANWHALES_R_DIR:-}" ] || die "set CRANWHALES_R_DIR to a clone of rstudio/cranwhales"
DATA="${CRANWHALES_TEST_DATA:-$ROOT/../shared/data}"
PORT="${PORT:-39431}"
USERS="${USERS:-4}"
DAY=2015-01-15
W="${OUT:-/tmp/explain-real-$PORT}"
[ -f "$DATA/cranlogs/$DAY.csv.gz" ] || die "$DATA/cranlogs/$DAY.csv.gz missing (CRANWHALES_TEST_DATA)"
B=target/debug; [ -x target/release/surge ] && [ -x target/release/manifold ] && B=target/release
[ -x $B/surge ] && [ -x $B/manifold ] || die "build surge and manifold first (cargo build -p surge -p manifold)"
rm -rf "$W"; mkdir -p "$W/app/data_cache"
if git -C "$CRANWHALES_R_DIR" rev-parse --verify -q sync >/dev/null; then
  git -C "$CRANWHALES_R_DIR" archive sync | tar -x -C "$W/app"
else
  cp -r "$CRANWHALES_R_DIR"/. "$W/app/"
fi
cp "$DATA/cranlogs/$DAY.csv.gz" "$W/app/data_cache/"
N=$(grep -o 'Sys.Date() *- *[0-9]*' "$W/app/app.R" | head -1 | grep -o '[0-9]*$' || echo 0)
TODAY=$(date -u -d "$DAY + ${N:-0} days" +%F)
cat > "$W/profile.R" <<'R'
local({
  today <- as.Date(Sys.getenv("CASESTUDY_TODAY"))
  if (!is.na(today)) assign("Sys.Date", function() today, envir = globalenv())
  # R's own timing, the app untouched: <epoch ms> <session token> <what> <outputs or -> per line,
  # what = recv (R handles a client message), start (an output starts computing: shiny sends
  # `recalculating` for it), send <kinds> (a message R sends; outputs = its values and errors).
  path <- Sys.getenv("SURGE_R_TIMING")
  if (!nzchar(path)) return(invisible())
  log <- function(token, what, names) {
    names <- if (length(names)) paste(names, collapse = ",") else "-"
    cat(sprintf("%.1f", as.numeric(Sys.time()) * 1000), token, what, names, "\n",
        file = path, append = TRUE)
  }
  on_send <- function(token, msg) {
    r <- msg$recalculating
    if (!is.null(r)) {
      if (identical(r$status, "recalculating")) log(token, "start", r$name)
      return(invisible())
    }
    full <- !vapply(msg, function(v) is.list(v) && length(v) == 0, TRUE)
    kinds <- names(msg)[full]
    if (!length(kinds) || any(kinds %in% c("busy", "progress"))) return(invisible())
    log(token, paste0("send:", paste(kinds, collapse = "+")), c(names(msg$values), names(msg$errors)))
  }
  assign(".surge_r_timing", list(log = log, send = on_send), envir = globalenv())
  setHook(packageEvent("shiny", "onLoad"), function(...) {
    gen <- get("ShinySession", envir = asNamespace("shiny"))
    send <- gen$private_methods$sendMessage
    body(send) <- bquote({
      globalenv()$.surge_r_timing$send(self$token, list(...))
      .(body(send))
    })
    gen$set("private", "sendMessage", send, overwrite = TRUE)
    inputs <- gen$public_methods$manageInputs
    body(inputs) <- bquote({
      globalenv()$.surge_r_timing$log(self$token, "recv", "-")
      .(body(inputs))
    })
    gen$set("public", "manageInputs", inputs, overwrite = TRUE)
  })
})
R
export TZ=UTC
MP=; RP=
trap 'kill $MP $RP 2>/dev/null || true' EXIT
R_PROFILE_USER="$W/profile.R" CASESTUDY_TODAY=$TODAY SURGE_R_TIMING="$W/r-timing.log" \
  $B/manifold shiny "$W/app" --min 2 --max 2 --idle-timeout 1h --ready-timeout 120s \
  --queue-timeout 300s --listen 127.0.0.1:$PORT > "$W/manifold.log" 2>&1 &
MP=$!
for _ in $(seq 1 300); do curl -sf -o /dev/null http://127.0.0.1:$PORT/ && break; sleep 0.5; done
$B/surge record --target http://127.0.0.1:$PORT/ --listen 127.0.0.1:0 -o "$W/recording.log" > "$W/record.out" 2>&1 &
RP=$!
for _ in $(seq 1 100); do grep -q "listening on" "$W/record.out" && break; sleep 0.1; done
PROXY=$(grep -o 'http://127.0.0.1:[0-9]*/' "$W/record.out" | head -1)
node web/e2e/case-study-journey.mjs shiny "$PROXY" 3000
for _ in $(seq 1 100); do kill -0 $RP 2>/dev/null || break; sleep 0.1; done
echo "recorded $(grep -c '^{' "$W/recording.log") events"
uptime
$B/surge explain "$W/recording.log" http://127.0.0.1:$PORT/ --users "$USERS" --output-dir "$W/out" 2>&1 | tee "$W/explain.txt"
uptime
# R writes its line after it sent the message; give the last ones a moment to land.
sleep 1
python3 - "$W" <<'PY'
import csv, glob, json, sys
w = sys.argv[1]
e = json.load(open(f"{w}/out/explain.json"))
top = e["rows"][0]
rec = open(f"{w}/recording.log").read().split("\n")
def outputs(line):
    msg = json.loads(rec[line - 1])["message"]
    if msg.startswith("a["):
        msg = json.loads(msg[1:])[0]
    m = json.loads(msg[msg.find("{"):])
    return set(m.get("values") or {}) | set(m.get("errors") or {})
want = set().union(*(outputs(l) for l in top["lines"])) if top["kind"] == "WS_RECV" else set()
if not want:
    sys.exit(f"rank 1 is {top['kind']} {top['label']}: no Shiny outputs to compare with R")
ts = []
for f in glob.glob(f"{w}/out/solo/sessions/*.csv"):
    for row in csv.reader(l for l in open(f) if not l.startswith("#")):
        if len(row) > 4 and row[4].isdigit():
            ts.append(int(row[4]))
t0, t1 = min(ts), max(ts)
log = [l.split() for l in open(f"{w}/r-timing.log")]
log = [(float(a[0]), a[1], a[2], set(a[3].split(","))) for a in log if len(a) == 4]
tokens = [t for (ms, t, what, _) in log if what == "recv" and t0 <= ms <= t1]
if not tokens:
    sys.exit("R logged no session during the solo run")
tok = tokens[0]
mine = [x for x in log if x[1] == tok]
sent = next(x for x in mine if x[2].startswith("send:") and x[3] & want)
started = min(x[0] for x in mine if x[2] == "start" and x[3] & want and x[0] <= sent[0])
recv = max(x[0] for x in mine if x[2] == "recv" and x[0] <= started)
solo = top["solo_ms"]
print(f"rank 1: {top['kind']} {top['label']}")
print(f"  explain alone: {solo:.0f} ms (session {tok[:8]}…, outputs {', '.join(sorted(want))})")
for what, ms in [("R, first of them starting to compute -> sent", sent[0] - started),
                 ("R, client message read -> sent", sent[0] - recv)]:
    print(f"  {what}: {ms:.0f} ms (explain / R = {solo / ms:.2f})")
PY
