// ECharts option builders, one per view. Pure functions of API data, so they are easy to follow.
import type { DaySummary, Whale, WhaleDetail } from "./api";
import { bytes, esc, hourLabel, int, pct } from "./format";

export const WHALE = "#2fbf71";
export const OTHERS = "#5b6770";
const BAR = "#3c8dbc";
const AXIS = { color: "#555", fontSize: 11 };
const HOURS = Array.from({ length: 24 }, (_, h) => h);

/** `name [CC]` as in the original app. */
export function whaleLabel(w: Whale): string {
  return `${w.name} [${w.country ?? "??"}]`;
}

/** All traffic: stacked downloads per UTC hour, top-N whales vs everyone else. */
export function trafficOption(s: DaySummary) {
  const whales = s.hourly.map((h) => h.whale_downloads);
  const others = s.hourly.map((h) => h.downloads - h.whale_downloads);
  return {
    animationDuration: 300,
    grid: { left: 70, right: 24, top: 48, bottom: 48 },
    legend: { top: 8, right: 16, data: ["everyone else", `top ${s.count} whales`] },
    tooltip: {
      trigger: "axis",
      axisPointer: { type: "shadow" },
      formatter: (ps: { dataIndex: number }[]) => {
        const i = ps[0].dataIndex;
        const h = s.hourly[i];
        return (
          `<b>${hourLabel(i)}–${hourLabel((i + 1) % 24)} UTC</b><br>` +
          `downloads: <b>${int(h.downloads)}</b><br>` +
          `<span style="color:${WHALE}">●</span> top ${s.count} whales: ${int(h.whale_downloads)} (${pct(h.whale_downloads, h.downloads)})<br>` +
          `<span style="color:${OTHERS}">●</span> everyone else: ${int(h.downloads - h.whale_downloads)}`
        );
      },
    },
    xAxis: {
      type: "category",
      data: HOURS.map(hourLabel),
      name: "time (UTC)",
      nameLocation: "middle",
      nameGap: 30,
      axisLabel: AXIS,
    },
    yAxis: { type: "value", name: "downloads", nameLocation: "middle", nameGap: 55, axisLabel: { ...AXIS, formatter: (v: number) => int(v) } },
    series: [
      { name: "everyone else", type: "bar", stack: "all", data: others, itemStyle: { color: OTHERS }, barCategoryGap: "12%" },
      { name: `top ${s.count} whales`, type: "bar", stack: "all", data: whales, itemStyle: { color: WHALE } },
    ],
  };
}

/** Biggest whales: one bar per whale in rank order. */
export function whalesOption(s: DaySummary, width = 1000) {
  // Labels turn when they do not fit their band (~6.5 px a character): at 45° neighbours are a
  // band × sin 45° apart, more than a line of text once the band is over ~22 px.
  const longest = Math.max(0, ...s.whales.map((w) => whaleLabel(w).length));
  const band = (width - 94) / Math.max(1, s.whales.length);
  const rotate = longest * 6.5 + 8 > band ? 45 : 0;
  return {
    animationDuration: 300,
    grid: { left: 70, right: 24, top: 24, bottom: rotate ? Math.min(170, Math.round(longest * 6.5 * 0.72) + 24) : 56 },
    tooltip: {
      trigger: "axis",
      axisPointer: { type: "shadow" },
      formatter: (ps: { dataIndex: number }[]) => {
        const w = s.whales[ps[0].dataIndex];
        return (
          `<b>#${w.rank} ${esc(whaleLabel(w))}</b><br>` +
          `downloads: <b>${int(w.downloads)}</b> (${pct(w.downloads, s.totals.downloads)} of the day)<br>` +
          `bandwidth: ${bytes(w.bytes)}<br>unique packages: ${int(w.packages)}`
        );
      },
    },
    xAxis: {
      type: "category",
      data: s.whales.map(whaleLabel),
      axisLabel: { ...AXIS, interval: 0, rotate },
      axisTick: { alignWithLabel: true },
    },
    yAxis: {
      type: "value",
      name: "Downloads on this day",
      nameLocation: "middle",
      nameGap: 55,
      axisLabel: { ...AXIS, formatter: (v: number) => int(v) },
    },
    series: [{ type: "bar", data: s.whales.map((w) => w.downloads), itemStyle: { color: BAR }, barCategoryGap: "15%" }],
  };
}

/** Panels per row in "Whales by hour". */
export function hourlyColumns(n: number, width: number): number {
  const byWidth = width < 700 ? 1 : width < 1100 ? 2 : 3;
  return Math.max(1, Math.min(byWidth, n));
}

/** Rounds up to 1, 2 or 5 × 10^k so the shared axis ends on a round number. */
function niceCeil(v: number): number {
  const p = 10 ** Math.floor(Math.log10(v));
  return [1, 2, 2.5, 5, 10].map((m) => m * p).find((x) => x >= v) ?? 10 * p;
}

/** Whales by hour: small multiples, one panel per whale, shared y scale. */
export function hourlyOption(s: DaySummary, cols: number, panelHeight: number, shared: boolean) {
  const sharedMax = niceCeil(Math.max(5, ...s.whales.flatMap((w) => w.hourly)));
  const maxOf = (i: number) => (shared ? sharedMax : niceCeil(Math.max(5, ...s.whales[i].hourly)));
  const gap = 14;
  const grids = s.whales.map((_, i) => {
    const r = Math.floor(i / cols);
    const c = i % cols;
    return {
      left: `${(c * 100) / cols + 5}%`,
      width: `${100 / cols - 7}%`,
      top: r * (panelHeight + gap) + 28,
      height: panelHeight - 50,
    };
  });
  return {
    animationDuration: 300,
    title: s.whales.map((w, i) => ({
      text: whaleLabel(w),
      textStyle: { fontSize: 12, fontWeight: "normal", color: "#333" },
      left: `${((i % cols) * 100) / cols + 5}%`,
      top: Math.floor(i / cols) * (panelHeight + gap) + 4,
    })),
    tooltip: {
      trigger: "item",
      formatter: (p: { seriesIndex: number; dataIndex: number; value: number }) => {
        const w = s.whales[p.seriesIndex];
        return `<b>${esc(whaleLabel(w))}</b><br>${hourLabel(p.dataIndex)}–${hourLabel((p.dataIndex + 1) % 24)} UTC: <b>${int(p.value)}</b> downloads`;
      },
    },
    grid: grids,
    xAxis: grids.map((_, i) => ({
      type: "category",
      gridIndex: i,
      data: HOURS.map(hourLabel),
      axisLabel: { ...AXIS, interval: 5, fontSize: 10 },
      axisTick: { interval: 5 },
    })),
    yAxis: grids.map((_, i) => ({
      type: "value",
      gridIndex: i,
      max: maxOf(i),
      interval: maxOf(i) / 5,
      axisLabel: { ...AXIS, fontSize: 10, formatter: (v: number) => int(v) },
    })),
    series: s.whales.map((w, i) => ({
      type: "bar",
      name: whaleLabel(w),
      xAxisIndex: i,
      yAxisIndex: i,
      data: w.hourly,
      itemStyle: { color: BAR },
      barCategoryGap: "10%",
    })),
  };
}

/** Fractional hour of day from `HH:MM:SS`. */
export function hoursOf(time: string): number {
  const [h, m, s] = time.split(":").map(Number);
  return h + m / 60 + s / 3600;
}

/** Packages ordered by their first download (earliest first). */
export function packageOrder(d: WhaleDetail): string[] {
  const first = new Map<string, string>();
  for (const row of d.downloads) {
    const t = first.get(row.package);
    if (t === undefined || row.time < t) first.set(row.package, row.time);
  }
  return [...first.keys()].sort((a, b) => {
    const ta = first.get(a)!;
    const tb = first.get(b)!;
    return ta < tb ? -1 : ta > tb ? 1 : a < b ? -1 : a > b ? 1 : 0;
  });
}

/** Detail view: time of day × package, earliest-first package at the top; brushable. */
export function detailOption(d: WhaleDetail, packages: string[], plotHeight: number) {
  // One label per ~13 px; computed here because auto-layout measures every label (slow for
  // mirror-like whales with thousands of packages).
  const every = Math.max(1, Math.ceil((packages.length * 13) / Math.max(100, plotHeight)));
  const index = new Map(packages.map((p, i) => [p, i]));
  const data = d.downloads.map((row, i) => [hoursOf(row.time), index.get(row.package)!, i]);
  return {
    animation: false,
    grid: { left: 130, right: 24, top: 16, bottom: 48 },
    tooltip: {
      trigger: "item",
      formatter: (p: { value: number[] }) => {
        const row = d.downloads[p.value[2]];
        return `<b>${esc(row.package)}</b> ${esc(row.version ?? "")}<br>${row.time} UTC · ${bytes(row.size)}<br>R ${esc(row.r_version ?? "?")} · ${esc(row.r_os ?? "?")}`;
      },
    },
    brush: {
      xAxisIndex: 0,
      yAxisIndex: 0,
      brushType: "rect",
      brushMode: "single",
      throttleType: "debounce",
      throttleDelay: 120,
      inBrush: { opacity: 1 },
      outOfBrush: { colorAlpha: 0.25 },
      brushStyle: { borderWidth: 1, color: "rgba(60,141,188,0.15)", borderColor: "rgba(60,141,188,0.8)" },
    },
    toolbox: { show: false },
    xAxis: {
      type: "value",
      min: 0,
      max: 24,
      interval: 3,
      name: "time (UTC)",
      nameLocation: "middle",
      nameGap: 30,
      axisLabel: { ...AXIS, formatter: (v: number) => hourLabel(v), hideOverlap: true },
      splitLine: { lineStyle: { color: "#eee" } },
    },
    yAxis: {
      type: "category",
      data: packages,
      inverse: true,
      name: `package (${packages.length} unique)`,
      nameLocation: "middle",
      nameGap: 115,
      axisLabel: { ...AXIS, fontSize: 10, interval: every - 1, width: 105, overflow: "truncate" },
      axisTick: { interval: every - 1 },
      splitLine: { show: every === 1, lineStyle: { color: "#f2f2f2" } },
    },
    series: [
      {
        type: "scatter",
        data,
        symbolSize: 5,
        itemStyle: { color: "#1f4e79", opacity: 0.8 },
        progressive: 0,
        // Canvas "large" drawing for big whales: ~3x faster for thousands of points.
        large: data.length > 2000,
        largeThreshold: 2000,
      },
    ],
  };
}

