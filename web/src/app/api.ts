// The JSON API client: the UI uses nothing else. The API's types are generated from the Rust ones
// (api.gen.ts; a cargo test fails when they differ).

import type { DayInfo, DaySummary, ErrorBody, Fetching, Progress, WhaleDetail } from "./api.gen";

export type { DayInfo, DaySummary, Download, Hour, Progress, Totals, Whale, WhaleDetail } from "./api.gen";

/** What asking for a day can give. */
export type DayResult =
  | { kind: "ready"; summary: DaySummary }
  | { kind: "fetching"; progress: string; current: Progress | null }
  | { kind: "error"; status: number; error: string };

async function errorOf(r: Response): Promise<string> {
  try {
    const body: Partial<ErrorBody> | null = await r.json();
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
    const body: Fetching = await r.json();
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
