// Who downloads a package (issue 34), below its chart in the Packages tab: its downloads by
// version, country, OS, R version or arch (the top keys and "other"), the same per bin over time
// (stacked), and where its raw count comes from (whales, small, repeats, the rest: one stacked
// bar adding up to raw). One breakdown request (`step=` gives the range and its bins) and one
// kinds request per choice; the page's filters are sent as `without=` and, when the server cannot
// leave one of them out of a breakdown yet (400), the note says so and the breakdown is drawn
// with what it can leave out.
import type * as echarts from "echarts/core";
import { getBreakdown, getKinds } from "./api";
import type { Bin, Breakdown, Kinds, KeyRow, Result } from "./api";
import { COUNTS, esc, int, pct } from "./format";
import type { PackageState } from "./packages";
import { dataZoom, timeAxis, wrappedLegend } from "./timeaxis";

export const BYS = ["version", "country", "os", "r_version", "arch"] as const;
export type By = (typeof BYS)[number];
const BY_LABEL: Record<By, string> = { version: "version", country: "country", os: "operating system", r_version: "R version", arch: "architecture" };
/** Keys drawn on their own; the rest is "other". */
export const TOP_KEYS = 8;
const KEY_COLORS = ["#3c8dbc", "#dd4b39", "#00a65a", "#f39c12", "#8e6bb8", "#d81b60", "#39cccc", "#605ca8"];
const OTHER = "#b8c7ce";
const FIRST_DAY = "2012-10-01";
const DAY_MS = 86_400_000;

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;

/** A key as shown: `(not logged)` for `NA`. */
const label = (k: string | null) => (k === null ? "(not logged)" : k);

/** The first and last stored day of a package chart per day (its days are the stored days of
 * the range), or null for another bin or no stored day. */
export type StoredSpan = { from: string; to: string } | null;

/** The stored span of a report, for `stepOf`. */
export function storedSpan(r: { bin: Bin; days: { date: string }[] }): StoredSpan {
  return r.bin === "day" && r.days.length ? { from: r.days[0].date, to: r.days[r.days.length - 1].date } : null;
}

/** The step of the chart over time: the package chart's bin, or weeks when the days drawn span
 * more than four months (a bar a day would be thinner than a pixel). The days drawn are the
 * stored ones, not the range asked: that is the whole history by default, and a store of three
 * weeks drew them as four weekly bars, two faint, under a chart per day. */
export function stepOf(st: PackageState, stored: StoredSpan = null): Bin {
  if (st.bin !== "day") return st.bin;
  const yesterday = new Date(Date.now() - DAY_MS).toISOString().slice(0, 10);
  const [from, to] = stored ? [stored.from, stored.to] : [st.from || FIRST_DAY, st.to || yesterday];
  const span = (Date.parse(to) - Date.parse(from)) / DAY_MS + 1;
  return span <= 122 ? "day" : "week";
}

/** The top keys of `rows` and the downloads of all the others. */
export function topAndOther(rows: KeyRow[], n = TOP_KEYS): { top: KeyRow[]; other: number } {
  const top = rows.slice(0, n);
  return { top, other: rows.slice(n).reduce((a, r) => a + r.downloads, 0) };
}

/** What the breakdown leaves out, in words. */
function withoutText(b: Breakdown): string {
  if (!b.without.length) return "every download";
  const parts = b.without.map((w) => (w === "whales" ? "each day's top 100 downloaders" : w === "small" ? "small downloads" : w));
  return `without ${parts.join(", ")}`;
}

/** Horizontal bars: the top keys and "other", each with its share. */
export function keysOption(b: Breakdown, width: number) {
  const { top, other } = topAndOther(b.rows);
  const names = [...top.map((r) => label(r.key)), ...(other ? ["other"] : [])];
  const values = [...top.map((r) => r.downloads), ...(other ? [other] : [])];
  const longest = Math.max(40, ...names.map((n) => n.length * 7));
  const title = `${b.package} by ${BY_LABEL[b.by as By] ?? b.by}: ${withoutText(b)}, ${int(b.total)} downloads on ${b.days} stored day${b.days === 1 ? "" : "s"}`;
  const lines = Math.ceil((title.length * 7) / Math.max(100, width - 20));
  return {
    animationDuration: 300,
    title: { text: title, left: 10, top: 4, textStyle: { fontSize: 13, fontWeight: "normal", width: width - 20, overflow: "break", lineHeight: 18 } },
    grid: { left: Math.min(longest + 16, width / 3), right: 64, top: 22 + 18 * lines, bottom: 24 },
    tooltip: { trigger: "axis", axisPointer: { type: "shadow" }, valueFormatter: (v: number) => `${int(v)} (${pct(v, b.total)})` },
    xAxis: { type: "value", ...COUNTS, axisLabel: { color: "#555", fontSize: 11, hideOverlap: true, formatter: (v: number) => int(v) } },
    yAxis: { type: "category", inverse: true, data: names, axisLabel: { color: "#333", fontSize: 11, width: Math.min(longest, width / 3 - 12), overflow: "truncate" } },
    series: [
      {
        name: "downloads",
        type: "bar",
        data: values.map((v, i) => ({ value: v, itemStyle: { color: i < top.length ? KEY_COLORS[i % KEY_COLORS.length] : OTHER } })),
        barMaxWidth: 22,
        label: { show: true, position: "right", color: "#333", fontSize: 11, formatter: (p: { value: number }) => pct(p.value, b.total) },
      },
    ],
  };
}

/** The over-time chart's margins: the y axis' labels, the right end. */
const GRID_LEFT = 70;
const GRID_RIGHT = 24;

/** The top keys (and "other") per bin, stacked; a bin with missing days drawn faint, its tooltip
 * saying how many of its days are stored; averages per stored day when asked. */
export function overTimeOption(b: Breakdown, width: number, avg: boolean) {
  const bins = b.bins ?? [];
  const { top } = topAndOther(b.rows);
  const keys = top.map((r) => r.key);
  const value = (n: number, days: number) => (avg ? Math.round((10 * n) / Math.max(1, days)) / 10 : n);
  const point = (bin: (typeof bins)[number], n: number) => ({
    value: [bin.from, value(n, bin.days)],
    itemStyle: bin.days < bin.span ? { opacity: 0.4 } : undefined,
  });
  const series = keys.map((k, i) => ({
    name: label(k),
    type: "bar",
    stack: "keys",
    barMaxWidth: 16,
    barMinWidth: 1,
    itemStyle: { color: KEY_COLORS[i % KEY_COLORS.length] },
    data: bins.map((bin) => point(bin, bin.rows.find((r) => r.key === k)?.downloads ?? 0)),
  }));
  const others = bins.map((bin) => bin.rows.filter((r) => !keys.includes(r.key)).reduce((a, r) => a + r.downloads, 0));
  if (others.some((n) => n > 0)) {
    series.push({ name: "other", type: "bar", stack: "keys", barMaxWidth: 16, barMinWidth: 1, itemStyle: { color: OTHER }, data: bins.map((bin, i) => point(bin, others[i])) });
  }
  const per = avg ? "per stored day" : `per ${b.step ?? "bin"}`;
  const title = `${BY_LABEL[b.by as By] ?? b.by} over time: downloads ${per} (faint: a ${b.step ?? "bin"} not fully stored)`;
  const titleLines = Math.ceil((title.length * 7) / Math.max(100, width - 20));
  const { legend, gridTop } = wrappedLegend(series.map((s) => s.name), width, 8 + 18 * titleLines);
  const byFrom = new Map(bins.map((bin) => [bin.from, bin]));
  return {
    animationDuration: 300,
    title: { text: title, left: 10, top: 4, textStyle: { fontSize: 13, fontWeight: "normal", width: width - 20, overflow: "break", lineHeight: 18 } },
    legend,
    grid: { left: GRID_LEFT, right: GRID_RIGHT, top: gridTop, bottom: 64 },
    tooltip: {
      trigger: "axis",
      axisPointer: { type: "shadow" },
      formatter: (ps: { seriesName: string; marker: string; value: [string, number] }[]) => {
        const bin = ps.length ? byFrom.get(ps[0].value[0]) : undefined;
        if (!bin) return "";
        const head = `${esc(bin.from)}${bin.to !== bin.from ? ` to ${esc(bin.to)}` : ""} · ${bin.days} of ${bin.span} day${bin.span === 1 ? "" : "s"} stored`;
        return [head, ...ps.filter((p) => p.value[1] > 0).map((p) => `${p.marker}${esc(p.seriesName)}: <b>${int(p.value[1])}</b>`)].join("<br>");
      },
    },
    xAxis: timeAxis(b.step ?? "day", width - GRID_LEFT - GRID_RIGHT),
    yAxis: { type: "value", ...(avg ? {} : COUNTS), axisLabel: { color: "#555", fontSize: 11, formatter: (v: number) => int(v) } },
    dataZoom: dataZoom(),
    series,
  };
}

/** The four parts of the raw count, stacked in one bar. The whales' part is their downloads less
 * their small and repeated ones (those are in the small and repeats parts): named so, since the
 * page's box and note above count every download of the top N ("302 came from each day's top 6
 * whales" beside a part of 179 read as a contradiction). */
export function kindsParts(k: Kinds): { name: string; value: number; color: string }[] {
  return [
    { name: `top ${k.whales} whales, less small and repeats`, value: k.whale_downloads, color: "#dd4b39" },
    { name: "small (< 1,000 B)", value: k.small, color: "#f39c12" },
    { name: "repeats (≤ 5 min)", value: k.repeats, color: "#8e6bb8" },
    { name: "the rest", value: k.rest, color: "#00a65a" },
  ];
}

/** Where the raw count comes from: one bar of four parts adding up to raw. */
export function kindsOption(k: Kinds, width: number) {
  const parts = kindsParts(k);
  const names = parts.map((p) => `${p.name}: ${int(p.value)} (${pct(p.value, k.raw)})`);
  const title = `Where the ${int(k.raw)} raw downloads come from (${k.days} stored day${k.days === 1 ? "" : "s"}; the parts add up to raw)`;
  const titleLines = Math.ceil((title.length * 7) / Math.max(100, width - 20));
  const { legend, gridTop } = wrappedLegend(names, width, 8 + 18 * titleLines);
  return {
    animationDuration: 300,
    title: { text: title, left: 10, top: 4, textStyle: { fontSize: 13, fontWeight: "normal", width: width - 20, overflow: "break", lineHeight: 18 } },
    legend,
    grid: { left: 16, right: 24, top: gridTop, bottom: 28, containLabel: false },
    tooltip: { trigger: "item", formatter: (p: { seriesName: string }) => esc(p.seriesName) },
    xAxis: { type: "value", ...COUNTS, max: Math.max(1, k.raw), axisLabel: { color: "#555", fontSize: 11, hideOverlap: true, formatter: (v: number) => int(v) } },
    yAxis: { type: "category", data: ["downloads"], axisLabel: { show: false }, axisTick: { show: false } },
    series: parts.map((p, i) => ({ name: names[i], type: "bar", stack: "kinds", barWidth: 28, itemStyle: { color: p.color }, data: [p.value] })),
  };
}

/** The section's state and requests. */
export class WhoSection {
  private key = "";
  private loadingKey = "";
  private shown: { b: Breakdown; k: Kinds | null; note: string } | null = null;
  private token = 0;
  /** The last kinds answer and what it was asked for. */
  private kinds: { key: string; answer: Result<Kinds> } | null = null;

  constructor(private chart: (id: string) => echarts.ECharts) {}

  /** Hides the section (several packages, or none). */
  hide() {
    $<HTMLElement>("pkg-who").hidden = true;
  }

  /** Shows `pkg` as the state asks (`stored`: the stored days its chart draws): from memory when
   * only the drawing changed. */
  show(st: PackageState, by: By, filters: string[], stored: StoredSpan = null) {
    $<HTMLElement>("pkg-who").hidden = false;
    $<HTMLSelectElement>("pkg-by").value = by;
    const step = stepOf(st, stored);
    // Per day, the breakdown is asked over the stored days (the same counts: no stored day lies
    // outside them), so its day bins stay under the server's 1,000 when the range asked is years.
    const span = step === "day" && stored ? stored : { from: st.from, to: st.to };
    const key = JSON.stringify([st.package, span.from, span.to, st.whales, st.without, by, step]);
    if (key === this.key && this.shown) return this.draw(st);
    if (key === this.loadingKey) return;
    void this.load(st, by, step, key, filters, span);
  }

  private async load(st: PackageState, by: By, step: Bin, key: string, asked: string[], span: { from: string; to: string }) {
    const token = ++this.token;
    this.loadingKey = key;
    document.body.dataset.who = "loading";
    // The kinds do not depend on the field or the filters: asked again only for another range or N.
    const kindsKey = JSON.stringify([st.package, st.from, st.to, st.whales]);
    const kept = this.kinds?.key === kindsKey ? this.kinds.answer : null;
    const [first, k] = await Promise.all([
      getBreakdown(st.package, by, span.from, span.to, asked.join(","), step),
      kept ?? getKinds(st.package, st.from, st.to, st.whales),
    ]);
    this.kinds = { key: kindsKey, answer: k };
    let b = first;
    let note = "";
    // A filter the server cannot take out of a breakdown (yet): say so, draw what it can.
    if (!b.ok && b.status === 400 && asked.length) {
      const can = asked.includes("whales") ? "whales" : "";
      note = `${b.error}. Shown ${can ? "without whales only" : "with every download"}.`;
      b = await getBreakdown(st.package, by, span.from, span.to, can, step);
    }
    if (token !== this.token) return;
    this.loadingKey = "";
    const msg = $<HTMLDivElement>("pkg-who-note");
    if (!b.ok) {
      this.shown = null;
      this.key = "";
      msg.textContent = `Cannot show who downloads ${st.package}: ${b.error}`;
      document.body.dataset.who = "error";
      return;
    }
    this.key = key;
    this.shown = { b: b.value, k: k.ok ? k.value : null, note: k.ok ? note : `${note} ${k.error}`.trim() };
    this.draw(st);
  }

  private draw(st: PackageState) {
    const { b, k, note } = this.shown!;
    const width = $<HTMLDivElement>("chart-breakdown").clientWidth || 1000;
    const missing = b.days_without_breakdowns.length
      ? ` ${b.days_without_breakdowns.length} stored day${b.days_without_breakdowns.length === 1 ? "" : "s"} without breakdowns (stored before them) left out.`
      : "";
    $<HTMLDivElement>("pkg-who-note").textContent = `${note}${missing}`.trim();
    const draw = (id: string, option: echarts.EChartsCoreOption) => {
      const c = this.chart(id);
      c.resize();
      c.setOption(option, true);
    };
    draw("chart-breakdown", keysOption(b, width));
    draw("chart-versions", overTimeOption(b, width, st.avg));
    $<HTMLElement>("chart-kinds").hidden = !k;
    if (k) draw("chart-kinds", kindsOption(k, width));
    document.body.dataset.who = "ready";
  }
}
