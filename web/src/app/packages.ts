// The Packages tab: up to 8 packages over the stored days on a time axis (one: raw downloads,
// unique downloaders, without the day's top-N whales and the aggregate-only correction; several:
// one line each), binned by day/week/month/year or summed up; each package's rank and the
// distribution of all packages; the badge; the top and trending lists of the range.
import type * as echarts from "echarts/core";
import { getPackages, getTop, suggestPackages } from "./api";
import type { Bin, PackageReport } from "./api";
import { badgeHtml, distributionOption, rankHtml, topHtml } from "./context";
import { esc, int, pct } from "./format";
import { clickedDate, dataZoom, points, timeAxis } from "./timeaxis";

/** The part of the app state (and URL) this tab owns; `package` is `a,b,c`. */
export interface PackageState {
  package: string;
  from: string;
  to: string;
  whales: number;
  bin: Bin;
  cumulative: boolean;
}

export const MAX_WHALES = 100;
export const MAX_PACKAGES = 8;
export const BINS: Bin[] = ["day", "week", "month", "year"];
const RAW = "#3c8dbc";
const UNIQUE = "#f39c12";
const WITHOUT = "#2fbf71";
const ADJUSTED = "#8e6bb8";
/** One colour per compared package. */
export const COLORS = ["#3c8dbc", "#dd4b39", "#00a65a", "#f39c12", "#8e6bb8", "#d81b60", "#39cccc", "#605ca8"];

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;

/** The names of `a, b,c` (trimmed, empty ones dropped). */
export function namesOf(list: string): string[] {
  return list.split(",").map((n) => n.trim()).filter(Boolean);
}

export class PackagesTab {
  private reports: PackageReport[] | null = null;
  private topKey = "";
  private shownKey = "";
  private token = 0;
  private suggestToken = 0;

  constructor(
    private st: PackageState,
    /** Records a user change in the URL (a history entry). */
    private changed: () => void,
    private chart: (id: string) => echarts.ECharts,
    /** Opens a stored day (a click on a daily point). */
    private openDay: (date: string) => void,
  ) {
    $<HTMLDivElement>("pkg-top").addEventListener("click", (e) => {
      const a = (e.target as HTMLElement).closest<HTMLAnchorElement>("a[data-package]");
      if (!a) return;
      e.preventDefault();
      $<HTMLInputElement>("pkg-name").value = a.dataset.package!;
      this.submit();
    });
    $<HTMLFormElement>("pkg-form").addEventListener("submit", (e) => {
      e.preventDefault();
      this.submit();
    });
    const name = $<HTMLInputElement>("pkg-name");
    let timer = 0;
    name.addEventListener("input", () => {
      clearTimeout(timer);
      // Suggestions for the last name of the list.
      const names = name.value.split(",");
      timer = window.setTimeout(() => void this.suggest(names.slice(0, -1), names[names.length - 1].trim()), 120);
    });
    // Picking a suggestion from the list shows it right away.
    name.addEventListener("change", () => {
      const opts = [...$<HTMLDataListElement>("pkg-suggestions").options].map((o) => o.value);
      if (opts.includes(name.value.trim())) this.submit();
    });
  }

  /** Shows the state's package (called when the tab is shown or the URL changed). */
  render() {
    $<HTMLInputElement>("pkg-name").value = this.st.package;
    $<HTMLInputElement>("pkg-from").value = this.st.from;
    $<HTMLInputElement>("pkg-to").value = this.st.to;
    $<HTMLInputElement>("pkg-whales").value = String(this.st.whales);
    $<HTMLSelectElement>("pkg-bin").value = this.st.bin;
    $<HTMLInputElement>("pkg-cumulative").checked = this.st.cumulative;
    void this.loadTop();
    if (!this.st.package) {
      this.message("Type a package name, or several separated by commas (up to 8): suggestions come from the stored days.", "notice");
      this.clear();
      return;
    }
    const key = JSON.stringify(this.st);
    if (this.reports && key === this.shownKey) {
      this.draw(this.reports);
      return;
    }
    void this.load(key);
  }

  /** The top and trending lists of the range (all stored days without one). */
  private async loadTop() {
    const key = `${this.st.from}|${this.st.to}`;
    if (key === this.topKey) return;
    this.topKey = key;
    const r = await getTop(this.st.from, this.st.to, 20);
    if (key !== this.topKey) return;
    $<HTMLDivElement>("pkg-top").innerHTML = r.ok ? topHtml(r.value) : `<div class="note">${esc(r.error)}</div>`;
    document.body.dataset.top = "ready";
  }

  private submit() {
    const name = $<HTMLInputElement>("pkg-name").value.trim();
    const from = $<HTMLInputElement>("pkg-from").value;
    const to = $<HTMLInputElement>("pkg-to").value;
    const raw = $<HTMLInputElement>("pkg-whales").value.trim();
    const n = Number(raw);
    const bin = $<HTMLSelectElement>("pkg-bin").value as Bin;
    const cumulative = $<HTMLInputElement>("pkg-cumulative").checked;
    const names = namesOf(name);
    if (!names.length) return this.message("Type a package name.", "error");
    if (names.length > MAX_PACKAGES) return this.message(`At most ${MAX_PACKAGES} packages at once, got ${names.length}.`, "error");
    if (raw === "" || !Number.isInteger(n) || n < 1 || n > MAX_WHALES) {
      return this.message(`Top N whales: enter a whole number from 1 to ${MAX_WHALES}.`, "error");
    }
    if (from && to && from > to) return this.message(`The range is inverted: ${from} is after ${to}.`, "error");
    Object.assign(this.st, { package: names.join(","), from, to, whales: n, bin, cumulative });
    this.changed();
    this.render();
  }

  private async suggest(before: string[], prefix: string) {
    const token = ++this.suggestToken;
    const list = $<HTMLDataListElement>("pkg-suggestions");
    if (!prefix) {
      list.innerHTML = "";
      return;
    }
    const r = await suggestPackages(prefix);
    if (token !== this.suggestToken || !r.ok) return;
    list.innerHTML = r.value
      .map((s) => `<option value="${esc([...before, s.package].join(","))}">${int(s.downloads)} downloads on ${s.days} stored day${s.days === 1 ? "" : "s"}</option>`)
      .join("");
  }

  private async load(key: string) {
    const token = ++this.token;
    this.message(`Loading ${esc(this.st.package)}…`, "loading");
    const st = this.st;
    const r = await getPackages({ names: namesOf(st.package), from: st.from, to: st.to, whales: st.whales, bin: st.bin, cumulative: st.cumulative });
    if (token !== this.token) return;
    if (!r.ok) {
      this.reports = null;
      this.clear();
      const title = r.status === 404 ? `No stored downloads of “${esc(this.st.package)}”` : "Cannot show this package";
      return this.message(`<div class="message-title">${title}</div><div class="message-text">${esc(r.error)}</div>`, r.status === 404 ? "notice" : "error");
    }
    this.reports = r.value;
    this.shownKey = key;
    this.draw(r.value);
  }

  private message(html: string, kind: "loading" | "notice" | "error") {
    const m = $<HTMLDivElement>("pkg-message");
    m.hidden = false;
    m.className = `status status-${kind}`;
    m.innerHTML = html;
    document.body.dataset.packages = kind;
  }

  private clear() {
    $<HTMLDivElement>("pkg-boxes").innerHTML = "";
    $<HTMLDivElement>("pkg-note").textContent = "";
    $<HTMLDivElement>("pkg-ranks").innerHTML = "";
    $<HTMLDivElement>("pkg-badge").innerHTML = "";
    $<HTMLTableElement>("pkg-table").tBodies[0].innerHTML = "";
    $<HTMLDivElement>("pkg-results").hidden = true;
  }

  private draw(reports: PackageReport[]) {
    $<HTMLDivElement>("pkg-message").hidden = true;
    document.body.dataset.packages = "ready";
    $<HTMLDivElement>("pkg-results").hidden = false;
    const r = reports[0];
    const one = reports.length === 1;
    const t = r.totals;
    const box = (v: string, l: string, cls = "") =>
      `<div class="box ${cls}"><div class="box-value">${v}</div><div class="box-label">${l}</div></div>`;
    const stored = r.days.reduce((a, d) => a + d.days, 0);
    $<HTMLDivElement>("pkg-boxes").innerHTML = one
      ? box(int(t.downloads), `raw downloads, ${stored} stored day${stored === 1 ? "" : "s"}`) +
        box(int(t.without_whales), `without each day's top ${r.whales} whales`, "box-whale") +
        box(pct(t.whale_downloads, t.downloads), `of the downloads by the top ${r.whales} whales`)
      : "";
    $<HTMLDivElement>("pkg-ranks").innerHTML = rankHtml(reports, COLORS);
    $<HTMLDivElement>("pkg-note").textContent = one ? r.note : reports.map((p) => p.note).join(" ");
    const c = this.chart("chart-package");
    c.resize();
    c.setOption(one ? packageOption(r) : comparisonOption(reports), true);
    c.off("click");
    c.on("click", (p: unknown) => {
      const date = clickedDate(p);
      if (date && r.bin === "day" && !r.cumulative) this.openDay(date);
    });
    const dist = this.chart("chart-distribution");
    dist.resize();
    dist.setOption(distributionOption(reports, COLORS), true);
    $<HTMLDivElement>("pkg-badge").innerHTML = badgeHtml(r.package);
    $<HTMLElement>("pkg-table-wrap").hidden = !one;
    $<HTMLTableElement>("pkg-table").tBodies[0].innerHTML = !one
      ? ""
      : r.days
          .map(
            (d) =>
              `<tr data-date="${d.date}"><td>${d.date}</td><td class="num">${int(d.downloads)}</td>` +
              `<td class="num">${d.downloaders === null ? "–" : int(d.downloaders)}</td>` +
              `<td class="num">${int(d.whale_downloads)}</td><td class="num">${int(d.without_whales)}</td>` +
              `<td class="num">${pct(d.whale_downloads, d.downloads)}</td>` +
              `<td class="num">${d.adjusted === null ? "–" : int(d.adjusted)}</td></tr>`,
          )
          .join("");
    $<HTMLElement>("pkg-whales-head").textContent = `top ${r.whales} whales`;
  }
}

/** The y axis title: per day, per bin, or running sums. */
function perWhat(r: PackageReport): string {
  if (r.cumulative) return "downloads so far";
  return r.bin === "day" ? "downloads per day" : `downloads per ${r.bin}`;
}

/** Several packages: one line of downloads each. */
export function comparisonOption(reports: PackageReport[]) {
  const r = reports[0];
  return {
    animationDuration: 300,
    grid: { left: 70, right: 24, top: 48, bottom: 70 },
    legend: { top: 8, right: 16 },
    tooltip: { trigger: "axis" },
    xAxis: timeAxis(),
    yAxis: { type: "value", name: perWhat(r), nameLocation: "middle", nameGap: 55, axisLabel: { color: "#555", fontSize: 11, formatter: (v: number) => int(v) } },
    dataZoom: dataZoom(),
    series: reports.map((p, i) => ({
      name: p.package,
      type: "line",
      data: points(p.days.map((d) => d.date), p.days.map((d) => d.downloads), p.bin),
      symbolSize: 5,
      itemStyle: { color: COLORS[i % COLORS.length] },
      lineStyle: { width: 2 },
    })),
  };
}

/** Raw vs unique vs without whales (and the aggregate-only estimate, dashed), one point per stored day. */
export function packageOption(r: PackageReport) {
  const dates = r.days.map((d) => d.date);
  const line = (name: string, color: string, data: (number | null)[], dashed = false) => ({
    name,
    type: "line",
    data: points(dates, data, r.bin),
    symbolSize: 5,
    itemStyle: { color },
    lineStyle: { color, width: 2, type: dashed ? "dashed" : "solid" },
  });
  return {
    animationDuration: 300,
    grid: { left: 70, right: 24, top: 48, bottom: 70 },
    legend: { top: 8, right: 16 },
    tooltip: { trigger: "axis" },
    xAxis: timeAxis(),
    dataZoom: dataZoom(),
    yAxis: {
      type: "value",
      name: `${r.package}: ${perWhat(r)}`,
      nameLocation: "middle",
      nameGap: 55,
      axisLabel: { color: "#555", fontSize: 11, formatter: (v: number) => int(v) },
    },
    // The aggregate-only estimate is drawn first: it mostly lies on the raw line, which stays visible.
    series: [
      line("aggregate-only estimate", ADJUSTED, r.days.map((d) => d.adjusted), true),
      line("raw downloads", RAW, r.days.map((d) => d.downloads)),
      line("unique downloaders", UNIQUE, r.days.map((d) => d.downloaders)),
      line(`without top ${r.whales} whales`, WITHOUT, r.days.map((d) => d.without_whales)),
    ],
  };
}
