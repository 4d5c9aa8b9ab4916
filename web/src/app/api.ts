// The JSON API client: the UI uses nothing else (types mirror crates/cranwhales/src/summary.rs).

export interface Totals {
  downloads: number;
  downloaders: number;
  bytes: number;
  packages: number;
  skipped_rows: number;
}
export interface Hour {
  hour: number;
  downloads: number;
  whale_downloads: number;
}
export interface Whale {
  rank: number;
  ip_id: number;
  name: string;
  country: string | null;
  downloads: number;
  bytes: number;
  packages: number;
  hourly: number[];
}
export interface DaySummary {
  date: string;
  count: number;
  totals: Totals;
  hourly: Hour[];
  whales: Whale[];
}
export interface DayInfo {
  date: string;
  totals: Totals;
}
export interface Download {
  time: string;
  package: string;
  version: string | null;
  size: number;
  r_version: string | null;
  r_arch: string | null;
  r_os: string | null;
  country: string | null;
}
export interface WhaleDetail {
  date: string;
  whale: Whale;
  first: string;
  last: string;
  downloads: Download[];
}

/** A progress event of an on-demand fetch (SSE `data:`). */
export type Progress =
  | { phase: "queued" }
  | { phase: "starting" }
  | { phase: "downloading"; done: number; total: number | null }
  | { phase: "parsing"; bytes: number; total: number | null; rows: number }
  | { phase: "storing" }
  | { phase: "done"; rows: number }
  | { phase: "error"; status: number; error: string };

/** What asking for a day can give. */
export type DayResult =
  | { kind: "ready"; summary: DaySummary }
  | { kind: "fetching"; progress: string; current: Progress | null }
  | { kind: "error"; status: number; error: string };

async function errorOf(r: Response): Promise<string> {
  try {
    const body = await r.json();
    if (body && typeof body.error === "string") return body.error;
  } catch {
    /* not JSON */
  }
  return `${r.status} ${r.statusText}`;
}

export async function getDays(): Promise<DayInfo[]> {
  const r = await fetch("/api/days");
  if (!r.ok) throw new Error(await errorOf(r));
  return r.json();
}

export async function getDay(date: string, count: number): Promise<DayResult> {
  const r = await fetch(`/api/days/${encodeURIComponent(date)}?count=${count}`);
  if (r.status === 200) return { kind: "ready", summary: await r.json() };
  if (r.status === 202) {
    const body = await r.json();
    return { kind: "fetching", progress: body.progress, current: body.current ?? null };
  }
  return { kind: "error", status: r.status, error: await errorOf(r) };
}

export async function getWhale(date: string, ipId: number): Promise<WhaleDetail> {
  const r = await fetch(`/api/days/${encodeURIComponent(date)}/whales/${ipId}`);
  if (!r.ok) throw new Error(await errorOf(r));
  return r.json();
}

/** Follows a fetch's progress until it is done or failed. */
export function follow(url: string, onEvent: (p: Progress) => void): () => void {
  const es = new EventSource(url);
  let closed = false;
  es.onmessage = (m) => {
    const p = JSON.parse(m.data) as Progress;
    onEvent(p);
    if (p.phase === "done" || p.phase === "error") {
      closed = true;
      es.close();
    }
  };
  es.onerror = () => {
    if (closed) return;
    // The server closed the stream without a final event (restart, network): report it.
    closed = true;
    es.close();
    onEvent({ phase: "error", status: 0, error: "lost the connection while following the download; try again" });
  };
  return () => {
    closed = true;
    es.close();
  };
}
