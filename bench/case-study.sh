#!/usr/bin/env bash
# make case-study: the original experiment, end to end. The R Shiny app cranwhales (rstudio/cranwhales:
# branches sync, async, async2, etl; from a local clone in CRANWHALES_R_DIR, code untouched) and our
# cranwhales, loaded by `surge replay` with users arriving every 5 s on the largest real day of
# ../shared/data/cranlogs; the R sync app also behind manifold (2 and 4 workers); then ours alone
# with >= 1,000 users arriving 20 per second. One user journey per UI is recorded at the start with
# `surge record` driven by headless Chromium. Output: one `surge report` of every run, a table
# (printed and written to RESULTS.md) and PASS/MISS target lines.
#
#   CRANWHALES_R_DIR=~/cranwhales make case-study          # the full run (~30 min on 2 cores)
#   CONFIGS=r-sync,ours USERS=10 BIG_USERS=0 make case-study   # a quick subset
#
# Knobs: CONFIGS (names in ALL_CONFIGS below, comma-separated), USERS (loads, default 30,50: ours runs
# at each), R_USERS (the R configurations' loads, default the first of USERS: one R run at 30 users
# takes ~3.5 min, so all of them at 50 too would not fit in 30 min; R_USERS=30,50 runs the full matrix),
# BIG_USERS / BIG_RATE (ours alone: default 1000 users, 20 per second; 0 = skip), START_INTERVAL (5s),
# PAUSE_MS (journey pause between steps, 5000), MESSAGE_TIMEOUT (300s), OUT (run dirs, report),
# REPORT_ONLY=1 (no runs: the report, table and targets again from the run dirs in OUT).
# Everything runs on 127.0.0.1; every process started here is stopped on exit (each server runs in a
# session of its own, and the whole session is stopped, future workers and manifold workers included).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
export PATH="$HOME/.cargo/bin:$PATH"
T0=$(date +%s)
say() { printf '[%s] %s\n' "$(date -u -d @$(( $(date +%s) - T0 )) +%M:%S)" "$*"; }
die() { echo "case-study: $*" >&2; exit 2; }

ALL_CONFIGS="r-sync,r-async,r-async-w2,r-async2,r-async2-w2,r-etl,r-sync-manifold2,r-sync-manifold4,ours"
FULL_RUN=1
[ -z "${CONFIGS:-}${USERS:-}${R_USERS:-}${BIG_USERS:-}" ] || FULL_RUN=0
CONFIGS="${CONFIGS:-$ALL_CONFIGS}"
USERS="${USERS:-30,50}"
R_USERS="${R_USERS:-${USERS%%,*}}"
BIG_USERS="${BIG_USERS:-1000}"
BIG_RATE="${BIG_RATE:-20}"
START_INTERVAL="${START_INTERVAL:-5s}"
PAUSE_MS="${PAUSE_MS:-5000}"
MESSAGE_TIMEOUT="${MESSAGE_TIMEOUT:-300s}"
OUT="${OUT:-$ROOT/bench/case-study/out}"
CRANLOGS="${CRANLOGS:-}" # default: the team's ../shared/data, else scripts/test-data.py's (checked) copy
RESULTS_DIR="$ROOT/bench/case-study"

has() { [[ ",$CONFIGS," == *",$1,"* ]]; }
wants_r=0
for c in ${CONFIGS//,/ }; do
  [[ ",$ALL_CONFIGS," == *",$c,"* ]] || die "unknown configuration '$c' (known: $ALL_CONFIGS)"
  [[ $c == r-* ]] && wants_r=1
done

# ---------- prerequisites ----------
if [ "$wants_r" = 1 ] && [ -z "${REPORT_ONLY:-}" ]; then
  [ -n "${CRANWHALES_R_DIR:-}" ] || die "CRANWHALES_R_DIR is not set: clone the original app first (git clone https://github.com/rstudio/cranwhales) and pass its path"
  git -C "$CRANWHALES_R_DIR" rev-parse --git-dir >/dev/null 2>&1 || die "CRANWHALES_R_DIR=$CRANWHALES_R_DIR is not a git clone of rstudio/cranwhales"
fi
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
[ -d web/node_modules ] || (cd web && npm ci --no-audit --no-fund >/dev/null)
TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
if [ -z "${SKIP_BUILD:-}" ]; then
  say "building the web UI and surge, cranwhales, manifold (release)"
  # The UI is embedded in the binaries: rebuilt only when its sources changed (a rebuild relinks them).
  if [ ! -f web/dist/index.html ] || [ ! -f web/dist-report/report.js ] ||
     [ -n "$(find web/src web/index.html web/package.json -newer web/dist/index.html -print -quit)" ]; then
    (cd web && npm run build >/dev/null)
  fi
  cargo build --release -p surge -p cranwhales -p manifold --bins 2>&1 | tail -1
fi
SURGE="$TARGET_DIR/release/surge"; CW="$TARGET_DIR/release/cranwhales"; MANIFOLD="$TARGET_DIR/release/manifold"

. "$ROOT/bench/lib.sh" case-study
# Server session ids and client pids go to files, so what background subshells started is stopped too.
# Clients run in the background and are waited for, so a signal is handled at once (not after them).
track() { echo "$1" >> "$TMP/pids"; }
stop_sessions() {
  [ -s "$TMP/pids" ] && for p in $(cat "$TMP/pids"); do kill -INT "$p" 2>/dev/null || true; done
  [ -s "$TMP/sids" ] && python3 "$ROOT/bench/case_study.py" stop $(cat "$TMP/sids") || true
}
# The machine's load (1-minute load average) sampled every 10 s: the results say how quiet it was.
LOAD_LOG="$(mktemp)"
( while :; do cut -d' ' -f1 /proc/loadavg >>"$LOAD_LOG"; sleep 10; done ) &
LOAD_SAMPLER=$!
trap 'kill $LOAD_SAMPLER 2>/dev/null; rm -f "$LOAD_LOG"; stop_sessions; cleanup' EXIT
trap 'exit 130' INT TERM
ulimit -n "$(ulimit -Hn)"

[ -n "$CRANLOGS" ] || CRANLOGS="$(python3 scripts/test-data.py)/cranlogs" || die "no test data (scripts/test-data.py)"
read -r DAY ROWS < <(python3 bench/case_study.py day "$CRANLOGS")
DAYFILE="$CRANLOGS/$DAY.csv.gz"
[ -f "$DAYFILE" ] || die "$DAYFILE: missing"
say "the day: $DAY ($ROWS rows, the largest in $CRANLOGS)"
if [ -n "${REPORT_ONLY:-}" ]; then
  [ -s "$OUT/runs.tsv" ] || die "REPORT_ONLY: no $OUT/runs.tsv (run make case-study first)"
  say "REPORT_ONLY: the report, table and targets of the runs in $OUT"
else
rm -rf "$OUT"; mkdir -p "$OUT/runs"
: > "$OUT/runs.tsv"

# ---------- the R app: one directory per branch, the day in its download cache, "today" pinned ----------
# The app opens on Sys.Date() - N (N read from its app.R). An R profile outside the app (R_PROFILE_USER)
# defines Sys.Date() in the global environment, which the app's code sees first, as DAY + N.
cat > "$TMP/pin-today.R" <<'R'
local({
  today <- as.Date(Sys.getenv("CASESTUDY_TODAY"))
  if (!is.na(today)) assign("Sys.Date", function() today, envir = globalenv())
})
R
declare -A RDIR SKIP
prepare_branch() { # branch -> RDIR[branch] or SKIP[branch]
  local b="$1" ref="" d="$TMP/r-$1"
  for r in "origin/$b" "$b"; do git -C "$CRANWHALES_R_DIR" rev-parse -q --verify "$r^{commit}" >/dev/null && { ref="$r"; break; }; done
  [ -n "$ref" ] || { SKIP[$b]="branch $b is not in $CRANWHALES_R_DIR"; return; }
  mkdir -p "$d/data_cache"
  git -C "$CRANWHALES_R_DIR" archive "$ref" | tar -x -C "$d"
  cp "$DAYFILE" "$d/data_cache/$DAY.csv.gz"
  local pkgs need
  pkgs=$(cat "$d"/app.R "$d"/modules/*.R 2>/dev/null | sed -n 's/^[[:space:]]*library(\([A-Za-z0-9.]*\)).*/\1/p' | sort -u)
  need=$(Rscript -e 'for (p in commandArgs(TRUE)) if (!requireNamespace(p, quietly = TRUE)) cat(p, "")' $pkgs 2>/dev/null)
  if [ -n "$need" ]; then
    SKIP[$b]="needs R package(s) ${need% }, not in Debian's R packages"
    [ -f "$d/transform.R" ] && SKIP[$b]+=" (and reads tables its transform.R job writes with it)"
    return
  fi
  RDIR[$b]="$d"
}
if [ "$wants_r" = 1 ]; then
  for b in sync async async2 etl; do
    case $b in sync) ;; # the R recording is made on sync
      etl) has r-etl || continue ;; *) has "r-$b" || has "r-$b-w2" || continue ;; esac
    prepare_branch "$b"
    [ -n "${SKIP[$b]:-}" ] && say "R $b: skipped: ${SKIP[$b]}" || say "R $b: $(git -C "$CRANWHALES_R_DIR" rev-parse --short "$(git -C "$CRANWHALES_R_DIR" rev-parse -q --verify origin/$b || echo $b)") unpacked into ${RDIR[$b]}"
  done
  [ -n "${RDIR[sync]:-}" ] || die "the R app's sync branch could not be prepared: ${SKIP[sync]:-}"
  N=$(grep -o 'Sys.Date() *- *[0-9]*' "${RDIR[sync]}/app.R" | head -1 | grep -o '[0-9]*$' || echo 0)
  TODAY=$(date -u -d "$DAY + ${N:-0} days" +%F)
  say "R apps open on Sys.Date() - ${N:-0}: pinning today to $TODAY"
fi
R_ENV=(TZ=UTC R_PROFILE_USER="$TMP/pin-today.R" CASESTUDY_TODAY="${TODAY:-}")
# async/async2 choose plan(multisession(workers = availableCores() - 1)) themselves: on 2 cores that is
# 1, and future then evaluates every future sequentially in the app's own process ("as is"). The -w2
# variants make availableCores() say 3 (parallelly's own settings, env only), so the same line starts
# 2 real future workers (separate R processes in the server's session, counted in its CPU).
W2_ENV=(R_PARALLELLY_AVAILABLECORES_METHODS=system R_PARALLELLY_AVAILABLECORES_SYSTEM=3)
# With 1 worker, future runs every future in the R process itself (sequential): no worker at all.
ASIS_WORKERS=$(( $(nproc) > 1 ? $(nproc) - 1 : 1 ))
ASIS="$ASIS_WORKERS future workers"
[ "$ASIS_WORKERS" -gt 1 ] || ASIS="futures run in-process"

# ---------- servers, each in a session of its own ----------
# R writes temp files (its tempdir, readr's decompressed log) and crashes when the disk is full:
# say so before each run rather than leave a mysterious segfault.
check_disk() {
  local free_mb
  free_mb=$(df -Pm "${TMPDIR:-/tmp}" | awk 'NR == 2 { print $4 }')
  [ "$free_mb" -ge 1024 ] || say "warning: only $free_mb MB free in ${TMPDIR:-/tmp}; R servers may fail to start or crash"
}
SERVER_SID=""
start_server() { # log, command... (setsid: the server and everything it starts share one session id)
  local log="$1"; shift
  setsid "$@" > "$log" 2>&1 &
  SERVER_SID=$!
  echo "$SERVER_SID" >> "$TMP/sids"
}
stop_server() { python3 "$ROOT/bench/case_study.py" stop "$SERVER_SID"; SERVER_SID=""; }
wait_http() { # port: the app answers its home page
  wait_port "$1"
  for _ in $(seq 1 300); do
    curl -fsS -o /dev/null "http://127.0.0.1:$1/" 2>/dev/null && return 0
    kill -0 "$SERVER_SID" 2>/dev/null || { echo "server exited" >&2; return 1; }
    sleep 0.2
  done
  return 1
}
start_config() { # config, port, log
  local c="$1" port="$2" log="$3"
  case $c in
    r-sync) start_server "$log" env "${R_ENV[@]}" Rscript -e "shiny::runApp('${RDIR[sync]}', host='127.0.0.1', port=$port, launch.browser=FALSE)" ;;
    r-async|r-async2) start_server "$log" env "${R_ENV[@]}" Rscript -e "shiny::runApp('${RDIR[${c#r-}]}', host='127.0.0.1', port=$port, launch.browser=FALSE)" ;;
    r-async-w2|r-async2-w2) local b=${c#r-}; b=${b%-w2}
      start_server "$log" env "${R_ENV[@]}" "${W2_ENV[@]}" Rscript -e "shiny::runApp('${RDIR[$b]}', host='127.0.0.1', port=$port, launch.browser=FALSE)" ;;
    r-sync-manifold*) local n=${c#r-sync-manifold}
      start_server "$log" env "${R_ENV[@]}" "$MANIFOLD" shiny "${RDIR[sync]}" --min "$n" --max "$n" --idle-timeout 1h \
        --ready-timeout 120s --queue-timeout 300s --listen "127.0.0.1:$port" ;;
    ours) start_server "$log" "$CW" serve --db "$TMP/cw.db" --no-sample --addr "127.0.0.1:$port" --cache-dir "$TMP/cwcache" ;;
  esac
  wait_http "$port"
}
label_of() {
  case $1 in
    r-sync) echo "R sync" ;;
    r-async) echo "R async (as is: $ASIS)" ;;
    r-async-w2) echo "R async, 2 future workers" ;;
    r-async2) echo "R async2 (as is: $ASIS)" ;;
    r-async2-w2) echo "R async2, 2 future workers" ;;
    r-etl) echo "R etl" ;;
    r-sync-manifold2) echo "R sync × manifold 2 workers" ;;
    r-sync-manifold4) echo "R sync × manifold 4 workers" ;;
    ours) echo "cranwhales (ours)" ;;
  esac
}

if has ours; then
  say "ours: ingesting $DAY into a fresh store"
  "$CW" ingest --db "$TMP/cw.db" --cache-dir "$TMP/cwcache" "$DAYFILE" 2>/dev/null | sed 's/^/  /'
fi

# ---------- one recording per UI: surge record + headless Chromium ----------
record() { # config, url suffix, journey mode, out
  local c="$1" suffix="$2" mode="$3" out="$4" port log rp proxy
  port=$(free_port); log="$OUT/record-$c.server.log"
  start_config "$c" "$port" "$log"
  "$SURGE" record --target "http://127.0.0.1:$port/" --listen 127.0.0.1:0 -o "$out" > "$TMP/record.out" 2>&1 &
  rp=$!; track "$rp"
  for _ in $(seq 1 100); do grep -q "listening on" "$TMP/record.out" && break; sleep 0.1; done
  proxy=$(grep -o 'http://127.0.0.1:[0-9]*/' "$TMP/record.out" | head -1)
  node web/e2e/case-study-journey.mjs "$mode" "$proxy$suffix" "$PAUSE_MS" > >(sed 's/^/  /') &
  track $!
  wait $! || die "the journey failed in Chromium ($mode)"
  if [ "$mode" = cranwhales ]; then kill -INT "$rp"; fi # no WebSocket: Ctrl-C ends the recording
  for _ in $(seq 1 100); do kill -0 "$rp" 2>/dev/null || break; sleep 0.1; done
  wait "$rp" || die "surge record failed: $(cat "$TMP/record.out")"
  stop_server
  say "recorded $(grep -c '^{' "$out") events into $out"
}
REC_R="$OUT/recording-r.log"; REC_OURS="$OUT/recording-ours.log"
if [ -n "${RDIR[sync]:-}" ] && [[ $CONFIGS == *r-* ]]; then
  say "recording the journey on the R app (sync branch)"
  record r-sync "" shiny "$REC_R"
fi
if has ours; then
  say "recording the journey on ours"
  record ours "?date=$DAY" cranwhales "$REC_OURS"
fi

# ---------- the runs ----------
# runs.tsv: seq, config, label, users, run dir, server CPU seconds, server log (seq orders the report).
progress() { # prefix: surge replay's stderr, its progress lines thinned to one per 15 s
  local n=0 line
  while IFS= read -r line; do
    if [[ $line != *"  running "* ]]; then printf '  %s: %s\n' "$1" "$line"
    elif (( ++n % 3 == 0 )); then printf '  %s: %s\n' "$1" "${line#surge: }"; fi
  done
}
run_one() { # seq, config, users, start interval
  local seq="$1" c="$2" users="$3" interval="$4" port log run cpu0 cpu1 rec rc=0 label ndone nfailed cpu procs
  label=$(label_of "$c")
  [[ $c == r-* ]] && rec="$REC_R" || rec="$REC_OURS"
  run="$OUT/runs/$c-$users"; log="$OUT/runs/$c-$users.server.log"
  port=$(free_port)
  say "$label, $users users every $interval: starting the server"
  start_config "$c" "$port" "$log" || { say "$label: the server did not start (log: $log)"; tail -5 "$log" | sed 's/^/  /'; return; }
  cpu0=$(python3 bench/case_study.py cpu "$SERVER_SID")
  check_disk
  # (stderr's process substitution first, so it writes to the terminal, not to the .out file)
  "$SURGE" replay "$rec" --target "http://127.0.0.1:$port/" --users "$users" --start-interval "$interval" \
    --message-timeout "$MESSAGE_TIMEOUT" --max-failure-rate 100% --output-dir "$run" --overwrite-output \
    2> >(progress "$c, $users users") > "$run.replay.out" &
  track $!
  wait $! || rc=$?
  cpu1=$(python3 bench/case_study.py cpu "$SERVER_SID")
  procs=$(python3 bench/case_study.py procs "$SERVER_SID")
  stop_server
  [ "$rc" -le 1 ] || { say "$label: surge replay exited $rc"; cat "$run.replay.out"; return; }
  read -r ndone nfailed < <(python3 bench/case_study.py sessions "$run")
  cpu=$(python3 -c "print(round($cpu1 - $cpu0, 2))")
  say "$label, $users users: $ndone sessions done, $nfailed failed, server CPU $cpu s ($procs)"
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$seq" "$c" "$label" "$users" "$run" "$cpu" "$log" >> "$OUT/runs.tsv"
}
skip_row() { # seq, config, reason
  printf '%s\t%s\t%s\tskipped\t%s\t0\t-\n' "$1" "$2" "$(label_of "$2")" "$3" >> "$OUT/runs.tsv"
  say "$(label_of "$2"): skipped: $3"
}

seq=0
for c in ${CONFIGS//,/ }; do
  [[ $c == r-* ]] || continue
  case $c in r-sync|r-sync-manifold*) b=sync ;; r-etl) b=etl ;; *) b=${c#r-}; b=${b%-w2} ;; esac
  if [ -z "${RDIR[$b]:-}" ]; then skip_row $((seq++)) "$c" "${SKIP[$b]:-not prepared}"; continue; fi
  for users in ${R_USERS//,/ }; do run_one $((seq++)) "$c" "$users" "$START_INTERVAL"; done
done
if has ours; then
  # Ours at every load at once, each against its own server: a run is paced by its arrivals (minutes)
  # while ours uses a few ms of CPU per session, so side by side they cost one run's time, not several.
  waves=()
  for users in ${USERS//,/ }; do
    s=$((seq++)) # not inside the & command: that would count in the subshell
    run_one "$s" ours "$users" "$START_INTERVAL" &
    waves+=($!)
    sleep 2
  done
  for w in "${waves[@]}"; do wait "$w"; done # waits: a signal is handled at once
  [ "$BIG_USERS" -gt 0 ] && run_one $((seq++)) ours "$BIG_USERS" "$(( 1000 / BIG_RATE ))ms"
fi
fi # REPORT_ONLY
sort -n -o "$OUT/runs.tsv" "$OUT/runs.tsv"
NAMES=()
while IFS=$'\t' read -r _ _ label users run _ _; do
  [ "$users" = skipped ] || NAMES+=("$run" --name "$label, $users users")
done < "$OUT/runs.tsv"

# ---------- report, table, targets ----------
if [ ${#NAMES[@]} -gt 0 ]; then
  say "surge report of every run -> $OUT/report.html"
  "$SURGE" report "${NAMES[@]}" --allow-mixed -o "$OUT/report.html" | sed 's/^/  /'
  # The README's picture: the sessions of R sync, R async2, R sync x manifold (4) and ours at the
  # experiment's top load, from a report of those four runs (all ten make a page too tall to show).
  PIC=()
  r1=${R_USERS%%,*}; top=${USERS##*,}
  while IFS=$'\t' read -r _ c label users run _ _; do
    case "$c:$users" in "r-sync:$r1"|"r-async2:$r1"|"r-sync-manifold4:$r1"|"ours:$top") PIC+=("$run" --name "$label, $users users") ;; esac
  done < "$OUT/runs.tsv"
  [ ${#PIC[@]} -gt 0 ] || PIC=("${NAMES[@]}")
  "$SURGE" report "${PIC[@]}" --allow-mixed -o "$OUT/report-picture.html" >/dev/null &&
    node web/e2e/case-study-shot.mjs "$OUT/report-picture.html" "$OUT/report.png" aligned || say "report screenshot failed"
fi
echo
python3 bench/case_study.py analyze "$OUT/runs.tsv" "$OUT/RESULTS.md"
if [ "$FULL_RUN" = 1 ]; then
  LOAD="$(sort -n "$LOAD_LOG" | awk '{v[NR]=$1} END {if (NR) printf "load average %s at the start, %s at the end, %s to %s during", first, last, v[1], v[NR]}' first="$(head -1 "$LOAD_LOG")" last="$(tail -1 "$LOAD_LOG")")"
  # The capacity part (bench/capacity-scaling.sh appends it) is kept; the file is replaced whole.
  {
    echo "# Case study results"; echo
    echo "\`make case-study\`, $(date -u +%F), day $DAY ($ROWS rows), $(nproc) cores, $(( $(date +%s) - T0 )) s; $LOAD (1-minute, the run's own processes included)."
    echo; cat "$OUT/RESULTS.md"
    [ -f "$RESULTS_DIR/RESULTS.md" ] && sed -n '/^## Capacity/,$p' "$RESULTS_DIR/RESULTS.md" | sed '1s/^/\n/'
  } > "$RESULTS_DIR/RESULTS.md.tmp" && mv "$RESULTS_DIR/RESULTS.md.tmp" "$RESULTS_DIR/RESULTS.md"
  [ -f "$OUT/report.png" ] && cp "$OUT/report.png" "$RESULTS_DIR/report.png"
  say "written $RESULTS_DIR/RESULTS.md"
fi
say "done; run dirs, recordings and report in $OUT"
