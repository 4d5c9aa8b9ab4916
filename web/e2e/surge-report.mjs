// Browser suite for `surge report`: builds reports from the real shinycannon fixtures, opens each in
// headless Chromium with every request outside the file refused, and checks: no console errors, no
// request leaves the file, every chart drew, the page states the session/event counts counted here
// from the CSV files, the gantt shows the class colours. Screenshots go to artifacts/surge-report/.
//
// Usage: node web/e2e/surge-report.mjs   (from the repo root; needs target/debug/surge built)
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve, dirname } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { chromium } from "playwright-core";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const shared = resolve(process.env.CRANWHALES_TEST_DATA || resolve(root, "../shared/data"), "shinyloadtest");
const surge = process.env.SURGE_BIN || join(root, "target/debug/surge");
const artifacts = join(root, "artifacts/surge-report");
mkdirSync(artifacts, { recursive: true });
const work = mkdtempSync(join(tmpdir(), "surge-report-e2e-"));

let failures = 0;
function check(ok, what) {
  console.log(`${ok ? "ok  " : "FAIL"} ${what}`);
  if (!ok) failures += 1;
}

/** Sessions and events of a run directory, counted straight from its CSV files. */
function countRun(dir) {
  const files = readdirSync(join(dir, "sessions")).filter((f) => f.endsWith(".csv"));
  let events = 0;
  for (const f of files) {
    for (const line of readFileSync(join(dir, "sessions", f), "utf8").split("\n")) {
      const ev = line.split(",")[3] || "";
      if (ev.endsWith("_START") && ev !== "PLAYBACK_SLEEPBEFORE_START") events += 1;
    }
  }
  return { sessions: files.length, events };
}

function unzip(name) {
  execFileSync("unzip", ["-q", "-o", join(shared, "runs", `${name}.zip`), "-d", work]);
  return join(work, name);
}

const cases = [
  { id: "sliders", dirs: [unzip("sliders")], names: [] },
  { id: "run1-vs-run5", dirs: [unzip("scaling_case_study_run1"), unzip("scaling_case_study_run5")], names: ["run1", "run5"] },
  { id: "label-run", dirs: [join(shared, "label-run")], names: [] },
  // Different recordings: allowed only with --allow-mixed, and the page must say so.
  { id: "mixed", dirs: [join(work, "sliders"), unzip("widgets")], names: [], extra: ["--allow-mixed"] },
];

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--no-first-run"],
});
try {
  for (const c of cases) {
    const out = join(work, `${c.id}.html`);
    const args = ["report", ...c.dirs, "-o", out];
    for (const n of c.names) args.push("--name", n);
    args.push(...(c.extra || []));
    execFileSync(surge, args, { stdio: ["ignore", "inherit", "inherit"] });
    const url = pathToFileURL(out).href;

    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const errors = [];
    const outside = [];
    page.on("console", (m) => m.type() === "error" && errors.push(m.text()));
    page.on("pageerror", (e) => errors.push(String(e)));
    await page.route("**/*", (route) => {
      const u = route.request().url();
      if (u === url || u.startsWith("data:")) return route.continue();
      outside.push(u);
      return route.abort();
    });
    await page.goto(url);
    await page.waitForFunction(() => document.documentElement.dataset.ready === "1", null, { timeout: 60_000 });

    check(errors.length === 0, `${c.id}: no console errors ${errors.join(" | ")}`);
    check(outside.length === 0, `${c.id}: no request leaves the file ${outside.join(" ")}`);

    for (let r = 0; r < c.dirs.length; r++) {
      const want = countRun(c.dirs[r]);
      const shown = await page.evaluate((r) => {
        const cell = (k) => document.querySelector(`#summary-table td[data-run="${r}"][data-k="${k}"]`)?.dataset.v;
        const li = document.querySelector(`.overview li[data-run="${r}"]`);
        const txt = (k) => li?.querySelector(`[data-k="${k}"]`)?.textContent?.replace(/,/g, "");
        return { sessions: Number(cell("sessions")), events: Number(cell("events")), sText: Number(txt("sessions")), eText: Number(txt("events")) };
      }, r);
      check(shown.sessions === want.sessions && shown.sText === want.sessions,
        `${c.id} run ${r}: states ${shown.sessions} sessions (CSV files: ${want.sessions})`);
      check(shown.events === want.events && shown.eText === want.events,
        `${c.id} run ${r}: states ${shown.events} events (CSV START rows: ${want.events})`);
    }

    const charts = await page.$$eval(".chart", (els) => els.map((e) => e.querySelector("canvas") !== null));
    const perRun = c.dirs.length;
    // gantt, aligned, duration, waterfall, latency and concurrency per run, plus one box-plot chart.
    check(charts.length === perRun * 6 + 1 && charts.every(Boolean), `${c.id}: ${charts.length} charts drawn`);

    // Pixels: the first gantt must show Homepage, JS/CSS and Calculate colours.
    const colours = await page.evaluate(() => {
      const want = { home: [0x3b, 0x6f, 0xb6], assets: [0x8e, 0xc1, 0xea], calc: [0x4a, 0xa5, 0x64] };
      const seen = { home: 0, assets: 0, calc: 0 };
      // ECharts may draw progressive series on extra layer canvases: look at all of them.
      for (const cv of document.querySelectorAll("#charts-gantt .chart:first-of-type canvas")) {
        const d = cv.getContext("2d").getImageData(0, 0, cv.width, cv.height).data;
        for (let i = 0; i < d.length; i += 4) {
          for (const [k, [r, g, b]] of Object.entries(want)) {
            if (Math.abs(d[i] - r) < 6 && Math.abs(d[i + 1] - g) < 6 && Math.abs(d[i + 2] - b) < 6) seen[k] += 1;
          }
        }
      }
      return seen;
    });
    check(colours.home > 0 && colours.calc > 0 && (colours.assets > 0 || c.id === "label-run"),
      `${c.id}: gantt pixels show class colours ${JSON.stringify(colours)}`);

    const banner = await page.$eval("body", () => document.getElementById("mixed-recordings")?.textContent || "");
    check((c.id === "mixed") === banner.includes("different recordings"), `${c.id}: mixed-recordings banner ${banner ? "shown" : "absent"}`);

    if (c.dirs.length > 1) {
      const ratios = await page.$$eval("#summary-table .ratio", (els) => els.length);
      check(ratios > 0, `${c.id}: comparison table shows ratios against the first run (${ratios})`);
    }

    await page.screenshot({ path: join(artifacts, `${c.id}-full.png`), fullPage: true });
    for (const s of ["summary", "gantt", "aligned", "duration", "waterfall", "latency", "lines", "concurrency"]) {
      const el = await page.$(`#${s}`);
      await el.screenshot({ path: join(artifacts, `${c.id}-${s}.png`) });
    }

    // Interaction: hovering the first session's row (its page load starts at x = 0) shows a
    // tooltip naming the session and the event. Grid: left 56, top 18, bottom 62 (gantt.ts).
    await page.mouse.move(0, 0);
    const chartEl = await page.$("#charts-gantt .chart");
    await chartEl.scrollIntoViewIfNeeded();
    const box = await chartEl.boundingBox();
    const n = await page.evaluate(() => Number(document.querySelector('#summary-table td[data-run="0"][data-k="sessions"]').dataset.v));
    const rowY = box.y + 18 + (box.height - 18 - 62) / n / 2;
    let tip = "";
    for (let x = 57; x < 140 && !tip.includes("iteration"); x += 2) {
      await page.mouse.move(box.x + x, rowY);
      await page.waitForTimeout(40);
      tip = await page.$$eval("#charts-gantt .chart:first-of-type div", (ds) =>
        ds.filter((d) => d.offsetParent !== null && d.textContent.includes("iteration")).map((d) => d.textContent).join(" "));
    }
    check(tip.includes("iteration"), `${c.id}: hover on the gantt shows a tooltip (${tip.slice(0, 80)})`);

    // Controls: reorder the aligned gantt, pick another session, show all lines; still no errors.
    await page.selectOption("#aligned-order", "pageload");
    const sel = await page.$("#charts-waterfall select");
    const second = await sel.$eval("option:nth-child(2)", (o) => o.value).catch(() => null);
    if (second !== null) await sel.selectOption(second);
    const more = await page.$("#charts-lines button");
    if (more) await more.click();
    await page.waitForTimeout(300);
    if (c.id === "sliders") await (await page.$("#aligned")).screenshot({ path: join(artifacts, `${c.id}-aligned-by-pageload.png`) });
    check(errors.length === 0, `${c.id}: controls work without console errors ${errors.join(" | ")}`);
    await page.close();
  }
} finally {
  await browser.close();
  rmSync(work, { recursive: true, force: true });
}
if (failures > 0) {
  console.error(`surge-report e2e: ${failures} check(s) failed`);
  process.exit(1);
}
console.log("surge-report e2e: all checks passed");
