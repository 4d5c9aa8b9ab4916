// Generated from the Rust types (crates/cranwhales/src/summary.rs, server/wire.rs,
// server/fetch.rs) by `CRANWHALES_WRITE_TS=1 cargo test -p cranwhales wire`. Do not edit.

export type Totals = { downloads: number, downloaders: number, bytes: number, packages: number, skipped_rows: number, };

export type Hour = { hour: number, downloads: number, whale_downloads: number, };

export type Whale = { rank: number, ip_id: number, name: string, 
/**
 * Modal country code; `None` when every row's country was missing.
 */
country: string | null, downloads: number, bytes: number, packages: number, 
/**
 * Downloads per UTC hour, 24 entries.
 */
hourly: number[], 
/**
 * What it is doing; `None` for a day stored before profiles existed.
 */
profile: import("./api").Profile | null, };

export type DaySummary = { date: string, count: number, totals: Totals, hourly: Array<Hour>, whales: Array<Whale>, };

export type DayInfo = { date: string, totals: Totals, };

export type Download = { 
/**
 * `HH:MM:SS`, UTC.
 */
time: string, package: string, version: string | null, size: number, r_version: string | null, r_arch: string | null, r_os: string | null, country: string | null, };

export type WhaleDetail = { date: string, whale: Whale, 
/**
 * `HH:MM:SS` of the first and last download.
 */
first: string, last: string, downloads: Array<Download>, };

export type Progress = { "phase": "queued" } | { "phase": "starting" } | { "phase": "downloading", done: number, total: number | null, } | { "phase": "parsing", bytes: number, total: number | null, rows: number, } | { "phase": "storing" } | { "phase": "done", rows: number, } | { "phase": "error", status: number, error: string, };

export type Fetching = { 
/**
 * Always `"fetching"`.
 */
status: "fetching", 
/**
 * The day, `YYYY-MM-DD`.
 */
date: string, 
/**
 * URL of the Server-Sent Events stream of the fetch's progress.
 */
progress: string, 
/**
 * Where the fetch is now.
 */
current: Progress, };

export type ErrorBody = { 
/**
 * One line saying what and where.
 */
error: string, };
