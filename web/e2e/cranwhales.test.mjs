// Browser suite for `cranwhales serve`, as a user would use it: the real debug binary on a temp
// store (bundled sample days), a real source server on loopback serving ../shared/data/cranlogs in
// the {base}/{YYYY}/{date}.csv.gz layout, and headless Chromium. Every number on screen is checked
// against the API (itself checked against raw counts in crates/cranwhales/tests/it/api.rs).
// Screenshots of each view go to artifacts/cranwhales/.
//
// Usage (repo root): node --test web/e2e/cranwhales.test.mjs   (needs target/debug/cranwhales)
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { createReadStream, existsSync, mkdtempSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { clickTab, cranlogs, getJson, int, openPage, root, screenshot, startServer, stop } from "./cranwhales-support.mjs";

const FETCHED_DAY = "2014-05-01"; // in ../shared, not in data/sample: fetched on demand
const MISSING_DAY = "2012-10-02"; // no log in ../shared: the source answers 404
const LATEST_SAMPLE = "2015-01-08";

let work, source, server, base, browser, page;
const hits = new Map();

// ---- the source server: real files, throttled so the progress bar can be watched ----
function startSource() {
  return new Promise((ok) => {
    const srv = createServer((req, res) => {
      const m = /^\/(\d{4})\/(\d{4}-\d{2}-\d{2})\.csv\.gz$/.exec(req.url ?? "");
      const date = m?.[2];
      if (date) hits.set(date, (hits.get(date) ?? 0) + 1);
      const file = date && m[1] === date.slice(0, 4) ? join(cranlogs, `${date}.csv.gz`) : null;
      if (!file || !existsSync(file)) {
        res.writeHead(404).end("not found");
        return;
      }
      res.writeHead(200, { "content-type": "application/gzip", "content-length": statSync(file).size });
      // ~0.5 MB/s: a 2 MB day takes about four seconds to download, long enough to watch.
      const stream = createReadStream(file, { highWaterMark: 64 * 1024 });
      stream.on("data", (chunk) => {
        stream.pause();
        res.write(chunk, () => setTimeout(() => stream.resume(), 120));
      });
      stream.on("end", () => res.end());
    });
    srv.listen(0, "127.0.0.1", () => ok(srv));
  });
}

const api = (path) => getJson(base, path);

// Independent formatting for what the value boxes must say.
function binary(n) {
  const units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
  const k = n < 1024 ? 0 : Math.min(5, Math.floor(Math.log(n) / Math.log(1024)));
  return k === 0 ? `${n} B` : `${(n / 1024 ** k).toFixed(1)} ${units[k]}`;
}

const boxes = (sel) => page.$$eval(`${sel} .box`, (els) => els.map((e) => [e.querySelector(".box-value").textContent, e.querySelector(".box-label").textContent]));
// Charts other than All traffic come with the ECharts chunk, loaded with the first tab needing it.
const option = async (id) => (await page.waitForFunction((id) => window.cranwhales.charts.get(id)?.getOption()?.series?.length > 0, id), optionNow(id));
const optionNow = (id) => page.evaluate((id) => {
  const o = window.cranwhales.charts.get(id).getOption();
  return { series: o.series.map((s) => ({ name: s.name, data: s.data })), x: o.xAxis.map((a) => a.data ?? null), y: o.yAxis.map((a) => a.data ?? null) };
}, id);
const shot = (name) => screenshot(page, name);
const tab = (label) => clickTab(page, label);
const ready = () => page.waitForFunction(() => document.body.dataset.view === "ready");

before(async () => {
  work = mkdtempSync(join(tmpdir(), "cranwhales-e2e-"));
  source = await startSource();
  const url = `http://127.0.0.1:${source.address().port}`;
  const s = await startServer(work, ["--sample-dir", join(root, "data/sample"), "--source-url", url]);
  server = s.child;
  base = s.url;
  ({ browser, page } = await openPage(/status of 404/));
});

after(async () => {
  source?.close();
  await stop(browser, server, work);
});

test("opens on the latest stored day: All traffic boxes and hourly bars", async () => {
  await page.goto(base + "/");
  await ready();
  assert.equal(await page.inputValue("#date"), LATEST_SAMPLE);
  assert.equal(await page.inputValue("#count"), "6");
  const s = await api(`/api/days/${LATEST_SAMPLE}?count=6`);
  const whaleDl = s.whales.reduce((a, w) => a + w.downloads, 0);
  const b = await boxes("#traffic-boxes");
  assert.deepEqual(b.slice(0, 3), [
    [binary(s.totals.bytes), "bandwidth consumed"],
    [int(s.totals.downloads), "files downloaded"],
    [int(s.totals.downloaders), "unique downloaders"],
  ]);
  assert.equal(b[3][0], `${((100 * whaleDl) / s.totals.downloads).toFixed(1)}%`);
  const o = await option("chart-traffic");
  assert.equal(o.series.length, 2);
  assert.deepEqual(o.series[1].data, s.hourly.map((h) => h.whale_downloads));
  assert.deepEqual(o.series[0].data, s.hourly.map((h) => h.downloads - h.whale_downloads));
  assert.equal(o.x[0].length, 24);
  // A tooltip appears on hover over a bar.
  const box = await page.locator("#chart-traffic").boundingBox();
  await page.mouse.move(box.x + box.width * 0.5, box.y + box.height * 0.6);
  await page.waitForFunction(() => [...document.querySelectorAll("#chart-traffic div")].some((d) => d.textContent.includes("UTC") && getComputedStyle(d).display !== "none" && d.textContent.includes("downloads")));
  assert.match(page.url(), new RegExp(`date=${LATEST_SAMPLE}&count=6&tab=traffic`));
  await shot("1-all-traffic");
});

test("Biggest whales: one bar per whale labelled name [CC]", async () => {
  await tab("Biggest whales");
  const s = await api(`/api/days/${LATEST_SAMPLE}?count=6`);
  const o = await option("chart-whales");
  assert.deepEqual(o.series[0].data, s.whales.map((w) => w.downloads));
  assert.deepEqual(o.x[0], s.whales.map((w) => `${w.name} [${w.country ?? "??"}]`));
  await shot("2-biggest-whales");
});

test("Whales by hour: one panel of 24 hourly bars per whale", async () => {
  await tab("Whales by hour");
  const s = await api(`/api/days/${LATEST_SAMPLE}?count=6`);
  const o = await option("chart-hourly");
  assert.equal(o.series.length, 6);
  o.series.forEach((ser, i) => assert.deepEqual(ser.data, s.whales[i].hourly));
  const maxes = () => page.evaluate(() => window.cranwhales.charts.get("chart-hourly").getOption().yAxis.map((a) => a.max));
  const shared = await maxes();
  const top = Math.max(...s.whales.flatMap((w) => w.hourly));
  assert.ok(shared.every((m) => m === shared[0] && m >= top), `one shared scale: ${shared}`);
  await shot("3-whales-by-hour");
  // Own scale per panel: each panel fits its whale.
  await page.uncheck("#shared-scale");
  await page.waitForFunction((n) => new Set(window.cranwhales.charts.get("chart-hourly").getOption().yAxis.map((a) => a.max)).size > 1 || n === 1, s.whales.length);
  const own = await maxes();
  own.forEach((m, i) => assert.ok(m >= Math.max(...s.whales[i].hourly) && m <= shared[0], `panel ${i}: ${m}`));
  await shot("3b-whales-by-hour-own-scale");
  await page.check("#shared-scale");
});

test("Detail view: biggest whale by default, boxes, time × package scatter in first-download order", async () => {
  await tab("Detail view");
  const s = await api(`/api/days/${LATEST_SAMPLE}?count=6`);
  const top = s.whales[0];
  await page.waitForFunction(() => window.cranwhales.charts.get("chart-detail")?.getOption()?.series?.[0]?.data?.length > 0);
  assert.equal(await page.inputValue("#whale"), String(top.ip_id));
  assert.equal((await page.$$("#whale option")).length, 6);
  const d = await api(`/api/days/${LATEST_SAMPLE}/whales/${top.ip_id}`);
  const b = await boxes("#detail-boxes");
  assert.deepEqual(b.slice(0, 3), [
    [binary(d.whale.bytes), "bandwidth consumed"],
    [int(d.whale.downloads), "files downloaded"],
    [int(d.whale.packages), "unique packages"],
  ]);
  const o = await option("chart-detail");
  assert.equal(o.series[0].data.length, d.downloads.length);
  // y categories: packages by first download time, earliest first (drawn at the top: inverse axis).
  const first = new Map();
  for (const r of d.downloads) if (!first.has(r.package) || r.time < first.get(r.package)) first.set(r.package, r.time);
  const expected = [...first.keys()].sort((a, b) => first.get(a).localeCompare(first.get(b)) || (a < b ? -1 : 1));
  assert.deepEqual(o.y[0], expected);
  assert.equal(await page.locator("#selection-table tbody tr").count(), 0, "no selection, empty table");
  await shot("4-detail-view");
});

test("brush-select a region of the scatter fills the table with exactly those downloads", async () => {
  const s = await api(`/api/days/${LATEST_SAMPLE}?count=6`);
  const d = await api(`/api/days/${LATEST_SAMPLE}/whales/${s.whales[0].ip_id}`);
  const el = await page.locator("#chart-detail").boundingBox();
  // A box over the middle of the plot: from 25% to 60% across, 10% to 50% down.
  const p1 = [el.width * 0.25, el.height * 0.1];
  const p2 = [el.width * 0.6, el.height * 0.5];
  await page.mouse.move(el.x + p1[0], el.y + p1[1]);
  await page.mouse.down();
  await page.mouse.move(el.x + (p1[0] + p2[0]) / 2, el.y + (p1[1] + p2[1]) / 2, { steps: 5 });
  await page.mouse.move(el.x + p2[0], el.y + p2[1], { steps: 5 });
  await page.mouse.up();
  await page.waitForFunction(() => /selected/.test(document.querySelector("#selection-title").textContent) && !/No downloads/.test(document.querySelector("#selection-title").textContent));
  // Expected rows, counted here from the API data and the brushed rectangle in data units.
  const [a, b] = await page.evaluate(([p1, p2]) => {
    const c = window.cranwhales.charts.get("chart-detail");
    return [c.convertFromPixel({ gridIndex: 0 }, p1), c.convertFromPixel({ gridIndex: 0 }, p2)];
  }, [p1, p2]);
  const o = await option("chart-detail");
  const cats = o.y[0];
  const [h0, h1] = [Math.min(a[0], b[0]), Math.max(a[0], b[0])];
  const [c0, c1] = [Math.min(a[1], b[1]), Math.max(a[1], b[1])];
  const hours = (t) => { const [h, m, s2] = t.split(":").map(Number); return h + m / 60 + s2 / 3600; };
  const inside = d.downloads.filter((r) => {
    const h = hours(r.time);
    const c = cats.indexOf(r.package);
    return h >= h0 && h <= h1 && c >= Math.ceil(c0) && c <= Math.floor(c1);
  });
  assert.ok(inside.length > 0, "the box covers some downloads");
  const title = await page.textContent("#selection-title");
  const shown = Number(title.split(" ")[0].replace(/,/g, ""));
  // Points exactly on the box's edge may go either way: allow a sliver.
  assert.ok(Math.abs(shown - inside.length) <= Math.max(2, inside.length * 0.01), `table ${shown} vs expected ${inside.length}`);
  const rows = await page.$$eval("#selection-table tbody tr", (trs) => trs.map((tr) => [...tr.children].map((td) => td.textContent)));
  assert.equal(rows.length, Math.min(shown, 2000));
  for (const r of rows.slice(0, 50)) {
    assert.equal(r[0], LATEST_SAMPLE);
    const h = hours(r[1]);
    assert.ok(h >= h0 - 0.01 && h <= h1 + 0.01, `row time ${r[1]} inside ${h0}..${h1}`);
    assert.ok(cats.indexOf(r[3]) >= Math.floor(c0) && cats.indexOf(r[3]) <= Math.ceil(c1), `row package ${r[3]}`);
  }
  await shot("5-detail-brushed");
  assert.equal(await page.locator("#selection-table tbody tr").count(), rows.length, "selection survives a resize (screenshot)");
  // Clearing the selection empties the table, no error.
  await page.click("#clear-selection");
  await page.waitForFunction(() => document.querySelectorAll("#selection-table tbody tr").length === 0);
  assert.match(await page.textContent("#selection-title"), /No downloads selected/);
  assert.deepEqual(page.errors, []);
});

test("changing the count updates every view; out-of-range count shows an inline message", async () => {
  await page.fill("#count", "10");
  await ready();
  await page.waitForFunction(() => window.cranwhales.state.count === 10 && document.querySelectorAll("#whale option").length === 10);
  assert.match(page.url(), /count=10/);
  await tab("Biggest whales");
  const o = await option("chart-whales");
  assert.equal(o.series[0].data.length, 10);
  await page.fill("#count", "30");
  assert.ok(await page.isVisible("#count-error"));
  assert.match(await page.textContent("#count-error"), /1 to 25/);
  assert.match(page.url(), /count=10/, "an invalid count changes nothing");
  assert.equal((await option("chart-whales")).series[0].data.length, 10);
  await shot("6-count-out-of-range");
  await page.fill("#count", "10");
  assert.ok(!(await page.isVisible("#count-error")));
});

test("changing the date shows that day", async () => {
  await page.fill("#date", "2013-12-04");
  await ready();
  await page.waitForFunction(() => document.querySelector("#subtitle").textContent.startsWith("2013-12-04"));
  const s = await api("/api/days/2013-12-04?count=10");
  await tab("All traffic");
  const b = await boxes("#traffic-boxes");
  assert.equal(b[1][0], int(s.totals.downloads));
  assert.equal(b[0][0], binary(s.totals.bytes));
  assert.match(page.url(), /date=2013-12-04/);
});

test("reloading a shared URL restores date, count, tab and whale", async () => {
  const s = await api("/api/days/2013-12-04?count=10");
  const third = s.whales[2];
  await tab("Detail view");
  await page.selectOption("#whale", String(third.ip_id));
  await page.waitForFunction((n) => document.querySelector("#detail-boxes .box-value")?.parentElement && document.querySelectorAll("#detail-boxes .box")[1].querySelector(".box-value").textContent === n, int(third.downloads));
  const url = page.url();
  assert.match(url, new RegExp(`whale=${third.ip_id}`));
  // Back undoes the whale choice, Forward redoes it.
  await page.goBack();
  await page.waitForFunction((id) => document.querySelector("#whale").value === id, String(s.whales[0].ip_id));
  await page.goForward();
  await page.waitForFunction((id) => document.querySelector("#whale").value === id, String(third.ip_id));
  assert.equal(page.url(), url);
  const other = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  await other.goto(url);
  await other.waitForFunction(() => document.body.dataset.view === "ready");
  await other.waitForFunction(() => window.cranwhales.charts.get("chart-detail")?.getOption()?.series?.[0]?.data?.length > 0);
  assert.equal(await other.inputValue("#date"), "2013-12-04");
  assert.equal(await other.inputValue("#count"), "10");
  assert.equal(await other.textContent(".tabs button.active"), "Detail view");
  assert.equal(await other.inputValue("#whale"), String(third.ip_id));
  // A whale that is not in the list (stale link) falls back to the biggest, without an error.
  await other.goto(url.replace(/whale=\d+/, "whale=999999999"));
  await other.waitForFunction(() => window.cranwhales.charts.get("chart-detail")?.getOption()?.series?.[0]?.data?.length > 0);
  assert.equal(await other.inputValue("#whale"), String(s.whales[0].ip_id));
  await other.close();
});

test("a day that is not stored is fetched from the source with a live progress bar", async () => {
  assert.equal(hits.get(FETCHED_DAY) ?? 0, 0);
  await tab("All traffic");
  await page.fill("#date", FETCHED_DAY);
  await page.waitForSelector(".status-fetching .bar");
  await page.waitForFunction(() => /downloading [\d.]+ of [\d.]+ MB/.test(document.querySelector(".progress-text")?.textContent ?? ""));
  const width = await page.$eval(".bar .fill", (e) => e.style.width);
  // The bar moves while the download runs.
  const first = Number(await page.getAttribute(".bar", "aria-valuenow"));
  await page.waitForFunction((v) => Number(document.querySelector(".bar")?.getAttribute("aria-valuenow")) > v, first);
  await shot("7-fetching-progress");
  await ready();
  await page.waitForFunction((d) => document.querySelector("#subtitle").textContent.startsWith(d), FETCHED_DAY);
  const s = await api(`/api/days/${FETCHED_DAY}?count=10`);
  const b = await boxes("#traffic-boxes");
  assert.equal(b[1][0], int(s.totals.downloads));
  assert.ok(s.totals.downloads > 100000);
  assert.equal(hits.get(FETCHED_DAY), 1, "downloaded once");
  assert.ok(width.endsWith("%"), width);
  // The new day is now a stored day of the sidebar's calendar.
  await page.waitForSelector(`#calendar .cal-grid a.cal-stored[data-date="${FETCHED_DAY}"]`);
  await shot("8-fetched-day");
});

test("a day the source does not have gets a clear message", async () => {
  await page.fill("#date", MISSING_DAY);
  await page.waitForSelector(".status-notice .message-title");
  assert.equal(await page.textContent(".message-title"), `No CRAN log for ${MISSING_DAY}`);
  assert.match(await page.textContent(".message-text"), /404/);
  assert.ok(!(await page.isVisible("#chart-traffic")), "no stale charts under the message");
  await shot("9-missing-day");
  // And back to a stored day from the sidebar calendar.
  await page.click(`#calendar button[data-month="${LATEST_SAMPLE.slice(0, 7)}"]`);
  await page.click(`#calendar .cal-grid a[data-date="${LATEST_SAMPLE}"]`);
  await ready();
  assert.equal(await page.inputValue("#date"), LATEST_SAMPLE);
  assert.deepEqual(page.errors, []);
});
