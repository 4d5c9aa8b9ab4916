// Sessions as gantt rows: one row per session, a rectangle per event coloured by class. Two
// variants: x = time since the run started (with warm-up / cool-down shaded), or x = time since
// the session's own start (with the threshold line), rows ordered by start, duration or page load.
import type {
  CustomSeriesRenderItemAPI,
  CustomSeriesRenderItemParams,
  CustomSeriesRenderItemReturn,
} from "echarts";
import { echarts } from "../echarts";
import { lineLabel, OTHER, type Model, type Run } from "../data";
import { esc, fmtMs } from "../format";
import {
  chart, CLASS_COLORS, CROSS, FAIL, facet, phaseAreas, timeAxis, TOOLTIP_BASE,
} from "./common";

type Order = "start" | "duration" | "pageload";

function rowHeight(n: number): number {
  return n <= 60 ? 9 : n <= 150 ? 4 : n <= 400 ? 2 : 1;
}

function order(run: Run, how: Order): Int32Array {
  const s = run.m.sessions;
  const idx = Array.from({ length: run.nSessions }, (_, i) => i);
  if (how === "duration") idx.sort((a, b) => s.dur[b] - s.dur[a]);
  if (how === "pageload") idx.sort((a, b) => s.page_load[b] - s.page_load[a]);
  const rowOf = new Int32Array(run.nSessions);
  idx.forEach((sess, r) => (rowOf[sess] = r));
  return rowOf;
}

function renderRect(params: CustomSeriesRenderItemParams, api: CustomSeriesRenderItemAPI): CustomSeriesRenderItemReturn {
  const x0 = api.value(0) as number;
  const x1 = api.value(1) as number;
  const r = api.value(2) as number;
  const cls = api.value(3) as number;
  const failed = api.value(5) as number;
  const a = api.coord([x0, r]);
  const b = api.coord([x1, r]);
  const h = (api.size!([0, 1]) as number[])[1];
  const cs = params.coordSys as unknown as { x: number; y: number; width: number; height: number };
  // Whole pixels: crisp edges and exact class colours, even for sub-pixel events.
  const x = Math.round(a[0]);
  const y = Math.round(a[1] - h / 2);
  const shape = echarts.graphic.clipRectByRect(
    { x, y, width: Math.max(1, Math.round(b[0]) - x), height: Math.max(1, Math.round(h * (h >= 6 ? 0.8 : 1))) },
    { x: cs.x, y: cs.y, width: cs.width, height: cs.height },
  );
  if (!shape) return null;
  return { type: "rect", shape, style: { fill: failed ? FAIL : CLASS_COLORS[cls] } };
}

function tooltip(run: Run, aligned: boolean) {
  const s = run.m.sessions;
  return (p: unknown) => {
    const d = (p as { data: number[]; seriesType: string }).data;
    if ((p as { seriesType: string }).seriesType !== "custom") {
      const i = d[3];
      const reason = s.reason[i] >= 0 ? run.m.summary.reasons[s.reason[i]][0] : "failed";
      return `<b>session ${s.id[i]}</b> (user ${s.worker[i]}, iteration ${s.iter[i]})<br>` +
        `<span style="color:${FAIL}">✕ ${esc(reason)}</span>`;
    }
    const k = d[4];
    const i = run.evSess[k];
    const ri = run.evRec[k];
    const cls = run.evClass[k];
    const at = aligned ? run.evStart[k] - s.start[i] : run.evStart[k];
    return `<b>session ${s.id[i]}</b> (user ${s.worker[i]}, iteration ${s.iter[i]})<br>` +
      `${esc(lineLabel(run.rec, ri, 120))}<br>` +
      `<span style="color:${CLASS_COLORS[cls]}">■</span> ${run.evFailed[k] ? "<b style='color:" + FAIL + "'>failed</b> " : ""}` +
      `duration <b>${fmtMs(run.evDur[k])}</b> · at ${fmtMs(at)}${aligned ? " into the session" : ""}`;
  };
}

function option(model: Model, run: Run, aligned: boolean, rowOf: Int32Array, xMax: number) {
  const s = run.m.sessions;
  const data: number[][] = [];
  for (let k = 0; k < run.nEvents; k++) {
    const cls = run.evClass[k];
    if (cls === OTHER && !run.evFailed[k]) continue;
    const i = run.evSess[k];
    const x0 = (aligned ? run.evStart[k] - s.start[i] : run.evStart[k]) / 1000;
    data.push([x0, x0 + run.evDur[k] / 1000, rowOf[i], cls, k, run.evFailed[k]]);
  }
  const fails: number[][] = [];
  for (let i = 0; i < run.nSessions; i++) {
    if (s.outcome[i] !== 1) continue;
    const end = aligned ? s.dur[i] : s.start[i] + s.dur[i];
    fails.push([end / 1000, rowOf[i], 0, i]);
  }
  const n = run.nSessions;
  const markers: Record<string, unknown> = {
    type: "scatter",
    data: fails,
    symbol: CROSS,
    symbolSize: n > 150 ? 8 : 10,
    itemStyle: { color: FAIL },
    z: 5,
  };
  const areas = phaseAreas(run, !aligned);
  if (areas) markers.markArea = areas;
  if (aligned) {
    markers.markLine = {
      silent: true,
      symbol: "none",
      lineStyle: { color: FAIL, width: 1.5, type: "solid" },
      label: { formatter: `threshold ${fmtMs(model.threshold_ms)}`, color: FAIL, position: "insideEndTop" },
      data: [{ xAxis: model.threshold_ms / 1000 }],
    };
  }
  return {
    animation: false,
    grid: { left: 56, right: 24, top: 18, bottom: 62 },
    tooltip: { ...TOOLTIP_BASE, trigger: "item", formatter: tooltip(run, aligned) },
    xAxis: timeAxis(xMax, aligned ? "time since the session started" : "time since the run started"),
    yAxis: {
      type: "value",
      inverse: true,
      min: -0.5,
      max: n - 0.5,
      name: aligned ? "sessions" : "sessions by start",
      nameLocation: "middle",
      nameGap: 40,
      minInterval: 1,
      splitLine: { show: false },
      axisLabel: { formatter: (v: number) => (Number.isInteger(v) ? String(v + 1) : "") },
    },
    dataZoom: [
      { type: "inside", xAxisIndex: 0, filterMode: "none" },
      { type: "slider", xAxisIndex: 0, filterMode: "none", height: 14, bottom: 6, showDetail: false },
    ],
    series: [
      {
        type: "custom",
        renderItem: renderRect,
        data,
        encode: { x: [0, 1], y: 2 },
        clip: true,
        progressive: 40000,
      },
      markers,
    ],
  };
}

function height(n: number): number {
  return Math.max(150, n * rowHeight(n)) + 80;
}

/** Sessions over the run. */
export function ganttByRunTime(model: Model, runs: Run[]): void {
  const xMax = Math.max(...runs.map((r) => r.m.duration_ms)) / 1000;
  for (const run of runs) {
    const box = facet("gantt", runs.length > 1 ? run.m.name : "");
    const c = chart(box, height(run.nSessions));
    c.setOption(option(model, run, false, order(run, "start"), xMax));
  }
}

/** Sessions aligned by their own start, with an ordering control. */
export function ganttAligned(model: Model, runs: Run[]): void {
  const xMax = Math.max(...runs.map((r) => Math.max(0, ...r.m.sessions.dur)), model.threshold_ms) / 1000;
  const host = document.getElementById("charts-aligned")!;
  const controls = document.createElement("div");
  controls.className = "controls";
  controls.innerHTML =
    'Rows ordered by <select id="aligned-order"><option value="start">session start</option>' +
    '<option value="duration">duration (longest first)</option>' +
    '<option value="pageload">page load (slowest first)</option></select>';
  host.appendChild(controls);
  const made = runs.map((run) => {
    const box = facet("aligned", runs.length > 1 ? run.m.name : "");
    const c = chart(box, height(run.nSessions));
    c.setOption(option(model, run, true, order(run, "start"), xMax));
    return c;
  });
  const sel = controls.querySelector("select")!;
  sel.addEventListener("change", () => {
    runs.forEach((run, i) =>
      made[i].setOption(option(model, run, true, order(run, sel.value as Order), xMax), { replaceMerge: ["series"] }),
    );
  });
}
