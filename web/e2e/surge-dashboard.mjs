// Browser suite for `surge replay --dashboard`: a real replay against a small HTTP app (node's
// http, 30 ms per answer) with the dashboard on loopback, opened in headless Chromium while the
// run goes. Checks: the page shows the report's charts; two successive live states differ (more
// sessions in the summary table, charts redrawn, every chart drawn again); no console errors; when
// the run ends the page links to the final report, which holds every session CSV of the run
// directory. Screenshots go to artifacts/surge-dashboard/.
//
// Usage: node web/e2e/surge-dashboard.mjs   (from the repo root; needs target/debug/surge built)
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { appAndRecording, followReportLink, freePort, launchChromium, openDashboard, startSurge, suite } from "./dashboard-support.mjs";

const { artifacts, work, check, finish } = suite("surge-dashboard");
const { app, appUrl, rec } = await appAndRecording(work, 30);
const run = join(work, "run");
const dashPort = await freePort();
const dash = `http://127.0.0.1:${dashPort}/`;
// 3 users looping over a 30 ms session for 12 s: sessions end steadily, so successive states differ.
const { child, io, exited } = startSurge(
  ["replay", rec, appUrl, "--users", "3", "--start-interval", "0s", "--loaded-duration", "12s",
    "--output-dir", run, "--dashboard", `127.0.0.1:${dashPort}`, "--dashboard-linger", "15s"],
);

const browser = await launchChromium();
try {
  // The first model (the page reloads itself into the report once a session has ended).
  const { page, errors } = await openDashboard(browser, io, dash, check);
  const state = () =>
    page.evaluate(() => ({
      models: Number(document.documentElement.dataset.liveModels),
      sessions: Number(document.querySelector('#summary-table td[data-run="0"][data-k="sessions"]')?.dataset.v ?? -1),
      charts: document.querySelectorAll("#charts-concurrency canvas, #charts-gantt canvas").length,
      strip: document.getElementById("live-strip")?.textContent ?? "",
    }));
  const a = await state();
  await page.screenshot({ path: join(artifacts, "live-first.png") });
  await page.waitForFunction((n) => Number(document.documentElement.dataset.liveModels) > n && document.documentElement.dataset.ready === "1", a.models, { timeout: 10_000 });
  const b = await state();
  check(a.sessions > 0 && b.sessions > a.sessions, `summary table grew between two live states (${a.sessions} → ${b.sessions} sessions)`);
  check(a.charts > 0 && b.charts === a.charts, `charts drawn in both states (${a.charts}, ${b.charts} canvases)`);
  check(/live · \d+ s · users 3/.test(b.strip), `live strip shows the run (${b.strip})`);
  await page.screenshot({ path: join(artifacts, "live-second.png"), fullPage: false });

  if (await followReportLink(page, check, "the ended run links to the final report", 30_000)) {
    const n = await page.evaluate(() => Number(document.querySelector('#summary-table td[data-run="0"][data-k="sessions"]').dataset.v));
    const csvs = readdirSync(join(run, "sessions")).filter((f) => f.endsWith(".csv")).length;
    check(page.url() === `${dash}report.html` && n === csvs, `final report at /report.html counts every session CSV (${n} = ${csvs})`);
  }
  check(errors.length === 0, `no console errors ${errors.join(" | ")}`);
  await page.close();
  const code = await exited;
  check(code === 0, `surge replay exit status 0 (${code})`);
} finally {
  await browser.close();
  child.kill();
  app.close();
}
finish();
