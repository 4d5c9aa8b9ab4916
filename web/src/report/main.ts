// surge report runtime: reads the data model inlined in the page (#surge-data) and draws every
// view. No network: everything it needs is in the page.
import { decode, type Model } from "./data";
import { CLASS_COLORS, FAIL, PHASE_FILL, resizeAll } from "./charts/common";
import { ganttAligned, ganttByRunTime } from "./charts/gantt";
import { durationView, latencyView } from "./charts/scatter";
import { waterfallView } from "./charts/waterfall";
import { linesView } from "./charts/lines";
import { concurrencyView } from "./charts/concurrency";
import { capacityView } from "./charts/capacity";

function legend(model: Model): void {
  const el = document.getElementById("legend");
  if (!el) return;
  const parts = model.classes.map(
    (c, i) => `<span><i class="sw" style="background:${CLASS_COLORS[i]}"></i>${c}</span>`,
  );
  parts.push(`<span><b style="color:${FAIL}">✕</b> failed session</span>`);
  parts.push(`<span><i class="sw" style="background:${PHASE_FILL};border:1px solid #d0d5dd"></i>warm-up / cool-down</span>`);
  el.innerHTML = `Colours in every chart: ${parts.join("")}`;
}

function main(): void {
  const el = document.getElementById("surge-data");
  if (!el || !el.textContent) return;
  const model = JSON.parse(el.textContent) as Model;
  const runs = decode(model);
  legend(model);
  capacityView(model);
  ganttByRunTime(model, runs);
  ganttAligned(model, runs);
  durationView(model, runs);
  waterfallView(runs);
  latencyView(model, runs);
  linesView(runs);
  concurrencyView(runs);
  let t = 0;
  window.addEventListener("resize", () => {
    clearTimeout(t);
    t = window.setTimeout(resizeAll, 120);
  });
}

if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", main);
else main();
