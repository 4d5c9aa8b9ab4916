// The JSON API client: the UI uses nothing else. The API's types are generated from the Rust ones
// (api.gen.ts; a cargo test fails when they differ).

import type {
  Behaviour,
  Bin,
  Calendar,
  DayList,
  DaySummary,
  ErrorBody,
  Fetching,
  PackageComparison,
  PackageName,
  PackageReport,
  Progress,
  TopList,
  Trends,
  WhaleDetail,
} from "./api.gen";

export type {
  Behaviour,
  Bin,
  Calendar,
  CalendarDay,
  Distribution,
  PackageComparison,
  Rank,
  TopList,
  TopPackage,
  TrendingPackage,
  DayInfo,
  DayList,
  DaySummary,
  Download,
  Facts,
  Hour,
  Mix,
  PackageDay,
  PackageName,
  PackageReport,
  Profile,
  Progress,
  Totals,
  TrendDay,
  Trends,
  Whale,
  WhaleDetail,
} from "./api.gen";

/** Behaviour labels, in rule order (docs/whale-behaviours.md); the type is generated. */
export const BEHAVIOURS = ["archive", "mirror", "loop", "classroom", "steady", "burst", "session"] as const satisfies readonly Behaviour[];

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

/** The stored days and how fresh they are (the follower's status with `--follow`). */
export async function getDays(): Promise<DayList> {
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

/** What the Packages tab asks for. */
export interface PackageQuery {
  names: string[];
  from: string;
  to: string;
  whales: number;
  bin: Bin;
  cumulative: boolean;
  /** What the ranks and the distribution leave out (`whales,small,repeats`, any of them). */
  without?: string;
}

/** One or several packages (`/api/packages/a,b,c`), always as a list of reports. */
export async function getPackages(p: PackageQuery): Promise<Result<PackageReport[]>> {
  const q = new URLSearchParams({ whales: String(p.whales) });
  if (p.from) q.set("from", p.from);
  if (p.to) q.set("to", p.to);
  if (p.bin !== "day") q.set("bin", p.bin);
  if (p.cumulative) q.set("cumulative", "true");
  if (p.without) q.set("without", p.without);
  const r = await result<PackageReport | PackageComparison>(`/api/packages/${p.names.map(encodeURIComponent).join(",")}?${q}`);
  if (!r.ok) return r;
  return { ok: true, value: "packages" in r.value ? r.value.packages : [r.value] };
}

/** The top and trending lists, counted without `without` (the page's filters, any of
 * `whales,small,repeats`). */
export function getTop(from: string, to: string, limit: number, without = ""): Promise<Result<TopList>> {
  const q = new URLSearchParams({ limit: String(limit) });
  if (from) q.set("from", from);
  if (to) q.set("to", to);
  if (without) q.set("without", without);
  return result(`/api/top?${q}`);
}

export async function getCalendar(): Promise<Calendar> {
  const r = await fetch("/api/calendar");
  if (!r.ok) throw new Error(await errorOf(r));
  return r.json();
}

export function suggestPackages(prefix: string): Promise<Result<PackageName[]>> {
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

// ---- who downloads a package (issue 34): written by hand, these Rust types are not exported ----

/** One key of a breakdown (`null`: the field was `NA` in the log). */
export interface KeyRow {
  key: string | null;
  downloads: number;
}

/** One bin of `breakdown?step=`. */
export interface StepRows {
  from: string;
  to: string;
  /** Days of the bin inside the range. */
  span: number;
  /** Stored days of the bin counted. */
  days: number;
  rows: KeyRow[];
}

/** `GET /api/packages/{pkg}/breakdown?by=&step=` (docs/cranwhales.md). */
export interface Breakdown {
  package: string;
  by: string;
  from: string;
  to: string;
  without: string[];
  days: number;
  days_without_breakdowns: string[];
  total: number;
  rows: KeyRow[];
  step?: Bin;
  bins?: StepRows[];
}

/** A version's first day as the logs show it. */
export interface Release {
  version: string | null;
  first_day: string;
  after: string | null;
  before_first_stored: boolean;
  downloads: number;
  shares: { days: number; stored_days: number; version_downloads: number; package_downloads: number; share: number | null }[];
}

/** `GET /api/packages/{pkg}/releases`. */
export interface Releases {
  package: string;
  days: number;
  days_without_breakdowns: string[];
  versions: Release[];
}

/** `GET /api/packages/{pkg}/kinds`: parts adding up to `raw`. */
export interface Kinds {
  package: string;
  from: string;
  to: string;
  whales: number;
  days: number;
  days_without_filters: string[];
  raw: number;
  small: number;
  repeats: number;
  whale_downloads: number;
  rest: number;
}

function range(q: URLSearchParams, from: string, to: string) {
  if (from) q.set("from", from);
  if (to) q.set("to", to);
}

/** A package's downloads by `by` over the range and per `step` bin, without `without`. */
export function getBreakdown(pkg: string, by: string, from: string, to: string, without: string, step: Bin): Promise<Result<Breakdown>> {
  const q = new URLSearchParams({ by });
  range(q, from, to);
  if (without) q.set("without", without);
  q.set("step", step);
  return result(`/api/packages/${encodeURIComponent(pkg)}/breakdown?${q}`);
}

export function getReleases(pkg: string): Promise<Result<Releases>> {
  return result(`/api/packages/${encodeURIComponent(pkg)}/releases`);
}

export function getKinds(pkg: string, from: string, to: string, whales: number): Promise<Result<Kinds>> {
  const q = new URLSearchParams({ whales: String(whales) });
  range(q, from, to);
  return result(`/api/packages/${encodeURIComponent(pkg)}/kinds?${q}`);
}
