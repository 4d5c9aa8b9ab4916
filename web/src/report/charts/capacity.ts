// Capacity view (a `surge capacity` directory): each objective's value per step against the
// step's load, the limit dashed, the knee (the most load that held) as a vertical line, and the
// knee the prediction gave (when the search had one) dotted beside it.
import type { Model } from "../data";
import { fmtMs } from "../format";
import { chart, facet, FAIL, niceMax, TOOLTIP_BASE } from "./common";

const COLORS = ["#3b6fb6", "#f0a030", "#4aa564", "#b04a8f", "#667085"];

export function capacityView(model: Model): void {
  const c = model.capacity;
  if (!c) return;
  const steps = [...c.steps].sort((a, b) => a.load - b.load);
  // The answer line: with a prediction it says predicted vs found and the steps taken.
  const box = facet("capacity", c.answer);
  const ch = chart(box, 340);
  const yMax = niceMax(
    Math.max(...c.limits_ms, ...steps.flatMap((s) => s.values.map((v) => v ?? 0))) / 1000,
  );
  const series = c.slo_names.map((name, i) => ({
    name,
    type: "line",
    symbolSize: 9,
    data: steps.map((s) => ({
      value: [s.load, (s.values[i] ?? 0) / 1000],
      symbol: s.ok ? "circle" : "emptyCircle",
    })),
    lineStyle: { color: COLORS[i % COLORS.length], width: 2 },
    itemStyle: { color: COLORS[i % COLORS.length] },
    markLine: {
      silent: true,
      symbol: "none",
      label: { formatter: `${name} limit ${fmtMs(c.limits_ms[i])}`, position: "insideEndTop", fontSize: 11 },
      lineStyle: { color: COLORS[i % COLORS.length], type: "dashed" },
      data: [
        { yAxis: c.limits_ms[i] / 1000 },
        ...(i === 0 && c.holds !== null
          ? [{ xAxis: c.holds, lineStyle: { color: FAIL, type: "solid" as const }, label: { formatter: `knee: holds ${c.holds}`, position: "insideStartTop" as const, color: FAIL } }]
          : []),
        ...(i === 0 && c.prediction
          ? [{ xAxis: Math.max(1, Math.floor(c.prediction.knee)), lineStyle: { color: "#667085", type: "dotted" as const }, label: { formatter: `predicted ${Math.max(1, Math.floor(c.prediction.knee))}`, position: "insideEndBottom" as const, color: "#667085" } }]
          : []),
      ],
    },
  }));
  ch.setOption({
    animation: false,
    grid: { left: 60, right: 30, top: 30, bottom: 46 },
    legend: { top: 0, right: 8, textStyle: { fontSize: 11 } },
    tooltip: {
      ...TOOLTIP_BASE,
      trigger: "axis",
      valueFormatter: (v: unknown) => (typeof v === "number" ? fmtMs(v * 1000) : String(v)),
    },
    xAxis: { type: "value", min: 0, name: c.unit === "users" ? "concurrent users" : c.unit, nameLocation: "middle", nameGap: 28 },
    yAxis: { type: "value", min: 0, max: yMax, name: "seconds", nameLocation: "middle", nameGap: 40 },
    series,
  });
}
