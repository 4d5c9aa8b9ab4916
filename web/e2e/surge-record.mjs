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
    await page.waitForLoadState("networkidle");
    const before = await page.content();
    const control = page.locator("select, input[type=range], input[type=number], input[type=date]").first();
    if ((await control.count()) > 0) {
      const tag = await control.evaluate((el) => el.tagName.toLowerCase());
      if (tag === "select") {
        const values = await control.locator("option").evaluateAll((os) => os.map((o) => o.value));
        await control.selectOption(values[values.length > 1 ? 1 : 0]);
      } else {
        await control.focus();
        await page.keyboard.press("ArrowDown");
        await control.dispatchEvent("change");
      }
      await page.waitForLoadState("networkidle");
    }
    await page.waitForTimeout(500);
    console.log(`page changed after interaction: ${before !== (await page.content())}`);
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
