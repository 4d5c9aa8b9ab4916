// Packages in context, for the Packages tab: each package's rank line, the distribution of all
// packages with these ones marked, the badge and its Markdown, and the top and trending lists of
// the range.
import type { Distribution, PackageReport, TopList } from "./api";
import { COUNTS, esc, int } from "./format";

/** `ggplot2: 6 of 7,190, 99.9 percentile` for each package. */
export function rankHtml(reports: PackageReport[], colors: string[], over: string): string {
  return reports
    .map((r, i) => {
      const text = r.rank ? r.rank.text : "no downloads in this range";
      return `<div class="rank-line" data-package="${esc(r.package)}"><span class="dot" style="background:${colors[i % colors.length]}"></span><b>${esc(r.package)}</b>: <span class="rank-text">${esc(text)}</span> among all packages by downloads over ${esc(over)}</div>`;
    })
    .join("");
}

/** `1–1`, `2–4`, `5–9`, … `1,000–1,999`. */
function bucketLabels(d: Distribution): string[] {
  return d.counts.map((_, i) => (d.edges[i + 1] - 1 === d.edges[i] ? int(d.edges[i]) : `${int(d.edges[i])}–${int(d.edges[i + 1] - 1)}`));
}

/** The bucket `downloads` falls in. */
export function bucketOf(d: Distribution, downloads: number): number {
  let i = 0;
  while (i + 1 < d.counts.length && d.edges[i + 1] <= downloads) i++;
  return i;
}

/** Histogram of all packages' downloads over the range, a marked line per package. */
export function distributionOption(reports: PackageReport[], colors: string[], width = 1000) {
  const d = reports[0].distribution;
  const labels = bucketLabels(d);
  // Each mark's name on its own row above the plot (the i-th 15 px higher): names of packages in
  // the same or neighbouring buckets never print over each other.
  const ranked = reports.filter((r) => r.rank);
  const marks = ranked.map((r, i) => ({
    xAxis: labels[bucketOf(d, r.rank!.downloads)],
    name: r.package,
    lineStyle: { color: colors[reports.indexOf(r) % colors.length], width: 2 },
    label: { formatter: r.package, color: colors[reports.indexOf(r) % colors.length], position: "end", distance: 4 + 15 * (ranked.length - 1 - i) },
  }));
  const title = "All packages by downloads over the range (how many packages in each bucket)";
  // The title wraps on a narrow chart (~7 px a character): each extra line moves the plot down.
  const lines = Math.ceil((title.length * 7) / Math.max(100, width - 20));
  return {
    animationDuration: 300,
    title: { text: title, left: 10, top: 4, textStyle: { fontSize: 13, fontWeight: "normal", width: width - 20, overflow: "break", lineHeight: 18 } },
    grid: { left: 70, right: 30, top: 38 + 18 * lines + 15 * Math.max(0, ranked.length - 1), bottom: 60 },
    tooltip: { trigger: "axis", axisPointer: { type: "shadow" } },
    xAxis: { type: "category", data: labels, name: "downloads over the range", nameLocation: "middle", nameGap: 42, axisLabel: { color: "#555", fontSize: 10, rotate: 30, hideOverlap: true } },
    yAxis: { type: "value", ...COUNTS, name: "packages", axisLabel: { color: "#555", fontSize: 11 } },
    series: [
      {
        name: "packages",
        type: "bar",
        data: d.counts,
        itemStyle: { color: "#b8c7ce" },
        markLine: { symbol: "none", data: marks },
      },
    ],
  };
}

/** The badge of `pkg` and the Markdown that embeds it (absolute URLs of this server). */
export function badgeHtml(pkg: string): string {
  const base = location.origin;
  const q = encodeURIComponent(pkg);
  const src = `${base}/badge/${q}?period=last-month`;
  const page = `${base}/?tab=packages&package=${q}`;
  const md = `[![downloads](${src})](${page})`;
  const mdw = `[![downloads without whales](${src}&without=whales)](${page})`;
  return (
    `<div class="badge-title">Badge for a README (last month; also <code>period=last-week|total</code>)</div>` +
    `<div class="badge-row"><img id="pkg-badge-img" src="${esc(src)}" alt="downloads badge"> <code class="badge-md">${esc(md)}</code></div>` +
    `<div class="badge-row"><img id="pkg-badge-img-whales" src="${esc(src)}&amp;without=whales" alt="downloads without whales badge"> <code class="badge-md">${esc(mdw)}</code></div>`
  );
}

/** Top and trending tables of a range, with the rule of trending. */
export function topHtml(t: TopList): string {
  const top = t.top
    .map((p) => `<tr><td class="num">${p.rank}</td><td><a href="#" data-package="${esc(p.package)}">${esc(p.package)}</a></td><td class="num">${int(p.downloads)}</td><td class="num">${p.share.toFixed(2)}%</td></tr>`)
    .join("");
  const trending = t.trending
    .map((p) => `<tr><td><a href="#" data-package="${esc(p.package)}">${esc(p.package)}</a></td><td class="num">${int(p.before)}</td><td class="num">${int(p.downloads)}</td><td class="num">×${p.growth.toFixed(2)}</td></tr>`)
    .join("");
  const span = t.before_from ? `${t.before_from} to ${t.before_to} (${t.before_days} stored day${t.before_days === 1 ? "" : "s"})` : "";
  const why = !t.before_from
    ? "This range starts with the logs: pick a later From to compare with the days before it."
    : t.before_days === 0
      ? `No stored day in ${span}: fetch some to see what is trending.`
      : `Compared with ${span}.`;
  return (
    `<div class="top-head">${t.days} stored day${t.days === 1 ? "" : "s"} from ${t.from} to ${t.to}: ${int(t.downloads)} downloads of ${int(t.packages)} packages</div>` +
    `<div class="top-lists"><div><div class="top-title">Top packages</div><div class="table-wrap" tabindex="0" role="region" aria-label="top packages"><table id="top-table"><thead><tr><th class="num">rank</th><th>package</th><th class="num">downloads</th><th class="num">share</th></tr></thead><tbody>${top}</tbody></table></div></div>` +
    `<div><div class="top-title">Trending</div><div class="note" id="trending-rule">${esc(t.rule)} ${esc(why)}</div><div class="table-wrap" tabindex="0" role="region" aria-label="trending packages"><table id="trending-table"><thead><tr><th>package</th><th class="num">before</th><th class="num">in range</th><th class="num">growth</th></tr></thead><tbody>${trending}</tbody></table></div></div></div>`
  );
}
