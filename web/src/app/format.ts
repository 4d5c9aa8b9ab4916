// Number formatting shared by value boxes, axes and tooltips.

const UNITS = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];

/** Binary units with one decimal: 1.9 TiB, 7.7 GiB, 512 B. */
export function bytes(n: number): string {
  let i = 0;
  let v = n;
  while (v >= 1024 && i < UNITS.length - 1) {
    v /= 1024;
    i++;
  }
  return i === 0 ? `${n} B` : `${v.toFixed(1)} ${UNITS[i]}`;
}

/** What an axis of counts needs: ticks on whole numbers. Without it an axis up to 3 ticks every
 * 0.5 and `int` labels the ticks 0, 1, 1, 2, 2, 3, 3 (a package's versions on a quiet day). */
export const COUNTS = { minInterval: 1 } as const;

/** Thousands separators: 1,665,663. */
export function int(n: number): string {
  return Math.round(n).toLocaleString("en-US");
}

/** A share as a percentage with one decimal. */
export function pct(part: number, whole: number): string {
  return whole > 0 ? `${((100 * part) / whole).toFixed(1)}%` : "0.0%";
}

/** `HH:00` for an hour of the day. */
export function hourLabel(h: number): string {
  return `${String(h).padStart(2, "0")}:00`;
}

/** `HH:MM:SS` from fractional hours. */
export function clock(hours: number): string {
  const s = Math.round(hours * 3600);
  const hh = Math.floor(s / 3600);
  const mm = Math.floor((s % 3600) / 60);
  const ss = s % 60;
  return [hh, mm, ss].map((x) => String(x).padStart(2, "0")).join(":");
}

/** Escapes text for HTML (tooltips are HTML). */
export function esc(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
