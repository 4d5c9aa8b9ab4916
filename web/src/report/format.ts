// Number formatting shared by tooltips and axes.

export function fmtMs(ms: number): string {
  const a = Math.abs(ms);
  if (a === 0) return "0";
  if (a < 1000) return `${Math.round(ms)} ms`;
  if (a < 10_000) return `${(ms / 1000).toFixed(2)} s`;
  if (a < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const s = Math.round(ms / 1000);
  return `${Math.floor(s / 60)}m ${String(s % 60).padStart(2, "0")}s`;
}

export function fmtSec(s: number): string {
  return fmtMs(s * 1000);
}

export function esc(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
