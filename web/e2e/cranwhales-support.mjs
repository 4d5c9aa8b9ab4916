// What both cranwhales browser suites (cranwhales.test.mjs, cranwhales-insight.test.mjs) share:
// paths, `cranwhales serve` on a free port, headless Chromium with a page that collects its
// errors, and the independent number formatting the checks use.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdirSync, rmSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { createInterface } from "node:readline";
import { chromium } from "playwright-core";

export const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
export const cranlogs = resolve(process.env.CRANWHALES_TEST_DATA || resolve(root, "../shared/data"), "cranlogs");
const bin = process.env.CRANWHALES_BIN || join(root, "target/debug/cranwhales");
const artifacts = join(root, "artifacts/cranwhales");
mkdirSync(artifacts, { recursive: true });

/** Starts `cranwhales serve` on a free port with its store and cache in `work` and `args`;
 * resolves to { child, url } once it prints its URL. */
export function startServer(work, args) {
  return new Promise((ok, fail) => {
    const child = spawn(
      bin,
      ["serve", "--db", join(work, "cw.db"), "--cache-dir", join(work, "cache"), ...args, "--addr", "127.0.0.1:0"],
      { stdio: ["ignore", "pipe", "inherit"] },
    );
    child.on("error", fail);
    child.on("exit", (code) => fail(new Error(`cranwhales serve exited with ${code}`)));
    createInterface({ input: child.stdout }).once("line", (line) => {
      const m = /http:\/\/[\d.:]+/.exec(line);
      m ? ok({ child, url: m[0] }) : fail(new Error(`no URL in ${line}`));
    });
  });
}

/** Headless Chromium and a 1400×900 page whose `errors` collects its page errors and console
 * errors, except those matching `expected` (statuses the suite provokes). */
export async function openPage(expected) {
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--no-first-run"],
  });
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  page.errors = [];
  page.on("pageerror", (e) => page.errors.push(String(e)));
  page.on("console", (m) => m.type() === "error" && !expected.test(m.text()) && page.errors.push(m.text()));
  return { browser, page };
}

/** Closes the browser, stops the server (its exit no longer an error) and removes `work`. */
export async function stop(browser, server, work) {
  await browser?.close();
  server?.removeAllListeners("exit");
  server?.kill();
  if (work) rmSync(work, { recursive: true, force: true });
}

/** GET `base + path`, which must answer 200; its JSON. */
export async function getJson(base, path) {
  const r = await fetch(base + path);
  assert.equal(r.status, 200, `${path}: ${r.status}`);
  return r.json();
}

/** Clicks the tab labelled `label` and waits until it is the active one. */
export async function clickTab(page, label) {
  await page.getByRole("tab", { name: label }).click();
  await page.waitForFunction((l) => document.querySelector(".tabs button.active")?.textContent === l, label);
}

/** A full-page screenshot as artifacts/cranwhales/NAME.png. */
export const screenshot = (page, name) => page.screenshot({ path: join(artifacts, `${name}.png`), fullPage: true });

/** `1234567` → `1,234,567`, independent of the UI's own formatting. */
export const int = (n) => n.toString().replace(/\B(?=(\d{3})+(?!\d))/g, ",");
