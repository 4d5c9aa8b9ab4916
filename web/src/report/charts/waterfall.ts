// Event waterfall of one chosen session: each step against the recording's own timing (grey ghost
// bar above the replayed bar). The slowest session (most time spent waiting) is shown first.
import type {
  CustomSeriesRenderItemAPI,
  CustomSeriesRenderItemParams,
  CustomSeriesRenderItemReturn,
} from "echarts";
import { echarts } from "../echarts";
import { lineLabel, OTHER, type Run } from "../data";
import { esc, fmtMs } from "../format";
import { chart, CLASS_COLORS, FAIL, facet, timeAxis, TOOLTIP_BASE } from "./common";

const OUT = ["done", "FAILED", "unfinished"];

function bar(ghost: boolean) {
  return (params: CustomSeriesRenderItemParams, api: CustomSeriesRenderItemAPI): CustomSeriesRenderItemReturn => {
    const a = api.coord([api.value(0), api.value(2)]);
    const b = api.coord([api.value(1), api.value(2)]);
    const h = (api.size!([0, 1]) as number[])[1];
    const cs = params.coordSys as unknown as { x: number; y: number; width: number; height: number };
    const y = Math.round(ghost ? a[1] - h * 0.42 : a[1] - h * 0.08);
    const x = Math.round(a[0]);
    const shape = echarts.graphic.clipRectByRect(
      { x, y, width: Math.max(2, Math.round(b[0]) - x), height: Math.round(h * (ghost ? 0.3 : 0.46)) },
      { x: cs.x, y: cs.y, width: cs.width, height: cs.height },
    );
    if (!shape) return null;
    const failed = api.value(4) as number;
    return {
      type: "rect",
      shape,
      style: ghost ? { fill: "#c9ced6" } : { fill: failed ? FAIL : CLASS_COLORS[api.value(3) as number] },
    };
  };
}

function rowsOf(run: Run, i: number): number {
  let n = 0;
  for (let k = run.off[i]; k < run.off[i + 1]; k++) if (run.evClass[k] !== OTHER || run.evFailed[k]) n++;
  return Math.max(n, 4);
}

const ROW = 12;

function slowest(run: Run): number {
  let best = 0;
  for (let i = 1; i < run.nSessions; i++) if (run.busy[i] > run.busy[best]) best = i;
  return best;
}

function option(run: Run, i: number) {
  const s = run.m.sessions;
  const rec = run.rec;
  const from = run.off[i];
  const to = run.off[i + 1];
  const labels: string[] = [];
  const real: number[][] = [];
  const ghost: number[][] = [];
  for (let k = from; k < to; k++) {
    // Instant steps (sends, close) would double the rows and show nothing.
    if (run.evClass[k] === OTHER && !run.evFailed[k]) continue;
    const row = labels.length;
    const ri = run.evRec[k];
    labels.push(lineLabel(rec, ri, 52));
    const x0 = (run.evStart[k] - s.start[i]) / 1000;
    real.push([x0, x0 + run.evDur[k] / 1000, row, run.evClass[k], run.evFailed[k], k]);
    if (ri >= 0) ghost.push([rec.begin[ri] / 1000, (rec.begin[ri] + rec.dur[ri]) / 1000, row, 4, 0, k]);
  }
  const xMax = Math.max(s.dur[i], rec.duration_ms) / 1000;
  return {
    animation: false,
    grid: { left: 330, right: 24, top: 8, bottom: 40 },
    tooltip: {
      ...TOOLTIP_BASE,
      trigger: "item",
      formatter: (p: unknown) => {
        const k = (p as { data: number[] }).data[5];
        const ri = run.evRec[k];
        const recDur = ri >= 0 ? rec.dur[ri] : 0;
        return `${esc(lineLabel(rec, ri, 160))}<br>replayed: <b>${fmtMs(run.evDur[k])}</b>` +
          `${run.evFailed[k] ? ` <b style="color:${FAIL}">failed</b>` : ""} · recorded: ${fmtMs(recDur)}<br>` +
          `starts ${fmtMs(run.evStart[k] - s.start[i])} into the session` +
          (ri >= 0 ? ` (recording: ${fmtMs(rec.begin[ri])})` : "");
      },
    },
    xAxis: timeAxis(xMax, "time since the session started (grey: the recording)"),
    yAxis: {
      type: "category",
      inverse: true,
      data: labels,
      axisTick: { show: false },
      axisLabel: { fontSize: 10, width: 320, overflow: "truncate" },
    },
    dataZoom: [{ type: "inside", xAxisIndex: 0, filterMode: "none" }],
    series: [
      { type: "custom", renderItem: bar(true), data: ghost, encode: { x: [0, 1], y: 2 }, z: 1 },
      { type: "custom", renderItem: bar(false), data: real, encode: { x: [0, 1], y: 2 }, z: 2 },
    ],
  };
}

export function waterfallView(runs: Run[]): void {
  for (const run of runs) {
    const box = facet("waterfall", "");
    const s = run.m.sessions;
    const ctl = document.createElement("div");
    ctl.className = "controls";
    ctl.innerHTML = `${runs.length > 1 ? `<b>${esc(run.m.name)}</b> · ` : ""}session <select></select>`;
    const sel = ctl.querySelector("select")!;
    const ids = Array.from({ length: run.nSessions }, (_, i) => i).sort((a, b) => run.busy[b] - run.busy[a]);
    for (const i of ids) {
      const o = document.createElement("option");
      o.value = String(i);
      o.textContent = `session ${s.id[i]} · user ${s.worker[i]} · iteration ${s.iter[i]} · waited ${fmtMs(run.busy[i])} of ${fmtMs(s.dur[i])} · ${OUT[s.outcome[i]]}`;
      sel.appendChild(o);
    }
    box.appendChild(ctl);
    const first = slowest(run);
    sel.value = String(first);
    const c = chart(box, rowsOf(run, first) * ROW + 56);
    c.setOption(option(run, first));
    sel.addEventListener("change", () => {
      const i = Number(sel.value);
      (c.getDom() as HTMLElement).style.height = `${rowsOf(run, i) * ROW + 56}px`;
      c.resize();
      c.setOption(option(run, i), { notMerge: true });
    });
  }
}
