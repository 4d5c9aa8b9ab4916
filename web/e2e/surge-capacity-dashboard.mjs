// Browser suite for `surge capacity --dashboard`: a real capacity search against a small HTTP app
// (node's http, 20 ms per answer) with the dashboard on loopback, opened in headless Chromium
// while the search steps up (1, 2, 4 users, 3 s each). Checks: the live strip names the step and
// its load; two successive live states are different steps of the search (the later one a higher
// step and load, its charts drawn again); no console errors; when the search ends the page links
// to the final report, which carries the capacity view of every step. Screenshots go to
// artifacts/surge-capacity-dashboard/.
//
// Usage: node web/e2e/surge-capacity-dashboard.mjs   (from the repo root; needs target/debug/surge)
import { spawn } from "node:child_process";
import { createServer } from "node:http";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const surge = process.env.SURGE_BIN || join(root, "target/debug/surge");
const artifacts = join(root, "artifacts/surge-capacity-dashboard");
mkdirSync(artifacts, { recursive: true });
const work = mkdtempSync(join(tmpdir(), "surge-capacity-dashboard-e2e-"));

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

const app = createServer((req, res) => setTimeout(() => res.end("ok"), 20));
await new Promise((r) => app.listen(0, "127.0.0.1", r));
const appUrl = `http://127.0.0.1:${app.address().port}/`;
const rec = join(work, "recording.log");
writeFileSync(
  rec,
  '# version: 1\n# target_url: http://127.0.0.1:1\n# target_type: surge/http\n' +
    '{"type":"REQ_HOME","begin":"2026-01-01T00:00:00.000Z","end":"2026-01-01T00:00:00.050Z","status":200,"url":"/"}\n',
);
const out = join(work, "cap");
const dashPort = await freePort();
const dash = `http://127.0.0.1:${dashPort}/`;
// Steps of 1, 2 and 4 users, each ending at --step-max 3s (far fewer than 10,000 sessions fit), so
// the search takes about 10 s and every step is on the page for a few refreshes.
const child = spawn(
  surge,
  ["capacity", rec, appUrl, "--slo", "page_load:p95<5s", "--start", "1", "--max-load", "4",
    "--step-sessions", "10000", "--step-max", "3s", "--think-time", "none",
    "--output-dir", out, "--dashboard", `127.0.0.1:${dashPort}`, "--dashboard-linger", "15s"],
  { stdio: ["ignore", "pipe", "pipe"] },
);
let stderr = "";
let stdout = "";
child.stderr.on("data", (d) => (stderr += d));
child.stdout.on("data", (d) => (stdout += d));
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
  await page.waitForFunction(() => Number(document.documentElement.dataset.liveModels || 0) >= 1 && document.documentElement.dataset.ready === "1", null, { timeout: 30_000 });
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

  await page.waitForFunction(() => document.documentElement.dataset.liveEnded === "1", null, { timeout: 60_000 });
  const link = await page.$("#live-report");
  check(link !== null, "the ended search links to the final report");
  if (link) {
    await Promise.all([page.waitForLoadState("load"), link.click()]);
    await page.waitForFunction(() => document.documentElement.dataset.ready === "1", null, { timeout: 30_000 });
    const capacityCharts = await page.evaluate(() => document.querySelectorAll("#charts-capacity canvas").length);
    const cap = JSON.parse(readFileSync(join(out, "capacity.json"), "utf8"));
    check(page.url() === `${dash}report.html` && capacityCharts > 0, `final report at /report.html draws the capacity view (${capacityCharts} canvases)`);
    check(cap.steps.length === 3 && cap.holds === 4, `capacity.json: steps ${cap.steps.map((s) => s.load).join(", ")}, holds ${cap.holds}`);
  }
  check(errors.length === 0, `no console errors ${errors.join(" | ")}`);
  await page.close();
  const code = await exited;
  check(code === 0 && stdout.startsWith("holds at least 4 concurrent users"), `surge capacity exit status 0 (${code}): ${stdout.trim()}`);
} finally {
  await browser.close();
  child.kill();
  app.close();
  rmSync(work, { recursive: true, force: true });
}
if (failures > 0) {
  console.error(`surge-capacity-dashboard e2e: ${failures} check(s) failed`);
  process.exit(1);
}
console.log("surge-capacity-dashboard e2e: all checks passed");
