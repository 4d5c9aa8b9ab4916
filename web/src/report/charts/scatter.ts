// Per-session scatter views: session duration vs the recording's, and latency (HTTP total,
// Calculate total) by session start. One facet per run, shared scales.
import type { Model, Run } from "../data";
import { esc, fmtMs, fmtSec } from "../format";
import { chart, CLASS_COLORS, facet, FAIL, niceMax, phaseAreas, row, runTimeFacet } from "./common";

const OUTCOME = ["completed", "failed", "unfinished"];
const OUTCOME_COLOR = ["#3b6fb6", FAIL, "#98a2b3"];

function sessionTip(run: Run, i: number, extra: string): string {
  const s = run.m.sessions;
  const reason = s.reason[i] >= 0 ? ` — ${esc(run.m.summary.outcome.failures[s.reason[i]].reason)}` : "";
  return `<b>session ${s.id[i]}</b> (user ${s.worker[i]}, iteration ${s.iter[i]})<br>` +
    `started at ${fmtMs(s.start[i])}, ${OUTCOME[s.outcome[i]]}${reason}<br>${extra}`;
}

/** One run's sessions by start time against a y axis in seconds (0..yMax); each point's data is
 * [x, y, 0, session index], its tooltip the session and `detail` of the point. */
function sessionFacet(run: Run, xMax: number, yMax: number, yName: string, detail: (d: number[]) => string, series: unknown) {
  return runTimeFacet({
    xMax,
    xName: "session start (since the run started)",
    grid: { left: 64, right: 16, top: 26, bottom: 44 },
    legendItemWidth: 10,
    tooltip: {
      trigger: "item",
      formatter: (p: unknown) => {
        const d = (p as { data: number[] }).data;
        return sessionTip(run, d[3], detail(d));
      },
    },
    yAxis: { type: "value", min: 0, max: yMax, name: yName, nameLocation: "middle", nameGap: 48, axisLabel: { formatter: (v: number) => fmtSec(v) } },
    series,
  });
}

/** Session duration vs the recording's own duration. */
export function durationView(model: Model, runs: Run[]): void {
  row("duration", runs.length);
  const xMax = Math.max(...runs.map((r) => r.m.duration_ms)) / 1000;
  const recMax = Math.max(...model.recordings.map((r) => r.duration_ms));
  const yMax = niceMax(Math.max(recMax, ...runs.map((r) => Math.max(0, ...r.m.sessions.dur))) / 1000);
  for (const run of runs) {
    const box = facet("duration", runs.length > 1 ? run.m.name : "");
    const c = chart(box, 320);
    const s = run.m.sessions;
    const series = [0, 1, 2].map((o) => ({
      name: OUTCOME[o],
      type: "scatter",
      symbolSize: run.nSessions > 400 ? 4 : 6,
      itemStyle: { color: OUTCOME_COLOR[o], opacity: 0.8 },
      data: s.start.flatMap((st, i) => (s.outcome[i] === o ? [[st / 1000, s.dur[i] / 1000, 0, i]] : [])),
    })) as Record<string, unknown>[];
    series[0].markLine = {
      silent: true,
      symbol: "none",
      lineStyle: { color: "#1d2330", type: "dashed" },
      label: { formatter: `recording alone: ${fmtMs(run.rec.duration_ms)}`, position: "insideEndTop" },
      data: [{ yAxis: run.rec.duration_ms / 1000 }],
    };
    const areas = phaseAreas(run, true);
    if (areas) series[0].markArea = areas;
    const detail = (d: number[]) => {
      const ratio = run.rec.duration_ms > 0 ? ` (×${(d[1] * 1000 / run.rec.duration_ms).toFixed(2)} the recording)` : "";
      return `duration <b>${fmtSec(d[1])}</b>${ratio}`;
    };
    c.setOption(sessionFacet(run, xMax, yMax, "session duration", detail, series));
  }
}

/** Total HTTP and Calculate latency per session, by session start. */
export function latencyView(model: Model, runs: Run[]): void {
  row("latency", runs.length);
  const xMax = Math.max(...runs.map((r) => r.m.duration_ms)) / 1000;
  let top = model.page_load_limit_ms;
  for (const r of runs) for (let i = 0; i < r.nSessions; i++) top = Math.max(top, r.httpTotal[i], r.calcTotal[i]);
  const yMax = niceMax(top / 1000);
  for (const run of runs) {
    const box = facet("latency", runs.length > 1 ? run.m.name : "");
    const c = chart(box, 320);
    const s = run.m.sessions;
    const pts = (arr: Float64Array) => Array.from(arr, (v, i) => [s.start[i] / 1000, v / 1000, 0, i]);
    const size = run.nSessions > 400 ? 4 : 6;
    const detail = (d: number[]) => {
      const i = d[3];
      return `HTTP (page + assets) <b>${fmtMs(run.httpTotal[i])}</b> · Calculate <b>${fmtMs(run.calcTotal[i])}</b>` +
        (s.page_load[i] >= 0 ? `<br>page load ${fmtMs(s.page_load[i])}` : "");
    };
    c.setOption(sessionFacet(run, xMax, yMax, "total latency per session", detail, [
      {
        name: "HTTP total", type: "scatter", symbolSize: size, data: pts(run.httpTotal),
        itemStyle: { color: CLASS_COLORS[0], opacity: 0.8 },
        markLine: {
          silent: true, symbol: "none", lineStyle: { color: FAIL, width: 1.5 },
          label: { formatter: `page-load limit ${fmtMs(model.page_load_limit_ms)}`, color: FAIL, position: "insideEndTop" },
          data: [{ yAxis: model.page_load_limit_ms / 1000 }],
        },
      },
      { name: "Calculate total", type: "scatter", symbolSize: size, symbol: "triangle", data: pts(run.calcTotal), itemStyle: { color: CLASS_COLORS[3], opacity: 0.8 } },
    ]));
  }
}
