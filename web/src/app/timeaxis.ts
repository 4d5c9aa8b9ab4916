// What every chart over days shares: a time axis (so a gap of months between stored days is as
// wide as it is long), points as [date, value] with a null where days are missing (lines break
// there), and a data zoom (drag the slider, or scroll / pinch on the chart) to zoom and pan.
import type { Bin } from "./api";

const DAY_MS = 86_400_000;
/** The longest step between two neighbouring points of a bin that is not a gap. */
const STEP_DAYS: Record<Bin, number> = { day: 1, week: 7, month: 31, year: 366 };

/** `[date, value]` points over `dates`, a `[date, null]` after every gap so the line breaks. */
export function points(dates: string[], values: (number | null)[], bin: Bin = "day"): [string, number | null][] {
  const out: [string, number | null][] = [];
  dates.forEach((d, i) => {
    if (i > 0) {
      const prev = Date.parse(dates[i - 1]);
      if ((Date.parse(d) - prev) / DAY_MS > STEP_DAYS[bin]) {
        out.push([new Date(prev + DAY_MS).toISOString().slice(0, 10), null]);
      }
    }
    out.push([d, values[i]]);
  });
  return out;
}

/** The finest tick of an axis of each bin, in days: a day, a week, about a month, a year
 * (ECharts still rounds to its own tick levels: per week it may tick every few days). */
const MIN_TICK_DAYS: Record<Bin, number> = { day: 1, week: 7, month: 28, year: 365 };

/** Half a bin: the least room kept before the first point and after the last, so a bin's point
 * (or bar) sits inside the plot, not on its edge. */
const HALF_BIN_DAYS: Record<Bin, number> = { day: 0.5, week: 3.5, month: 15.5, year: 183 };
/** Pixels kept free at each end of the plot: the widest mark drawn at a point (a 16 px bar, a
 * 9 px hollow circle with its stroke) and a little air. */
const EDGE_PX = 12;

/** The time axis' extent over the points `lo`..`hi` (ms): padded by half a bin on each side, or
 * more when the span is long, so that at `plotWidth` px the ends keep at least EDGE_PX free (on
 * days spread over years half a day is under a pixel). */
export function paddedExtent(lo: number, hi: number, bin: Bin, plotWidth: number): [number, number] {
  const px = Math.max(plotWidth - 2 * EDGE_PX, EDGE_PX);
  const pad = Math.max(HALF_BIN_DAYS[bin] * DAY_MS, ((hi - lo) * EDGE_PX) / px);
  return [lo - pad, hi + pad];
}

/** The x axis of a chart over days, binned by `bin`, whose plot is `plotWidth` px wide: its ends
 * padded (paddedExtent) so the first and last points are drawn whole, and reaching `include`
 * (dates of marks, e.g. releases, that must be on it too). */
export function timeAxis(bin: Bin, plotWidth: number, include: string[] = []) {
  const extra = include.map((d) => Date.parse(d)).filter(Number.isFinite);
  const ends = (e: { min: number; max: number }): [number, number] | null => {
    const lo = Math.min(e.min, ...extra);
    const hi = Math.max(e.max, ...extra);
    return Number.isFinite(lo) && Number.isFinite(hi) ? paddedExtent(lo, hi, bin, plotWidth) : null;
  };
  return {
    type: "time",
    min: (e: { min: number; max: number }) => ends(e)?.[0] ?? null,
    max: (e: { min: number; max: number }) => ends(e)?.[1] ?? null,
    // ECharts would widen the axis again for bars by half the smallest gap between two bars
    // (a year and more for weeks stored years apart, pushing the bars to the middle); the
    // padding above already leaves room for the widest bar.
    containShape: false,
    // Points are days: no tick between two midnights (a range of a day or two, padded by half a
    // day, was labelled 12:00, 16:00, … as if downloads had a time of day); and no tick finer
    // than a bin (two months per month were labelled 22, 29, Dec, 6, 8, 15, … under two bars).
    minInterval: MIN_TICK_DAYS[bin] * DAY_MS,
    axisLabel: { color: "#555", fontSize: 11, hideOverlap: true },
    splitLine: { show: false },
  };
}

/** Zoom and pan: a slider under the plot and the mouse wheel / drag inside it. */
export function dataZoom(bottom = 8) {
  return [
    { type: "inside", xAxisIndex: 0, filterMode: "none" },
    { type: "slider", xAxisIndex: 0, filterMode: "none", height: 18, bottom },
  ];
}

/** Rows a wrapped legend of `names` takes across `width` px (~7 px a character, the icon and
 * gap 35 px: an over-estimate, so the plot never starts under the legend). */
export function legendRows(names: string[], width: number): number {
  let rows = 1;
  let x = 0;
  for (const n of names) {
    const w = n.length * 7 + 35;
    if (x > 0 && x + w > width) {
      rows++;
      x = 0;
    }
    x += w;
  }
  return rows;
}

/** A legend from `top` wrapped over the chart's `width` (never over the title or the plot), and
 * where the plot can start below it. */
export function wrappedLegend(names: string[], width: number, top: number) {
  const rows = legendRows(names, width - 26);
  return { legend: { type: "plain", top, left: 10, right: 16 }, gridTop: top + rows * 22 + 18 };
}

/** The date of a clicked point (an ECharts click event on a time axis). */
export function clickedDate(p: unknown): string | null {
  const v = (p as { value?: unknown }).value;
  return Array.isArray(v) && typeof v[0] === "string" ? v[0] : null;
}
