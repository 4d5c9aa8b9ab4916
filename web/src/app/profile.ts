// A whale's behaviour profile as HTML: the label chip, the sentence and the facts behind it
// (detail view), and the whale list with one sentence per whale (Biggest whales tab).
import type { DaySummary, Facts, Whale } from "./api";
import { esc, int, pct } from "./format";
import type { Behaviour } from "./api";

/** The behaviours' chart colours (trends.ts) darkened so white chip text reads (WCAG AA 4.5:1). */
const CHIP_COLORS: Record<Behaviour, string> = {
  archive: "#785a9c",
  mirror: "#bb3f30",
  loop: "#9d650b",
  classroom: "#007c43",
  steady: "#33779f",
  burst: "#d81b60",
  session: "#6b7777",
};

function hm(secs: number): string {
  return `${String(Math.floor(secs / 3600)).padStart(2, "0")}:${String(Math.floor(secs / 60) % 60).padStart(2, "0")}`;
}

export function chip(w: Whale): string {
  if (!w.profile) return `<span class="chip chip-none" title="stored by an older version: re-ingest the day">no profile</span>`;
  const p = w.profile;
  return `<span class="chip" data-behaviour="${p.behaviour}" style="background:${CHIP_COLORS[p.behaviour]}">${esc(p.label)}</span>`;
}

function mix(m: { name: string; downloads: number }[], total: number): string {
  return m
    .slice(0, 3)
    .map((x) => `${esc(x.name)} ${pct(x.downloads, total)}`)
    .join(", ");
}

/** The facts as label/value rows (every value is derived from the API's numbers only). */
export function factRows(f: Facts): [string, string][] {
  const gaps =
    f.gap_median === null ? "–" : `median ${int(f.gap_median)} s (quartiles ${int(f.gap_q1 ?? 0)}–${int(f.gap_q3 ?? 0)} s)`;
  return [
    ["distinct packages", `${int(f.packages)} (${pct(f.packages, f.day_packages)} of the day's ${int(f.day_packages)})`],
    ["top package", `${esc(f.top_package)}: ${int(f.top_package_downloads)} (${pct(f.top_package_downloads, f.downloads)})`],
    ["versions per package", (f.versions / Math.max(1, f.packages)).toFixed(2)],
    ["no R version", `${pct(f.no_r_version, f.downloads)} of requests (day: ${(100 * f.day_no_r_share).toFixed(1)}%)`],
    ["OS mix", mix(f.os, f.downloads)],
    ["architecture mix", mix(f.arch, f.downloads)],
    ["active hours (UTC)", `${f.active_hours}, ${hm(f.first)}–${hm(f.last)}`],
    ["longest burst", `${int(f.burst)} downloads in one minute at ${hm(f.burst_start)}`],
    ["gaps between downloads", gaps],
    ["share of the top-100 whales' downloads", pct(f.downloads, f.whale_downloads)],
  ];
}

/** Detail view: what this whale is doing, in one sentence, with the facts behind it. */
export function profileCard(w: Whale): string {
  if (!w.profile) {
    return `<div class="profile">${chip(w)} <span class="sentence">This day was stored before behaviour profiles existed; re-ingest it to see one.</span></div>`;
  }
  const p = w.profile;
  const rows = factRows(p.facts)
    .map(([k, v]) => `<div class="fact-k">${k}</div><div class="fact-v">${v}</div>`)
    .join("");
  return (
    `<div class="profile">${chip(w)} <span class="sentence" id="profile-sentence">${esc(p.sentence)}</span>` +
    `<div class="facts" id="profile-facts">${rows}</div></div>`
  );
}

/** Biggest whales: rank, name, downloads, label and sentence of every whale shown. */
export function whaleListHtml(s: DaySummary): string {
  return s.whales
    .map(
      (w) =>
        `<tr data-ip="${w.ip_id}"><td class="num">${w.rank}</td><td>${esc(w.name)} [${esc(w.country ?? "??")}]</td>` +
        `<td class="num">${int(w.downloads)}</td><td>${chip(w)}</td>` +
        `<td class="sentence-cell">${esc(w.profile?.sentence ?? "")}</td></tr>`,
    )
    .join("");
}
