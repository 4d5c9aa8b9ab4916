// Screenshot of one section of a `surge report` page in headless Chromium (bench/case-study.sh uses it
// for the README's picture of the case study's report).
//
// Usage: node web/e2e/case-study-shot.mjs <report.html> <out.png> [section-id, default aligned]
import { chromium } from "playwright-core";
import { resolve } from "node:path";

const [report, out, section = "aligned"] = process.argv.slice(2);
if (!report || !out) {
  console.error("usage: case-study-shot.mjs <report.html> <out.png> [section-id]");
  process.exit(2);
}
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu"],
});
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  await page.goto(`file://${resolve(report)}`);
  // The charts are drawn once the page's data is decoded: wait for a canvas in the section.
  await page.waitForSelector(`#${section} canvas`);
  await page.waitForTimeout(500); // the charts' entry animation
  if (errors.length) throw new Error(`report page errors: ${errors.join("; ")}`);
  await page.locator(`#${section}`).screenshot({ path: out });
} finally {
  await browser.close();
}
