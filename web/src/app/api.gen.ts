// Generated from the Rust types (crates/cranwhales/src/summary.rs, server/wire.rs,
// server/fetch.rs) by `CRANWHALES_WRITE_TS=1 cargo test -p cranwhales wire`. Do not edit.

export type Totals = { downloads: number, downloaders: number, bytes: number, packages: number, skipped_rows: number, };

export type Hour = { hour: number, downloads: number, whale_downloads: number, };

export type Behaviour = "archive" | "mirror" | "loop" | "classroom" | "steady" | "burst" | "session";

export type Mix = { name: string, downloads: number, };

export type Facts = { downloads: number, 
/**
 * Distinct packages, and distinct packages downloaded by anyone that day.
 */
packages: number, day_packages: number, 
/**
 * The most downloaded package (ties: the alphabetically first) and its downloads.
 */
top_package: string, top_package_downloads: number, 
/**
 * Distinct (package, version) pairs.
 */
versions: number, 
/**
 * Downloads whose request named no R version, and the same share for the whole day.
 */
no_r_version: number, day_no_r_share: number, 
/**
 * By OS family (windows, macos, linux, other, none) and by architecture (x86_64, i386,
 * other, none), most first.
 */
os: Array<Mix>, arch: Array<Mix>, 
/**
 * UTC hours with at least one download.
 */
active_hours: number, 
/**
 * Seconds since midnight of the first and last download.
 */
first: number, last: number, 
/**
 * The most downloads within 60 seconds (a window `[t, t+59]` starting at a download) and
 * the earliest `t` reaching it.
 */
burst: number, burst_start: number, 
/**
 * Gaps between consecutive downloads in seconds: lower quartile, median, upper quartile
 * (element `floor(p * (m - 1))` of the m sorted gaps); `None` with a single download.
 */
gap_q1: number | null, gap_median: number | null, gap_q3: number | null, 
/**
 * Downloads of the day's top-100 whales together (this whale's share is `downloads / it`).
 */
whale_downloads: number, };

export type Profile = { behaviour: Behaviour, label: string, sentence: string, facts: Facts, };

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
profile: Profile | null, };

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

export type PackageDay = { date: string, 
/**
 * Every download of the package that day.
 */
downloads: number, 
/**
 * Distinct ip_ids among them; `None` for a day stored before this was counted.
 */
downloaders: number | null, 
/**
 * Downloads by the day's top-N whales (N of the request).
 */
whale_downloads: number, 
/**
 * `downloads - whale_downloads`.
 */
without_whales: number, 
/**
 * The day's aggregate-only baseline (5% quantile of per-package downloads, as
 * `adjustedcranlogs` estimates CRAN-wide automated downloads) and `downloads` minus it.
 */
baseline: number | null, adjusted: number | null, };

export type PackageTotals = { downloads: number, whale_downloads: number, without_whales: number, 
/**
 * `None` when a day in range has no baseline.
 */
adjusted: number | null, };

export type PackageReport = { package: string, from: string, to: string, 
/**
 * N: each day's top-N whales are what "without whales" leaves out.
 */
whales: number, days: Array<PackageDay>, totals: PackageTotals, 
/**
 * How this compares with the aggregate-only correction, in words.
 */
note: string, };

export type PackageName = { package: string, 
/**
 * Downloads over all stored days, and on how many of them.
 */
downloads: number, days: number, };

export type TrendDay = { date: string, downloads: number, downloaders: number, 
/**
 * Downloads of the day's top 1, 6 and 25 whales together.
 */
top1: number, top6: number, top25: number, 
/**
 * Top-100 whales per behaviour (every behaviour listed); `None` for a day stored before
 * profiles existed.
 */
behaviours: { [key in Behaviour]?: number } | null, };

export type Trends = { from: string, to: string, days: Array<TrendDay>, };

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
