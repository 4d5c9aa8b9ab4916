// Drives a real headless Chromium through `surge record`'s proxy so a recording captures what a person
// does: load the page, change inputs, wait for the outputs, close the tab (which ends the recording).
//
// Usage: node web/e2e/surge-record.mjs <shiny|cranwhales|page> <proxy-url> [har-file]
//   shiny      - the fixture app in crates/surge/tests/fixtures/shiny-app (numeric input + select)
//   cranwhales - the cranwhales UI: wait for the charts, change a control, wait for the refresh
//   page       - load the page and wait for the network to go idle
// With har-file, the browser also writes a HAR of the session (input for `surge import-har`).
import { chromium } from "playwright-core";

const [mode, url, har] = process.argv.slice(2);
if (!mode || !url) {
  console.error("usage: surge-record.mjs <shiny|cranwhales|page> <proxy-url> [har-file]");
  process.exit(2);
}

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--no-first-run"],
});
const context = await browser.newContext(har ? { recordHar: { path: har, content: "omit" } } : {});
const page = await context.newPage();
page.setDefaultTimeout(30000);
const errors = [];
page.on("pageerror", (e) => errors.push(String(e)));

try {
  await page.goto(url, { waitUntil: "load" });
  if (mode === "shiny") {
    await page.waitForFunction(() => document.querySelector("#result")?.textContent === "Result: 100");
    await page.waitForTimeout(400); // think time, so replays have pauses to honour
    await page.fill("#n", "7");
    await page.waitForFunction(() => document.querySelector("#result")?.textContent === "Result: 49");
    await page.waitForTimeout(400);
    await page.selectOption("#op", "cube");
    await page.waitForFunction(() => document.querySelector("#result")?.textContent === "Result: 343");
    await page.waitForTimeout(300);
  } else if (mode === "cranwhales") {
    // The cranwhales UI: wait for the first render, change "top N", then pick another stored day.
    await page.waitForLoadState("networkidle");
    await page.waitForTimeout(400);
    const before = await page.locator("main").innerText();
    await page.fill("#count", "8");
    await page.locator("#count").dispatchEvent("change");
    await page.waitForLoadState("networkidle");
    await page.waitForTimeout(400);
    const days = page.locator("#stored-days li a, #stored-days li button, #stored-days li");
    if ((await days.count()) > 1) {
      await days.nth(1).click();
      await page.waitForLoadState("networkidle");
    }
    await page.waitForTimeout(400);
    const after = await page.locator("main").innerText();
    if (before === after) throw new Error("cranwhales UI did not change after the interaction");
  } else {
    await page.waitForLoadState("networkidle");
    await page.waitForTimeout(300);
  }
  if (errors.length) throw new Error(`page errors: ${errors.join("; ")}`);
  await page.close();
  await context.close(); // writes the HAR
  console.log("surge-record: session done");
} finally {
  await browser.close();
}
