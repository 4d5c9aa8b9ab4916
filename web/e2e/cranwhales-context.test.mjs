// Browser suite for the whole history and packages in context: the first view's JS (Chromium's
// transfer sizes), the calendar (a day three years back in at most 3 clicks, an unstored day one
// click from its fetch), the time axis (a gap of two years is as wide as it is long), a chart of
// 3 packages with their ranks, and the badge (its screenshot read back pixel by pixel). A store of
// days in 2012 and 2015 (real logs); no source to fetch from. Screenshots: artifacts/cranwhales/
// context-*.png.
//
// Usage (repo root): node --test web/e2e/cranwhales-context.test.mjs   (needs target/debug/cranwhales)
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { copyFileSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { clickTab, cranlogs, getJson, openPage, root, screenshot, startServer, stop } from "./cranwhales-support.mjs";

const DAYS = ["2012-10-16", "2012-10-17", "2015-01-07", "2015-01-08", "2015-01-09"];
const LATEST = "2015-01-09";
const PACKAGES = ["ggplot2", "DBI", "memoise"];
/** The issue's budget for the first view's JS, gzipped. */
const FIRST_VIEW_JS = 100 * 1024;
let work, server, base, browser, page;

before(async () => {
  work = mkdtempSync(join(tmpdir(), "cranwhales-context-e2e-"));
  const samples = join(work, "sample");
  mkdirSync(samples);
  for (const d of DAYS) copyFileSync(join(cranlogs, `${d}.csv.gz`), join(samples, `${d}.csv.gz`));
  const s = await startServer(work, ["--sample-dir", samples, "--source-url", "http://127.0.0.1:9"]);
  server = s.child;
  base = s.url;
  ({ browser, page } = await openPage(/status of (4|5)\d\d/));
});

after(() => stop(browser, server, work));

const api = (path) => getJson(base, path);
const shot = (name) => screenshot(page, `context-${name}`);
const ready = () => page.waitForFunction(() => document.body.dataset.view === "ready");
// ECharts draws a chart in over 300 ms (lines revealed left to right); shots and measures are of the
// settled chart. (A delay on purpose: no event says the entry animation ended.)
const settle = () => page.waitForTimeout(400);

test("first view: its JS is at most 100 KB gzipped (Chromium transfer sizes), ECharts not among it", async () => {
  await page.goto(`${base}/`);
  await ready();
  await page.waitForFunction(() => document.querySelector("#chart-traffic svg rect"));
  const scripts = await page.evaluate(() =>
    performance
      .getEntriesByType("resource")
      .filter((e) => e.name.endsWith(".js"))
      .map((e) => ({ name: new URL(e.name).pathname, transfer: e.transferSize, body: e.encodedBodySize, decoded: e.decodedBodySize })),
  );
  const total = scripts.reduce((a, s) => a + s.transfer, 0);
  mkdirSync(join(root, "artifacts/cranwhales"), { recursive: true });
  writeFileSync(join(root, "artifacts/cranwhales/first-view-js.json"), JSON.stringify({ total_transfer_bytes: total, scripts }, null, 2));
  console.log(`first view JS: ${total} bytes transferred (${scripts.map((s) => `${s.name} ${s.transfer} B, ${s.decoded} B unzipped`).join("; ")})`);
  assert.ok(scripts.length >= 1 && scripts.every((s) => s.body < s.decoded), "scripts come gzipped");
  assert.ok(total <= FIRST_VIEW_JS, `first view JS ${total} B > ${FIRST_VIEW_JS} B`);
  assert.ok(!scripts.some((s) => /echarts/.test(s.name)), "no ECharts chunk in the first view");
  // The traffic chart is the API's: 24 stacked hours.
  const s = await api(`/api/days/${LATEST}?count=6`);
  const o = await page.evaluate(() => window.cranwhales.charts.get("chart-traffic").getOption());
  assert.deepEqual(o.series[1].data, s.hourly.map((h) => h.whale_downloads));
});

test("calendar: every month with stored days marked with its count; a day three years back in two clicks, an unstored one a click from its fetch", async () => {
  const cal = await api("/api/calendar");
  const perMonth = new Map();
  for (const d of cal.days) perMonth.set(d.date.slice(0, 7), (perMonth.get(d.date.slice(0, 7)) ?? 0) + 1);
  const marked = await page.$$eval("#calendar button.cal-mon.has", (bs) => bs.map((b) => [b.dataset.month, b.title]));
  assert.deepEqual(marked.map((m) => m[0]).sort(), [...perMonth.keys()].sort());
  for (const [m, title] of marked) assert.match(title, new RegExp(`: ${perMonth.get(m)} of (28|29|30|31) days stored$`), m);
  const years = await page.$$eval("#calendar .cal-year", (ys) => ys.map((y) => Number(y.dataset.year)));
  assert.equal(years[years.length - 1], 2012);
  assert.equal(years[0], Number(cal.last.slice(0, 4)));
  await page.locator("#calendar").screenshot({ path: join(root, "artifacts/cranwhales/context-calendar.png") });
  let clicks = 0;
  await page.click('#calendar button[data-month="2012-10"]');
  clicks++;
  // The month's stored days are shaded links: exactly the stored days of October 2012.
  const stored = await page.$$eval("#calendar .cal-grid a.cal-stored", (as) => as.map((a) => a.dataset.date));
  assert.deepEqual(stored, cal.days.map((d) => d.date).filter((d) => d.startsWith("2012-10")));
  await page.click('#calendar .cal-grid a[data-date="2012-10-17"]');
  clicks++;
  await ready();
  await page.waitForFunction(() => document.querySelector("#subtitle").textContent.startsWith("2012-10-17"));
  assert.ok(clicks <= 3);
  assert.match(page.url(), /date=2012-10-17/);
  // The month below shows October 2012; 2012-10-20 is not stored: its link fetches it (the
  // source here refuses connections: an error, after one click).
  await page.waitForSelector('#calendar .cal-month a.cal-fetch[data-date="2012-10-20"]');
  assert.match(await page.textContent("#calendar .cal-month-head"), /October 2012 · 2 of 31 stored/);
  await shot("1-calendar");
  await page.click('#calendar .cal-month a.cal-fetch[data-date="2012-10-20"]');
  await page.waitForFunction(() => /2012-10-20/.test(document.querySelector("#status")?.textContent ?? ""));
  assert.match(page.url(), /date=2012-10-20/);
});

test("time axis: a gap of two years is as wide as it is long, the line breaks there, zoom is on", async () => {
  await page.goto(`${base}/?tab=trends&date=${LATEST}`);
  await page.waitForFunction(() => window.cranwhales.charts.get("chart-trends-traffic")?.getOption()?.series?.length === 2);
  const m = await page.evaluate(() => {
    const c = window.cranwhales.charts.get("chart-trends-traffic");
    const x = (d) => c.convertToPixel({ xAxisIndex: 0 }, d);
    const o = c.getOption();
    return { a: x("2012-10-16"), b: x("2012-10-17"), c: x("2015-01-07"), type: o.xAxis[0].type, zoom: o.dataZoom.map((z) => z.type), line: o.series[1].data };
  });
  assert.equal(m.type, "time");
  assert.deepEqual(m.zoom.sort(), ["inside", "slider"]);
  const days = (Date.parse("2015-01-07") - Date.parse("2012-10-17")) / 86_400_000;
  const ratio = (m.c - m.b) / (m.b - m.a);
  assert.ok(Math.abs(ratio / days - 1) < 0.02, `gap ${m.c - m.b} px for ${days} days vs ${m.b - m.a} px for one`);
  assert.ok(m.c - m.b > 500, `the gap is drawn wide: ${m.c - m.b} px`);
  const i = m.line.findIndex((p) => p[0] === "2012-10-17");
  assert.equal(m.line[i + 1][1], null, "the line breaks after 2012-10-17");
  await settle();
  await shot("2-trends-time-axis");
});

test("three packages in one chart, each with its rank as the API says; distribution marks them", async () => {
  await clickTab(page, "Packages");
  await page.fill("#pkg-name", PACKAGES.join(", "));
  await page.click("#pkg-form button[type=submit]");
  await page.waitForFunction(() => document.body.dataset.packages === "ready");
  const c = await api(`/api/packages/${PACKAGES.join(",")}?whales=6`);
  const series = await page.evaluate(() => window.cranwhales.charts.get("chart-package").getOption().series.map((s) => ({ name: s.name, data: s.data })));
  // Each package: its downloads and, dashed in its colour, the same without each day's whales.
  assert.deepEqual(series.map((s) => s.name), PACKAGES.flatMap((p) => [p, `${p} without whales`]));
  series.forEach((s, k) => {
    const r = c.packages[k >> 1];
    const dates = new Set(r.days.map((d) => d.date));
    const field = k % 2 ? "without_whales" : "downloads";
    assert.deepEqual(s.data.filter((p) => dates.has(p[0])), r.days.map((d) => [d.date, d[field]]));
  });
  // The ranks are counted with the page's filters (issue 31: as packageRank does): ask the API the same.
  const without = await page.evaluate(() => ["whales", "small", "repeats"].filter((f) => document.getElementById(`pkg-no-${f}`)?.checked).join(","));
  const cw = await api(`/api/packages/${PACKAGES.join(",")}?whales=6&without=${without}`);
  const ranks = await page.$$eval("#pkg-ranks .rank-text", (els) => els.map((e) => e.textContent));
  assert.deepEqual(ranks, cw.packages.map((p) => p.rank.text));
  assert.match(ranks[0], /^[\d,]+ of [\d,]+, \d+\.\d percentile(, without [a-z, ]+)?$/);
  const marks = await page.evaluate(() => window.cranwhales.charts.get("chart-distribution").getOption().series[0].markLine.data.map((d) => d.name));
  assert.deepEqual(marks, PACKAGES);
  assert.match(page.url(), /package=ggplot2%2CDBI%2Cmemoise/);
  await settle();
  await page.locator("#chart-package").screenshot({ path: join(root, "artifacts/cranwhales/context-3-packages.png") });
  await shot("3-three-packages");
  // Weekly bins of the same: the URL and the chart follow.
  await page.selectOption("#pkg-bin", "week");
  await page.click("#pkg-form button[type=submit]");
  await page.waitForFunction(() => window.cranwhales.charts.get("chart-package").getOption().yAxis[0].name === "downloads per week");
  assert.match(page.url(), /bin=week/);
});

test("badge: the package page shows it and its Markdown; its screenshot has the badge's colours", async () => {
  await page.fill("#pkg-name", "ggplot2");
  await page.selectOption("#pkg-bin", "day");
  await page.click("#pkg-form button[type=submit]");
  await page.waitForFunction(() => {
    const img = document.querySelector("#pkg-badge-img");
    return img && img.complete && img.naturalWidth > 0 && document.body.dataset.packages === "ready";
  });
  const md = await page.textContent("#pkg-badge .badge-md");
  assert.equal(md, `[![downloads](${base}/badge/ggplot2?period=last-month)](${base}/?tab=packages&package=ggplot2)`);
  const svg = await (await fetch(`${base}/badge/ggplot2?period=last-month`)).text();
  const png = await page.locator("#pkg-badge-img").screenshot({ path: join(root, "artifacts/cranwhales/context-badge.png") });
  // Read the screenshot back: grey label (#555) on the left, green value (#4c1) on the right.
  const colours = await page.evaluate(async (b64) => {
    const img = new Image();
    img.src = `data:image/png;base64,${b64}`;
    await img.decode();
    const cv = document.createElement("canvas");
    [cv.width, cv.height] = [img.width, img.height];
    const ctx = cv.getContext("2d");
    ctx.drawImage(img, 0, 0);
    const at = (x, y) => [...ctx.getImageData(x, y, 1, 1).data.slice(0, 3)];
    return { w: img.width, h: img.height, left: at(3, 3), right: at(img.width - 3, 3) };
  }, png.toString("base64"));
  const near = (a, b) => a.every((v, i) => Math.abs(v - b[i]) <= 24);
  assert.ok(colours.w > 60 && colours.h >= 18, JSON.stringify(colours));
  assert.ok(near(colours.left, [0x55, 0x55, 0x55]), `label grey: ${colours.left}`);
  assert.ok(near(colours.right, [0x44, 0xcc, 0x11]), `value green: ${colours.right}`);
  // 3 of the 30 days before the newest stored day are stored: the badge says so.
  assert.match(svg, /aria-label="downloads: [\d.]+k?\/month, incomplete: 3 of 30 days"/);
  await settle();
  await shot("4-badge");
  assert.deepEqual(page.errors, []);
});

/** What a chart with a time axis (bins of `binDays`) draws outside where a user can see it: each
 * data point (line symbol or bar, to pixels with `convertToPixel`) that is not wholly inside the
 * grid (its symbol radius or half its bar to spare), each point whose symbol is not drawn, each
 * release label (markLine) whose turned box is not wholly inside the chart's canvas; and ends
 * padded far more than the marks need (over 24 px and a bin: the data squeezed to the middle).
 * Runs in the page. */
function clipped([id, binDays]) {
  const c = window.cranwhales.charts.get(id);
  const out = [];
  const grid = c.getModel().getComponent("grid", 0).coordinateSystem.getRect();
  const [gx0, gx1, gy0, gy1] = [grid.x, grid.x + grid.width, grid.y, grid.y + grid.height];
  const series = c.getOption().series;
  let [first, last] = [Infinity, -Infinity];
  series.forEach((s, i) => {
    const data = c.getModel().getSeriesByIndex(i).getData();
    for (let k = 0; k < data.count(); k++) {
      const raw = s.data[k];
      const v = Array.isArray(raw) ? raw : raw?.value;
      if (!v || v[1] === null || v[1] === undefined) continue;
      const [x, y] = c.convertToPixel({ seriesIndex: i }, v);
      let half = 0;
      if (s.type === "bar") {
        half = data.getItemLayout(k).width / 2;
      } else {
        const size = data.getItemVisual(k, "symbolSize");
        half = (Array.isArray(size) ? size[0] : size) / 2;
        const el = data.getItemGraphicEl(k);
        if (!el || el.ignore || el.invisible) out.push(`${id} ${s.name} ${v[0]}: no symbol drawn`);
      }
      first = Math.min(first, x - half);
      last = Math.max(last, x + half);
      if (x - half < gx0 - 0.5 || x + half > gx1 + 0.5) out.push(`${id} ${s.name} ${v[0]}: x ${x.toFixed(1)} ± ${half} outside the grid [${gx0}, ${gx1}]`);
      if (y < gy0 - 0.5 || y > gy1 + 0.5) out.push(`${id} ${s.name} ${v[0]}: y ${y.toFixed(1)} outside the grid [${gy0}, ${gy1}]`);
    }
  });
  const t0 = Date.parse("2015-01-01");
  const bin = c.convertToPixel({ xAxisIndex: 0 }, t0 + binDays * 86_400_000) - c.convertToPixel({ xAxisIndex: 0 }, t0);
  if (first - gx0 > 24 + bin || gx1 - last > 24 + bin) out.push(`${id}: ends padded ${(first - gx0).toFixed(0)} and ${(gx1 - last).toFixed(0)} px (a bin is ${bin.toFixed(1)} px)`);
  // Release labels: every label the option shows is drawn, its box inside the canvas.
  const labels = series.flatMap((s) => (s.markLine?.data ?? []).filter((d) => d.label?.show !== false).map((d) => String(d.label?.formatter ?? d.name)));
  const drawn = new Map();
  for (const el of c.getZr().storage.getDisplayList(true)) {
    if ((el.type !== "text" && el.type !== "tspan") || el.ignore || el.invisible || !labels.includes(String(el.style?.text))) continue;
    const b = el.getBoundingRect();
    const m = el.transform ?? [1, 0, 0, 1, 0, 0];
    const xs = [], ys = [];
    for (const [px, py] of [[b.x, b.y], [b.x + b.width, b.y], [b.x, b.y + b.height], [b.x + b.width, b.y + b.height]]) {
      xs.push(m[0] * px + m[2] * py + m[4]);
      ys.push(m[1] * px + m[3] * py + m[5]);
    }
    drawn.set(String(el.style.text), [Math.min(...xs), Math.min(...ys), Math.max(...xs), Math.max(...ys)]);
  }
  for (const l of labels) {
    const box = drawn.get(l);
    if (!box) out.push(`${id} release label ${l}: not drawn`);
    else if (box[0] < 0 || box[1] < 0 || box[2] > c.getWidth() || box[3] > c.getHeight())
      out.push(`${id} release label ${l}: box [${box.map((n) => n.toFixed(1))}] outside the canvas ${c.getWidth()} × ${c.getHeight()}`);
  }
  return { out, points: series.reduce((a, s) => a + s.data.length, 0), labels: labels.length };
}

test("time axes: the first and last days' points, bars and release labels are wholly inside the chart, desk and phone", async () => {
  const views = [
    // Each chart and its bin in days (the versions chart is per week over a range this long).
    { q: "tab=packages&package=ggplot2&whales=6", ids: [["chart-package", 1], ["chart-versions", 7]], who: true, labels: true },
    { q: "tab=packages&package=ggplot2&whales=6&bin=week", ids: [["chart-package", 7], ["chart-versions", 7]], who: true },
    { q: "tab=packages&package=ggplot2%2CDBI%2Cmemoise&whales=6", ids: [["chart-package", 1]] },
    { q: "tab=trends", ids: [["chart-trends-traffic", 1], ["chart-trends-share", 1], ["chart-trends-behaviours", 1]] },
  ];
  const found = [];
  try {
    for (const width of [1400, 390]) {
      await page.setViewportSize({ width, height: 900 });
      for (const v of views) {
        await page.goto(`${base}/?date=${LATEST}&${v.q}`);
        await page.waitForFunction(
          ({ ids, who }) =>
            (!who || document.body.dataset.who === "ready") &&
            ids.every(([id]) => window.cranwhales.charts.get(id)?.getOption()?.series?.length),
          v,
          { timeout: 20_000 },
        );
        await settle();
        for (const [id, binDays] of v.ids) {
          const r = await page.evaluate(clipped, [id, binDays]);
          assert.ok(r.points >= 5, `${id}: ${r.points} points`);
          if (v.labels && id === "chart-package") assert.ok(r.labels >= 1, `${v.q}: ${r.labels} release labels`); // 1.0.0 (older versions first fetched later are no releases)
          found.push(...r.out.map((o) => `${width} px ${v.q}: ${o}`));
        }
        if (width === 1400 && v.labels) await shot("edges-package");
      }
    }
  } finally {
    await page.setViewportSize({ width: 1400, height: 900 });
  }
  assert.deepEqual(found, []);
  assert.deepEqual(page.errors, []);
});

/** The x axis labels chart `id` draws (its settled display list). */
function axisLabels(id) {
  const c = window.cranwhales.charts.get(id);
  const grid = c.getModel().getComponent("grid", 0).coordinateSystem.getRect();
  const out = [];
  for (const el of c.getZr().storage.getDisplayList(true)) {
    if ((el.type !== "text" && el.type !== "tspan") || el.ignore || el.invisible || !el.style?.text) continue;
    const b = el.getBoundingRect();
    const y = (el.transform ?? [1, 0, 0, 1, 0, 0])[5] + b.y;
    // Under the plot and above the slider: the x axis' labels.
    if (y > grid.y + grid.height && y < grid.y + grid.height + 24) out.push(String(el.style.text));
  }
  return out;
}

test("time axes over one stored day: day ticks only, no hours (a day's downloads have no time of day)", async () => {
  const found = [];
  for (const q of [`tab=packages&package=ggplot2&whales=6&from=${LATEST}&to=${LATEST}`, `tab=packages&package=ggplot2&whales=6&from=2015-01-07&to=2015-01-08`]) {
    await page.goto(`${base}/?date=${LATEST}&${q}`);
    await page.waitForFunction(() => document.body.dataset.who === "ready" && window.cranwhales.charts.get("chart-package")?.getOption()?.series?.length && window.cranwhales.charts.get("chart-versions")?.getOption()?.series?.length, null, { timeout: 20_000 });
    await settle();
    for (const id of ["chart-package", "chart-versions"]) {
      const labels = await page.evaluate(axisLabels, id);
      if (!labels.length) found.push(`${q} ${id}: no axis label drawn`);
      found.push(...labels.filter((l) => /\d:\d\d/.test(l)).map((l) => `${q} ${id}: label ${l}`));
    }
  }
  assert.deepEqual(found, []);
  assert.deepEqual(page.errors, []);
});

test("time axes per month: month ticks only, no day of the month under a month's bar", async () => {
  // December 2014 to January 2015 per month: one bin (January 2015) drawn; its axis was labelled
  // 22, 29, 2015, 5, 12, … as if the points were days.
  await page.goto(`${base}/?date=${LATEST}&tab=packages&package=ggplot2&whales=6&from=2014-12-01&to=2015-01-31&bin=month`);
  await page.waitForFunction(() => document.body.dataset.who === "ready" && window.cranwhales.charts.get("chart-package")?.getOption()?.series?.length && window.cranwhales.charts.get("chart-versions")?.getOption()?.series?.length, null, { timeout: 20_000 });
  await settle();
  const found = [];
  for (const id of ["chart-package", "chart-versions"]) {
    const labels = await page.evaluate(axisLabels, id);
    if (!labels.length) found.push(`${id}: no axis label drawn`);
    found.push(...labels.filter((l) => /^\d{1,2}$/.test(l)).map((l) => `${id}: day label ${l} (${labels.join(" ")})`));
  }
  assert.deepEqual(found, []);
  assert.deepEqual(page.errors, []);
});

test("who downloads it over time is per day, as the chart above, when the stored days of a years-long range span days", async () => {
  // From 2015-01-01 to yesterday (years), of which 2015-01-07..09 are stored: three day bars (the
  // range's length asked for weeks before: one bar, 2015-01-05, under a chart of three days).
  const asked = [];
  const onRequest = (r) => r.url().includes("/breakdown?") && asked.push(new URL(r.url()).search);
  page.on("request", onRequest);
  try {
    await page.goto(`${base}/?date=${LATEST}&tab=packages&package=ggplot2&whales=6&from=2015-01-01&without=`);
    await page.waitForFunction(() => document.body.dataset.who === "ready" && window.cranwhales.charts.get("chart-versions")?.getOption()?.series?.length, null, { timeout: 20_000 });
  } finally {
    page.off("request", onRequest);
  }
  assert.equal(asked.length, 1, asked.join(" "));
  const q = new URLSearchParams(asked[0]);
  assert.equal(q.get("step"), "day", asked[0]);
  const b = await api(`/api/packages/ggplot2/breakdown?${q}`);
  assert.deepEqual(b.bins.map((bin) => bin.from), ["2015-01-07", "2015-01-08", "2015-01-09"]);
  const drawn = await page.evaluate(() => {
    const o = window.cranwhales.charts.get("chart-versions").getOption();
    return { title: o.title[0].text, stacks: o.series.map((s) => s.data.map((d) => d.value)) };
  });
  assert.match(drawn.title, /downloads per day/);
  b.bins.forEach((bin, i) => {
    assert.equal(drawn.stacks[0][i][0], bin.from);
    const stacked = drawn.stacks.reduce((a, s) => a + s[i][1], 0);
    assert.equal(stacked, bin.rows.reduce((a, r) => a + r.downloads, 0), bin.from);
  });
  // The same counts as the package chart's days above: nothing left out (without= is empty).
  const p = await api(`/api/packages/ggplot2?from=2015-01-01&whales=6`);
  assert.deepEqual(
    b.bins.map((bin) => bin.rows.reduce((a, r) => a + r.downloads, 0)),
    p.days.filter((d) => d.date >= "2015-01-01").map((d) => d.downloads),
  );
  await settle();
  await shot("versions-per-day");
  assert.deepEqual(page.errors, []);
});

test("count axes tick on whole numbers: a quiet day's axis is not labelled 0, 1, 1, 2, 2, 3, 3", async () => {
  // ggplot2 on 2012-10-17: 5 downloads, 3 of 0.9.2.1 and 2 of 0.8.9. The versions' axis went up
  // in halves, each label rounded.
  const b = await api("/api/packages/ggplot2/breakdown?by=version&from=2012-10-17&to=2012-10-17");
  assert.ok(b.rows[0].downloads <= 4, JSON.stringify(b.rows));
  await page.goto(`${base}/?date=${LATEST}&tab=packages&package=ggplot2&whales=6&from=2012-10-17&to=2012-10-17&without=`);
  await page.waitForFunction(() => document.body.dataset.who === "ready" && document.body.dataset.packages === "ready", null, { timeout: 20_000 });
  await settle();
  const found = [];
  for (const id of ["chart-breakdown", "chart-kinds"]) {
    const labels = await page.evaluate(axisLabels, id);
    const ns = labels.map((l) => Number(l.replace(/,/g, "")));
    if (labels.length < 2) found.push(`${id}: ${labels.length} labels`);
    if (!ns.every((n, i) => Number.isInteger(n) && (i === 0 || n > ns[i - 1]))) found.push(`${id}: ${labels.join(" ")}`);
  }
  assert.deepEqual(found, []);
  // The vertical count axes too (package chart, versions over time): their option asks for whole ticks.
  const minIntervals = await page.evaluate(() => ["chart-package", "chart-versions", "chart-distribution"].map((id) => window.cranwhales.charts.get(id).getOption().yAxis[0].minInterval));
  assert.deepEqual(minIntervals, [1, 1, 1]);
  assert.deepEqual(page.errors, []);
});

test("a range without a stored day says so instead of drawing 0 downloads and empty charts", async () => {
  // 2015-01-10 is not stored: the page showed "0 raw downloads over 0 stored days of 1", axes
  // without data and a kinds bar of four zeros.
  await page.goto(`${base}/?date=${LATEST}&tab=packages&package=ggplot2&whales=6&from=2015-01-10&to=2015-01-10`);
  await page.waitForFunction(() => document.body.dataset.packages === "notice", null, { timeout: 20_000 });
  assert.equal((await api("/api/packages/ggplot2?from=2015-01-10&to=2015-01-10")).days.length, 0);
  const shown = await page.evaluate(() => ({
    message: document.querySelector("#pkg-message").textContent,
    messageShown: !document.querySelector("#pkg-message").hidden,
    results: !document.querySelector("#pkg-results").hidden,
    boxes: document.querySelector("#pkg-boxes").textContent,
  }));
  assert.deepEqual({ ...shown, message: shown.message.slice(0, 32) }, { message: "No stored day in 2015-01-10Nothi", messageShown: true, results: false, boxes: "" });
  assert.match(shown.message, /not 0 downloads/);
  await shot("package-no-stored-day");
  // One stored day in the range: drawn, its number the API's.
  await page.goto(`${base}/?date=${LATEST}&tab=packages&package=ggplot2&whales=6&from=2015-01-09&to=2015-01-10`);
  await page.waitForFunction(() => document.body.dataset.packages === "ready", null, { timeout: 20_000 });
  const p = await api("/api/packages/ggplot2?from=2015-01-09&to=2015-01-10&whales=6");
  assert.equal(await page.textContent("#pkg-boxes .box-value"), p.totals.downloads.toLocaleString("en-US"));
  assert.equal(await page.isHidden("#pkg-message"), true);
  assert.deepEqual(page.errors, []);
});

test("trending with repeats off: the listed package most made of repeats drops, as the API counts it; the URL keeps the choice", async () => {
  const range = `from=${LATEST}&to=${LATEST}`;
  const raw = await api(`/api/top?${range}&limit=20`);
  assert.ok(raw.trending.length > 1, "a trending list to compare");
  // The listed package with the largest share of repeats, from the API's kinds of each.
  let pick = null;
  for (const t of raw.trending) {
    const k = await api(`/api/packages/${encodeURIComponent(t.package)}/kinds?${range}`);
    const share = k.repeats / k.raw;
    if (!pick || share > pick.share) pick = { package: t.package, share };
  }
  // On these days the most is about a third (stargazer, 2015-01-09).
  assert.ok(pick.share > 0.25, `${pick.package}: ${pick.share} of its downloads are repeats`);
  const filtered = await api(`/api/top?${range}&limit=20&without=repeats`);
  const at = (list) => (list.includes(pick.package) ? list.indexOf(pick.package) : Infinity);
  await page.goto(`${base}/?date=${LATEST}&tab=packages&package=ggplot2&${range}&without=`);
  await page.waitForFunction(() => document.body.dataset.top === "ready" && document.body.dataset.packages === "ready");
  const rows = () => page.$$eval("#trending-table tbody tr td:first-child", (tds) => tds.map((t) => t.textContent));
  const before = await rows();
  assert.deepEqual(before, raw.trending.map((t) => t.package));
  // Both answers asked again: the lists and the package's report (its rank line), which can come
  // second (the rank line was read before it came, now and then).
  await page.evaluate(() => {
    document.body.dataset.top = "";
    document.body.dataset.packages = "";
  });
  await page.check("#pkg-no-repeats");
  await page.click('#pkg-form button[type="submit"]');
  await page.waitForFunction(() => document.body.dataset.top === "ready" && document.body.dataset.packages === "ready");
  const after = await rows();
  assert.deepEqual(after, filtered.trending.map((t) => t.package));
  assert.ok(at(after) > at(before), `${pick.package}: row ${at(before)} → ${at(after)}`);
  assert.match(await page.textContent("#top-filter-note"), /^Counted without repeats\./);
  assert.equal(new URL(page.url()).searchParams.get("without"), "repeats");
  // The rank line is counted the same way.
  assert.match(await page.textContent("#pkg-ranks"), /without repeats/);
  await shot("trending-without-repeats");
  assert.deepEqual(page.errors, []);
});
