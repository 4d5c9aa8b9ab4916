// The CRAN whales single-page app: sidebar (date, top N), four day tabs plus Packages and Trends,
// on-demand fetch with live progress. State lives in the URL (?date=&count=&tab=&whale=, and
// &package=&from=&to=&whales= for Packages) so any view can be shared.
import type { ECharts } from "echarts/core";
import "./style.css";
import { follow, getCalendar, getDay, getWhale } from "./api";
import type { CalendarDay, DaySummary, Progress, WhaleDetail } from "./api";
import { SvgBars } from "./bars";
import { Calendar } from "./calendar";
import { detailOption, hourlyColumns, hourlyOption, hoursOf, packageOrder, trafficOption, whaleLabel, whalesOption } from "./charts";
import { bytes, esc, int, pct } from "./format";
import { BINS, MAX_WHALES, PackagesTab, filtersOf } from "./packages";
import { BYS } from "./breakdown";
import type { By } from "./breakdown";
import type { Bin } from "./api";
import { profileCard, whaleListHtml } from "./profile";
import { TrendsTab } from "./trends";
import { watchFreshness } from "./freshness";

type Tab = "traffic" | "whales" | "hourly" | "detail" | "packages" | "trends";
const TABS: Tab[] = ["traffic", "whales", "hourly", "detail", "packages", "trends"];
/** Tabs about all stored days rather than the chosen one. */
const GLOBAL_TABS: Tab[] = ["packages", "trends"];
const FIRST_DAY = "2012-10-01";
const MAX_COUNT = 25;
const TABLE_LIMIT = 2000;

interface State {
  date: string;
  count: number;
  tab: Tab;
  whale: number | null;
  package: string;
  from: string;
  to: string;
  whales: number;
  bin: Bin;
  cumulative: boolean;
  avg: boolean;
  log: boolean;
  without: string;
  by: By;
}

const $ = <T extends HTMLElement>(sel: string) => document.querySelector(sel) as T;
const dateInput = $<HTMLInputElement>("#date");
const countInput = $<HTMLInputElement>("#count");
const whaleSelect = $<HTMLSelectElement>("#whale");
const statusBox = $<HTMLDivElement>("#status");
const yesterday = new Date(Date.now() - 86_400_000).toISOString().slice(0, 10);

const state: State = readUrl();
let summary: DaySummary | null = null;
let detail: WhaleDetail | null = null;
let days: CalendarDay[] = [];
let loadToken = 0;
let stopFollowing: (() => void) | null = null;
/** Every chart by element id: ECharts instances and the first view's SVG bars. */
const charts = new Map<string, ECharts | SvgBars>();
/** ECharts' `init`, once its chunk is loaded (only tabs other than All traffic need it). */
let createChart: ((el: HTMLElement) => ECharts) | null = null;
let loadingCharts: Promise<void> | null = null;
/** The whale log being fetched (`date/ip_id`): a second ask while it is on its way waits for it. */
let whaleLoading = "";

/** Loads the ECharts chunk (once). */
function needCharts(): Promise<void> {
  loadingCharts ??= import("./echarts").then((m) => {
    createChart = m.create;
  });
  return loadingCharts;
}

function readUrl(): State {
  const q = new URLSearchParams(location.search);
  const count = Number(q.get("count"));
  const tab = q.get("tab") as Tab;
  const whale = Number(q.get("whale"));
  const whales = Number(q.get("whales"));
  const day = (k: string) => (/^\d{4}-\d{2}-\d{2}$/.test(q.get(k) ?? "") ? q.get(k)! : "");
  return {
    date: q.get("date") ?? "",
    count: Number.isInteger(count) && count >= 1 && count <= MAX_COUNT ? count : 6,
    tab: TABS.includes(tab) ? tab : "traffic",
    whale: q.get("whale") !== null && Number.isInteger(whale) && whale >= 0 ? whale : null,
    package: q.get("package") ?? "",
    from: day("from"),
    to: day("to"),
    whales: Number.isInteger(whales) && whales >= 1 && whales <= MAX_WHALES ? whales : 6,
    bin: BINS.includes(q.get("bin") as Bin) ? (q.get("bin") as Bin) : "day",
    cumulative: q.get("cumulative") === "true",
    avg: q.get("avg") === "true",
    log: q.get("log") === "true",
    without: q.get("without") === null ? "whales" : filtersOf(q.get("without")!).join(","),
    by: BYS.includes(q.get("by") as By) ? (q.get("by") as By) : "version",
  };
}

/** Puts the state in the URL; `push` makes a history entry (user actions, so Back undoes them). */
function writeUrl(push = false) {
  const q = new URLSearchParams({ date: state.date, count: String(state.count), tab: state.tab });
  if (state.whale !== null) q.set("whale", String(state.whale));
  if (state.package) {
    q.set("package", state.package);
    if (state.from) q.set("from", state.from);
    if (state.to) q.set("to", state.to);
    q.set("whales", String(state.whales));
    if (state.bin !== "day") q.set("bin", state.bin);
    if (state.cumulative) q.set("cumulative", "true");
    if (state.avg) q.set("avg", "true");
    if (state.log) q.set("log", "true");
    if (state.without !== "whales") q.set("without", state.without);
    if (state.by !== "version") q.set("by", state.by);
  }
  if (`?${q}` === location.search) return;
  if (push) history.pushState(null, "", `?${q}`);
  else history.replaceState(null, "", `?${q}`);
}

/** The ECharts chart on element `id` (`needCharts` must have resolved). */
function chart(id: string): ECharts {
  let c = charts.get(id) as ECharts | undefined;
  if (!c) {
    c = createChart!(document.getElementById(id)!);
    charts.set(id, c);
  }
  return c;
}

/** The SVG bar chart on element `id`. */
function bars(id: string): SvgBars {
  let c = charts.get(id) as SvgBars | undefined;
  if (!c) {
    c = new SvgBars(document.getElementById(id)!);
    charts.set(id, c);
  }
  return c;
}

function box(value: string, label: string, cls = "") {
  return `<div class="box ${cls}"><div class="box-value">${value}</div><div class="box-label">${label}</div></div>`;
}

// ---- status line: loading, progress of a fetch, errors ----

function showStatus(html: string, kind: "loading" | "fetching" | "error" | "notice") {
  statusBox.hidden = false;
  statusBox.className = `status status-${kind}`;
  statusBox.innerHTML = html;
  document.body.dataset.view = kind;
}

function hideStatus() {
  statusBox.hidden = true;
  document.body.dataset.view = "ready";
}

function progressHtml(date: string, p: Progress | null): string {
  let frac = 0;
  let text = "asking the CRAN log server…";
  let indeterminate = false;
  if (p) {
    switch (p.phase) {
      case "queued":
        text = "waiting for a free ingest slot…";
        indeterminate = true;
        break;
      case "starting":
        text = "connecting to the CRAN log server…";
        indeterminate = true;
        break;
      case "downloading":
        frac = p.total ? (0.5 * p.done) / p.total : 0.05;
        text = p.total
          ? `downloading ${(p.done / 1048576).toFixed(1)} of ${(p.total / 1048576).toFixed(1)} MB`
          : `downloading ${(p.done / 1048576).toFixed(1)} MB`;
        indeterminate = !p.total;
        break;
      case "parsing":
        frac = 0.5 + (p.total ? (0.45 * p.bytes) / p.total : 0.2);
        text = `parsing ${int(p.rows)} rows`;
        break;
      case "storing":
        frac = 0.97;
        text = "storing the day's tables…";
        break;
      case "done":
        frac = 1;
        text = `stored ${int(p.rows)} rows`;
        break;
      case "error":
        text = p.error;
        break;
    }
  }
  const width = `${Math.round(Math.max(0.02, Math.min(1, frac)) * 100)}%`;
  return (
    `<div class="progress-title">Fetching ${esc(date)} from the CRAN log server</div>` +
    `<div class="bar${indeterminate ? " indeterminate" : ""}" role="progressbar" aria-valuemin="0" aria-valuemax="100" aria-valuenow="${Math.round(frac * 100)}"><div class="fill" style="width:${width}"></div></div>` +
    `<div class="progress-text" data-phase="${p?.phase ?? "starting"}">${esc(text)}</div>`
  );
}

// ---- loading data ----

async function loadDays() {
  try {
    const c = await getCalendar();
    days = c.days;
    calendar.set(c);
  } catch {
    days = [];
  }
  if (state.date) calendar.select(state.date);
}

async function load() {
  const token = ++loadToken;
  stopFollowing?.();
  stopFollowing = null;
  summary = null;
  detail = null;
  writeUrl();
  markStored();
  $<HTMLDivElement>("#subtitle").textContent = state.date;
  showStatus(`Loading ${esc(state.date)}…`, "loading");
  let result;
  try {
    result = await getDay(state.date, state.count);
  } catch (e) {
    if (token === loadToken) showStatus(`Could not reach the server: ${esc(String(e))}`, "error");
    return;
  }
  if (token !== loadToken) return;
  if (result.kind === "ready") {
    summary = result.summary;
    hideStatus();
    $<HTMLDivElement>("#subtitle").textContent =
      `${summary.date} · ${int(summary.totals.downloads)} downloads by ${int(summary.totals.downloaders)} downloaders`;
    renderAll();
  } else if (result.kind === "fetching") {
    showStatus(progressHtml(state.date, result.current), "fetching");
    stopFollowing = follow(result.progress, (p) => {
      if (token !== loadToken) return;
      if (p.phase === "error") {
        showStatus(missingHtml(p.status, p.error), p.status === 404 ? "notice" : "error");
      } else {
        statusBox.innerHTML = progressHtml(state.date, p);
        if (p.phase === "done") {
          trendsTab.invalidate();
          void loadDays();
          void load();
        }
      }
    });
  } else {
    showStatus(missingHtml(result.status, result.error), result.status === 404 ? "notice" : "error");
  }
}

function missingHtml(status: number, error: string): string {
  const title =
    status === 404
      ? `No CRAN log for ${esc(state.date)}`
      : status === 429
        ? "Too many new days requested"
        : `Could not load ${esc(state.date)}`;
  return `<div class="message-title">${title}</div><div class="message-text">${esc(error)}</div>`;
}

async function loadWhale() {
  if (!summary) return;
  const token = loadToken;
  const whales = summary.whales;
  if (whales.length === 0) {
    $<HTMLDivElement>("#detail-boxes").innerHTML = "";
    fillTable([]);
    return;
  }
  const chosen = whales.find((w) => w.ip_id === state.whale) ?? whales[0];
  if (state.whale !== chosen.ip_id) {
    state.whale = chosen.ip_id;
    writeUrl();
  }
  await needCharts();
  whaleSelect.value = String(chosen.ip_id);
  if (detail && detail.whale.ip_id === chosen.ip_id && detail.date === summary.date) {
    renderDetail();
    return;
  }
  const key = `${summary.date}/${chosen.ip_id}`;
  if (whaleLoading === key) return;
  whaleLoading = key;
  $<HTMLDivElement>("#selection-title").textContent = "Loading downloads…";
  try {
    const d = await getWhale(summary.date, chosen.ip_id);
    if (whaleLoading === key) whaleLoading = "";
    if (token !== loadToken || state.whale !== chosen.ip_id) return;
    detail = d;
    renderDetail();
  } catch (e) {
    if (whaleLoading === key) whaleLoading = "";
    $<HTMLDivElement>("#selection-title").textContent = `Could not load this downloader: ${String(e)}`;
  }
}

// ---- rendering ----

function renderAll() {
  if (!summary) return;
  const s = summary;
  const whaleDownloads = s.whales.reduce((a, w) => a + w.downloads, 0);
  $<HTMLDivElement>("#traffic-boxes").innerHTML =
    box(bytes(s.totals.bytes), "bandwidth consumed") +
    box(int(s.totals.downloads), "files downloaded") +
    box(int(s.totals.downloaders), "unique downloaders") +
    box(pct(whaleDownloads, s.totals.downloads), `of downloads by the top ${s.whales.length} downloader${s.whales.length === 1 ? "" : "s"}`, "box-whale");
  $<HTMLTableElement>("#whale-list").tBodies[0].innerHTML = whaleListHtml(s);
  whaleSelect.innerHTML = s.whales
    .map((w) => `<option value="${w.ip_id}">${esc(whaleLabel(w))} — ${int(w.downloads)} downloads</option>`)
    .join("");
  renderTab();
}

function renderTab() {
  for (const b of document.querySelectorAll<HTMLButtonElement>(".tabs button")) {
    const on = b.dataset.tab === state.tab;
    b.classList.toggle("active", on);
    b.setAttribute("aria-selected", String(on));
  }
  for (const p of document.querySelectorAll<HTMLElement>(".tab-body")) p.hidden = p.dataset.pane !== state.tab;
  document.body.dataset.tab = state.tab;
  if (state.tab !== "traffic" && !createChart) {
    void needCharts().then(renderTab);
    return;
  }
  if (state.tab === "packages") {
    packagesTab.render();
    return resizeVisible();
  }
  if (state.tab === "trends") {
    void trendsTab.render().then(resizeVisible);
    return;
  }
  if (summary && (summary.date !== state.date || summary.count !== state.count)) return void load();
  if (!summary) return;
  const s = summary;
  switch (state.tab) {
    case "traffic":
      bars("chart-traffic").setOption(trafficOption(s));
      break;
    case "whales":
      chart("chart-whales").setOption(whalesOption(s, document.getElementById("chart-whales")!.clientWidth || 1000), true);
      break;
    case "hourly": {
      const el = document.getElementById("chart-hourly")!;
      const cols = hourlyColumns(s.whales.length, el.clientWidth || 900);
      const panel = 190;
      el.style.height = `${Math.max(1, Math.ceil(s.whales.length / cols)) * (panel + 14) + 10}px`;
      const c = chart("chart-hourly");
      c.resize();
      c.setOption(hourlyOption(s, cols, panel, $<HTMLInputElement>("#shared-scale").checked), true);
      break;
    }
    case "detail":
      // Keep the drawn scatter (and its brush selection) when coming back to the tab.
      if (!detail || detail.date !== s.date || !s.whales.some((w) => w.ip_id === detail!.whale.ip_id)) void loadWhale();
      break;
  }
  resizeVisible();
}

function resizeVisible() {
  for (const [id, c] of charts) if (!document.getElementById(id)!.closest<HTMLElement>(".tab-body")!.hidden) c.resize();
}

function renderDetail() {
  if (!detail) return;
  const d = detail;
  const w = d.whale;
  $<HTMLDivElement>("#detail-boxes").innerHTML =
    box(bytes(w.bytes), "bandwidth consumed") +
    box(int(w.downloads), "files downloaded") +
    box(int(w.packages), "unique packages") +
    box(`${d.first.slice(0, 5)}–${d.last.slice(0, 5)}`, "first to last download (UTC)", "box-whale");
  $<HTMLDivElement>("#detail-profile").innerHTML = profileCard(w);
  const packages = packageOrder(d);
  const el = document.getElementById("chart-detail")!;
  const height = Math.min(1200, Math.max(360, packages.length * 14 + 70));
  el.style.height = `${height}px`;
  const c = chart("chart-detail");
  c.resize();
  c.setOption(detailOption(d, packages, height - 64), true);
  c.off("brushSelected");
  // Selection = the points drawn inside the box, found here rather than by ECharts: large-mode
  // scatter (3x faster to draw thousands of points) reports no selected points.
  c.on("brushSelected", (e: unknown) => {
    const batch = (e as { batch: { areas: { range: number[][] }[] }[] }).batch;
    const area = batch[0]?.areas[0];
    if (!area) return fillTable([]);
    const [[x0, x1], [y0, y1]] = area.range;
    const px0 = c.convertToPixel({ gridIndex: 0 }, [0, 0]) as number[];
    const px24 = c.convertToPixel({ gridIndex: 0 }, [24, 0]) as number[];
    const perHour = (px24[0] - px0[0]) / 24;
    const rowY = packages.map((_, i) => (c.convertToPixel({ gridIndex: 0 }, [0, i]) as number[])[1]);
    const index = new Map(packages.map((p, i) => [p, i]));
    const idx: number[] = [];
    d.downloads.forEach((row, i) => {
      const x = px0[0] + hoursOf(row.time) * perHour;
      const y = rowY[index.get(row.package)!];
      if (x >= x0 && x <= x1 && y >= y0 && y <= y1) idx.push(i);
    });
    fillTable(idx);
  });
  c.dispatchAction({ type: "takeGlobalCursor", key: "brush", brushOption: { brushType: "rect", brushMode: "single" } });
  fillTable([]);
}

function fillTable(indices: number[]) {
  const tbody = $<HTMLTableElement>("#selection-table").tBodies[0];
  const title = $<HTMLDivElement>("#selection-title");
  $<HTMLButtonElement>("#clear-selection").hidden = indices.length === 0;
  if (!detail || indices.length === 0) {
    tbody.innerHTML = "";
    title.textContent = "No downloads selected: drag a box over the chart.";
    return;
  }
  const d = detail;
  const rows = indices
    .map((i) => d.downloads[i])
    .sort((a, b) => (a.time < b.time ? -1 : a.time > b.time ? 1 : a.package.localeCompare(b.package)));
  const shown = rows.slice(0, TABLE_LIMIT);
  title.textContent =
    `${int(rows.length)} download${rows.length === 1 ? "" : "s"} selected` +
    (rows.length > shown.length ? ` (showing the first ${int(shown.length)})` : "");
  tbody.innerHTML = shown
    .map(
      (r) =>
        `<tr><td>${d.date}</td><td>${r.time}</td><td class="num" title="${int(r.size)} bytes">${bytes(r.size)}</td><td>${esc(r.package)}</td><td>${esc(r.version ?? "")}</td></tr>`,
    )
    .join("");
}

function markStored() {
  if (state.date) calendar.select(state.date);
}

// ---- inputs ----

function setDate(value: string) {
  const hint = $<HTMLDivElement>("#date-hint");
  if (!/^\d{4}-\d{2}-\d{2}$/.test(value) || value < FIRST_DAY || value > yesterday) {
    hint.textContent = `Pick a day from ${FIRST_DAY} to ${yesterday}.`;
    hint.classList.add("inline-error");
    return;
  }
  hint.textContent = "";
  hint.classList.remove("inline-error");
  if (value === state.date) return;
  state.date = value;
  state.whale = null;
  dateInput.value = value;
  writeUrl(true);
  void load();
}

dateInput.max = yesterday;
dateInput.addEventListener("change", () => setDate(dateInput.value));

countInput.addEventListener("input", () => {
  const err = $<HTMLDivElement>("#count-error");
  const raw = countInput.value.trim();
  const n = Number(raw);
  if (raw === "" || !Number.isInteger(n) || n < 1 || n > MAX_COUNT) {
    err.textContent = `Enter a whole number from 1 to ${MAX_COUNT}.`;
    err.hidden = false;
    countInput.classList.add("invalid");
    return;
  }
  err.hidden = true;
  countInput.classList.remove("invalid");
  if (n === state.count) return;
  state.count = n;
  writeUrl(true);
  void load();
});

$<HTMLInputElement>("#shared-scale").addEventListener("change", () => renderTab());

$<HTMLButtonElement>("#clear-selection").addEventListener("click", () => {
  (charts.get("chart-detail") as ECharts | undefined)?.dispatchAction({ type: "brush", areas: [] });
  fillTable([]);
});

whaleSelect.addEventListener("change", () => {
  state.whale = Number(whaleSelect.value);
  writeUrl(true);
  void loadWhale();
});

for (const b of document.querySelectorAll<HTMLButtonElement>(".tabs button")) {
  b.addEventListener("click", () => {
    state.tab = b.dataset.tab as Tab;
    writeUrl(true);
    renderTab();
  });
}

/** Phones: the sidebar lies over the content, hidden until the menu button opens it. */
const phone = window.matchMedia("(max-width: 720px)");
const menu = $<HTMLButtonElement>("#menu");
function sidebarShown(): boolean {
  return phone.matches ? document.body.classList.contains("sidebar-open") : !document.body.classList.contains("collapsed");
}
menu.setAttribute("aria-controls", "sidebar");
menu.setAttribute("aria-expanded", String(sidebarShown()));
phone.addEventListener("change", () => menu.setAttribute("aria-expanded", String(sidebarShown())));

const calendar = new Calendar($<HTMLDivElement>("#calendar"), (date) => {
  // On a phone the opened day is what the user wants to see: the sidebar steps aside.
  if (phone.matches) document.body.classList.remove("sidebar-open");
  menu.setAttribute("aria-expanded", String(sidebarShown()));
  setDate(date);
});

menu.addEventListener("click", () => {
  document.body.classList.toggle(phone.matches ? "sidebar-open" : "collapsed");
  menu.setAttribute("aria-expanded", String(sidebarShown()));
  setTimeout(onResize, 220);
});

// Resizing redraws at the new size; only the small multiples re-layout (columns depend on width).
function onResize() {
  if (state.tab === "hourly") renderTab();
  else resizeVisible();
}
let resizeTimer = 0;
window.addEventListener("resize", () => {
  clearTimeout(resizeTimer);
  resizeTimer = window.setTimeout(onResize, 150);
});

// Back/Forward: show the state the URL now holds.
window.addEventListener("popstate", () => {
  const next = readUrl();
  const dayChanged = (next.date !== state.date || next.count !== state.count) && !GLOBAL_TABS.includes(next.tab);
  Object.assign(state, next);
  if (!state.date) state.date = days.length ? days[days.length - 1].date : yesterday;
  dateInput.value = state.date;
  countInput.value = String(state.count);
  if (dayChanged) void load();
  else {
    renderTab();
    if (state.tab === "detail") void loadWhale();
  }
});

// Test and debugging hook: the chart instances by element id, and the current state.
declare global {
  interface Window {
    cranwhales: { charts: Map<string, ECharts | SvgBars>; state: State };
  }
}
window.cranwhales = { charts, state };

/** Opens a day in the day tabs (a click on a chart over days). */
function openDay(date: string) {
  state.tab = "traffic";
  state.whale = null;
  if (date === state.date) {
    writeUrl(true);
    return renderTab();
  }
  setDate(date);
  renderTab();
}
const packagesTab = new PackagesTab(state, () => writeUrl(true), chart, openDay);
const trendsTab = new TrendsTab(chart, openDay);

async function start() {
  countInput.value = String(state.count);
  renderTab();
  await loadDays();
  watchFreshness($<HTMLDivElement>("#freshness"), () => {
    trendsTab.invalidate();
    void loadDays();
  });
  if (!state.date || !/^\d{4}-\d{2}-\d{2}$/.test(state.date)) state.date = days.length ? days[days.length - 1].date : yesterday;
  dateInput.value = state.date;
  await load();
}

void start();
