// Browser suite for how the page looks and behaves on a desk and on a phone, by geometry rather
// than presence: every view (the four day tabs, Packages with partly stored weeks, Trends) at
// 1400 × 1000 and 390 × 844 is checked for
// - the calendar: the day cells of each week row share one top coordinate, every day target is at
//   least 24 × 24 px, the year list opens at the year shown, on a whole row (no row cut by its
//   top edge, the shown year and month inside it), arrows + Enter open a day;
// - nothing wider than the screen (no element outside the viewport unless a scroll box holds it);
//   on a desk, no table that needs a sideways scroll in its box;
// - chart texts (legend, axis names, labels, marks) that do not overlap one another;
// - axe-core: no serious or critical accessibility violation;
// - requests: each API URL asked for at most once per view;
// and a screenshot of each (artifacts/cranwhales/look-VIEW-WIDTH.png). Store: data/sample (the
// bundled days); no source to fetch from.
//
// Usage (repo root): node --test web/e2e/cranwhales-look.test.mjs   (needs target/debug/cranwhales)
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";
import { getJson, root, screenshot, startServer, stop } from "./cranwhales-support.mjs";

const LATEST = "2015-01-08";
const AXE = join(root, "web/node_modules/axe-core/axe.min.js");
const SIZES = [
  { name: "desk", width: 1400, height: 1000 },
  { name: "phone", width: 390, height: 844 },
];
/** Each view: its URL query and what says it is drawn. */
const VIEWS = [
  { name: "traffic", q: `date=${LATEST}&tab=traffic`, ready: () => document.querySelector("#chart-traffic svg rect") },
  { name: "whales", q: `date=${LATEST}&tab=whales`, ready: () => window.cranwhales.charts.get("chart-whales")?.getOption()?.series?.length },
  { name: "hourly", q: `date=${LATEST}&tab=hourly`, ready: () => window.cranwhales.charts.get("chart-hourly")?.getOption()?.series?.length },
  { name: "detail", q: `date=${LATEST}&tab=detail`, ready: () => window.cranwhales.charts.get("chart-detail")?.getOption()?.series?.[0]?.data?.length },
  {
    name: "packages",
    q: `date=${LATEST}&tab=packages&package=ggplot2%2CRcpp%2Cmemoise&whales=6&bin=week`,
    ready: () => document.body.dataset.packages === "ready" && document.body.dataset.top === "ready",
  },
  {
    // One package: releases on its chart, who downloads it (by version, over weeks) and where its
    // count comes from; small downloads asked for too (a breakdown that cannot leave them out
    // says so and is drawn without whales).
    name: "package",
    q: `date=${LATEST}&tab=packages&package=ggplot2&whales=6&without=whales%2Csmall`,
    ready: () => document.body.dataset.packages === "ready" && document.body.dataset.top === "ready" && document.body.dataset.who === "ready",
  },
  {
    name: "package-country",
    q: `date=${LATEST}&tab=packages&package=Rcpp&whales=6&bin=month&log=true&by=country`,
    ready: () => document.body.dataset.packages === "ready" && document.body.dataset.top === "ready" && document.body.dataset.who === "ready",
  },
  { name: "trends", q: `date=${LATEST}&tab=trends`, ready: () => window.cranwhales.charts.get("chart-trends-traffic")?.getOption()?.series?.length },
];

let work, server, base, browser;

before(async () => {
  work = mkdtempSync(join(tmpdir(), "cranwhales-look-e2e-"));
  const s = await startServer(work, ["--sample-dir", join(root, "data/sample"), "--source-url", "http://127.0.0.1:9"]);
  server = s.child;
  base = s.url;
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--no-first-run"],
  });
});

after(() => stop(browser, server, work));

/** A fresh page of `size` whose `requests` lists every API and badge URL it asks for. */
async function open(size) {
  const page = await browser.newPage({ viewport: { width: size.width, height: size.height } });
  page.errors = [];
  page.requests = [];
  page.on("pageerror", (e) => page.errors.push(String(e)));
  page.on("request", (r) => {
    const u = new URL(r.url());
    if (u.pathname.startsWith("/api/") || u.pathname.startsWith("/badge/")) page.requests.push(u.pathname + u.search);
  });
  return page;
}

/** Opens `view` at `size` and waits until it is drawn (and its charts settled). */
async function show(size, view) {
  const page = await open(size);
  // The chart code arrives after the day's data, as on a slow link: the order in which a view
  // drawn twice over would ask for its data twice. (A delay on purpose, not a wait for an event.)
  await page.route(/\/assets\/echarts-[^/]*\.js$/, async (route) => {
    await new Promise((ok) => setTimeout(ok, 800));
    await route.continue();
  });
  await page.goto(`${base}/?${view.q}`);
  await page.waitForFunction(view.ready, null, { timeout: 20_000 });
  // ECharts animates for 300 ms; measured text boxes are those of the settled chart.
  await page.waitForFunction(() => [...window.cranwhales.charts.values()].every((c) => !c.getZr || !c.getZr().animation.isFinished || c.getZr().animation.isFinished()));
  await page.waitForTimeout(400); // the chart's 300 ms entry animation: no event says it ended
  return page;
}

/** URLs asked for more than once. */
const twice = (urls) => [...new Set(urls.filter((u, i) => urls.indexOf(u) !== i))];

/** Elements drawn outside the viewport's width that no scroll box (or hidden sidebar) holds. */
function overflowing() {
  const w = document.documentElement.clientWidth;
  const out = [];
  const clipped = (el) => {
    for (let p = el.parentElement; p && p !== document.body; p = p.parentElement) {
      const o = getComputedStyle(p).overflowX;
      if (o === "auto" || o === "scroll" || o === "hidden") return true;
    }
    return false;
  };
  const sidebar = document.querySelector("#sidebar");
  const sideOpen = sidebar.getBoundingClientRect().right > 0;
  for (const el of document.querySelectorAll("body *")) {
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.height === 0 || getComputedStyle(el).visibility === "hidden") continue;
    if (!sideOpen && sidebar.contains(el)) continue;
    if ((r.right > w + 1 || r.left < -1) && !clipped(el)) out.push(`${el.tagName.toLowerCase()}${el.id ? `#${el.id}` : ""}.${el.className} [${Math.round(r.left)}, ${Math.round(r.right)}]`);
  }
  if (document.documentElement.scrollWidth > w + 1) out.push(`page scrolls sideways: ${document.documentElement.scrollWidth} > ${w}`);
  return out;
}

/** Shown tables (in their scroll boxes) that need a sideways scroll to read: on a desk every
 * column fits its box, so none is cut off at the right edge until scrolled. */
function tablesCut() {
  const out = [];
  for (const wrap of document.querySelectorAll(".table-wrap")) {
    const r = wrap.getBoundingClientRect();
    if (r.width === 0 || r.height === 0 || wrap.closest("[hidden]")) continue;
    if (wrap.scrollWidth > wrap.clientWidth + 1) out.push(`${wrap.getAttribute("aria-label") ?? wrap.id}: ${wrap.scrollWidth} px in ${wrap.clientWidth}`);
  }
  return out;
}

/** Pairs of texts drawn over each other in the charts shown: each text's box, turned as it is
 * drawn (rotated axis labels), tested against the others by separating axes, 1 px of slack. The
 * ECharts charts (canvas) are measured from their own text elements, after hidden-overlap labels
 * are dropped; the first view's SVG bars from the laid-out SVG. */
function overprints() {
  const out = [];
  // Four corners of the box (x, y, w, h) under the 2×3 matrix m (null: none), shrunk by 1 px.
  const corners = (b, m) => {
    const pts = [[b.x + 1, b.y + 1], [b.x + b.width - 1, b.y + 1], [b.x + b.width - 1, b.y + b.height - 1], [b.x + 1, b.y + b.height - 1]];
    return m ? pts.map(([x, y]) => [m[0] * x + m[2] * y + m[4], m[1] * x + m[3] * y + m[5]]) : pts;
  };
  const apart = (p, q) => {
    for (const poly of [p, q]) {
      for (let i = 0; i < 4; i++) {
        const [x1, y1] = poly[i];
        const [x2, y2] = poly[(i + 1) % 4];
        const [nx, ny] = [y1 - y2, x2 - x1];
        const proj = (ps) => ps.map(([x, y]) => x * nx + y * ny);
        const [a, b] = [proj(p), proj(q)];
        if (Math.max(...a) <= Math.min(...b) || Math.max(...b) <= Math.min(...a)) return true;
      }
    }
    return false;
  };
  for (const [id, c] of window.cranwhales.charts) {
    if (document.getElementById(id).closest(".tab-body").hidden) continue;
    const boxes = [];
    if (!c.getZr) {
      for (const t of document.getElementById(id).querySelectorAll("svg text")) {
        const r = t.getBoundingClientRect();
        boxes.push({ text: t.textContent, poly: corners({ x: r.x, y: r.y, width: r.width, height: r.height }, null) });
      }
    }
    for (const el of c.getZr ? c.getZr().storage.getDisplayList(true) : []) {
      if ((el.type !== "tspan" && el.type !== "text") || el.ignore || el.invisible || !el.style?.text || el.style.opacity === 0) continue;
      let hidden = false;
      for (let p = el.parent; p; p = p.parent) hidden ||= p.ignore || p.invisible;
      if (hidden) continue;
      const b = el.getBoundingRect();
      if (b.width > 0 && b.height > 0) boxes.push({ text: String(el.style.text), poly: corners(b, el.transform) });
    }
    for (let i = 0; i < boxes.length; i++) {
      for (let j = i + 1; j < boxes.length; j++) {
        if (!apart(boxes[i].poly, boxes[j].poly)) out.push(`${id}: "${boxes[i].text}" over "${boxes[j].text}"`);
      }
    }
  }
  return out;
}

/** axe-core's serious and critical violations on the page. */
async function axe(page) {
  await page.addScriptTag({ path: AXE });
  const found = await page.evaluate(async () => {
    const r = await window.axe.run(document, { resultTypes: ["violations"] });
    return r.violations
      .filter((v) => v.impact === "serious" || v.impact === "critical")
      .map((v) => `${v.id} (${v.impact}): ${v.nodes.slice(0, 3).map((n) => n.target.join(" ")).join(", ")}`);
  });
  return found;
}

/** The month grid's rows: the top of each cell, 7 cells a row; and the smallest day target. */
function calendarGeometry() {
  const cells = [...document.querySelectorAll("#calendar .cal-grid > *")];
  const rows = [];
  for (let i = 0; i < cells.length; i += 7) rows.push(cells.slice(i, i + 7).map((c) => Math.round(c.getBoundingClientRect().top)));
  const days = [...document.querySelectorAll("#calendar .cal-grid a[data-date]")].map((a) => a.getBoundingClientRect());
  return {
    rows,
    stored: document.querySelectorAll("#calendar .cal-grid a.cal-stored").length,
    current: document.querySelector("#calendar .cal-grid a.current")?.dataset.date ?? null,
    minW: Math.min(...days.map((r) => r.width)),
    minH: Math.min(...days.map((r) => r.height)),
  };
}

for (const size of SIZES) {
  for (const view of VIEWS) {
    test(`${view.name} at ${size.width} px: no overflow, no overprint, no serious axe finding, one request per URL`, async () => {
      const page = await show(size, view);
      try {
        assert.deepEqual(twice(page.requests), [], `asked twice: ${page.requests.join(" ")}`);
        if (size.width < 700) assert.deepEqual(await page.evaluate(overflowing), [], "wider than the screen");
        else assert.deepEqual(await page.evaluate(tablesCut), [], "a table cut off at its box's right edge");
        assert.deepEqual(await page.evaluate(overprints), [], "chart texts drawn over each other");
        assert.deepEqual(await axe(page), [], "axe-core");
        await screenshot(page, `look-${view.name}-${size.width}`);
        assert.deepEqual(page.errors, []);
      } finally {
        await page.close();
      }
    });
  }
}

test("calendar: weeks stay aligned in a month with stored days, targets ≥ 24 px, opens at the year shown", async () => {
  const cal = await getJson(base, "/api/calendar");
  const page = await open(SIZES[0]);
  try {
    const months = [...new Set(cal.days.map((d) => d.date.slice(0, 7)))];
    // A month with stored days and the shown (selected) day in it; then one without.
    const day = cal.days.find((d) => d.date.startsWith(months[0])).date;
    await page.goto(`${base}/?date=${day}&tab=traffic`);
    await page.waitForFunction(() => document.body.dataset.view === "ready");
    const g = await page.evaluate(calendarGeometry);
    g.rows.forEach((tops, i) => assert.equal(new Set(tops).size, 1, `week row ${i} tops ${tops}`));
    assert.ok(g.minW >= 24 && g.minH >= 24, `day targets ${g.minW} × ${g.minH}`);
    assert.ok(g.stored > 0, "the month has stored days");
    assert.equal(g.current, day);
    // The year list opens with the shown year in view (at its top, or the list scrolled to its
    // end), and that year says how many of its days are stored.
    const shown = await page.evaluate((year) => {
      const list = document.querySelector("#calendar .cal-years").getBoundingClientRect();
      const row = document.querySelector(`#calendar .cal-year[data-year="${year}"]`);
      const r = row.getBoundingClientRect();
      return { inView: r.top >= list.top - 1 && r.bottom <= list.bottom + 1, stored: row.querySelector(".cal-year-head span:last-child").textContent };
    }, day.slice(0, 4));
    assert.ok(shown.inView, `${day.slice(0, 4)} in view`);
    assert.match(shown.stored, /^\d+ stored$/);
    const monthTargets = await page.$$eval("#calendar button.cal-mon", (bs) => bs.map((b) => b.getBoundingClientRect()).map((r) => Math.min(r.width, r.height)));
    assert.ok(Math.min(...monthTargets) >= 24, `month targets ${Math.min(...monthTargets)} px`);
    // A month without stored days: the grid stays aligned too.
    await page.click('#calendar [data-step="1"]');
    const g2 = await page.evaluate(calendarGeometry);
    g2.rows.forEach((tops, i) => assert.equal(new Set(tops).size, 1, `next month, week row ${i} tops ${tops}`));
    // Keyboard: focus the shown day, Right arrow, Enter opens the next day.
    await page.click('#calendar [data-step="-1"]');
    await page.focus(`#calendar .cal-grid a[data-date="${day}"]`);
    await page.keyboard.press("ArrowRight");
    const next = new Date(Date.parse(`${day}T00:00:00Z`) + 86_400_000).toISOString().slice(0, 10);
    assert.equal(await page.evaluate(() => document.activeElement.dataset.date), next);
    await page.keyboard.press("ArrowUp");
    const back7 = new Date(Date.parse(`${next}T00:00:00Z`) - 7 * 86_400_000).toISOString().slice(0, 10);
    assert.equal(await page.evaluate(() => document.activeElement.dataset.date), back7);
    await page.keyboard.press("ArrowDown");
    await page.keyboard.press("Enter");
    await page.waitForFunction((d) => window.cranwhales.state.date === d, next);
    await page.locator("#calendar").screenshot({ path: join(root, "artifacts/cranwhales/look-calendar-1400.png") });
    assert.deepEqual(page.errors, []);
  } finally {
    await page.close();
  }
});

test("calendar: a day three years back in at most 3 clicks, weeks aligned on a phone with the sidebar open", async () => {
  const cal = await getJson(base, "/api/calendar");
  const oldest = cal.days[0].date;
  const page = await open(SIZES[1]);
  try {
    await page.goto(`${base}/?date=${cal.days[cal.days.length - 1].date}&tab=traffic`);
    await page.waitForFunction(() => document.body.dataset.view === "ready");
    assert.ok(!(await page.isVisible("#calendar .cal-years")) || (await page.evaluate(() => document.querySelector("#sidebar").getBoundingClientRect().right <= 0)), "sidebar hidden on a phone");
    let clicks = 0;
    await page.click("#menu");
    clicks++;
    await page.waitForFunction(() => document.querySelector("#sidebar").getBoundingClientRect().left >= 0);
    assert.equal(await page.getAttribute("#menu", "aria-expanded"), "true");
    assert.deepEqual(await page.evaluate(overflowing), [], "open sidebar: wider than the screen");
    await page.locator(`#calendar button[data-month="${oldest.slice(0, 7)}"]`).scrollIntoViewIfNeeded();
    await page.click(`#calendar button[data-month="${oldest.slice(0, 7)}"]`);
    clicks++;
    const g = await page.evaluate(calendarGeometry);
    g.rows.forEach((tops, i) => assert.equal(new Set(tops).size, 1, `week row ${i} tops ${tops}`));
    assert.ok(g.minW >= 24 && g.minH >= 24, `day targets ${g.minW} × ${g.minH}`);
    await screenshot(page, "look-calendar-390");
    await page.click(`#calendar .cal-grid a[data-date="${oldest}"]`);
    clicks++;
    await page.waitForFunction((d) => document.body.dataset.view === "ready" && document.querySelector("#subtitle").textContent.startsWith(d), oldest);
    assert.ok(clicks <= 3);
    await page.waitForFunction(() => document.querySelector("#sidebar").getBoundingClientRect().right <= 0);
    assert.ok(Number(cal.days[cal.days.length - 1].date.slice(0, 4)) - Number(oldest.slice(0, 4)) >= 2, "the oldest stored day is years back");
    // The day is shown and the sidebar stepped aside.
    assert.equal(await page.getAttribute("#menu", "aria-expanded"), "false");
    assert.deepEqual(await page.evaluate(overflowing), []);
    assert.deepEqual(page.errors, []);
  } finally {
    await page.close();
  }
});

/** The sidebar's year list as it opened: its inner edges, the first row it shows (how far the
 * list's top edge cuts into it) and the rects of the shown year's row and month button. */
function yearList() {
  const list = document.querySelector("#calendar .cal-years");
  const box = list.getBoundingClientRect();
  const top = box.top + list.clientTop;
  const bottom = top + list.clientHeight;
  const rows = [...list.querySelectorAll(".cal-year")].map((r) => ({ year: r.dataset.year, rect: r.getBoundingClientRect().toJSON() }));
  const first = rows.find((r) => r.rect.bottom > top + 0.5);
  const current = list.querySelector(".cal-mon.current");
  return {
    top,
    bottom,
    scrollTop: list.scrollTop,
    scrolls: list.scrollHeight > list.clientHeight,
    atEnd: list.scrollTop >= list.scrollHeight - list.clientHeight - 0.5,
    first: first.year,
    cut: top - first.rect.top,
    rowTops: rows.map((r) => r.rect.top - top + list.scrollTop),
    year: current?.closest(".cal-year").dataset.year,
    row: current?.closest(".cal-year").getBoundingClientRect().toJSON(),
    month: current?.getBoundingClientRect().toJSON(),
  };
}

test("calendar: the year list opens on a whole row, the shown year and month inside it", async () => {
  const cal = await getJson(base, "/api/calendar");
  const stored = cal.days.map((d) => d.date);
  // The newest stored day (the page's default), a middle one and the oldest (the list's last
  // rows: scrolled to its end), on a desk, a shorter desk and a phone (the sidebar opened).
  const cases = [null, stored[Math.floor(stored.length / 2)], stored[0]];
  for (const size of [...SIZES, { name: "desk-900", width: 1400, height: 900 }]) {
    for (const day of cases) {
      const page = await open(size);
      try {
        await page.goto(`${base}/${day ? `?date=${day}&tab=traffic` : ""}`);
        await page.waitForFunction(() => document.body.dataset.view === "ready");
        if (size.width < 700) {
          await page.click("#menu");
          await page.waitForFunction(() => document.querySelector("#sidebar").getBoundingClientRect().left >= 0);
        }
        const g = await page.evaluate(yearList);
        const what = `${size.width}×${size.height}, ${day ?? "newest"}: ${JSON.stringify(g)}`;
        const year = (day ?? stored[stored.length - 1]).slice(0, 4);
        assert.ok(g.scrolls, `the list scrolls: ${what}`);
        assert.equal(g.year, year, `the shown month is marked: ${what}`);
        // No row half cut by the list's top edge: it is scrolled to a row's top.
        assert.ok(g.cut <= 0.5, `first row ${g.first} cut by ${g.cut} px: ${what}`);
        assert.ok(g.rowTops.some((t) => Math.abs(t - g.scrollTop) <= 0.5), `scrollTop ${g.scrollTop} on no row's top: ${what}`);
        // The shown year's row and its month button are whole inside the list.
        for (const [name, r] of [["year row", g.row], ["month", g.month]]) {
          assert.ok(r.top >= g.top - 0.5 && r.bottom <= g.bottom + 0.5, `${name} [${r.top}, ${r.bottom}] outside the list [${g.top}, ${g.bottom}]: ${what}`);
        }
        // The shown year is the first row, unless the list could scroll no further.
        if (!g.atEnd) assert.equal(g.first, year, `opens at the shown year: ${what}`);
        await page.locator("#calendar").screenshot({ path: join(root, `artifacts/cranwhales/look-years-${size.width}x${size.height}-${day ?? "newest"}.png`) });
        assert.deepEqual(page.errors, []);
      } finally {
        await page.close();
      }
    }
  }
});

test("package page: who downloads it, where the count comes from and the releases equal the API's answers; by= in the URL", async () => {
  const page = await open(SIZES[0]);
  const statuses = new Map();
  page.on("response", (r) => statuses.set(new URL(r.url()).pathname + new URL(r.url()).search, r.status()));
  try {
    await page.goto(`${base}/?date=${LATEST}&tab=packages&package=ggplot2&whales=6&without=whales%2Csmall`);
    await page.waitForFunction(() => document.body.dataset.packages === "ready" && document.body.dataset.who === "ready");
    const asked = page.requests.filter((u) => u.includes("/breakdown?"));
    // The page's filters go to the breakdown as they are; a 400 (a filter it cannot take out yet)
    // is said in the note and the breakdown asked again with what it can.
    assert.match(asked[0], /by=version/);
    assert.match(asked[0], /without=whales%2Csmall/);
    const note = await page.textContent("#pkg-who-note");
    if (statuses.get(asked[0]) === 400) {
      assert.equal(asked.length, 2, asked.join(" "));
      assert.match(asked[1], /without=whales&/);
      const err = (await (await fetch(`${base}${asked[0]}`)).json()).error;
      assert.ok(note.includes("Shown without whales only"), note);
      assert.ok(note.includes(err), `${note} / ${err}`);
    } else assert.equal(asked.length, 1, asked.join(" "));
    const b = await getJson(base, asked[asked.length - 1]);
    const drawn = await page.evaluate(() => {
      const o = (id) => window.cranwhales.charts.get(id).getOption();
      const keys = o("chart-breakdown");
      const time = o("chart-versions");
      const kinds = o("chart-kinds");
      const pkg = o("chart-package");
      return {
        names: keys.yAxis[0].data,
        values: keys.series[0].data.map((d) => d.value),
        stacks: time.series.map((s) => ({ name: s.name, data: s.data.map((d) => d.value) })),
        kinds: kinds.series.map((s) => s.data[0]),
        marks: pkg.series.flatMap((s) => s.markLine?.data ?? []).map((d) => d.xAxis),
        url: location.search,
      };
    });
    // Top 8 and "other" add up to the breakdown's total; each bin's stack to the bin's total.
    const top = b.rows.slice(0, 8);
    const other = b.rows.slice(8).reduce((a, r) => a + r.downloads, 0);
    assert.deepEqual(drawn.values, [...top.map((r) => r.downloads), ...(other ? [other] : [])]);
    assert.deepEqual(drawn.names.slice(0, top.length), top.map((r) => r.key ?? "(not logged)"));
    assert.equal(drawn.values.reduce((a, v) => a + v, 0), b.total);
    assert.ok(b.bins.length > 0);
    b.bins.forEach((bin, i) => {
      const stacked = drawn.stacks.reduce((a, s) => a + s.data[i][1], 0);
      assert.equal(stacked, bin.rows.reduce((a, r) => a + r.downloads, 0), `bin ${bin.from}`);
      assert.equal(drawn.stacks[0].data[i][0], bin.from);
    });
    // The kinds: four parts adding up to raw, as /kinds answers.
    const k = await getJson(base, page.requests.find((u) => u.includes("/kinds?")));
    assert.deepEqual(drawn.kinds, [k.whale_downloads, k.small, k.repeats, k.rest]);
    assert.equal(drawn.kinds.reduce((a, v) => a + v, 0), k.raw);
    // A marker per release: a version first seen after the package's first stored day, newer than
    // every one seen before and taken up.
    const rel = await getJson(base, "/api/packages/ggplot2/releases");
    assert.deepEqual(drawn.marks.sort(), releasesByRule(rel.versions).map((v) => v.first_day).sort());
    assert.ok(drawn.marks.length > 0, "a release inside the sample days");
    // Another field: one new request, kept in the URL; Back shows versions again without asking.
    const before = page.requests.length;
    await page.selectOption("#pkg-by", "os");
    await page.waitForFunction(() => document.body.dataset.who === "ready" && new URLSearchParams(location.search).get("by") === "os");
    const added = page.requests.slice(before);
    assert.equal(added.filter((u) => u.includes("by=os")).length, statuses.get(asked[0]) === 400 ? 2 : 1, added.join(" "));
    assert.deepEqual(added.filter((u) => !u.includes("/breakdown?")), [], "only the breakdown is asked again");
    await page.goBack();
    await page.waitForFunction(() => document.body.dataset.who === "ready" && !new URLSearchParams(location.search).get("by"));
    assert.equal(await page.inputValue("#pkg-by"), "version");
    assert.deepEqual(page.errors, []);
  } finally {
    await page.close();
  }
});

test("where the count comes from: the whales' part says it is less their small and repeats, as the page's other whale count is not", async () => {
  // ggplot2 in the sample days: the note says 24 downloads came from the top 6 whales, the kinds
  // bar's whales part is 15 (their small and repeated downloads are in those parts). Both were
  // labelled "top 6 whales".
  const page = await open(SIZES[0]);
  try {
    await page.goto(`${base}/?date=${LATEST}&tab=packages&package=ggplot2&whales=6&without=`);
    await page.waitForFunction(() => document.body.dataset.packages === "ready" && document.body.dataset.who === "ready");
    const r = await getJson(base, "/api/packages/ggplot2?whales=6");
    const k = await getJson(base, "/api/packages/ggplot2/kinds?whales=6");
    assert.ok(k.whale_downloads < r.totals.whale_downloads, `${k.whale_downloads} vs ${r.totals.whale_downloads}`);
    assert.ok((await page.textContent("#pkg-note")).includes(`${r.totals.whale_downloads} (`), "the note's whale count");
    const names = await page.evaluate(() => window.cranwhales.charts.get("chart-kinds").getOption().series.map((s) => s.name));
    const pct = (n) => `${((100 * n) / k.raw).toFixed(1)}%`;
    assert.deepEqual(names, [
      `top 6 whales, less small and repeats: ${k.whale_downloads} (${pct(k.whale_downloads)})`,
      `small (< 1,000 B): ${k.small} (${pct(k.small)})`,
      `repeats (≤ 5 min): ${k.repeats} (${pct(k.repeats)})`,
      `the rest: ${k.rest.toLocaleString("en-US")} (${pct(k.rest)})`,
    ]);
    assert.deepEqual(page.errors, []);
  } finally {
    await page.close();
  }
});

/** The markers' rule, independently of the page: a version first downloaded after the package's
 * first stored day, newer (numbers part by part, a missing part lowest) than every version first
 * downloaded on an earlier day, with at least 1% of the downloads over the 7 days after (when
 * any is stored). */
function releasesByRule(versions) {
  const parts = (v) => v.split(/[.-]/).map(Number);
  const newer = (a, b) => {
    const [x, y] = [parts(a), parts(b)];
    for (let i = 0; i < Math.max(x.length, y.length); i++) if ((x[i] ?? -1) !== (y[i] ?? -1)) return (x[i] ?? -1) > (y[i] ?? -1);
    return false;
  };
  return versions.filter(
    (v) =>
      v.after &&
      v.version &&
      (v.shares.find((s) => s.days === 7).share ?? 1) >= 0.01 &&
      versions.every((o) => o.first_day >= v.first_day || !o.version || newer(v.version, o.version)),
  );
}

test("release markers: only versions newer than every one before, each day labelled by its most downloaded", async () => {
  // ggplot2 in the sample days: 0.9.1 (5 downloads) and 0.9.3.1 (1,654) first seen on 2013-12-04,
  // 0.8.8 and 0.9.2 (1 each) and 1.0.0 (2,683) on 2015-01-08. The labels said 0.9.1 and 0.8.8,
  // and old versions fetched for the first time (0.9.1, 0.8.8, 0.9.2) drew release lines too.
  const page = await open(SIZES[0]);
  try {
    await page.goto(`${base}/?date=${LATEST}&tab=packages&package=ggplot2&whales=6`);
    await page.waitForFunction(() => document.body.dataset.packages === "ready" && window.cranwhales.charts.get("chart-package")?.getOption()?.series?.some((s) => s.markLine?.data?.length));
    const marks = await page.evaluate(() =>
      window.cranwhales.charts
        .get("chart-package")
        .getOption()
        .series.flatMap((s) => s.markLine?.data ?? [])
        .map((d) => ({ day: d.xAxis, show: d.label.show, text: d.label.formatter })),
    );
    const rel = await getJson(base, "/api/packages/ggplot2/releases");
    const releases = releasesByRule(rel.versions);
    const days = [...new Set(releases.map((v) => v.first_day))];
    const want = days.map((day) => {
      const vs = releases.filter((v) => v.first_day === day).sort((a, b) => b.downloads - a.downloads);
      return `${day} ${vs[0].version}${vs.length > 1 ? ` +${vs.length - 1}` : ""}`;
    });
    assert.deepEqual(marks.map((m) => m.day).sort(), releases.map((v) => v.first_day).sort());
    assert.deepEqual(marks.filter((m) => m.show).map((m) => `${m.day} ${m.text}`).sort(), want.sort());
    assert.deepEqual(want.sort(), ["2013-12-04 0.9.3.1", "2015-01-08 1.0.0"]);
    // The old versions first seen those days are in /releases with an `after`, but not marked.
    assert.deepEqual(rel.versions.filter((v) => v.after && !releases.includes(v)).map((v) => v.version).sort(), ["0.8.8", "0.9.1", "0.9.2"]);
    assert.deepEqual(page.errors, []);
  } finally {
    await page.close();
  }
});

test("top and trending lists get the page's filters and say so", async () => {
  const page = await open(SIZES[0]);
  try {
    await page.goto(`${base}/?date=${LATEST}&tab=packages&without=small%2Crepeats`);
    await page.waitForFunction(() => document.body.dataset.top === "ready");
    const top = page.requests.filter((u) => u.startsWith("/api/top?"));
    assert.match(top[0], /without=small%2Crepeats/);
    const answer = await fetch(`${base}${top[0]}`);
    const body = await answer.json();
    assert.equal(answer.status, 200);
    assert.deepEqual(body.without, ["small", "repeats"]);
    assert.match(await page.textContent("#top-filter-note"), /^Counted without small, repeats\./);
    assert.deepEqual(page.errors, []);
  } finally {
    await page.close();
  }
});
