// Active sessions (step line) and completed events per second (bars) over each run.
import type { Run } from "../data";
import { fmtSec } from "../format";
import { chart, facet, niceMax, phaseAreas, row, runTimeFacet } from "./common";

function bucketSeconds(durS: number): number {
  const raw = durS / 120;
  for (const b of [1, 2, 5, 10, 15, 30, 60, 120, 300, 600]) if (b >= raw) return b;
  return 1200;
}

interface Series { active: number[][]; rate: number[][]; peak: number; peakRate: number; asked: number[][]; had: number[][]; open: boolean }

/** The load shape (shape.csv): users asked and had, or for an open model arrivals/s asked and achieved. */
function shapeSeries(run: Run): { asked: number[][]; had: number[][]; open: boolean } {
  const sh = run.m.shape ?? [];
  const open = sh.some((p) => p[3] >= 0);
  if (!open) return { asked: sh.map((p) => [p[0] / 1000, p[1]]), had: sh.map((p) => [p[0] / 1000, p[2]]), open };
  const rate = (i: number, col: number) => {
    const dt = (sh[i][0] - sh[i - 1][0]) / 1000;
    return dt > 0 ? (sh[i][col] - sh[i - 1][col]) / dt : 0;
  };
  const idx = sh.map((_, i) => i).slice(1);
  return { asked: idx.map((i) => [sh[i][0] / 1000, rate(i, 3)]), had: idx.map((i) => [sh[i][0] / 1000, rate(i, 4)]), open };
}

function compute(run: Run, bucket: number): Series {
  const s = run.m.sessions;
  const edges: [number, number][] = [];
  for (let i = 0; i < run.nSessions; i++) {
    edges.push([s.start[i], 1], [s.start[i] + s.dur[i], -1]);
  }
  edges.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  const active: number[][] = [[0, 0]];
  let cur = 0;
  let peak = 0;
  for (const [t, d] of edges) {
    cur += d;
    peak = Math.max(peak, cur);
    active.push([t / 1000, cur]);
  }
  const nb = Math.max(1, Math.ceil(run.m.duration_ms / 1000 / bucket));
  const counts = new Float64Array(nb);
  for (let k = 0; k < run.nEvents; k++) {
    const b = Math.min(nb - 1, Math.floor((run.evStart[k] + run.evDur[k]) / 1000 / bucket));
    counts[b] += 1;
  }
  const rate = Array.from(counts, (c, b) => [(b + 0.5) * bucket, c / bucket]);
  const sh = shapeSeries(run);
  for (const p of [...sh.asked, ...sh.had]) peak = Math.max(peak, p[1]);
  return { active, rate, peak, peakRate: Math.max(0, ...rate.map((r) => r[1])), ...sh };
}

export function concurrencyView(runs: Run[]): void {
  row("concurrency", runs.length);
  const xMax = Math.max(...runs.map((r) => r.m.duration_ms)) / 1000;
  const bucket = bucketSeconds(xMax);
  const all = runs.map((r) => compute(r, bucket));
  const aMax = niceMax(Math.max(...all.map((a) => a.peak)));
  const rMax = niceMax(Math.max(...all.map((a) => a.peakRate)));
  runs.forEach((run, idx) => {
    const d = all[idx];
    const box = facet("concurrency", runs.length > 1 ? run.m.name : "");
    const c = chart(box, 300);
    const areas = phaseAreas(run, true);
    c.setOption(runTimeFacet({
      xMax,
      xName: "time since the run started",
      grid: { left: 52, right: 56, top: 26, bottom: 44 },
      legendItemWidth: 12,
      tooltip: {
        trigger: "axis",
        axisPointer: { type: "line" },
        valueFormatter: (v: unknown) => (typeof v === "number" ? v.toFixed(v < 10 ? 1 : 0) : String(v)),
      },
      yAxis: [
        { type: "value", min: 0, max: aMax, name: "active sessions", nameLocation: "middle", nameGap: 34, splitLine: { lineStyle: { color: "#eef0f3" } } },
        { type: "value", min: 0, max: rMax, name: `events/s (${fmtSec(bucket)} buckets)`, nameLocation: "middle", nameGap: 40, splitLine: { show: false } },
      ],
      series: [
        { name: "events/s", type: "bar", yAxisIndex: 1, data: d.rate, barWidth: "90%", itemStyle: { color: "rgba(74,165,100,0.45)" }, ...(areas ? { markArea: areas } : {}) },
        { name: "active sessions", type: "line", step: "end", symbol: "none", data: d.active, lineStyle: { color: "#3b6fb6", width: 2 }, itemStyle: { color: "#3b6fb6" } },
        ...(d.asked.length
          ? [
              { name: d.open ? "arrivals/s asked" : "users asked", type: "line", symbol: "none", data: d.asked, lineStyle: { color: "#b04a8f", width: 2, type: "dashed" }, itemStyle: { color: "#b04a8f" } },
              { name: d.open ? "arrivals/s" : "users", type: "line", symbol: "none", data: d.had, lineStyle: { color: "#b04a8f", width: 1 }, itemStyle: { color: "#b04a8f" } },
            ]
          : []),
      ],
    }));
  });
}
