// Browser suite for `surge replay --dashboard`: a real replay against a small HTTP app (node's
// http, 30 ms per answer) with the dashboard on loopback, opened in headless Chromium while the
// run goes. Checks: the page shows the report's charts; two successive live states differ (more
// sessions in the summary table, charts redrawn, every chart drawn again); no console errors; when
// the run ends the page links to the final report, which holds every session CSV of the run
// directory. Screenshots go to artifacts/surge-dashboard/.
//
// Usage: node web/e2e/surge-dashboard.mjs   (from the repo root; needs target/debug/surge built)
import { spawn } from "node:child_process";
import { createServer } from "node:http";
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const surge = process.env.SURGE_BIN || join(root, "target/debug/surge");
const artifacts = join(root, "artifacts/surge-dashboard");
mkdirSync(artifacts, { recursive: true });
const work = mkdtempSync(join(tmpdir(), "surge-dashboard-e2e-"));

let failures = 0;
function check(ok, what) {
  console.log(`${ok ? "ok  " : "FAIL"} ${what}`);
  if (!ok) failures += 1;
}

/** A port nobody listens on now. */
async function freePort() {
  const s = createServer();
  await new Promise((r) => s.listen(0, "127.0.0.1", r));
  const { port } = s.address();
  await new Promise((r) => s.close(r));
  return port;
}

const app = createServer((req, res) => setTimeout(() => res.end("ok"), 30));
await new Promise((r) => app.listen(0, "127.0.0.1", r));
const appUrl = `http://127.0.0.1:${app.address().port}/`;
const rec = join(work, "recording.log");
writeFileSync(
  rec,
  '# version: 1\n# target_url: http://127.0.0.1:1\n# target_type: surge/http\n' +
    '{"type":"REQ_HOME","begin":"2026-01-01T00:00:00.000Z","end":"2026-01-01T00:00:00.050Z","status":200,"url":"/"}\n',
);
const run = join(work, "run");
const dashPort = await freePort();
const dash = `http://127.0.0.1:${dashPort}/`;
// 3 users looping over a 30 ms session for 12 s: sessions end steadily, so successive states differ.
const child = spawn(
  surge,
  ["replay", rec, appUrl, "--users", "3", "--start-interval", "0s", "--loaded-duration", "12s",
    "--output-dir", run, "--dashboard", `127.0.0.1:${dashPort}`, "--dashboard-linger", "15s"],
  { stdio: ["ignore", "ignore", "pipe"] },
);
let stderr = "";
child.stderr.on("data", (d) => (stderr += d));
const exited = new Promise((r) => child.on("exit", (code) => r(code)));

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--no-first-run"],
});
try {
  for (let i = 0; i < 100 && !stderr.includes("dashboard at"); i++) await new Promise((r) => setTimeout(r, 100));
  check(stderr.includes(`dashboard at ${dash}`), `surge says where the dashboard is (${stderr.trim().split("\n")[0]})`);
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const errors = [];
  page.on("console", (m) => m.type() === "error" && errors.push(m.text()));
  page.on("pageerror", (e) => errors.push(String(e)));
  await page.goto(dash);
  // The first model (the page reloads itself into the report once a session has ended).
  await page.waitForFunction(() => Number(document.documentElement.dataset.liveModels || 0) >= 1 && document.documentElement.dataset.ready === "1", null, { timeout: 30_000 });
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

  await page.waitForFunction(() => document.documentElement.dataset.liveEnded === "1", null, { timeout: 30_000 });
  const link = await page.$("#live-report");
  check(link !== null, "the ended run links to the final report");
  if (link) {
    await Promise.all([page.waitForLoadState("load"), link.click()]);
    await page.waitForFunction(() => document.documentElement.dataset.ready === "1", null, { timeout: 30_000 });
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
  rmSync(work, { recursive: true, force: true });
}
if (failures > 0) {
  console.error(`surge-dashboard e2e: ${failures} check(s) failed`);
  process.exit(1);
}
console.log("surge-dashboard e2e: all checks passed");
