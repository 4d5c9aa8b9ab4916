// The Trends tab: every stored day's totals, unique downloaders, the share of the top 1/6/25
// whales and how many of its top-100 whales fall in each behaviour. Clicking a day opens it.
import type * as echarts from "echarts/core";
import { BEHAVIOURS, getTrends } from "./api";
import type { Behaviour, Trends } from "./api";
import { esc, int, pct } from "./format";
import { clickedDate, dataZoom, points, timeAxis, wrappedLegend } from "./timeaxis";

export const BEHAVIOUR_COLORS: Record<Behaviour, string> = {
  archive: "#8e6bb8",
  mirror: "#dd4b39",
  loop: "#f39c12",
  classroom: "#00a65a",
  steady: "#3c8dbc",
  burst: "#d81b60",
  session: "#7f8c8d",
};
export const BEHAVIOUR_LABELS: Record<Behaviour, string> = {
  archive: "archive crawler",
  mirror: "mirror-like",
  loop: "repeat loop",
  classroom: "classroom / lab",
  steady: "steady all-day",
  burst: "burst",
  session: "install session",
};
const TOPS = [
  { key: "top1", label: "top 1", color: "#dd4b39" },
  { key: "top6", label: "top 6", color: "#f39c12" },
  { key: "top25", label: "top 25", color: "#2fbf71" },
] as const;

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;

export class TrendsTab {
  private trends: Trends | null = null;
  private loading: Promise<void> | null = null;

  constructor(
    private chart: (id: string) => echarts.ECharts,
    /** Opens a day in the day tabs. */
    private openDay: (date: string) => void,
  ) {
    $<HTMLTableElement>("trends-table").addEventListener("click", (e) => {
      const a = (e.target as HTMLElement).closest("a");
      if (!a) return;
      e.preventDefault();
      this.openDay(a.dataset.date!);
    });
  }

  /** Stored days changed (a day was fetched): load again next time. */
  invalidate() {
    this.trends = null;
  }

  async render() {
    if (!this.trends) {
      this.loading ??= this.load();
      await this.loading;
      this.loading = null;
    }
    if (this.trends) this.draw(this.trends);
  }

  private async load() {
    const m = $<HTMLDivElement>("trends-message");
    m.hidden = false;
    m.className = "status status-loading";
    m.textContent = "Loading trends…";
    const r = await getTrends("", "");
    if (!r.ok) {
      m.className = "status status-error";
      m.innerHTML = `<div class="message-title">Cannot load trends</div><div class="message-text">${esc(r.error)}</div>`;
      return;
    }
    m.hidden = true;
    this.trends = r.value;
  }

  private draw(t: Trends) {
    if (t.days.length === 0) {
      const m = $<HTMLDivElement>("trends-message");
      m.hidden = false;
      m.className = "status status-notice";
      m.textContent = "No stored days yet.";
      return;
    }
    const w = $<HTMLDivElement>("chart-trends-traffic").clientWidth || 1000;
    const charts: [string, echarts.EChartsCoreOption][] = [
      ["chart-trends-traffic", trafficOption(t, w)],
      ["chart-trends-share", shareOption(t, w)],
      ["chart-trends-behaviours", behavioursOption(t, w)],
    ];
    for (const [id, option] of charts) {
      const c = this.chart(id);
      c.resize();
      c.setOption(option, true);
      c.off("click");
      c.on("click", (p: unknown) => {
        const date = clickedDate(p);
        if (date && t.days.some((d) => d.date === date)) this.openDay(date);
      });
    }
    $<HTMLTableElement>("trends-table").tBodies[0].innerHTML = t.days
      .slice()
      .reverse()
      .map((d) => {
        const b = BEHAVIOURS.map((k) => `<td class="num">${d.behaviours ? int(d.behaviours[k] ?? 0) : "–"}</td>`).join("");
        return (
          `<tr data-date="${d.date}"><td><a href="?date=${d.date}" data-date="${d.date}">${d.date}</a></td>` +
          `<td class="num">${int(d.downloads)}</td><td class="num">${int(d.downloaders)}</td>` +
          TOPS.map((k) => `<td class="num">${pct(d[k.key], d.downloads)}</td>`).join("") +
          b +
          "</tr>"
        );
      })
      .join("");
  }
}

const AXIS = { color: "#555", fontSize: 11 };

/** What the three charts share: a title, a legend wrapped below it over the chart's `width`, a
 * time axis with a zoom. */
function byDay(title: string, width: number, o: { gridRight: number; tooltip: object; yAxis: unknown; series: { name: string; [k: string]: unknown }[] }) {
  // The title wraps on a narrow chart (~7 px a character; a phone cut it mid-word): each extra
  // line moves the legend and the plot down.
  const lines = Math.ceil((title.length * 7) / Math.max(100, width - 20));
  const { legend, gridTop } = wrappedLegend(o.series.map((s) => s.name), width, 28 + 18 * (lines - 1));
  return {
    animationDuration: 300,
    title: { text: title, left: 10, top: 4, textStyle: { fontSize: 13, fontWeight: "normal", width: width - 20, overflow: "break", lineHeight: 18 } },
    grid: { left: 80, right: o.gridRight, top: gridTop, bottom: 64 },
    legend,
    tooltip: o.tooltip,
    xAxis: timeAxis("day", width - 80 - o.gridRight),
    dataZoom: dataZoom(),
    yAxis: o.yAxis,
    series: o.series,
  };
}

const dates = (t: Trends) => t.days.map((d) => d.date);

/** Downloads and unique downloaders per stored day. */
export function trafficOption(t: Trends, width = 1000) {
  return byDay("Downloads and unique downloaders (click a day to open it)", width, {
    gridRight: 80,
    tooltip: { trigger: "axis" },
    yAxis: [
      { type: "value", axisLabel: { ...AXIS, formatter: (v: number) => int(v) } },
      { type: "value", splitLine: { show: false }, axisLabel: { ...AXIS, formatter: (v: number) => int(v) } },
    ],
    series: [
      { name: "downloads", type: "bar", data: t.days.map((d) => [d.date, d.downloads]), barMaxWidth: 14, barMinWidth: 2, itemStyle: { color: "#3c8dbc" } },
      { name: "unique downloaders", type: "line", yAxisIndex: 1, data: points(dates(t), t.days.map((d) => d.downloaders)), itemStyle: { color: "#f39c12" } },
    ],
  });
}

/** Share of each day's downloads taken by its top 1, 6 and 25 whales. */
export function shareOption(t: Trends, width = 1000) {
  return byDay("Share of the day's downloads by its biggest whales", width, {
    gridRight: 24,
    tooltip: { trigger: "axis", valueFormatter: (v: number) => `${v.toFixed(1)}%` },
    yAxis: { type: "value", max: 100, axisLabel: { ...AXIS, formatter: (v: number) => `${v}%` } },
    series: TOPS.map((k) => ({
      name: k.label,
      type: "line",
      data: points(dates(t), t.days.map((d) => (d.downloads ? Math.round((1000 * 100 * d[k.key]) / d.downloads) / 1000 : 0))),
      itemStyle: { color: k.color },
    })),
  });
}

/** How many of each day's top-100 whales fall in each behaviour (stacked). */
export function behavioursOption(t: Trends, width = 1000) {
  return byDay("Behaviour of each day's top-100 whales", width, {
    gridRight: 24,
    tooltip: { trigger: "axis", axisPointer: { type: "shadow" } },
    yAxis: { type: "value", axisLabel: AXIS },
    series: BEHAVIOURS.map((b) => ({
      name: BEHAVIOUR_LABELS[b],
      type: "bar",
      stack: "whales",
      data: t.days.map((d) => [d.date, d.behaviours?.[b] ?? 0]),
      barMaxWidth: 14,
      barMinWidth: 2,
      itemStyle: { color: BEHAVIOUR_COLORS[b] },
    })),
  });
}
