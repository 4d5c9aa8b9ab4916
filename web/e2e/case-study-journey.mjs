// The case study's user journey (bench/case-study.sh), driven in headless Chromium so `surge record`
// captures it: open the app on the day, All traffic, Biggest whales, Whales by hour, Detail view with the
// top whale selected, a pause between steps. The same steps for both UIs: the original R Shiny app
// (rstudio/cranwhales, any branch) and the cranwhales web UI. Each step waits until its chart is drawn.
//
// Usage: node web/e2e/case-study-journey.mjs <shiny|cranwhales> <url> [pause-ms] [screenshot-dir]
import { chromium } from "playwright-core";

const [mode, url, pauseArg, shots] = process.argv.slice(2);
if (!["shiny", "cranwhales"].includes(mode) || !url) {
  console.error("usage: case-study-journey.mjs <shiny|cranwhales> <url> [pause-ms] [screenshot-dir]");
  process.exit(2);
}
const pause = Number(pauseArg ?? 5000);

// Shiny draws a plot as an <img> inside the output's div; it is current once the div has no
// "recalculating" class. cranwhales draws into an ECharts canvas; its series hold the data.
const shiny = {
  tab: (label) => `a[data-toggle="tab"][data-value="${label}"]`,
  drawn: (id) => {
    const el = document.getElementById(id);
    const img = el?.querySelector("img");
    return !!img && img.complete && img.naturalWidth > 0 && !el.classList.contains("recalculating");
  },
};
const ours = {
  tab: (label) => `.tabs button:text-is("${label}")`,
  drawn: (id) => (window.cranwhales?.charts.get(id)?.getOption()?.series?.[0]?.data?.length ?? 0) > 0,
};

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--no-first-run"],
});
const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
page.setDefaultTimeout(120000); // the R app parses a 270k-row day before its first plot
const errors = [];
page.on("pageerror", (e) => errors.push(String(e)));
let step = 0;
const shot = async (name) => {
  if (shots) await page.screenshot({ path: `${shots}/${mode}-${++step}-${name}.png` });
};
const log = (what) => console.log(`journey ${mode}: ${what}`);
const ui = mode === "shiny" ? shiny : ours;

/** Waits for All traffic's chart `first`, then opens each [tab label, chart id] of `steps` in
 * turn after a pause, waiting until its chart is drawn. */
async function walk(first, steps) {
  await page.waitForFunction(ui.drawn, first);
  log("All traffic drawn");
  await shot("traffic");
  for (const [label, id] of steps) {
    await page.waitForTimeout(pause);
    await page.click(ui.tab(label));
    await page.waitForFunction(ui.drawn, id);
    log(`${label} drawn`);
    await shot(id);
  }
}

try {
  await page.goto(url, { waitUntil: "load" });
  if (mode === "shiny") {
    await walk("all_hour", [
      ["Biggest whales", "downloaders"],
      ["Whales by hour", "downloaders_hour"],
    ]);
    await page.waitForTimeout(pause);
    await page.click(shiny.tab("Detail view"));
    // The select is filled with the whales, biggest first; pick the first one if none is chosen.
    const select = "#details-detail_ip_name";
    await page.waitForFunction((s) => document.querySelector(s)?.options.length > 0 || document.querySelector(s)?.selectize?.options, select);
    const top = await page.evaluate((s) => {
      const el = document.querySelector(s);
      const z = el.selectize;
      const first = z ? Object.keys(z.options)[0] : el.options[0]?.value;
      if (z) z.setValue(first);
      else {
        el.value = first;
        el.dispatchEvent(new Event("change", { bubbles: true }));
      }
      return first;
    }, select);
    await page.waitForFunction(shiny.drawn, "details-detail");
    log(`Detail view drawn for ${top}`);
    await shot("detail");
  } else {
    await walk("chart-traffic", [
      ["Biggest whales", "chart-whales"],
      ["Whales by hour", "chart-hourly"],
      ["Detail view", "chart-detail"],
    ]);
    const top = await page.evaluate(() => document.querySelector("#whale").selectedOptions[0]?.textContent);
    const first = await page.evaluate(() => document.querySelector("#whale").options[0]?.textContent);
    if (top !== first) throw new Error(`detail view shows ${top}, not the top whale ${first}`);
  }
  await page.waitForTimeout(pause);
  // Reported, not fatal: Debian's Shiny ships an older bootstrap-datepicker whose plugin the date
  // input cannot find ("datepicker is not a function"); the journey does not use that input.
  for (const e of errors) log(`page error: ${e}`);
  await page.close(); // ends the Shiny session (WebSocket close), which ends a surge recording
  log("done");
} finally {
  await browser.close();
}
