// Sessions as gantt rows: one row per session, a rectangle per event coloured by class. Two
// variants: x = time since the run started (with warm-up / cool-down shaded), or x = time since
// the session's own start (with the page-load limit line), rows ordered by start, duration or page load.
//
// 1,000 sessions × 100 events is 100k rectangles: drawn as one path per class (rebuilt on zoom)
// instead of one element per event, which took ECharts ~2 s per chart (an SVG path string was
// slower still: 17 s). Hover is a hit test on the row under the pointer.
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

const GRID = { left: 56, right: 24, top: 18, bottom: 62 };

function rowHeight(n: number): number {
  return n <= 60 ? 9 : n <= 150 ? 4 : n <= 400 ? 2 : 1;
}

/** rowOf[session] = its row; sessOf[row] = the session shown there. */
function order(run: Run, how: Order): { rowOf: Int32Array; sessOf: Int32Array } {
  const s = run.m.sessions;
  const idx = Array.from({ length: run.nSessions }, (_, i) => i);
  if (how === "duration") idx.sort((a, b) => s.dur[b] - s.dur[a]);
  if (how === "pageload") idx.sort((a, b) => s.page_load[b] - s.page_load[a]);
  const rowOf = new Int32Array(run.nSessions);
  idx.forEach((sess, r) => (rowOf[sess] = r));
  return { rowOf, sessOf: Int32Array.from(idx) };
}

/** Event start on the chart's x axis (ms). */
function x0(run: Run, k: number, aligned: boolean): number {
  return aligned ? run.evStart[k] - run.m.sessions.start[run.evSess[k]] : run.evStart[k];
}

interface RectsShape { rects: Float64Array; n: number }

/** A zrender shape that draws many rectangles as one path: `rects` holds x, y, w, h quadruples. */
const Rects = echarts.graphic.extendShape({
  shape: { rects: new Float64Array(0), n: 0 },
  buildPath(ctx: { rect(x: number, y: number, w: number, h: number): void }, shape: RectsShape) {
    const r = shape.rects;
    for (let i = 0; i < shape.n; i++) ctx.rect(r[4 * i], r[4 * i + 1], r[4 * i + 2], r[4 * i + 3]);
  },
} as unknown as Parameters<typeof echarts.graphic.extendShape>[0]);
echarts.graphic.registerShape("surgeRects", Rects as unknown as Parameters<typeof echarts.graphic.registerShape>[1]);

/** Draws every event of one class (or, for `cls` = -1, the failed ones) as a single shape. */
function renderClass(run: Run, aligned: boolean, rowOf: Int32Array) {
  return (params: CustomSeriesRenderItemParams, api: CustomSeriesRenderItemAPI): CustomSeriesRenderItemReturn => {
    const cls = api.value(2) as number;
    const cs = params.coordSys as unknown as { x: number; y: number; width: number; height: number };
    const o = api.coord([0, 0]);
    const u = api.coord([1, 1]);
    const sx = u[0] - o[0];
    const sy = u[1] - o[1];
    const h = Math.abs(sy);
    const hh = Math.max(1, Math.round(h * (h >= 6 ? 0.8 : 1)));
    const left = Math.round(cs.x);
    const right = Math.round(cs.x + cs.width);
    const rects = new Float64Array(run.nEvents * 4);
    let n = 0;
    for (let k = 0; k < run.nEvents; k++) {
      const failed = run.evFailed[k] === 1;
      if (cls === -1 ? !failed : failed || run.evClass[k] !== cls) continue;
      const t = x0(run, k, aligned) / 1000;
      let a = Math.round(o[0] + t * sx);
      let b = Math.round(o[0] + (t + run.evDur[k] / 1000) * sx);
      if (b < left || a > right) continue;
      a = Math.max(a, left);
      b = Math.min(Math.max(b, a + 1), right);
      // Whole pixels: crisp edges and exact class colours, even for sub-pixel events.
      rects[4 * n] = a;
      rects[4 * n + 1] = Math.round(o[1] + rowOf[run.evSess[k]] * sy - hh / 2);
      rects[4 * n + 2] = b - a;
      rects[4 * n + 3] = hh;
      n++;
    }
    if (n === 0) return null;
    return {
      type: "surgeRects",
      shape: { rects, n },
      style: { fill: cls === -1 ? FAIL : CLASS_COLORS[cls] },
      silent: true,
    } as unknown as CustomSeriesRenderItemReturn;
  };
}

function failTip(run: Run, i: number): string {
  const s = run.m.sessions;
  const reason = s.reason[i] >= 0 ? run.m.summary.outcome.failures[s.reason[i]].reason : "failed";
  return `<b>session ${s.id[i]}</b> (user ${s.worker[i]}, iteration ${s.iter[i]})<br>` +
    `<span style="color:${FAIL}">✕ ${esc(reason)}</span>`;
}

function eventTip(run: Run, k: number, aligned: boolean): string {
  const s = run.m.sessions;
  const i = run.evSess[k];
  const cls = run.evClass[k];
  return `<b>session ${s.id[i]}</b> (user ${s.worker[i]}, iteration ${s.iter[i]})<br>` +
    `${esc(lineLabel(run.rec, run.evRec[k], 120))}<br>` +
    `<span style="color:${CLASS_COLORS[cls]}">■</span> ${run.evFailed[k] ? `<b style="color:${FAIL}">failed</b> ` : ""}` +
    `duration <b>${fmtMs(run.evDur[k])}</b> · at ${fmtMs(x0(run, k, aligned))}${aligned ? " into the session" : ""}`;
}

function option(model: Model, run: Run, aligned: boolean, rowOf: Int32Array, xMax: number) {
  const s = run.m.sessions;
  const fails: number[][] = [];
  for (let i = 0; i < run.nSessions; i++) {
    if (s.outcome[i] !== 1) continue;
    const end = aligned ? s.dur[i] : s.start[i] + s.dur[i];
    fails.push([end / 1000, rowOf[i], i]);
  }
  const n = run.nSessions;
  const markers: Record<string, unknown> = {
    type: "scatter",
    data: fails,
    symbol: CROSS,
    symbolSize: n > 150 ? 8 : 10,
    itemStyle: { color: FAIL },
    z: 5,
    tooltip: { ...TOOLTIP_BASE, formatter: (p: unknown) => failTip(run, (p as { data: number[] }).data[2]) },
  };
  const areas = phaseAreas(run, !aligned);
  if (areas) markers.markArea = areas;
  if (aligned) {
    markers.markLine = {
      silent: true,
      symbol: "none",
      lineStyle: { color: FAIL, width: 1.5, type: "solid" },
      label: { formatter: `page-load limit ${fmtMs(model.page_load_limit_ms)}`, color: FAIL, position: "insideEndTop" },
      data: [{ xAxis: model.page_load_limit_ms / 1000 }],
    };
  }
  // Other (sends, close) is instant and left out; -1 draws events cut short by a failure.
  const classes = [0, 1, 2, 3, -1];
  return {
    animation: false,
    grid: GRID,
    tooltip: { ...TOOLTIP_BASE, trigger: "item" },
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
        renderItem: renderClass(run, aligned, rowOf),
        data: classes.map((c) => [0, 0, c]),
        encode: { x: 0, y: 1 },
        silent: true,
        clip: true,
      },
      markers,
    ],
  };
}

/** Tooltip for events: the row under the pointer, the event spanning the pointer's time (±2 px). */
function hover(c: echarts.ECharts, run: Run, aligned: boolean, getOrder: () => Int32Array): void {
  const tip = document.createElement("div");
  tip.className = "gantt-tip";
  tip.style.cssText =
    "position:absolute;display:none;pointer-events:none;z-index:10;background:rgba(255,255,255,0.97);" +
    "border:1px solid #d0d5dd;border-radius:4px;padding:6px 9px;font-size:12px;max-width:520px;" +
    "box-shadow:0 2px 8px rgba(0,0,0,0.12)";
  const dom = c.getDom() as HTMLElement;
  dom.style.position = "relative";
  dom.appendChild(tip);
  const hide = (): void => {
    tip.style.display = "none";
  };
  c.getZr().on("mouseout", hide);
  c.getZr().on("mousemove", (e: { offsetX: number; offsetY: number }) => {
    const [t, r] = c.convertFromPixel({ gridIndex: 0 }, [e.offsetX, e.offsetY]) as number[];
    const [t2] = c.convertFromPixel({ gridIndex: 0 }, [e.offsetX + 2, e.offsetY]) as number[];
    const row = Math.round(r);
    const sessOf = getOrder();
    if (!(row >= 0 && row < sessOf.length) || t < 0) {
      hide();
      return;
    }
    const i = sessOf[row];
    const ms = t * 1000;
    const slack = Math.abs(t2 - t) * 1000;
    let best = -1;
    for (let k = run.off[i]; k < run.off[i + 1]; k++) {
      if (run.evClass[k] === OTHER && !run.evFailed[k]) continue;
      const a = x0(run, k, aligned);
      if (ms >= a - slack && ms <= a + run.evDur[k] + slack) {
        best = k;
        if (ms >= a && ms <= a + run.evDur[k]) break;
      }
    }
    if (best < 0) {
      hide();
      return;
    }
    tip.innerHTML = eventTip(run, best, aligned);
    tip.style.display = "block";
    const w = dom.clientWidth;
    tip.style.left = `${Math.min(e.offsetX + 14, w - 300)}px`;
    tip.style.top = `${e.offsetY + 14}px`;
  });
}

function height(n: number): number {
  return Math.max(150, n * rowHeight(n)) + GRID.top + GRID.bottom;
}

/** Sessions over the run. */
export function ganttByRunTime(model: Model, runs: Run[]): void {
  const xMax = Math.max(...runs.map((r) => r.m.duration_ms)) / 1000;
  for (const run of runs) {
    const box = facet("gantt", runs.length > 1 ? run.m.name : "");
    const c = chart(box, height(run.nSessions));
    const o = order(run, "start");
    c.setOption(option(model, run, false, o.rowOf, xMax));
    hover(c, run, false, () => o.sessOf);
  }
}

/** Sessions aligned by their own start, with an ordering control. */
export function ganttAligned(model: Model, runs: Run[]): void {
  let xMax = model.page_load_limit_ms;
  for (const r of runs) for (const d of r.m.sessions.dur) xMax = Math.max(xMax, d);
  xMax /= 1000;
  const host = document.getElementById("charts-aligned")!;
  const controls = document.createElement("div");
  controls.className = "controls";
  controls.innerHTML =
    'Rows ordered by <select id="aligned-order"><option value="start">session start</option>' +
    '<option value="duration">duration (longest first)</option>' +
    '<option value="pageload">page load (slowest first)</option></select>';
  host.appendChild(controls);
  const orders = runs.map((run) => order(run, "start"));
  const made = runs.map((run, i) => {
    const box = facet("aligned", runs.length > 1 ? run.m.name : "");
    const c = chart(box, height(run.nSessions));
    c.setOption(option(model, run, true, orders[i].rowOf, xMax));
    hover(c, run, true, () => orders[i].sessOf);
    return c;
  });
  const sel = controls.querySelector("select")!;
  sel.addEventListener("change", () => {
    runs.forEach((run, i) => {
      orders[i] = order(run, sel.value as Order);
      made[i].setOption(option(model, run, true, orders[i].rowOf, xMax), { replaceMerge: ["series"] });
    });
  });
}
