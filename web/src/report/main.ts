// surge report runtime: reads the data model inlined in the page (#surge-data) and draws every
// view. No network: everything it needs is in the page, except on a live dashboard page
// (`--dashboard`, body[data-live]), which redraws from the models its Server-Sent Events bring.
import { decode, type Model } from "./data";
import { CLASS_COLORS, FAIL, PHASE_FILL, disposeAll, resizeAll } from "./charts/common";
import { ganttAligned, ganttByRunTime } from "./charts/gantt";
import { durationView, latencyView } from "./charts/scatter";
import { waterfallView } from "./charts/waterfall";
import { linesView } from "./charts/lines";
import { concurrencyView } from "./charts/concurrency";
import { capacityView } from "./charts/capacity";
import { manifoldView } from "./charts/manifold";
import { live } from "./live";

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

/** Draws every view of `model` into the page's sections. */
export function draw(model: Model): void {
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
  manifoldView(runs);
}

/** A live page's update: the new tables (`main`) replace the old, then the charts are redrawn. */
function redraw(main: string, model: Model): void {
  disposeAll();
  const el = document.querySelector("main");
  if (el) el.innerHTML = main;
  draw(model);
}

function main(): void {
  const el = document.getElementById("surge-data");
  const model = el && el.textContent ? (JSON.parse(el.textContent) as Model) : null;
  if (model) draw(model);
  const src = document.body.dataset.live;
  if (src) live(src, model !== null, redraw);
  let t = 0;
  window.addEventListener("resize", () => {
    clearTimeout(t);
    t = window.setTimeout(resizeAll, 120);
  });
}

if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", main);
else main();
