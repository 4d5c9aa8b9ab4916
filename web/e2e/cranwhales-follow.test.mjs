// Browser check of follow mode: `cranwhales serve --follow` (the debug binary, a temp store holding
// one day) against a real source on loopback that publishes the next day while the page is open.
// The page's freshness line and its calendar pick the new day up without a reload of the page or
// the server (the page asks /api/days again on focus and every minute).
//
// Usage (repo root): node --test web/e2e/cranwhales-follow.test.mjs   (needs target/debug/cranwhales)
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { cranlogs, getJson, openPage, screenshot, startServer, stop } from "./cranwhales-support.mjs";

const STORED = "2012-10-09";
const NEXT = "2012-10-10";
let work, source, server, base, browser, page;
let published = false;
const hits = new Map();

// The source: the next day is a 404 ("not published yet") until the test publishes it; every other
// day after the stored one stays unpublished.
function startSource() {
  return new Promise((ok) => {
    const srv = createServer((req, res) => {
      const date = /^\/\d{4}\/(\d{4}-\d{2}-\d{2})\.csv\.gz$/.exec(req.url ?? "")?.[1];
      if (date) hits.set(date, (hits.get(date) ?? 0) + 1);
      if (date !== NEXT || !published) return void res.writeHead(404).end("not found");
      const body = readFileSync(join(cranlogs, `${NEXT}.csv.gz`));
      res.writeHead(200, { "content-type": "application/gzip", "content-length": body.length }).end(body);
    });
    srv.listen(0, "127.0.0.1", () => ok(srv));
  });
}

before(async () => {
  work = mkdtempSync(join(tmpdir(), "cranwhales-follow-"));
  const samples = join(work, "sample");
  mkdirSync(samples);
  copyFileSync(join(cranlogs, `${STORED}.csv.gz`), join(samples, `${STORED}.csv.gz`));
  source = await startSource();
  const url = `http://127.0.0.1:${source.address().port}`;
  const s = await startServer(work, ["--sample-dir", samples, "--source-url", url, "--follow", "--follow-every", "100ms"]);
  server = s.child;
  base = s.url;
  ({ browser, page } = await openPage(/^$/));
});

after(async () => {
  source?.close();
  await stop(browser, server, work);
});

const freshness = () => page.$eval("#freshness", (e) => e.textContent);

test("a day the follower stores shows up on the open page without a reload", async () => {
  await page.goto(`${base}/?date=${STORED}`);
  await page.waitForFunction((d) => document.querySelector("#freshness")?.textContent?.includes(`source has up to ${d}`), STORED);
  assert.match(await freshness(), new RegExp(`^newest day ${STORED}, stored (just now|\\d+ min ago); source has up to ${STORED}$`));

  published = true;
  // The server stores it on its own (no request from the page asks for it).
  for (let i = 0; ; i++) {
    const days = await getJson(base, "/api/days");
    if (days.days.some((d) => d.date === NEXT)) break;
    assert.ok(i < 400, "the follower never stored the day");
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.equal(hits.get(NEXT) > 0, true);
  // The window getting the focus makes the page ask again (as does the one-minute timer).
  await page.evaluate(() => window.dispatchEvent(new Event("focus")));
  await page.waitForFunction((d) => document.querySelector("#freshness")?.dataset.newest === d, NEXT);
  assert.match(await freshness(), new RegExp(`^newest day ${NEXT}, stored (just now|\\d+ min ago); source has up to ${NEXT}$`));
  // The calendar was reloaded: October 2012 now has both days stored.
  await page.waitForFunction(() => [...document.querySelectorAll(".cal-mon")].some((e) => e.title === "October 2012: 2 of 31 days stored"));
  await screenshot(page, "follow-new-day");
  assert.deepEqual(page.errors, []);
});
