// Browser suite for `surge capacity --dashboard`: a real capacity search against a small HTTP app
// (node's http, 20 ms per answer) with the dashboard on loopback, opened in headless Chromium
// while the search steps up (1, 2, 4 users, 3 s each). Checks: the live strip names the step and
// its load; two successive live states are different steps of the search (the later one a higher
// step and load, its charts drawn again); no console errors; when the search ends the page links
// to the final report, which carries the capacity view of every step. Screenshots go to
// artifacts/surge-capacity-dashboard/.
//
// Usage: node web/e2e/surge-capacity-dashboard.mjs   (from the repo root; needs target/debug/surge)
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { appAndRecording, followReportLink, freePort, launchChromium, openDashboard, startSurge, suite } from "./dashboard-support.mjs";

const { artifacts, work, check, finish } = suite("surge-capacity-dashboard");
const { app, appUrl, rec } = await appAndRecording(work, 20);
const out = join(work, "cap");
const dashPort = await freePort();
const dash = `http://127.0.0.1:${dashPort}/`;
// Steps of 1, 2 and 4 users, each ending at --step-max 3s (far fewer than 10,000 sessions fit), so
// the search takes about 10 s and every step is on the page for a few refreshes.
const { child, io, exited } = startSurge(
  ["capacity", rec, appUrl, "--slo", "page_load:p95<5s", "--start", "1", "--max-load", "4",
    "--step-sessions", "10000", "--step-max", "3s", "--think-time", "none",
    "--output-dir", out, "--dashboard", `127.0.0.1:${dashPort}`, "--dashboard-linger", "15s"],
);

const browser = await launchChromium();
try {
  const { page, errors } = await openDashboard(browser, io, dash, check);
  // The strip's title: "surge capacity, step N: L users".
  const state = () =>
    page.evaluate(() => {
      const title = document.querySelector("#live-strip b")?.textContent ?? "";
      const m = /step (\d+): ([\d.]+) users/.exec(title);
      return {
        title,
        step: m ? Number(m[1]) : -1,
        load: m ? Number(m[2]) : -1,
        models: Number(document.documentElement.dataset.liveModels),
        charts: document.querySelectorAll("#charts-concurrency canvas, #charts-gantt canvas").length,
      };
    });
  const a = await state();
  check(a.step >= 1 && a.load >= 1, `the strip names the step and its load (${a.title})`);
  await page.screenshot({ path: join(artifacts, "step-first.png") });
  // A later state of the search: a higher step, with a model of its own run directory.
  await page.waitForFunction(
    (s) => {
      const t = document.querySelector("#live-strip b")?.textContent ?? "";
      const m = /step (\d+):/.exec(t);
      return m !== null && Number(m[1]) > s && document.documentElement.dataset.ready === "1";
    },
    a.step,
    { timeout: 20_000 },
  );
  await page.waitForFunction((n) => Number(document.documentElement.dataset.liveModels) > n, a.models, { timeout: 10_000 });
  const b = await state();
  check(b.step > a.step && b.load > a.load, `two successive states are steps of the search (${a.title} → ${b.title})`);
  check(a.charts > 0 && b.charts > 0, `charts drawn in both states (${a.charts}, ${b.charts} canvases)`);
  await page.screenshot({ path: join(artifacts, "step-later.png") });

  if (await followReportLink(page, check, "the ended search links to the final report", 60_000)) {
    const capacityCharts = await page.evaluate(() => document.querySelectorAll("#charts-capacity canvas").length);
    const cap = JSON.parse(readFileSync(join(out, "capacity.json"), "utf8"));
    check(page.url() === `${dash}report.html` && capacityCharts > 0, `final report at /report.html draws the capacity view (${capacityCharts} canvases)`);
    check(cap.steps.length === 3 && cap.holds === 4, `capacity.json: steps ${cap.steps.map((s) => s.load).join(", ")}, holds ${cap.holds}`);
  }
  check(errors.length === 0, `no console errors ${errors.join(" | ")}`);
  await page.close();
  const code = await exited;
  check(code === 0 && io.stdout.startsWith("holds at least 4 concurrent users"), `surge capacity exit status 0 (${code}): ${io.stdout.trim()}`);
} finally {
  await browser.close();
  child.kill();
  app.close();
}
finish();
