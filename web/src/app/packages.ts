// The Packages tab: one package over the stored days: raw downloads, unique downloaders and the
// downloads left without the day's top-N whales, beside the aggregate-only correction.
import type * as echarts from "echarts/core";
import { getPackage, suggestPackages } from "./api";
import type { PackageReport } from "./api";
import { esc, int, pct } from "./format";

/** The part of the app state (and URL) this tab owns. */
export interface PackageState {
  package: string;
  from: string;
  to: string;
  whales: number;
}

export const MAX_WHALES = 100;
const RAW = "#3c8dbc";
const UNIQUE = "#f39c12";
const WITHOUT = "#2fbf71";
const ADJUSTED = "#8e6bb8";

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;

export class PackagesTab {
  private report: PackageReport | null = null;
  private shownKey = "";
  private token = 0;
  private suggestToken = 0;

  constructor(
    private st: PackageState,
    /** Records a user change in the URL (a history entry). */
    private changed: () => void,
    private chart: (id: string) => echarts.ECharts,
  ) {
    $<HTMLFormElement>("pkg-form").addEventListener("submit", (e) => {
      e.preventDefault();
      this.submit();
    });
    const name = $<HTMLInputElement>("pkg-name");
    let timer = 0;
    name.addEventListener("input", () => {
      clearTimeout(timer);
      timer = window.setTimeout(() => void this.suggest(name.value.trim()), 120);
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
    if (!this.st.package) {
      this.message("Type a package name: suggestions come from the stored days.", "notice");
      this.clear();
      return;
    }
    const key = JSON.stringify(this.st);
    if (this.report && key === this.shownKey) {
      this.draw(this.report);
      return;
    }
    void this.load(key);
  }

  private submit() {
    const name = $<HTMLInputElement>("pkg-name").value.trim();
    const from = $<HTMLInputElement>("pkg-from").value;
    const to = $<HTMLInputElement>("pkg-to").value;
    const raw = $<HTMLInputElement>("pkg-whales").value.trim();
    const n = Number(raw);
    if (!name) return this.message("Type a package name.", "error");
    if (raw === "" || !Number.isInteger(n) || n < 1 || n > MAX_WHALES) {
      return this.message(`Top N whales: enter a whole number from 1 to ${MAX_WHALES}.`, "error");
    }
    if (from && to && from > to) return this.message(`The range is inverted: ${from} is after ${to}.`, "error");
    Object.assign(this.st, { package: name, from, to, whales: n });
    this.changed();
    this.render();
  }

  private async suggest(prefix: string) {
    const token = ++this.suggestToken;
    const list = $<HTMLDataListElement>("pkg-suggestions");
    if (!prefix) {
      list.innerHTML = "";
      return;
    }
    const r = await suggestPackages(prefix);
    if (token !== this.suggestToken || !r.ok) return;
    list.innerHTML = r.value
      .map((s) => `<option value="${esc(s.package)}">${int(s.downloads)} downloads on ${s.days} stored day${s.days === 1 ? "" : "s"}</option>`)
      .join("");
  }

  private async load(key: string) {
    const token = ++this.token;
    this.message(`Loading ${esc(this.st.package)}…`, "loading");
    const r = await getPackage(this.st.package, this.st.from, this.st.to, this.st.whales);
    if (token !== this.token) return;
    if (!r.ok) {
      this.report = null;
      this.clear();
      const title = r.status === 404 ? `No stored downloads of “${esc(this.st.package)}”` : "Cannot show this package";
      return this.message(`<div class="message-title">${title}</div><div class="message-text">${esc(r.error)}</div>`, r.status === 404 ? "notice" : "error");
    }
    this.report = r.value;
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
    $<HTMLTableElement>("pkg-table").tBodies[0].innerHTML = "";
    $<HTMLDivElement>("pkg-results").hidden = true;
  }

  private draw(r: PackageReport) {
    $<HTMLDivElement>("pkg-message").hidden = true;
    document.body.dataset.packages = "ready";
    $<HTMLDivElement>("pkg-results").hidden = false;
    const t = r.totals;
    const box = (v: string, l: string, cls = "") =>
      `<div class="box ${cls}"><div class="box-value">${v}</div><div class="box-label">${l}</div></div>`;
    $<HTMLDivElement>("pkg-boxes").innerHTML =
      box(int(t.downloads), `raw downloads, ${r.days.length} stored day${r.days.length === 1 ? "" : "s"}`) +
      box(int(t.without_whales), `without each day's top ${r.whales} whales`, "box-whale") +
      box(pct(t.whale_downloads, t.downloads), `of the downloads by the top ${r.whales} whales`);
    $<HTMLDivElement>("pkg-note").textContent = r.note;
    const c = this.chart("chart-package");
    c.resize();
    c.setOption(packageOption(r), true);
    $<HTMLTableElement>("pkg-table").tBodies[0].innerHTML = r.days
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

/** Raw vs unique vs without whales (and the aggregate-only estimate, dashed), one point per stored day. */
export function packageOption(r: PackageReport) {
  const dates = r.days.map((d) => d.date);
  const line = (name: string, color: string, data: (number | null)[], dashed = false) => ({
    name,
    type: "line",
    data,
    symbolSize: 5,
    itemStyle: { color },
    lineStyle: { color, width: 2, type: dashed ? "dashed" : "solid" },
  });
  return {
    animationDuration: 300,
    grid: { left: 70, right: 24, top: 48, bottom: 70 },
    legend: { top: 8, right: 16 },
    tooltip: { trigger: "axis" },
    xAxis: { type: "category", data: dates, axisLabel: { color: "#555", fontSize: 11, rotate: dates.length > 12 ? 35 : 0 } },
    yAxis: {
      type: "value",
      name: `${r.package}: downloads per day`,
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
