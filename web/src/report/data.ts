// The report's data model (written by crates/surge/src/report/model.rs) and its decoding into
// per-event arrays the charts share. Times are ms; charts show seconds.

export type Dist = [n: number, p50: number, p90: number, p99: number, max: number];

export interface Recording {
  path: string;
  target: string | null;
  duration_ms: number;
  line: number[];
  kind: string[];
  class: number[];
  label: string[];
  begin: number[];
  dur: number[];
}

export interface RunModel {
  name: string;
  dir: string;
  recording: number;
  start_epoch_ms: number;
  duration_ms: number;
  warmup_end_ms: number;
  cooldown_start_ms: number;
  summary: {
    workers: number;
    sessions: number;
    completed: number;
    failed: number;
    unfinished: number;
    events: number;
    failed_events: number;
    reasons: [string, number][];
    page_load: Dist;
    over_limit: number;
    session_duration: Dist;
    classes: Dist[];
  };
  sessions: {
    id: number[];
    worker: number[];
    iter: number[];
    start: number[];
    dur: number[];
    outcome: number[];
    reason: number[];
    page_load: number[];
    n: number[];
  };
  events: { line: number[]; gap: number[]; dur: number[]; failed: number[] };
  lines: number[][];
  /** shape.csv each second: [ms since run start, users asked, users, arrivals asked (-1: closed), arrivals] */
  shape?: number[][];
  /** manifold.csv each second (--manifold): [ms since run start, ready, busy, starting, queue, saturation × 1000] */
  manifold?: number[][];
}

/** A capacity search (capacity.json of `surge capacity`). */
export interface Capacity {
  unit: string;
  slo_names: string[];
  limits_ms: number[];
  steps: { dir: string; load: number; ok: boolean; values: (number | null)[]; failure_rate: number }[];
  holds: number | null;
  breaks: number | null;
  answer: string;
}

export interface Model {
  version: number;
  generated: string;
  page_load_limit_ms: number;
  classes: string[];
  same_recording: boolean;
  recordings: Recording[];
  runs: RunModel[];
  capacity?: Capacity;
}

/** A run with absolute event times and per-session totals, computed once. */
export interface Run {
  idx: number;
  m: RunModel;
  rec: Recording;
  /** recording line number -> index in `rec` columns */
  recIdx: Map<number, number>;
  nSessions: number;
  nEvents: number;
  /** first event of session i is off[i]; its events end at off[i+1] */
  off: Int32Array;
  evSess: Int32Array;
  /** ms since run start */
  evStart: Float64Array;
  evDur: Float64Array;
  evClass: Uint8Array;
  evRec: Int32Array;
  evFailed: Uint8Array;
  /** per session: ms waiting on HTTP (Homepage + JS/CSS) and on Calculate */
  httpTotal: Float64Array;
  calcTotal: Float64Array;
  /** per session: sum of all event durations */
  busy: Float64Array;
}

export const OTHER = 4;

export function decode(model: Model): Run[] {
  return model.runs.map((m, idx) => {
    const rec = model.recordings[m.recording];
    const recIdx = new Map<number, number>();
    rec.line.forEach((l, i) => recIdx.set(l, i));
    const s = m.sessions;
    const e = m.events;
    const nS = s.id.length;
    const nE = e.line.length;
    const off = new Int32Array(nS + 1);
    const evSess = new Int32Array(nE);
    const evStart = new Float64Array(nE);
    const evDur = new Float64Array(nE);
    const evClass = new Uint8Array(nE);
    const evRec = new Int32Array(nE);
    const evFailed = new Uint8Array(nE);
    const httpTotal = new Float64Array(nS);
    const calcTotal = new Float64Array(nS);
    const busy = new Float64Array(nS);
    for (const f of e.failed) evFailed[f] = 1;
    let k = 0;
    for (let i = 0; i < nS; i++) {
      off[i] = k;
      let t = s.start[i];
      for (let j = 0; j < s.n[i]; j++, k++) {
        t += e.gap[k];
        evSess[k] = i;
        evStart[k] = t;
        evDur[k] = e.dur[k];
        t += e.dur[k];
        const ri = recIdx.get(e.line[k]) ?? -1;
        evRec[k] = ri;
        const c = ri >= 0 ? rec.class[ri] : OTHER;
        evClass[k] = c;
        busy[i] += e.dur[k];
        if (c <= 1) httpTotal[i] += e.dur[k];
        else if (c === 3) calcTotal[i] += e.dur[k];
      }
    }
    off[nS] = k;
    return {
      idx, m, rec, recIdx, nSessions: nS, nEvents: nE, off, evSess, evStart, evDur, evClass, evRec,
      evFailed, httpTotal, calcTotal, busy,
    };
  });
}

/** "L12 WS_RECV values: distPlot" */
export function lineLabel(rec: Recording, ri: number, max = 60): string {
  if (ri < 0) return "?";
  const s = `L${rec.line[ri]} ${rec.kind[ri]} ${rec.label[ri]}`;
  return s.length > max ? s.slice(0, max - 1) + "…" : s;
}
