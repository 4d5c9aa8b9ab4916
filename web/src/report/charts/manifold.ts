// manifold's pool over each run (--manifold): workers ready and busy, the queue, and beside them
// the p95 of the events that ended in each interval, in one chart per run.
import type { Run } from "../data";
import { fmtMs } from "../format";
import { chart, facet, niceMax, row, runTimeFacet } from "./common";

/** p95 (ms) of the events ending in each `bucket`-second interval: [s, ms] points. */
function p95s(run: Run, bucket: number): number[][] {
  const nb = Math.max(1, Math.ceil(run.m.duration_ms / 1000 / bucket));
  const per: number[][] = Array.from({ length: nb }, () => []);
  for (let k = 0; k < run.nEvents; k++) {
    const b = Math.min(nb - 1, Math.floor((run.evStart[k] + run.evDur[k]) / 1000 / bucket));
    per[b].push(run.evDur[k]);
  }
  const out: number[][] = [];
  per.forEach((v, b) => {
    if (v.length === 0) return;
    v.sort((a, c) => a - c);
    out.push([(b + 0.5) * bucket, v[Math.min(v.length - 1, Math.ceil(v.length * 0.95) - 1)]]);
  });
  return out;
}

export function manifoldView(runs: Run[]): void {
  const withPool = runs.filter((r) => (r.m.manifold ?? []).length > 0);
  if (withPool.length === 0) return;
  row("manifold", withPool.length);
  const xMax = Math.max(...runs.map((r) => r.m.duration_ms)) / 1000;
  const bucket = Math.max(1, Math.ceil(xMax / 120));
  const wMax = niceMax(Math.max(...withPool.flatMap((r) => r.m.manifold!.map((p) => Math.max(p[1] + p[3], p[4])))));
  const lat = withPool.map((r) => p95s(r, bucket));
  const lMax = niceMax(Math.max(1, ...lat.flatMap((l) => l.map((p) => p[1]))));
  withPool.forEach((run, i) => {
    const pts = run.m.manifold!;
    const at = (col: number) => pts.map((p) => [p[0] / 1000, p[col]]);
    const box = facet("manifold", withPool.length > 1 ? run.m.name : "");
    const c = chart(box, 280);
    c.setOption(runTimeFacet({
      xMax,
      xName: "time since the run started",
      grid: { left: 52, right: 64, top: 26, bottom: 44 },
      legendItemWidth: 12,
      tooltip: { trigger: "axis", axisPointer: { type: "line" } },
      yAxis: [
        { type: "value", min: 0, max: wMax, minInterval: 1, name: "workers / queued", nameLocation: "middle", nameGap: 34, splitLine: { lineStyle: { color: "#eef0f3" } } },
        { type: "value", min: 0, max: lMax, name: "event p95", nameLocation: "middle", nameGap: 48, splitLine: { show: false }, axisLabel: { formatter: (v: number) => fmtMs(v) } },
      ],
      series: [
        { name: "queued", type: "bar", data: at(4), barMaxWidth: 12, itemStyle: { color: "rgba(214,39,40,0.35)" } },
        { name: "ready", type: "line", step: "end", symbol: "none", data: at(1), lineStyle: { color: "#3b6fb6", width: 2 }, itemStyle: { color: "#3b6fb6" } },
        { name: "busy", type: "line", step: "end", symbol: "none", data: at(2), lineStyle: { color: "#f0a030", width: 2 }, itemStyle: { color: "#f0a030" } },
        { name: "starting", type: "line", step: "end", symbol: "none", data: at(3), lineStyle: { color: "#8ec1ea", width: 1, type: "dashed" }, itemStyle: { color: "#8ec1ea" } },
        { name: "event p95", type: "line", yAxisIndex: 1, symbol: "none", data: lat[i], lineStyle: { color: "#4aa564", width: 1.5 }, itemStyle: { color: "#4aa564" }, tooltip: { valueFormatter: (v: unknown) => fmtMs(Number(v)) } },
      ],
    }));
  });
}
