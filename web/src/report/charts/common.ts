// Shared look: class colours, facet containers, chart creation and the "all drawn" signal that
// browser tests and screenshots wait for.
import { echarts } from "../echarts";
import type { Run } from "../data";
import { fmtSec } from "../format";

export const CLASS_COLORS = ["#3b6fb6", "#8ec1ea", "#f0a030", "#4aa564", "#b8bcc4"];
export const FAIL = "#d62728";
export const PHASE_FILL = "rgba(100,110,130,0.10)";
export const CROSS = "path://M2,0L5,3L8,0L10,2L7,5L10,8L8,10L5,7L2,10L0,8L3,5L0,2Z";

const charts: echarts.ECharts[] = [];
let pending = 0;

function markReady(): void {
  pending -= 1;
  if (pending === 0) document.documentElement.dataset.ready = "1";
}

/** A titled facet block inside a section; returns the block for controls and charts. */
export function facet(section: string, title: string): HTMLElement {
  const host = document.getElementById(`charts-${section}`)!;
  const div = document.createElement("div");
  div.className = "facet";
  if (title) {
    const h = document.createElement("h3");
    h.textContent = title;
    div.appendChild(h);
  }
  host.appendChild(div);
  return div;
}

/** Lays facets side by side (few runs) or stacked (many). */
export function row(section: string, n: number): void {
  const host = document.getElementById(`charts-${section}`)!;
  if (n > 1 && n <= 3) {
    host.style.display = "grid";
    host.style.gridTemplateColumns = `repeat(${n}, minmax(0, 1fr))`;
    host.style.gap = "12px";
  }
}

/** Creates a chart of the given height in `parent`; tracks its first full render. */
export function chart(parent: HTMLElement, height: number): echarts.ECharts {
  const div = document.createElement("div");
  div.className = "chart";
  div.style.height = `${Math.round(height)}px`;
  parent.appendChild(div);
  const c = echarts.init(div, undefined, { renderer: "canvas" });
  charts.push(c);
  pending += 1;
  let done = false;
  c.on("finished", () => {
    if (!done) {
      done = true;
      markReady();
    }
  });
  return c;
}

/** Disposes every chart (a live page redraws them all from a new model). */
export function disposeAll(): void {
  for (const c of charts) c.dispose();
  charts.length = 0;
  pending = 0;
  delete document.documentElement.dataset.ready;
}

export function resizeAll(): void {
  for (const c of charts) c.resize();
}

export function timeAxis(max: number, name: string) {
  return {
    type: "value" as const,
    min: 0,
    max,
    name,
    nameLocation: "middle" as const,
    nameGap: 24,
    // Not at y = 0: on the gantt (inverted rows) that is the middle of the first row.
    axisLine: { onZero: false },
    axisLabel: { formatter: (v: number) => fmtSec(v) },
    splitLine: { lineStyle: { color: "#eef0f3" } },
  };
}

/** The option of a facet drawn over run time, one per run: legend top right, the time axis and
 * zoom along it; the caller gives the rest. */
export function runTimeFacet(o: {
  xMax: number;
  xName: string;
  grid: object;
  legendItemWidth: number;
  tooltip: object;
  yAxis: unknown;
  series: unknown;
}) {
  return {
    animation: false,
    grid: o.grid,
    legend: { top: 0, right: 8, itemWidth: o.legendItemWidth, textStyle: { fontSize: 11 } },
    tooltip: { ...TOOLTIP_BASE, ...o.tooltip },
    xAxis: timeAxis(o.xMax, o.xName),
    yAxis: o.yAxis,
    dataZoom: [{ type: "inside", xAxisIndex: 0, filterMode: "none" }],
    series: o.series,
  };
}

/** Shaded warm-up and cool-down bands (seconds). */
export function phaseAreas(run: Run, xIsRunTime: boolean) {
  if (!xIsRunTime) return undefined;
  const w = run.m.warmup_end_ms / 1000;
  const c = run.m.cooldown_start_ms / 1000;
  const end = run.m.duration_ms / 1000;
  if (!(c > w)) return undefined;
  const data: { xAxis: number; name?: string }[][] = [];
  if (w > 0) data.push([{ xAxis: 0, name: "warm-up" }, { xAxis: w }]);
  if (end > c) data.push([{ xAxis: c, name: "cool-down" }, { xAxis: end }]);
  if (data.length === 0) return undefined;
  return {
    silent: true,
    itemStyle: { color: PHASE_FILL },
    label: { color: "#667085", fontSize: 11, position: "insideTop" as const },
    data,
  };
}

export const TOOLTIP_BASE = {
  confine: true,
  backgroundColor: "rgba(255,255,255,0.97)",
  borderColor: "#d0d5dd",
  textStyle: { fontSize: 12, color: "#1d2330" },
  extraCssText: "max-width:520px;white-space:normal;",
};

/** Nice maximum for shared scales. */
export function niceMax(v: number): number {
  if (!(v > 0)) return 1;
  const p = Math.pow(10, Math.floor(Math.log10(v)));
  for (const m of [1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}
