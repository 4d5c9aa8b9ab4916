// The Packages tab: up to 8 packages over the stored days on a time axis (one: raw downloads,
// unique downloaders, without the day's top-N whales and the aggregate-only correction; several:
// one line each), binned by day/week/month/year or summed up; each package's rank and the
// distribution of all packages; the badge; the top and trending lists of the range.
import type * as echarts from "echarts/core";
import { getPackages, getReleases, getTop, suggestPackages } from "./api";
import type { Bin, PackageDay, PackageReport, Release } from "./api";
import { BYS, storedSpan, WhoSection } from "./breakdown";
import { newReleases } from "./releases";
import type { By } from "./breakdown";
import { badgeHtml, distributionOption, rankHtml, topHtml } from "./context";
import { COUNTS, esc, int, pct } from "./format";
import { clickedDate, dataZoom, paddedExtent, points, timeAxis, wrappedLegend } from "./timeaxis";

/** The part of the app state (and URL) this tab owns; `package` is `a,b,c`. */
export interface PackageState {
  package: string;
  from: string;
  to: string;
  whales: number;
  bin: Bin;
  cumulative: boolean;
  /** Each bin as its average per stored day rather than its sum. */
  avg: boolean;
  /** A logarithmic y axis (a small package beside a big one). */
  log: boolean;
  /** What the filtered lines leave out: a subset of `whales,small,repeats`. */
  without: string;
  /** What "who downloads it" breaks the downloads down by. */
  by: By;
}

/** The filters (packageRank's, cranlogs #45): each day's top-N whales, downloads under 1,000 B,
 * a downloader's repeats within 5 minutes. */
export const FILTERS = ["whales", "small", "repeats"] as const;
export type Filter = (typeof FILTERS)[number];

/** The filters in `without` (`whales,small`), in FILTERS order, unknown ones dropped. */
export function filtersOf(without: string): Filter[] {
  const asked = without.split(",");
  return FILTERS.filter((f) => asked.includes(f));
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
  /** The key of the report on its way: asking again for it waits instead of fetching twice. */
  private loadingKey = "";
  private token = 0;
  private suggestToken = 0;
  /** The releases (`newReleases`) of the one package shown: markers on its chart. */
  private releases: { package: string; versions: Release[]; note: string } | null = null;
  private who: WhoSection;

  constructor(
    private st: PackageState,
    /** Records a user change in the URL (a history entry). */
    private changed: () => void,
    private chart: (id: string) => echarts.ECharts,
    /** Opens a stored day (a click on a daily point). */
    private openDay: (date: string) => void,
  ) {
    this.who = new WhoSection(chart);
    $<HTMLSelectElement>("pkg-by").addEventListener("change", () => {
      const by = $<HTMLSelectElement>("pkg-by").value as By;
      if (!BYS.includes(by)) return;
      this.st.by = by;
      this.changed();
      this.render();
    });
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
    $<HTMLInputElement>("pkg-avg").checked = this.st.avg;
    $<HTMLInputElement>("pkg-log").checked = this.st.log;
    const on = filtersOf(this.st.without);
    for (const f of FILTERS) $<HTMLInputElement>(`pkg-no-${f}`).checked = on.includes(f);
    $<HTMLSelectElement>("pkg-by").value = this.st.by;
    void this.loadTop();
    if (!this.st.package) {
      this.message("Type a package name, or several separated by commas (up to 8): suggestions come from the stored days.", "notice");
      this.clear();
      return;
    }
    // Average and log scale are drawn from the same report: not part of what is fetched (the
    // filters are: the ranks are counted without them).
    const key = JSON.stringify({ ...this.st, avg: false, log: false, without: filtersOf(this.st.without).join(","), by: "" });
    if (this.reports && key === this.shownKey) {
      this.draw(this.reports);
      return;
    }
    if (key === this.loadingKey) return;
    void this.load(key);
  }

  /** The top and trending lists of the range (all stored days without one). */
  private async loadTop() {
    const without = filtersOf(this.st.without).join(",");
    const key = `${this.st.from}|${this.st.to}|${without}`;
    if (key === this.topKey) return;
    this.topKey = key;
    const r = await getTop(this.st.from, this.st.to, 20, without);
    // The lists are counted with the page's filters; days that cannot be filtered are named.
    let note = "";
    if (r.ok && r.value.without.length) {
      note = `Counted without ${r.value.without.join(", ")}${r.value.without.includes("whales") ? " (each day's top 100 downloaders)" : ""}.`;
      const left = r.value.days_without_filters;
      if (left.length) note += ` ${left.length} stored day${left.length === 1 ? " was" : "s were"} left out: stored before small and repeated downloads were counted (${left.slice(0, 3).join(", ")}${left.length > 3 ? ", …" : ""}).`;
    }
    if (key !== this.topKey) return;
    $<HTMLDivElement>("pkg-top").innerHTML =
      (note ? `<div class="note" id="top-filter-note">${esc(note)}</div>` : "") + (r.ok ? topHtml(r.value) : `<div class="note">${esc(r.error)}</div>`);
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
    const avg = $<HTMLInputElement>("pkg-avg").checked;
    const log = $<HTMLInputElement>("pkg-log").checked;
    const without = FILTERS.filter((f) => $<HTMLInputElement>(`pkg-no-${f}`).checked).join(",");
    const names = namesOf(name);
    if (!names.length) return this.message("Type a package name.", "error");
    if (names.length > MAX_PACKAGES) return this.message(`At most ${MAX_PACKAGES} packages at once, got ${names.length}.`, "error");
    if (raw === "" || !Number.isInteger(n) || n < 1 || n > MAX_WHALES) {
      return this.message(`Top N whales: enter a whole number from 1 to ${MAX_WHALES}.`, "error");
    }
    if (from && to && from > to) return this.message(`The range is inverted: ${from} is after ${to}.`, "error");
    Object.assign(this.st, { package: names.join(","), from, to, whales: n, bin, cumulative, avg, log, without });
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
    this.loadingKey = key;
    this.message(`Loading ${esc(this.st.package)}…`, "loading");
    const st = this.st;
    const names = namesOf(st.package);
    const one = names.length === 1 && this.releases?.package !== names[0];
    const [r, rel] = await Promise.all([
      getPackages({ names, from: st.from, to: st.to, whales: st.whales, bin: st.bin, cumulative: st.cumulative, without: filtersOf(st.without).join(",") }),
      one ? getReleases(names[0]) : Promise.resolve(null),
    ]);
    if (token !== this.token) return;
    if (rel) this.releases = { package: names[0], versions: rel.ok ? newReleases(rel.value.versions) : [], note: rel.ok ? "" : rel.error };
    this.loadingKey = "";
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
    // A range without a stored day has nothing to count: said, not drawn as 0 downloads (an
    // unstored day is unknown) under empty charts. Here, as every drawing (a new report, or the
    // one kept when the tab is drawn again) comes through this.
    if (reports.every((p) => !p.days.length)) {
      this.clear();
      const range = reports[0].from === reports[0].to ? reports[0].from : `${reports[0].from} to ${reports[0].to}`;
      return this.message(
        `<div class="message-title">No stored day in ${esc(range)}</div><div class="message-text">Nothing to count: a day that is not stored is unknown, not 0 downloads. Open a day in the calendar to fetch it, or widen the range.</div>`,
        "notice",
      );
    }
    $<HTMLDivElement>("pkg-message").hidden = true;
    document.body.dataset.packages = "ready";
    $<HTMLDivElement>("pkg-results").hidden = false;
    const r = reports[0];
    const one = reports.length === 1;
    const t = r.totals;
    const box = (v: string, l: string, cls = "") =>
      `<div class="box ${cls}"><div class="box-value">${v}</div><div class="box-label">${l}</div></div>`;
    const stored = r.cumulative ? r.days.length : r.days.reduce((a, d) => a + d.days, 0);
    const span = spanDays(r.from, r.to);
    const over = `${int(stored)} stored day${stored === 1 ? "" : "s"} of ${int(span)}`;
    $<HTMLDivElement>("pkg-boxes").innerHTML = one
      ? box(int(t.downloads), `raw downloads over ${over}`) +
        box(int(t.without_whales), `without each day's top ${r.whales} whales (${over})`, "box-whale") +
        box(pct(t.whale_downloads, t.downloads), `of the downloads by the top ${r.whales} whales`)
      : "";
    $<HTMLDivElement>("pkg-ranks").innerHTML = rankHtml(reports, COLORS, over);
    $<HTMLDivElement>("pkg-note").textContent = one ? r.note : reports.map((p) => p.note).join(" ");
    const c = this.chart("chart-package");
    c.resize();
    const width = $<HTMLDivElement>("chart-package").clientWidth || 1000;
    const releases = one && this.releases?.package === r.package ? this.releases.versions : [];
    const view = { avg: this.st.avg && !r.cumulative, log: this.st.log, without: filtersOf(this.st.without), width, releases };
    $<HTMLDivElement>("pkg-releases-note").textContent = !one
      ? ""
      : this.releases?.note
        ? `Releases: ${this.releases.note}`
        : releases.some((v) => v.after)
          ? `Dotted lines: releases inferred from downloads — the first stored day with a download of a version newer than every one downloaded before and taken up (at least 1% of the downloads over the 7 days after, when stored); it came out after the stored day before it (not CRAN's publication date). Versions already downloaded on the first stored day, older versions fetched for the first time later (archive crawlers, pinned installs) and versions no one takes up are not marked.`
          : "No release inside the stored days: no version newer than every one downloaded before it and taken up (1% of the downloads over the 7 days after).";
    if (one) this.who.show(this.st, this.st.by, filtersOf(this.st.without), storedSpan(r));
    else this.who.hide();
    c.setOption(one ? packageOption(r, view) : comparisonOption(reports, view), true);
    c.off("click");
    c.on("click", (p: unknown) => {
      const date = clickedDate(p);
      if (date && r.bin === "day" && !r.cumulative) this.openDay(date);
    });
    const dist = this.chart("chart-distribution");
    dist.resize();
    dist.setOption(distributionOption(reports, COLORS, width), true);
    $<HTMLDivElement>("pkg-badge").innerHTML = badgeHtml(r.package);
    $<HTMLElement>("pkg-table-wrap").hidden = !one;
    $<HTMLTableElement>("pkg-table").tBodies[0].innerHTML = !one
      ? ""
      : r.days
          .map(
            (d) =>
              `<tr data-date="${d.date}"><td>${d.date}</td><td class="num">${r.cumulative ? d.days : `${d.days} of ${binDays(d.date, r.bin, r.from, r.to)}`}</td><td class="num">${int(d.downloads)}</td>` +
              `<td class="num">${d.downloaders === null ? "–" : int(d.downloaders)}</td>` +
              `<td class="num">${int(d.whale_downloads)}</td><td class="num">${int(d.without_whales)}</td>` +
              `<td class="num">${pct(d.whale_downloads, d.downloads)}</td>` +
              `<td class="num">${d.adjusted === null ? "–" : int(d.adjusted)}</td>` +
              `<td class="num">${d.small === null ? "–" : int(d.small)}</td><td class="num">${d.repeats === null ? "–" : int(d.repeats)}</td></tr>`,
          )
          .join("");
    $<HTMLElement>("pkg-whales-head").textContent = `top ${r.whales} whales`;
    $<HTMLElement>("pkg-unique-head").textContent = r.bin === "day" && !r.cumulative ? "unique downloaders" : "sum of daily unique downloaders";
  }
}

/** How the chart is drawn from the report: averages per stored day, log axis. */
export interface View {
  avg: boolean;
  log: boolean;
  /** The filters chosen. */
  without: Filter[];
  /** The chart's width in px (the legend wraps over it). */
  width: number;
  /** Versions to mark where they first appear (one package). */
  releases?: Release[];
}

const NO_VIEW: View = { avg: false, log: false, without: ["whales"], width: 1000 };

/** A day's (or bin's) downloads without the chosen filters, and the line's name; `null` for a
 * day stored before small and repeated downloads were counted. Whales and only one of the two
 * filters is not kept per day: that choice draws without the whales alone. */
export function filtered(w: Filter[], whales: number): { name: string; value: (d: PackageDay) => number | null } {
  const [W, S, R] = FILTERS.map((f) => w.includes(f));
  const sub = (d: PackageDay, k: "small" | "repeats") => (d[k] === null ? null : d[k]!);
  if (W && S && R) return { name: `without top ${whales} whales, small & repeats`, value: (d) => d.without_whales_inflated };
  if (S && R && !W) return { name: "without small & repeats", value: (d) => d.without_inflated };
  if (S && !W) return { name: "without small downloads", value: (d) => (sub(d, "small") === null ? null : d.downloads - d.small!) };
  if (R && !W) return { name: "without repeats", value: (d) => (sub(d, "repeats") === null ? null : d.downloads - d.repeats!) };
  return { name: `without top ${whales} whales`, value: (d) => d.without_whales };
}

const DAY_MS = 86_400_000;
/** Days from `from` to `to`, both included. */
function spanDays(from: string, to: string): number {
  return Math.round((Date.parse(to) - Date.parse(from)) / DAY_MS) + 1;
}

/** Days of the bin starting `start` inside the report's range: what "fully stored" means. */
export function binDays(start: string, bin: Bin, from: string, to: string): number {
  const t = Date.parse(start);
  const d = new Date(t);
  const end =
    bin === "day"
      ? t
      : bin === "week"
        ? t + 6 * DAY_MS
        : bin === "month"
          ? Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 0)
          : Date.UTC(d.getUTCFullYear(), 11, 31);
  const lo = Math.max(t, Date.parse(from));
  const hi = Math.min(end, Date.parse(to));
  return Math.max(1, Math.round((hi - lo) / DAY_MS) + 1);
}

/** Each point's coverage: date → [stored days, days of the bin]. */
function coverage(r: PackageReport): Map<string, [number, number]> {
  return new Map(r.days.map((d) => [d.date, [r.cumulative ? 1 : d.days, r.cumulative ? 1 : binDays(d.date, r.bin, r.from, r.to)]]));
}

/** The y axis title: per day, per bin, per stored day, or running sums. */
function perWhat(r: PackageReport, v: View): string {
  if (r.cumulative) return "downloads so far";
  if (v.avg) return r.bin === "day" ? "downloads per day" : `downloads per stored day (average over each ${r.bin})`;
  return r.bin === "day" ? "downloads per day" : `downloads per ${r.bin}`;
}

/** Line points: a gap where days are missing, a hollow bigger mark where a bin is partly stored,
 * values averaged per stored day when asked; zeros left out on a log axis (log 0 is undefined). */
function series(r: PackageReport, values: (number | null)[], v: View) {
  const cov = coverage(r);
  const vals = r.days.map((d, i) => {
    const x = values[i];
    if (x === null) return null;
    const y = v.avg ? x / Math.max(1, d.days) : x;
    return v.log && y <= 0 ? null : y;
  });
  return points(r.days.map((d) => d.date), vals, r.bin).map((p) => {
    const c = cov.get(p[0]);
    return c && c[0] < c[1] ? { value: p, symbol: "emptyCircle", symbolSize: 9 } : p;
  });
}

/** The releases first downloaded inside the bin starting `date`. */
function releasesIn(r: PackageReport, date: string, releases: Release[]): Release[] {
  if (r.cumulative) return releases.filter((v) => v.after && v.first_day === date);
  const t = Date.parse(date);
  const end = t + (binDays(date, r.bin, r.from, r.to) - 1) * DAY_MS;
  return releases.filter((v) => v.after && Date.parse(v.first_day) >= t && Date.parse(v.first_day) <= end);
}

/** The tooltip: the bin's date, how many of its days are stored, each line's value, and the
 * versions that first appear in it (with the rule: inferred from downloads). */
function tooltip(reports: PackageReport[], releases: Release[] = []) {
  const cov = reports.map(coverage);
  return {
    trigger: "axis",
    formatter: (ps: { seriesName: string; seriesIndex: number; marker: string; value: [string, number | null] }[]) => {
      if (!ps.length) return "";
      const date = ps[0].value[0];
      const c = cov.map((m) => m.get(date)).find(Boolean);
      const head = c && reports[0].bin !== "day" ? `${esc(date)} · ${c[0]} of ${c[1]} days stored` : esc(date);
      const rows = ps
        .filter((p) => p.value[1] !== null && p.value[1] !== undefined)
        .map((p) => `${p.marker}${esc(p.seriesName)}: <b>${int(p.value[1]!)}</b>`);
      const rel = releasesIn(reports[0], date, releases).map(
        (v) =>
          `release ${esc(v.version ?? "(not logged)")}: first downloaded ${esc(v.first_day)}, after ${esc(v.after!)} (inferred from downloads: the first stored day with a download of it)`,
      );
      return [head, ...rows, ...rel].join("<br>");
    },
  };
}

/** The releases marked: first downloaded inside the range (not already there on its first day). */
function releasesSeen(r: PackageReport, releases: Release[]): Release[] {
  return releases.filter((v) => v.after && v.first_day >= r.from && v.first_day <= r.to);
}

/** Dotted vertical lines at each release inside the stored days (versions already there on the
 * package's first stored day are not releases seen), labelled with the version where the label
 * has room (at least 18 px from every other label). The most downloaded versions are labelled
 * first, and a day's label is its most downloaded version ("+2" for the others, all in the
 * tooltip): an old version fetched once on the day of a release (dplyr 0.1.1 beside 0.4.0 on
 * 2015-01-08) sorts first by version and took the label of the release itself. */
function releaseMarks(r: PackageReport, releases: Release[], width: number) {
  const seen = releasesSeen(r, releases);
  if (!seen.length || !r.days.length) return undefined;
  // Where the time axis puts each date (the same padded ends), to space the labels.
  const dates = [...r.days.map((d) => Date.parse(d.date)), ...seen.map((v) => Date.parse(v.first_day))];
  const [lo, hi] = paddedExtent(Math.min(...dates), Math.max(...dates), r.bin, plotWidth(width));
  const px = (d: string) => ((Date.parse(d) - lo) / (hi - lo)) * plotWidth(width);
  const sameDay = (v: Release) => seen.filter((o) => o.first_day === v.first_day).length;
  const labelled = new Set<Release>();
  const shownAt: number[] = [];
  for (const v of [...seen].sort((a, b) => b.downloads - a.downloads)) {
    const x = px(v.first_day);
    if (shownAt.every((at) => Math.abs(x - at) >= 18)) {
      labelled.add(v);
      shownAt.push(x);
    }
  }
  const data = seen.map((v) => {
    const others = sameDay(v) - 1;
    const text = `${v.version ?? "NA"}${others ? ` +${others}` : ""}`;
    return { xAxis: v.first_day, name: v.version ?? "(not logged)", label: { show: labelled.has(v), formatter: text } };
  });
  return {
    symbol: "none",
    silent: true,
    lineStyle: { color: "#666", type: "dotted", width: 1 },
    label: { position: "insideEndTop", color: "#444", fontSize: 10 },
    data,
  };
}

/** The y axis: linear or log, labels with thousands separators. */
function yAxis(name: string, v: View) {
  return {
    type: v.log ? "log" : "value",
    ...(v.log || v.avg ? {} : COUNTS),
    name,
    nameLocation: "middle",
    nameGap: 58,
    axisLabel: { color: "#555", fontSize: 11, formatter: (x: number) => int(x) },
  };
}

/** The plot's margins: the y axis' labels and name on the left, the right end. */
const GRID_LEFT = 78;
const GRID_RIGHT = 24;
/** How wide the plot is in a chart `width` px wide. */
const plotWidth = (width: number) => width - GRID_LEFT - GRID_RIGHT;

/** The legend wrapped over the chart's width and the plot below it (never under the legend). */
function legendAndGrid(names: string[], width: number) {
  const { legend, gridTop } = wrappedLegend(names, width, 6);
  return { legend, grid: { left: GRID_LEFT, right: GRID_RIGHT, top: gridTop, bottom: 70 } };
}

/** Several packages: each one's downloads (solid) and without its days' top-N whales (dashed,
 * same colour). */
export function comparisonOption(reports: PackageReport[], v: View = NO_VIEW) {
  const r = reports[0];
  const lines = reports.flatMap((p, i) => {
    const color = COLORS[i % COLORS.length];
    const f = filtered(v.without, p.whales);
    const raw = { name: p.package, type: "line", data: series(p, p.days.map((d) => d.downloads), v), symbolSize: 5, itemStyle: { color }, lineStyle: { width: 2 } };
    if (!v.without.length) return [raw];
    return [
      raw,
      {
        name: `${p.package} ${f.name.replace(/^without top \d+ whales/, "without whales")}`,
        type: "line",
        data: series(p, p.days.map(f.value), v),
        symbolSize: 3,
        itemStyle: { color },
        lineStyle: { width: 1.5, type: "dashed" },
      },
    ];
  });
  return {
    animationDuration: 300,
    ...legendAndGrid(lines.map((l) => l.name), v.width),
    tooltip: tooltip(reports),
    xAxis: timeAxis(r.bin, plotWidth(v.width)),
    yAxis: yAxis(perWhat(r, v), v),
    dataZoom: dataZoom(),
    series: lines,
  };
}

/** Raw vs unique vs without whales (and the aggregate-only estimate, dashed), one point per stored day. */
export function packageOption(r: PackageReport, v: View = NO_VIEW) {
  const line = (name: string, color: string, data: (number | null)[], dashed = false) => ({
    name,
    type: "line",
    data: series(r, data, v),
    symbolSize: 5,
    itemStyle: { color },
    lineStyle: { color, width: 2, type: dashed ? "dashed" : "solid" },
  });
  // Over a bin or a running sum, daily unique downloaders add up to a count of downloader-days.
  const unique = r.bin === "day" && !r.cumulative ? "unique downloaders" : v.avg ? "unique downloaders per stored day" : "sum of daily unique downloaders";
  const f = filtered(v.without, r.whales);
  // The aggregate-only estimate is drawn first: it mostly lies on the raw line, which stays visible.
  const lines = [
    line("aggregate-only estimate", ADJUSTED, r.days.map((d) => d.adjusted), true),
    { ...line("raw downloads", RAW, r.days.map((d) => d.downloads)), markLine: releaseMarks(r, v.releases ?? [], v.width) },
    line(unique, UNIQUE, r.days.map((d) => d.downloaders)),
    ...(v.without.length ? [line(f.name, WITHOUT, r.days.map(f.value))] : []),
  ];
  return {
    animationDuration: 300,
    ...legendAndGrid(lines.map((l) => l.name), v.width),
    tooltip: tooltip([r], v.releases ?? []),
    xAxis: timeAxis(r.bin, plotWidth(v.width), releasesSeen(r, v.releases ?? []).map((x) => x.first_day)),
    dataZoom: dataZoom(),
    yAxis: yAxis(`${r.package}: ${perWhat(r, v)}`, v),
    series: lines,
  };
}
