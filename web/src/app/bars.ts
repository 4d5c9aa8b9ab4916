// The first view's chart (All traffic: 24 stacked bars) drawn as plain SVG, so the page's first
// JS needs no ECharts (see echarts.ts). It takes the same option object as the ECharts version
// would (categories, stacked series, legend, tooltip formatter) and answers `getOption()` the
// same way, so tests read either kind of chart alike.

interface Series {
  name: string;
  data: number[];
  itemStyle: { color: string };
}

/** The subset of an ECharts bar option this chart draws. */
export interface BarsOption {
  xAxis: { data: string[] };
  yAxis: object;
  legend: { data: string[] };
  series: Series[];
  tooltip: { formatter: (ps: { dataIndex: number }[]) => string };
}

const NS = "http://www.w3.org/2000/svg";
const PAD = { left: 70, right: 24, top: 48, bottom: 48 };

/** Rounds up to 1, 2, 2.5 or 5 × 10^k. */
function niceMax(v: number): number {
  const p = 10 ** Math.floor(Math.log10(Math.max(1, v)));
  return [1, 2, 2.5, 5, 10].map((m) => m * p).find((x) => x >= v) ?? 10 * p;
}

/** Stacked bars of categories in SVG with a legend, y axis ticks and a tooltip on hover. */
export class SvgBars {
  private option: BarsOption | null = null;
  private tip: HTMLDivElement;

  constructor(private el: HTMLElement) {
    el.style.position = "relative";
    this.tip = document.createElement("div");
    this.tip.className = "svg-tip";
    this.tip.style.display = "none";
  }

  /** Draws `o` (replacing what was drawn). */
  setOption(o: BarsOption) {
    this.option = o;
    this.draw();
  }

  /** The option as ECharts reports it: axes and series as arrays. */
  getOption() {
    const o = this.option;
    return o ? { ...o, xAxis: [o.xAxis], yAxis: [o.yAxis], series: o.series } : {};
  }

  /** Redraws at the element's current size. */
  resize() {
    if (this.option) this.draw();
  }

  private draw() {
    const o = this.option!;
    const w = this.el.clientWidth || 900;
    const h = this.el.clientHeight || 420;
    const n = o.xAxis.data.length;
    const totals = o.xAxis.data.map((_, i) => o.series.reduce((a, s) => a + (s.data[i] ?? 0), 0));
    const max = niceMax(Math.max(...totals, 1));
    const pw = w - PAD.left - PAD.right;
    const ph = h - PAD.top - PAD.bottom;
    const y = (v: number) => PAD.top + ph - (v / max) * ph;
    const band = pw / n;
    const parts: string[] = [];
    for (let t = 0; t <= 5; t++) {
      const v = (max * t) / 5;
      parts.push(
        `<line x1="${PAD.left}" x2="${w - PAD.right}" y1="${y(v)}" y2="${y(v)}" stroke="#e6e6e6"/>` +
          `<text x="${PAD.left - 8}" y="${y(v) + 4}" text-anchor="end" font-size="11" fill="#555">${Math.round(v).toLocaleString("en-US")}</text>`,
      );
    }
    o.xAxis.data.forEach((label, i) => {
      let base = 0;
      const x = PAD.left + i * band + band * 0.06;
      for (const s of o.series) {
        const v = s.data[i] ?? 0;
        parts.push(`<rect data-i="${i}" x="${x}" y="${y(base + v)}" width="${band * 0.88}" height="${Math.max(0, y(base) - y(base + v))}" fill="${s.itemStyle.color}"/>`);
        base += v;
      }
      if (i % Math.ceil(n / Math.max(1, pw / 50)) === 0) {
        parts.push(`<text x="${x + band * 0.44}" y="${PAD.top + ph + 16}" text-anchor="middle" font-size="11" fill="#555">${label}</text>`);
      }
    });
    parts.push(`<text x="${PAD.left + pw / 2}" y="${h - 10}" text-anchor="middle" font-size="12" fill="#555">time (UTC)</text>`);
    parts.push(`<text transform="translate(16 ${PAD.top + ph / 2}) rotate(-90)" text-anchor="middle" font-size="12" fill="#555">downloads</text>`);
    let lx = w - PAD.right;
    for (const s of [...o.series].reverse()) {
      const tw = s.name.length * 6.5;
      lx -= tw + 34;
      parts.push(`<rect x="${lx}" y="10" width="24" height="14" rx="3" fill="${s.itemStyle.color}"/><text x="${lx + 30}" y="21" font-size="12" fill="#333">${s.name}</text>`);
    }
    const svg = document.createElementNS(NS, "svg");
    svg.setAttribute("width", String(w));
    svg.setAttribute("height", String(h));
    svg.innerHTML = parts.join("");
    svg.addEventListener("mousemove", (e) => this.hover(e, band, w));
    svg.addEventListener("mouseleave", () => (this.tip.style.display = "none"));
    this.el.replaceChildren(svg, this.tip);
  }

  private hover(e: MouseEvent, band: number, w: number) {
    const r = this.el.getBoundingClientRect();
    const i = Math.floor((e.clientX - r.left - PAD.left) / band);
    const n = this.option!.xAxis.data.length;
    if (i < 0 || i >= n) {
      this.tip.style.display = "none";
      return;
    }
    this.tip.innerHTML = this.option!.tooltip.formatter([{ dataIndex: i }]);
    this.tip.style.display = "block";
    const x = e.clientX - r.left + 14;
    this.tip.style.left = `${Math.min(x, w - 230)}px`;
    this.tip.style.top = `${Math.max(0, e.clientY - r.top - 20)}px`;
  }
}
