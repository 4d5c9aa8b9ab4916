// Generated from the Rust types (crates/surge/src/report/model.rs, report/stats.rs,
// report/inputs.rs, rundir/outcome.rs, stats.rs, capfile.rs, timing.rs) by `SURGE_WRITE_TS=1 cargo test -p surge --lib model`. Do not edit.

export type Model = { 
/**
 * Model format version.
 */
version: number, 
/**
 * When the report was made (RFC 3339, UTC).
 */
generated: string, 
/**
 * Page-load limit drawn on the charts (ms).
 */
page_load_limit_ms: number, 
/**
 * Class names, indexed by class number.
 */
classes: string[], 
/**
 * All runs replayed the same recording.
 */
same_recording: boolean, 
/**
 * Distinct recordings (one when `same_recording`).
 */
recordings: Array<RecModel>, 
/**
 * Runs in the order given.
 */
runs: Array<RunModel>, 
/**
 * A capacity directory's search (its runs are the last good and first bad steps).
 */
capacity?: CapacityResult, };

export type RecModel = { 
/**
 * File it was read from.
 */
path: string, 
/**
 * Target URL from its header, if any.
 */
target: string | null, 
/**
 * First begin to last end (ms).
 */
duration_ms: number, 
/**
 * Physical line numbers.
 */
line: Array<number>, 
/**
 * Event type per line.
 */
kind: Array<string>, 
/**
 * Class number per line.
 */
class: Array<number>, 
/**
 * Short label per line.
 */
label: Array<string>, 
/**
 * Recorded begin, ms since the first event.
 */
begin: number[], 
/**
 * Recorded duration (ms).
 */
dur: number[], };

export type RunModel = { 
/**
 * Display name.
 */
name: string, 
/**
 * Directory.
 */
dir: string, 
/**
 * Index into `Model::recordings`.
 */
recording: number, 
/**
 * Epoch ms of the run's first row.
 */
start_epoch_ms: number, 
/**
 * First row to last row (ms).
 */
duration_ms: number, 
/**
 * Warm-up ends (ms since run start).
 */
warmup_end_ms: number, 
/**
 * Cool-down starts (ms since run start).
 */
cooldown_start_ms: number, 
/**
 * What the run's sessions say (summary.json's [`crate::rundir::Outcome`]) and the report's
 * own figures.
 */
summary: RunFigures, 
/**
 * Session columns.
 */
sessions: SessionCols, 
/**
 * Event columns, grouped by session in `sessions` order.
 */
events: EventCols, 
/**
 * Per recording line `[line, n, min, q1, median, q3, max, p90]` (ms).
 */
lines: number[][], 
/**
 * The load shape each second (shape.csv): `[ms since run start, users asked, users,
 * arrivals asked (-1: closed model), arrivals]`; empty for runs without shape.csv.
 */
shape: number[][], 
/**
 * manifold's pool each second (manifold.csv, `--manifold`): `[ms since run start, ready,
 * busy, starting, queue, saturation × 1000]`; empty for runs that did not poll it.
 */
manifold: number[][], 
/**
 * A mix of journeys (`replay a.log:70 b.log:30`): summary.json's figures per journey, in
 * name order; empty for a run of one recording (or without summary.json: shinycannon's).
 */
journeys: Array<JourneyRow>, 
/**
 * Sessions' first use vs reuse of their input (`--data` row), each line's durations split.
 */
inputs: InputUse, 
/**
 * Each recording line's mean time split by the server's `Server-Timing` into queue / server
 * / rest (timing/*.csv); empty when the server sent none.
 */
timing: Array<Split>, 
/**
 * explain.json when `surge explain` made this run (its `loaded/`): each request or output
 * ranked by cost per session; null otherwise.
 */
explain: unknown, };

export type JourneyRow = { 
/**
 * Its name (the recording's file stem).
 */
name: string, 
/**
 * Its weight in the mix.
 */
weight: number, 
/**
 * Sessions started, completed and failed.
 */
sessions: number[], 
/**
 * Its completed sessions' durations, ms.
 */
session: Summary, 
/**
 * All its events, ms.
 */
events: Summary, };

export type RunFigures = { 
/**
 * Sessions (started, completed, failed, unfinished), failures by kind and by (kind, line)
 * with their reasons, latency percentiles: as summary.json states them.
 */
outcome: Outcome, 
/**
 * Distinct worker ids (simulated users).
 */
workers: number, 
/**
 * Replayed events (START/END pairs, plus events cut short by a failure).
 */
events: number, 
/**
 * Events cut short by a failure.
 */
failed_events: number, 
/**
 * Page load (home + its assets), per session.
 */
page_load: Dist, 
/**
 * Sessions whose page load exceeded the page-load limit.
 */
over_limit: number, 
/**
 * Event durations per class, indexed by `Class::index`.
 */
classes: Array<Dist>, };

export type Dist = [n: number, p50: number, p90: number, p99: number, max: number];

export type Outcome = { 
/**
 * Sessions started, completed, failed (and unfinished).
 */
sessions: SessionCounts, 
/**
 * failed / started (0 when none started).
 */
failure_rate: number, 
/**
 * Failed sessions per kind of failure (`timeout`, `wrong_status`, `closed`, ...).
 */
failures_by_kind: Record<string, number>, 
/**
 * Failed sessions grouped by kind and recording line, most frequent first.
 */
failures: Array<FailureCount>, 
/**
 * Per event type (REQ_HOME, WS_RECV, ...): durations in ms.
 */
events: { [key in string]?: Summary }, 
/**
 * All events together, ms.
 */
overall: Summary, 
/**
 * Whole completed sessions, ms.
 */
session_duration: Summary, };

export type SessionCounts = { 
/**
 * Sessions begun (completed + failed + unfinished).
 */
started: number, 
/**
 * Sessions that played to their end (PLAYBACK_DONE).
 */
completed: number, 
/**
 * Sessions that failed (PLAYBACK_FAIL), interrupted ones included.
 */
failed: number, 
/**
 * Sessions whose CSV ends with neither (a shinycannon run stopped midway; a replay writes
 * PLAYBACK_FAIL for the sessions it stops, so its summary.json leaves this out).
 */
unfinished?: number, 
/**
 * Sessions whose CSV could not be written (e.g. a full disk): absent from the run directory.
 */
unwritten: number, };

export type FailureCount = { 
/**
 * What went wrong.
 */
kind: string, 
/**
 * recording.log line (0: before the first event).
 */
line: number, 
/**
 * The recording event's type (absent before the first event).
 */
event?: string, 
/**
 * The request's URL as sent (absent for failures outside a request, and in what the report
 * reads from session CSVs, whose comment has it inside the reason only).
 */
url?: string, 
/**
 * The first such failure's readable line (in the report: as the CSV's PLAYBACK_FAIL comment
 * holds it, commas as `;`).
 */
reason: string, 
/**
 * How many sessions failed so.
 */
count: number, };

export type Percentiles = { 
/**
 * Per event type (REQ_HOME, WS_RECV, ...): durations in ms.
 */
events: { [key in string]?: Summary }, 
/**
 * All events together, ms.
 */
overall: Summary, 
/**
 * Whole completed sessions, ms.
 */
session_duration: Summary, };

export type Summary = { 
/**
 * Values recorded.
 */
count: number, 
/**
 * Their mean.
 */
mean: number, 
/**
 * Median.
 */
p50: number, 
/**
 * 90th percentile.
 */
p90: number, 
/**
 * 95th percentile.
 */
p95: number, 
/**
 * 99th percentile.
 */
p99: number, 
/**
 * 99.9th percentile.
 */
"p99.9": number, 
/**
 * Largest value.
 */
max: number, };

export type SessionCols = { 
/**
 * session_id.
 */
id: Array<number>, 
/**
 * worker_id.
 */
worker: Array<number>, 
/**
 * iteration.
 */
iter: Array<number>, 
/**
 * Start, ms since run start.
 */
start: number[], 
/**
 * Duration (ms).
 */
dur: number[], 
/**
 * 0 done, 1 failed, 2 unfinished.
 */
outcome: Array<number>, 
/**
 * Index into `summary.outcome.failures` (its failure's group), -1 when none.
 */
reason: Array<number>, 
/**
 * Page load (ms), -1 when none.
 */
page_load: number[], 
/**
 * Number of events of this session in `events`.
 */
n: Array<number>, };

export type EventCols = { 
/**
 * recording.log line.
 */
line: Array<number>, 
/**
 * ms after the previous event's end (first event: after session start).
 */
gap: number[], 
/**
 * Duration (ms).
 */
dur: number[], 
/**
 * Indices (into these columns) of events cut short by a failure.
 */
failed: Array<number>, };

export type CapacityResult = { 
/**
 * `users` (closed model) or `sessions/s` (`--open`).
 */
unit: string, 
/**
 * The recording replayed.
 */
recording: string, 
/**
 * The app's URL.
 */
target: string, 
/**
 * Each `--slo` as given.
 */
slos: Array<string>, 
/**
 * How each SLO is named in the answer (`page_load p95`).
 */
slo_names: Array<string>, 
/**
 * Each SLO's limit (ms).
 */
limits_ms: Array<number>, 
/**
 * `--max-failure-rate`.
 */
max_failure_rate: number, 
/**
 * Every step run, in order.
 */
steps: Array<StepResult>, 
/**
 * Highest load that met every objective (null when the first step broke).
 */
holds: number | null, 
/**
 * Lowest load that broke one (null when none did up to `--max-load`).
 */
breaks: number | null, 
/**
 * The answer line.
 */
answer: string, 
/**
 * Stopped (Ctrl-C) before the answer was found.
 */
interrupted: boolean, 
/**
 * With `--manifold`: manifold's ready workers during the step that held (median of its
 * polls); null without it.
 */
ready_workers: number | null, 
/**
 * `holds` / `ready_workers`: the users (or sessions/s) one ready worker held.
 */
per_worker: number | null, 
/**
 * The knee predicted from one user alone before the search (null with --no-predict, --start,
 * --open or --workers).
 */
prediction?: Prediction, };

export type StepResult = { 
/**
 * Its run directory, relative to the capacity directory (`step-01`).
 */
dir: string, 
/**
 * Concurrent users, or sessions/s for an open search.
 */
load: number, 
/**
 * Sessions judged (after warm-up; dropped arrivals included).
 */
sessions: number, 
/**
 * Of them failed.
 */
failed: number, 
/**
 * failed / sessions.
 */
failure_rate: number, 
/**
 * Each SLO's value (ms), in `--slo` order; null when nothing was measured.
 */
values: Array<number | null>, 
/**
 * Met every SLO and the failure rate.
 */
ok: boolean, 
/**
 * What broke, as the answer line names it (`page_load p95 2.6 s`).
 */
broke: Array<string>, };

export type InputUse = { 
/**
 * Sessions that named a `--data` row (0: every session replayed the recorded input).
 */
with_data: number, 
/**
 * Distinct inputs the sessions used (`--data` rows, the recorded input counting as one).
 */
distinct: number, 
/**
 * Sessions that were the first of the run to use their input.
 */
first: number, 
/**
 * Sessions that used an input an earlier session had used.
 */
again: number, 
/**
 * Per recording line (in recording order), its events' durations in first-use sessions
 * and in reusing ones (events cut short by a failure left out).
 */
lines: Array<InputLine>, };

export type InputLine = { 
/**
 * recording.log line.
 */
line: number, 
/**
 * In sessions that were first to use their input.
 */
first: Dist, 
/**
 * In sessions that reused an input.
 */
again: Dist, };

export type Split = { 
/**
 * recording.log line.
 */
line: number, 
/**
 * Requests that said.
 */
n: number, 
/**
 * Mean measured time, ms.
 */
measured_ms: number, 
/**
 * Mean of the server's queue wait, ms.
 */
queue_ms: number, 
/**
 * Mean of the server's work, ms.
 */
server_ms: number, 
/**
 * The rest (network, client, anything the server did not count), ms.
 */
rest_ms: number, };

export type Prediction = { 
/**
 * `--slots`: requests the server works on at once (processes × threads), c.
 */
slots: number, 
/**
 * D: one session's time in requests and outputs alone (ms), taken as its demand.
 */
demand_ms: number, 
/**
 * Z: one session's pauses alone (ms).
 */
think_ms: number, 
/**
 * N* = (D + Z) / D_max with D_max = D / c: the users at which the slots saturate.
 */
saturation: number, 
/**
 * The users at which the first SLO is predicted to break (fractional).
 */
knee: number, 
/**
 * The SLO that bounds it (as given).
 */
limited_by: string, 
/**
 * knee / slots: users per slot (per single-threaded process).
 */
per_slot: number, 
/**
 * The law and its assumptions, in words.
 */
law: string, };
