// The JSON API client: the UI uses nothing else. The API's types are generated from the Rust ones
// (api.gen.ts; a cargo test fails when they differ).

import type { DayInfo, DaySummary, ErrorBody, Fetching, Progress, WhaleDetail } from "./api.gen";

export type { DayInfo, DaySummary, Download, Hour, Progress, Totals, Whale, WhaleDetail } from "./api.gen";

// Not generated yet: written by hand to match crates/cranwhales/src/{profile,summary}.rs.
/** Behaviour labels, in rule order (docs/whale-behaviours.md). */
export const BEHAVIOURS = ["archive", "mirror", "loop", "classroom", "steady", "burst", "session"] as const;
export type Behaviour = (typeof BEHAVIOURS)[number];
export interface Mix {
  name: string;
  downloads: number;
}
/** What was measured about one whale's day (crates/cranwhales/src/profile/mod.rs). */
export interface Facts {
  downloads: number;
  packages: number;
  day_packages: number;
  top_package: string;
  top_package_downloads: number;
  versions: number;
  no_r_version: number;
  day_no_r_share: number;
  os: Mix[];
  arch: Mix[];
  active_hours: number;
  first: number;
  last: number;
  burst: number;
  burst_start: number;
  gap_q1: number | null;
  gap_median: number | null;
  gap_q3: number | null;
  whale_downloads: number;
}
export interface Profile {
  behaviour: Behaviour;
  label: string;
  sentence: string;
  facts: Facts;
}
/** One stored day of a package (`GET /api/packages/{name}`). */
export interface PackageDay {
  date: string;
  downloads: number;
  downloaders: number | null;
  whale_downloads: number;
  without_whales: number;
  baseline: number | null;
  adjusted: number | null;
}
export interface PackageReport {
  package: string;
  from: string;
  to: string;
  whales: number;
  days: PackageDay[];
  totals: { downloads: number; whale_downloads: number; without_whales: number; adjusted: number | null };
  note: string;
}
export interface PackageSuggestion {
  package: string;
  downloads: number;
  days: number;
}
/** One stored day in `GET /api/trends`. */
export interface TrendDay {
  date: string;
  downloads: number;
  downloaders: number;
  top1: number;
  top6: number;
  top25: number;
  behaviours: Partial<Record<Behaviour, number>> | null;
}
export interface Trends {
  from: string;
  to: string;
  days: TrendDay[];
}


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

/** Either the value or the API's one-line error. */
export type Result<T> = { ok: true; value: T } | { ok: false; status: number; error: string };

async function result<T>(url: string): Promise<Result<T>> {
  const r = await fetch(url);
  if (r.ok) return { ok: true, value: await r.json() };
  return { ok: false, status: r.status, error: await errorOf(r) };
}

export function getPackage(name: string, from: string, to: string, whales: number): Promise<Result<PackageReport>> {
  const q = new URLSearchParams({ whales: String(whales) });
  if (from) q.set("from", from);
  if (to) q.set("to", to);
  return result(`/api/packages/${encodeURIComponent(name)}?${q}`);
}

export function suggestPackages(prefix: string): Promise<Result<PackageSuggestion[]>> {
  return result(`/api/packages?q=${encodeURIComponent(prefix)}&limit=12`);
}

export function getTrends(from: string, to: string): Promise<Result<Trends>> {
  const q = new URLSearchParams();
  if (from) q.set("from", from);
  if (to) q.set("to", to);
  const qs = q.toString();
  return result(`/api/trends${qs ? `?${qs}` : ""}`);
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
