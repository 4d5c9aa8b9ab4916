// Event duration by recording line: one horizontal box plot per line (min, quartiles, max),
// slowest lines (by p90 over the runs) first, one facet column per run on a shared scale.
import type { Run } from "../data";
import { lineLabel, type Recording } from "../data";
import { esc, fmtMs, fmtSec } from "../format";
import { chart, CLASS_COLORS, facet, TOOLTIP_BASE } from "./common";
import type { echarts } from "../echarts";

const TOP = 25;

interface Box { rec: Recording; ri: number; line: number; vals: (number[] | null)[]; ns: number[]; p90: number }

function boxes(runs: Run[]): Box[] {
  // Keyed by recording too: with --allow-mixed, line N of one recording is not line N of another.
  const byLine = new Map<string, Box>();
  runs.forEach((run, r) => {
    for (const b of run.m.lines) {
      const [line, n, min, q1, med, q3, max, p90] = b;
      const key = `${run.m.recording}:${line}`;
      let x = byLine.get(key);
      if (!x) {
        x = { rec: run.rec, ri: run.recIdx.get(line) ?? -1, line, vals: runs.map(() => null), ns: runs.map(() => 0), p90: 0 };
        byLine.set(key, x);
      }
      x.vals[r] = [min / 1000, q1 / 1000, med / 1000, q3 / 1000, max / 1000];
      x.ns[r] = n;
      x.p90 = Math.max(x.p90, p90);
    }
  });
  return [...byLine.values()].sort((a, b) => b.p90 - a.p90);
}

function option(runs: Run[], list: Box[], width: number) {
  const labels = list.map((b) => lineLabel(b.rec, b.ri, 56));
  const n = runs.length;
  const left = 340;
  const gap = 34;
  const colW = Math.max(120, (width - left - 16 - gap * (n - 1)) / n);
  const x = (r: number) => left + r * (colW + gap);
  // Log scale: a line's spread spans milliseconds to minutes under load; 1 ms floor for zeros.
  const xMax = Math.pow(10, Math.ceil(Math.log10(Math.max(0.01, ...list.flatMap((b) => b.vals.map((v) => (v ? v[4] : 0)))))));
  return {
    animation: false,
    title: n > 1
      ? runs.map((run, r) => ({ text: run.m.name, left: x(r), top: 0, textStyle: { fontSize: 12 } }))
      : undefined,
    grid: runs.map((_, r) => ({ left: x(r), width: colW, top: n > 1 ? 24 : 8, bottom: 36 })),
    tooltip: {
      ...TOOLTIP_BASE,
      trigger: "item",
      formatter: (p: unknown) => {
        const q = p as { dataIndex: number; seriesIndex: number };
        const b = list[q.dataIndex];
        const v = b.vals[q.seriesIndex];
        const rec = b.rec;
        const cls = b.ri >= 0 ? rec.class[b.ri] : 4;
        const head = `<span style="color:${CLASS_COLORS[cls]}">■</span> ${esc(lineLabel(rec, b.ri, 200))}`;
        if (!v) return head;
        return `${head}<br><b>${esc(runs[q.seriesIndex].m.name)}</b>: ${b.ns[q.seriesIndex]} events<br>` +
          `min ${fmtSec(v[0])} · q1 ${fmtSec(v[1])} · median <b>${fmtSec(v[2])}</b> · q3 ${fmtSec(v[3])} · max ${fmtSec(v[4])}` +
          (b.ri >= 0 ? `<br>recorded: ${fmtMs(rec.dur[b.ri])}` : "");
      },
    },
    xAxis: runs.map((_, r) => ({
      type: "log",
      gridIndex: r,
      min: 0.001,
      max: xMax,
      name: "duration (log scale)",
      nameLocation: "middle",
      nameGap: 22,
      axisLabel: { formatter: (v: number) => fmtSec(v), hideOverlap: true },
      splitLine: { lineStyle: { color: "#eef0f3" } },
    })),
    yAxis: runs.map((_, r) => ({
      type: "category",
      gridIndex: r,
      inverse: true,
      data: labels,
      axisTick: { show: false },
      axisLabel: r === 0
        ? { fontSize: 10.5, width: left - 16, overflow: "truncate", color: "#344054" }
        : { show: false },
    })),
    series: runs.map((_, r) => ({
      type: "boxplot",
      xAxisIndex: r,
      yAxisIndex: r,
      layout: "horizontal",
      boxWidth: [4, 11],
      data: list.map((b) => {
        const v = b.vals[r];
        const cls = b.ri >= 0 ? b.rec.class[b.ri] : 4;
        return v
          ? { value: v.map((x) => Math.max(x, 0.001)), itemStyle: { color: CLASS_COLORS[cls] + "99", borderColor: shade(cls) } }
          : { value: [0.001, 0.001, 0.001, 0.001, 0.001], itemStyle: { opacity: 0 } };
      }),
    })),
    dataZoom: [{ type: "inside", xAxisIndex: runs.map((_, r) => r), filterMode: "none" }],
  };
}

function shade(cls: number): string {
  return ["#24497d", "#3f86bf", "#b26d0c", "#2a7241", "#667085"][cls];
}

export function linesView(runs: Run[]): void {
  const all = boxes(runs);
  const box = facet("lines", "");
  const ctl = document.createElement("div");
  ctl.className = "controls";
  box.appendChild(ctl);
  let showAll = all.length <= TOP;
  const height = (k: number) => k * 22 + 70;
  const list = () => (showAll ? all : all.slice(0, TOP));
  const c: echarts.ECharts = chart(box, height(list().length));
  const draw = () => {
    ctl.innerHTML = showAll
      ? `All ${all.length} recording lines. ${all.length > TOP ? '<button type="button">show the slowest 25 only</button>' : ""}`
      : `The ${TOP} slowest of ${all.length} recording lines. <button type="button">show all</button>`;
    ctl.querySelector("button")?.addEventListener("click", () => {
      showAll = !showAll;
      draw();
    });
    (c.getDom() as HTMLElement).style.height = `${height(list().length)}px`;
    c.resize();
    c.setOption(option(runs, list(), c.getWidth()), { notMerge: true });
  };
  draw();
}
