// Browser suite for the insight views of `cranwhales serve`: whale profiles (whale list and
// detail view), the Packages tab and the Trends tab, in headless Chromium against the real debug
// binary on a temp store of four real days. Every number on screen is checked against the API
// (itself checked against the Python recount in crates/cranwhales/tests/it/insight_api.rs); the URL
// state is reloaded in a fresh page and stepped through with Back. Screenshots go to
// artifacts/cranwhales/insight-*.png.
//
// Usage (repo root): node --test web/e2e/cranwhales-insight.test.mjs   (needs target/debug/cranwhales)
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { copyFileSync, mkdirSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { clickTab, cranlogs, getJson, int, openPage, screenshot, startServer, stop } from "./cranwhales-support.mjs";

const DAYS = ["2012-10-17", "2013-12-04", "2014-12-21", "2015-02-14"];
const LOOP_DAY = "2015-02-14"; // rank 5 fetched memoise 2,309 times
let work, server, base, browser, page;

/** The server on a store of DAYS, loaded as its sample days; no source to fetch from. */
function startOnFourDays() {
  const samples = join(work, "sample");
  mkdirSync(samples);
  for (const d of DAYS) copyFileSync(join(cranlogs, `${d}.csv.gz`), join(samples, `${d}.csv.gz`));
  return startServer(work, ["--sample-dir", samples, "--source-url", "http://127.0.0.1:9"]);
}

const api = (path) => getJson(base, path);
// Independent formatting of what the page must show.
const pct = (a, b) => `${(b > 0 ? (100 * a) / b : 0).toFixed(1)}%`;
const shot = (name) => screenshot(page, `insight-${name}`);
const tab = (label) => clickTab(page, label);
const seriesOf = (p, id) => p.evaluate((id) => window.cranwhales.charts.get(id).getOption().series.map((s) => ({ name: s.name, data: s.data })), id);
const cells = (p, sel) => p.$$eval(`${sel} tbody tr`, (trs) => trs.map((tr) => [...tr.children].map((td) => td.textContent)));

before(async () => {
  work = mkdtempSync(join(tmpdir(), "cranwhales-insight-e2e-"));
  const s = await startOnFourDays();
  server = s.child;
  base = s.url;
  ({ browser, page } = await openPage(/status of 4\d\d/));
});

after(() => stop(browser, server, work));

test("whale list: one behaviour label and sentence per whale, as the API says", async () => {
  await page.goto(`${base}/?date=${LOOP_DAY}&count=8&tab=whales`);
  await page.waitForFunction(() => document.querySelectorAll("#whale-list tbody tr").length === 8);
  const s = await api(`/api/days/${LOOP_DAY}?count=8`);
  const rows = await cells(page, "#whale-list");
  rows.forEach((r, i) => {
    const w = s.whales[i];
    assert.deepEqual(r, [String(w.rank), `${w.name} [${w.country}]`, int(w.downloads), w.profile.label, w.profile.sentence]);
  });
  assert.equal(s.whales[4].profile.behaviour, "loop");
  assert.match(rows[4][4], /^fetched memoise 2,309 times/);
  await shot("1-whale-list");
});

test("detail view: the profile sentence and its facts", async () => {
  const s = await api(`/api/days/${LOOP_DAY}?count=8`);
  const w = s.whales[4];
  await tab("Detail view");
  await page.selectOption("#whale", String(w.ip_id));
  await page.waitForFunction((t) => document.querySelector("#profile-sentence")?.textContent === t, w.profile.sentence);
  assert.equal(await page.textContent("#detail-profile .chip"), "repeat loop");
  const facts = await page.$$eval("#profile-facts > div", (ds) => ds.map((d) => d.textContent));
  const f = w.profile.facts;
  const at = (k) => facts[facts.indexOf(k) + 1];
  assert.equal(at("distinct packages"), `1 (${pct(1, f.day_packages)} of the day's ${int(f.day_packages)})`);
  assert.equal(at("top package"), `memoise: ${int(f.top_package_downloads)} (100.0%)`);
  assert.equal(at("longest burst"), `${f.burst} downloads in one minute at ${String(Math.floor(f.burst_start / 3600)).padStart(2, "0")}:${String(Math.floor(f.burst_start / 60) % 60).padStart(2, "0")}`);
  assert.equal(at("share of the top-100 whales' downloads"), pct(f.downloads, f.whale_downloads));
  assert.match(page.url(), new RegExp(`tab=detail&whale=${w.ip_id}`));
  await shot("2-detail-profile");
});

test("Packages: suggestions from the stored days, chart and table equal the API, state in the URL", async () => {
  await tab("Packages");
  await page.fill("#pkg-name", "mem");
  const sug = await api("/api/packages?q=mem&limit=12");
  await page.waitForFunction((n) => document.querySelectorAll("#pkg-suggestions option").length === n, sug.length);
  const shown = await page.$$eval("#pkg-suggestions option", (os) => os.map((o) => o.value));
  assert.deepEqual(shown, sug.map((s) => s.package));
  assert.equal(shown[0], "memoise");
  await page.fill("#pkg-name", "memoise");
  await page.click("#pkg-form button[type=submit]");
  await page.waitForFunction(() => document.body.dataset.packages === "ready");
  const r = await api("/api/packages/memoise?whales=6");
  await checkPackage(page, r);
  const q = new URL(page.url()).searchParams;
  assert.deepEqual([q.get("tab"), q.get("package"), q.get("whales")], ["packages", "memoise", "6"]);
  await shot("3-packages-memoise");

  // Another N: the URL and every number follow.
  await page.fill("#pkg-whales", "25");
  await page.click("#pkg-form button[type=submit]");
  await page.waitForFunction(() => document.querySelector("#pkg-whales-head").textContent === "top 25 whales");
  await checkPackage(page, await api("/api/packages/memoise?whales=25"));
  assert.match(page.url(), /whales=25/);
  // Back returns to N = 6.
  await page.goBack();
  await page.waitForFunction(() => document.querySelector("#pkg-whales-head").textContent === "top 6 whales");
  await checkPackage(page, r);

  // The URL alone restores the view in a fresh page, date range included.
  const other = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  await other.goto(`${base}/?tab=packages&package=memoise&from=2014-12-01&to=2015-02-28&whales=1`);
  await other.waitForFunction(() => document.body.dataset.packages === "ready");
  assert.equal(await other.inputValue("#pkg-from"), "2014-12-01");
  assert.equal(await other.textContent(".tabs button.active"), "Packages");
  await checkPackage(other, await api("/api/packages/memoise?from=2014-12-01&to=2015-02-28&whales=1"));
  // The filters as toggles: whales, small and repeats left out is the API's
  // without_whales_inflated line; small and repeats alone its without_inflated; kept in the URL.
  const f = await api("/api/packages/memoise?whales=6");
  for (const [without, name, field] of [
    ["whales,small,repeats", "without top 6 whales, small & repeats", "without_whales_inflated"],
    ["small,repeats", "without small & repeats", "without_inflated"],
  ]) {
    await other.goto(`${base}/?tab=packages&package=memoise&whales=6&without=${without}`);
    await other.waitForFunction(() => document.body.dataset.packages === "ready");
    for (const k of ["whales", "small", "repeats"]) assert.equal(await other.isChecked(`#pkg-no-${k}`), without.split(",").includes(k), k);
    const lines = await seriesOf(other, "chart-package");
    const dates = new Set(f.days.map((d) => d.date));
    const line = lines.find((l) => l.name === name);
    assert.ok(line, `${name} in ${lines.map((l) => l.name)}`);
    assert.deepEqual(line.data.filter((pt) => dates.has(pt[0])).map((pt) => pt[1]), f.days.map((d) => d[field]));
    assert.ok(f.days.some((d) => d[field] !== d.without_whales), "the filters change some day");
  }
  await other.close();
});

async function checkPackage(p, r) {
  const rows = await cells(p, "#pkg-table");
  const maybe = (v) => (v === null ? "–" : int(v));
  assert.deepEqual(rows, r.days.map((d) => [d.date, "1 of 1", int(d.downloads), int(d.downloaders), int(d.whale_downloads), int(d.without_whales), pct(d.whale_downloads, d.downloads), int(d.adjusted), maybe(d.small), maybe(d.repeats)]));
  const series = await seriesOf(p, "chart-package");
  // Time axis: [date, value] points, a [day after, null] after each gap.
  const dates = new Set(r.days.map((d) => d.date));
  const by = Object.fromEntries(series.map((s) => [s.name, s.data.filter((pt) => dates.has(pt[0])).map((pt) => pt[1])]));
  assert.deepEqual(by["raw downloads"], r.days.map((d) => d.downloads));
  assert.deepEqual(by["unique downloaders"], r.days.map((d) => d.downloaders));
  assert.deepEqual(by[`without top ${r.whales} whales`], r.days.map((d) => d.without_whales));
  assert.deepEqual(by["aggregate-only estimate"], r.days.map((d) => d.adjusted));
  const boxes = await p.$$eval("#pkg-boxes .box-value", (bs) => bs.map((b) => b.textContent));
  assert.deepEqual(boxes, [int(r.totals.downloads), int(r.totals.without_whales), pct(r.totals.whale_downloads, r.totals.downloads)]);
  assert.equal(await p.textContent("#pkg-note"), r.note);
}

test("Packages: bad input gets a clear message and changes nothing", async () => {
  const url = page.url();
  await page.fill("#pkg-whales", "0");
  await page.click("#pkg-form button[type=submit]");
  await page.waitForFunction(() => /1 to 100/.test(document.querySelector("#pkg-message").textContent));
  assert.equal(page.url(), url);
  await shot("4-packages-bad-n");
  await page.fill("#pkg-whales", "6");
  await page.fill("#pkg-from", "2015-02-01");
  await page.fill("#pkg-to", "2015-01-01");
  await page.click("#pkg-form button[type=submit]");
  await page.waitForFunction(() => /inverted/.test(document.querySelector("#pkg-message").textContent));
  assert.equal(page.url(), url);
  await page.fill("#pkg-from", "");
  await page.fill("#pkg-to", "");
  await page.fill("#pkg-name", "no.such.package");
  await page.click("#pkg-form button[type=submit]");
  await page.waitForFunction(() => document.body.dataset.packages === "notice");
  assert.equal(await page.textContent("#pkg-message .message-title"), "No stored downloads of “no.such.package”");
  assert.match(await page.textContent("#pkg-message .message-text"), /not downloaded on any stored day/);
  assert.ok(!(await page.isVisible("#chart-package")), "no stale chart under the message");
  await shot("5-packages-unknown");
});

test("Trends: every stored day's numbers as the API says; clicking a day opens it", async () => {
  await tab("Trends");
  const t = await api("/api/trends");
  await page.waitForFunction((n) => document.querySelectorAll("#trends-table tbody tr").length === n, t.days.length);
  const rows = await cells(page, "#trends-table");
  const keys = ["archive", "mirror", "loop", "classroom", "steady", "burst", "session"];
  assert.deepEqual(rows, t.days.slice().reverse().map((d) => [d.date, int(d.downloads), int(d.downloaders), pct(d.top1, d.downloads), pct(d.top6, d.downloads), pct(d.top25, d.downloads), ...keys.map((k) => int(d.behaviours[k]))]));
  for (const d of t.days) assert.equal(keys.reduce((a, k) => a + d.behaviours[k], 0), Math.min(100, d.downloaders));
  const traffic = await seriesOf(page, "chart-trends-traffic");
  const stored = (data) => data.filter((pt) => t.days.some((d) => d.date === pt[0]));
  assert.deepEqual(stored(traffic[0].data), t.days.map((d) => [d.date, d.downloads]));
  assert.deepEqual(stored(traffic[1].data), t.days.map((d) => [d.date, d.downloaders]));
  const beh = await seriesOf(page, "chart-trends-behaviours");
  assert.deepEqual(beh.map((s) => s.data), keys.map((k) => t.days.map((d) => [d.date, d.behaviours[k]])));
  assert.match(page.url(), /tab=trends/);
  await shot("6-trends");
  await page.click('#trends-table a[data-date="2014-12-21"]');
  await page.waitForFunction(() => document.body.dataset.view === "ready" && document.querySelector("#subtitle").textContent.startsWith("2014-12-21"));
  assert.equal(await page.textContent(".tabs button.active"), "All traffic");
  assert.match(page.url(), /date=2014-12-21/);
  assert.match(page.url(), /tab=traffic/);
  await page.goBack();
  await page.waitForFunction(() => document.querySelector(".tabs button.active")?.textContent === "Trends");
  assert.deepEqual(page.errors, []);
});
