// The live dashboard's side of `--dashboard`: one EventSource; each `update` refreshes the strip
// (users, sessions, failures, requests) and, when it brings a new model, the whole report; `end`
// links to the final report and closes the stream.
import type { Model } from "./data";
import { esc } from "./format";

interface Update {
  what: string;
  elapsed_s: number;
  users: number;
  sessions_done: number;
  sessions_failed: number;
  requests: number;
  request_errors: number;
  finished: boolean;
  report: string | null;
  main?: string;
  model?: Model;
}

function strip(u: Update): void {
  const el = document.getElementById("live-strip");
  if (!el) return;
  el.style.cssText =
    "position:sticky;top:0;z-index:10;background:#1d2330;color:#fff;padding:6px 24px;font:13px system-ui,sans-serif";
  const counts =
    u.requests + u.request_errors > 0
      ? `requests ${u.requests} · errors ${u.request_errors}`
      : `users ${u.users} · sessions done ${u.sessions_done} · failed ${u.sessions_failed}`;
  const state = u.finished
    ? u.report
      ? `run ended · <a id="live-report" style="color:#8ec1ea" href="${u.report}">the final report</a>`
      : "run ended"
    : `live · ${u.elapsed_s.toFixed(0)} s`;
  el.innerHTML = `<b>${esc(u.what || "surge")}</b> · ${state} · <span id="live-counts">${counts}</span>`;
  const root = document.documentElement.dataset;
  root.liveUpdates = String(Number(root.liveUpdates || "0") + 1);
  root.liveSessions = String(u.sessions_done + u.sessions_failed);
  if (u.finished) root.liveEnded = "1";
}

/** Follows the run at `src`; `hasModel`: the page was served with a report (else the first
 * model reloads the page, which then comes with the report's header and sections). */
export function live(src: string, hasModel: boolean, redraw: (main: string, model: Model) => void): void {
  const es = new EventSource(src);
  const onMessage = (e: MessageEvent<string>) => {
    const u = JSON.parse(e.data) as Update;
    if (u.model && u.main !== undefined) {
      if (!hasModel) {
        es.close();
        location.reload();
        return;
      }
      redraw(u.main, u.model);
      document.documentElement.dataset.liveModels = String(Number(document.documentElement.dataset.liveModels || "0") + 1);
    }
    strip(u);
  };
  es.addEventListener("update", onMessage);
  es.addEventListener("end", (e) => {
    onMessage(e as MessageEvent<string>);
    es.close();
  });
}
