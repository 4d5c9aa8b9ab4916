// What the two `--dashboard` browser suites (surge-dashboard.mjs for replay,
// surge-capacity-dashboard.mjs for capacity) share: a small HTTP app on loopback, a one-request
// recording against it, surge started with the dashboard, headless Chromium on the live page, and
// the step from the ended run to its final report.
import { spawn } from "node:child_process";
import { createServer } from "node:http";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

/** The repository root (this file is web/e2e/). */
export const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
/** The surge binary under test. */
export const surge = process.env.SURGE_BIN || join(root, "target/debug/surge");

/** A suite's checks: each printed ok/FAIL; `finish` exits 1 when any failed. */
export function suite(name) {
  const artifacts = join(root, `artifacts/${name}`);
  mkdirSync(artifacts, { recursive: true });
  const work = mkdtempSync(join(tmpdir(), `${name}-e2e-`));
  // Removed however the suite ends (a thrown error included).
  process.on("exit", () => rmSync(work, { recursive: true, force: true }));
  let failures = 0;
  return {
    artifacts,
    work,
    check(ok, what) {
      console.log(`${ok ? "ok  " : "FAIL"} ${what}`);
      if (!ok) failures += 1;
    },
    finish() {
      if (failures > 0) {
        console.error(`${name} e2e: ${failures} check(s) failed`);
        process.exit(1);
      }
      console.log(`${name} e2e: all checks passed`);
    },
  };
}

/** A port nobody listens on now. */
export async function freePort() {
  const s = createServer();
  await new Promise((r) => s.listen(0, "127.0.0.1", r));
  const { port } = s.address();
  await new Promise((r) => s.close(r));
  return port;
}

/** An app answering "ok" after `ms`, and a surge/http recording of one request to it. */
export async function appAndRecording(work, ms) {
  const app = createServer((req, res) => setTimeout(() => res.end("ok"), ms));
  await new Promise((r) => app.listen(0, "127.0.0.1", r));
  const rec = join(work, "recording.log");
  writeFileSync(
    rec,
    '# version: 1\n# target_url: http://127.0.0.1:1\n# target_type: surge/http\n' +
      '{"type":"REQ_HOME","begin":"2026-01-01T00:00:00.000Z","end":"2026-01-01T00:00:00.050Z","status":200,"url":"/"}\n',
  );
  return { app, appUrl: `http://127.0.0.1:${app.address().port}/`, rec };
}

/** surge with `args` (which carry `--dashboard`), its output collected, and its exit code. */
export function startSurge(args) {
  const child = spawn(surge, args, { stdio: ["ignore", "pipe", "pipe"] });
  const io = { stdout: "", stderr: "" };
  child.stdout.on("data", (d) => (io.stdout += d));
  child.stderr.on("data", (d) => (io.stderr += d));
  const exited = new Promise((r) => child.on("exit", (code) => r(code)));
  return { child, io, exited };
}

/** Headless Chromium (Debian's, or $CHROMIUM). */
export function launchChromium() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--no-first-run"],
  });
}

/**
 * Waits for surge to announce the dashboard at `dash`, opens it and waits for its first live
 * model; console errors are collected in `errors`.
 */
export async function openDashboard(browser, io, dash, check) {
  for (let i = 0; i < 100 && !io.stderr.includes("dashboard at"); i++) await new Promise((r) => setTimeout(r, 100));
  check(io.stderr.includes(`dashboard at ${dash}`), `surge says where the dashboard is (${io.stderr.trim().split("\n")[0]})`);
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const errors = [];
  page.on("console", (m) => m.type() === "error" && errors.push(m.text()));
  page.on("pageerror", (e) => errors.push(String(e)));
  await page.goto(dash);
  await page.waitForFunction(() => Number(document.documentElement.dataset.liveModels || 0) >= 1 && document.documentElement.dataset.ready === "1", null, { timeout: 30_000 });
  return { page, errors };
}

/** Once the run has ended, follows the page's link to the final report; false when there is none. */
export async function followReportLink(page, check, what, timeout) {
  await page.waitForFunction(() => document.documentElement.dataset.liveEnded === "1", null, { timeout });
  const link = await page.$("#live-report");
  check(link !== null, what);
  if (!link) return false;
  await Promise.all([page.waitForLoadState("load"), link.click()]);
  await page.waitForFunction(() => document.documentElement.dataset.ready === "1", null, { timeout: 30_000 });
  return true;
}
