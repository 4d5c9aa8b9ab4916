// Generated from the Rust types (crates/cranwhales/src/summary.rs, context.rs,
// follow.rs, server/wire.rs, server/fetch.rs) by `CRANWHALES_WRITE_TS=1 cargo test -p cranwhales wire`. Do not edit.

export type Totals = { 
/**
 * Rows with a package (a row is one file fetched); the other counts are over these rows.
 */
downloads: number, 
/**
 * Distinct `ip_id`s with a download (ids are renumbered daily: these do not add up over days).
 */
downloaders: number, 
/**
 * Sum of `size` over the downloads: the day's bandwidth.
 */
bytes: number, 
/**
 * Distinct packages downloaded.
 */
packages: number, 
/**
 * Rows without a package (`NA` or empty): tolerated, counted here, left out of every other
 * number.
 */
skipped_rows: number, };

export type Hour = { 
/**
 * UTC hour, 0–23; all 24 are listed, quiet ones with zeros, so the chart needs no gaps filled.
 */
hour: number, 
/**
 * Downloads by everyone in this hour.
 */
downloads: number, 
/**
 * The part of `downloads` by the top `count` whales of the request (the highlighted bar).
 */
whale_downloads: number, };

export type Behaviour = "archive" | "mirror" | "loop" | "classroom" | "steady" | "burst" | "session";

export type Mix = { 
/**
 * The OS family (`windows`, `macos`, `linux`, `other`, `none`) or architecture (`x86_64`,
 * `i386`, `other`, `none`).
 */
name: string, 
/**
 * Downloads by clients of this kind.
 */
downloads: number, };

export type Facts = { 
/**
 * Its downloads: what the shares below are out of.
 */
downloads: number, 
/**
 * Distinct packages it downloaded.
 */
packages: number, 
/**
 * Distinct packages downloaded by anyone that day: a mirror takes a large slice of them.
 */
day_packages: number, 
/**
 * Its most downloaded package (ties: the alphabetically first).
 */
top_package: string, 
/**
 * Its downloads of `top_package`: a loop fetches one package over and over.
 */
top_package_downloads: number, 
/**
 * Distinct (package, version) pairs.
 */
versions: number, 
/**
 * Its downloads whose request named no R version: a hint that the client is not R.
 */
no_r_version: number, 
/**
 * The same share for the whole day: 1.0 means the day's log records no R versions at all, so a
 * whale's share says nothing about it.
 */
day_no_r_share: number, 
/**
 * Its downloads by OS family (windows, macos, linux, other, none), most first.
 */
os: Array<Mix>, 
/**
 * Its downloads by architecture (x86_64, i386, other, none), most first.
 */
arch: Array<Mix>, 
/**
 * UTC hours with at least one download.
 */
active_hours: number, 
/**
 * Seconds since midnight (UTC) of its first download.
 */
first: number, 
/**
 * Seconds since midnight (UTC) of its last download.
 */
last: number, 
/**
 * The most downloads within 60 seconds (a window `[t, t+59]` starting at a download).
 */
burst: number, 
/**
 * The earliest `t` (seconds since midnight) whose window holds `burst` downloads.
 */
burst_start: number, 
/**
 * Lower quartile of the gaps between consecutive downloads in seconds (p = 0.25: element
 * `floor(p * (m - 1))` of the m sorted gaps); `None` with a single download.
 */
gap_q1: number | null, 
/**
 * Median of the same gaps (p = 0.5); `None` with a single download.
 */
gap_median: number | null, 
/**
 * Upper quartile of the same gaps (p = 0.75); `None` with a single download.
 */
gap_q3: number | null, 
/**
 * Downloads of the day's top-100 whales together (this whale's share is `downloads / it`).
 */
whale_downloads: number, };

export type Profile = { 
/**
 * The rule that matched (the first of `Behaviour::ALL` that holds).
 */
behaviour: Behaviour, 
/**
 * `behaviour` as people read it (`Behaviour::label`).
 */
label: string, 
/**
 * One sentence of what it did, in words, from the facts.
 */
sentence: string, 
/**
 * The numbers the rule and the sentence were computed from, shown in the detail view.
 */
facts: Facts, };

export type Whale = { 
/**
 * 1 is the day's biggest downloader (most downloads; ties: lower `ip_id` first).
 */
rank: number, 
/**
 * cranlogs' anonymised downloader id; renumbered every day, so only (date, `ip_id`) names a
 * whale.
 */
ip_id: number, 
/**
 * A memorable `adjective_animal` name that depends only on (date, `ip_id`), stable across
 * re-ingests.
 */
name: string, 
/**
 * Modal country code; `None` when every row's country was missing.
 */
country: string | null, 
/**
 * Its downloads (rows with a package).
 */
downloads: number, 
/**
 * Sum of their sizes.
 */
bytes: number, 
/**
 * Distinct packages among them.
 */
packages: number, 
/**
 * Downloads per UTC hour, 24 entries.
 */
hourly: number[], 
/**
 * What it is doing; `None` for a day stored before profiles existed.
 */
profile: Profile | null, };

export type DaySummary = { 
/**
 * `YYYY-MM-DD`.
 */
date: string, 
/**
 * Whales asked for after clamping to 1–100; `whales` has at most this many.
 */
count: number, 
/**
 * The whole day's totals, whales or not.
 */
totals: Totals, 
/**
 * All 24 UTC hours, each with the top `count` whales' part.
 */
hourly: Array<Hour>, 
/**
 * The top `count` whales, by rank.
 */
whales: Array<Whale>, };

export type DayInfo = { 
/**
 * `YYYY-MM-DD`.
 */
date: string, 
/**
 * The day's totals, so the day list can show its size without loading the day.
 */
totals: Totals, };

export type FollowStatus = { 
/**
 * Whether this server follows the source (`--follow`).
 */
on: boolean, 
/**
 * The newest day the source had when last looked at (`YYYY-MM-DD`): the day stored last, or
 * the newest stored one when the next was not published yet; null before the first look.
 */
source_newest: string | null, 
/**
 * When the source was last looked at (UTC, `YYYY-MM-DDTHH:MM:SSZ`).
 */
checked_at: string | null, 
/**
 * Looks at the source so far.
 */
checks: number, 
/**
 * Errors in a row (0 after a day stored or a 404).
 */
errors: number, 
/**
 * The back-off chosen after the last error, in milliseconds; null when the last look was
 * not an error.
 */
retry_ms: number | null, 
/**
 * The last error's one line; null when the last look was not an error.
 */
last_error: string | null, };

export type DayList = { 
/**
 * Every stored day with its totals, oldest first.
 */
days: Array<DayInfo>, 
/**
 * When the newest day was stored (UTC, `YYYY-MM-DDTHH:MM:SSZ`); null for an empty store.
 */
ingested_at: string | null, 
/**
 * The follower (`--follow`): whether it is on, the newest day the source had, when it last
 * looked.
 */
follow: FollowStatus, };

export type Download = { 
/**
 * `HH:MM:SS`, UTC.
 */
time: string, 
/**
 * Package name as logged.
 */
package: string, 
/**
 * Package version; `None` when the log has `NA`.
 */
version: string | null, 
/**
 * Bytes sent.
 */
size: number, 
/**
 * R version the client sent; `None` when it sent none.
 */
r_version: string | null, 
/**
 * R's architecture, e.g. `x86_64`; `None` when not logged.
 */
r_arch: string | null, 
/**
 * R's OS, e.g. `mingw32`, `linux-gnu`; `None` when not logged.
 */
r_os: string | null, 
/**
 * Two-letter country code of the client's address; `None` when not logged.
 */
country: string | null, };

export type WhaleDetail = { 
/**
 * `YYYY-MM-DD`.
 */
date: string, 
/**
 * The whale as listed in the day's summary, profile included.
 */
whale: Whale, 
/**
 * `HH:MM:SS` (UTC) of its first download.
 */
first: string, 
/**
 * `HH:MM:SS` (UTC) of its last download.
 */
last: string, 
/**
 * Every one of its downloads that day, chronological.
 */
downloads: Array<Download>, };

export type PackageDay = { 
/**
 * `YYYY-MM-DD`; with `bin` other than `day`, the first day of the bin (a Monday, the 1st of
 * a month, January 1st).
 */
date: string, 
/**
 * Stored days in this point: 1 for `bin=day`, up to 7/31/366 for a bin (so a partly stored
 * bin can be told from a quiet one).
 */
days: number, 
/**
 * Distinct ip_ids among its downloads; `None` for a day stored before this was counted.
 */
downloaders: number | null, 
/**
 * The day's (in a bin: the sum of its days') aggregate-only baseline (5% quantile of
 * per-package downloads, as `adjustedcranlogs` estimates CRAN-wide automated downloads);
 * `None` for a day stored before it was computed.
 */
baseline: number | null, 
/**
 * Every download of the package.
 */
downloads: number, 
/**
 * Of which by each day's top-N whales (N of the request).
 */
whale_downloads: number, 
/**
 * `downloads - whale_downloads`.
 */
without_whales: number, 
/**
 * `downloads` minus the days' baselines (not below 0 on any day); `None` when a day has no
 * baseline.
 */
adjusted: number | null, 
/**
 * Downloads under 1,000 bytes (partial transfers and probes); `None` when a day was stored
 * before these were counted (schema 3).
 */
small: number | null, 
/**
 * Downloads repeated by one downloader within 5 minutes of its previous download of the
 * package (small ones aside, so the two never overlap); `None` as for `small`.
 */
repeats: number | null, 
/**
 * `downloads - small - repeats`: the filters alone; `None` as for `small`.
 */
without_inflated: number | null, 
/**
 * `without_whales` minus the small and repeated downloads of everyone but the top-N whales:
 * whales and filters together, nothing taken out twice; `None` as for `small`.
 */
without_whales_inflated: number | null, };

export type PackageTotals = { 
/**
 * Every download of the package.
 */
downloads: number, 
/**
 * Of which by each day's top-N whales (N of the request).
 */
whale_downloads: number, 
/**
 * `downloads - whale_downloads`.
 */
without_whales: number, 
/**
 * `downloads` minus the days' baselines (not below 0 on any day); `None` when a day has no
 * baseline.
 */
adjusted: number | null, 
/**
 * Downloads under 1,000 bytes (partial transfers and probes); `None` when a day was stored
 * before these were counted (schema 3).
 */
small: number | null, 
/**
 * Downloads repeated by one downloader within 5 minutes of its previous download of the
 * package (small ones aside, so the two never overlap); `None` as for `small`.
 */
repeats: number | null, 
/**
 * `downloads - small - repeats`: the filters alone; `None` as for `small`.
 */
without_inflated: number | null, 
/**
 * `without_whales` minus the small and repeated downloads of everyone but the top-N whales:
 * whales and filters together, nothing taken out twice; `None` as for `small`.
 */
without_whales_inflated: number | null, };

export type Bin = "day" | "week" | "month" | "year";

export type Rank = { 
/**
 * 1 + the packages with more downloads (ties share a rank).
 */
rank: number, 
/**
 * Packages with at least one download on the stored days of the range.
 */
of: number, 
/**
 * Share of those packages with fewer downloads, in percent, one decimal.
 */
percentile: number, 
/**
 * Its downloads over the range (the number ranked).
 */
downloads: number, 
/**
 * `"1,204 of 6,891, 82.5 percentile"` (then `", without whales, repeats"` when filtered):
 * shown as is by the UI and the CLI.
 */
text: string, 
/**
 * What every package's count leaves out (`without=`: whales, small, repeats), as
 * packageRank ranks on filtered counts; empty: every download.
 */
without: Array<string>, 
/**
 * Stored days of the range not counted: stored before small and repeated downloads were
 * counted, when those are left out.
 */
days_without_filters: Array<string>, };

export type Distribution = { 
/**
 * 1, 2, 5, 10, 20, 50, …: one more than `counts`; the last is above every package's count.
 */
edges: number[], 
/**
 * Packages per bucket.
 */
counts: number[], };

export type PackageReport = { 
/**
 * The package name as stored (exact case).
 */
package: string, 
/**
 * First day of the range, `YYYY-MM-DD`.
 */
from: string, 
/**
 * Last day of the range, `YYYY-MM-DD`.
 */
to: string, 
/**
 * N: each day's top-N whales are what "without whales" leaves out.
 */
whales: number, 
/**
 * Every stored day in range, oldest first.
 */
days: Array<PackageDay>, 
/**
 * Sums over `days`.
 */
totals: PackageTotals, 
/**
 * How this compares with the aggregate-only correction, in words.
 */
note: string, 
/**
 * The two inflated-download filters, a sentence each with its threshold and how many
 * downloads of this package it leaves out over the range.
 */
filters_note: string, 
/**
 * How `days` are binned (`day`: one point per stored day).
 */
bin: Bin, 
/**
 * True when every count in `days` is a running sum from the range's first day.
 */
cumulative: boolean, 
/**
 * Its rank among every package downloaded on the stored days of the range (by downloads);
 * `None` when it had no download in the range.
 */
rank: Rank | null, 
/**
 * How all packages' downloads over the range are spread, for the histogram that marks this
 * one.
 */
distribution: Distribution, };

export type PackageComparison = { 
/**
 * First day of the range, `YYYY-MM-DD`.
 */
from: string, 
/**
 * Last day of the range, `YYYY-MM-DD`.
 */
to: string, 
/**
 * N of "without each day's top N whales".
 */
whales: number, 
/**
 * How each report's days are binned.
 */
bin: Bin, 
/**
 * True when each report's counts are running sums.
 */
cumulative: boolean, 
/**
 * One report per package (each with its rank; the distribution is the same in all).
 */
packages: Array<PackageReport>, };

export type TopPackage = { 
/**
 * 1 for the most downloaded (ties share a rank).
 */
rank: number, 
/**
 * The package name.
 */
package: string, 
/**
 * Downloads over the range.
 */
downloads: number, 
/**
 * Percent of all downloads in the range (three decimals).
 */
share: number, };

export type TrendingPackage = { 
/**
 * The package name.
 */
package: string, 
/**
 * Downloads over the range.
 */
downloads: number, 
/**
 * Downloads over the period just before it.
 */
before: number, 
/**
 * Downloads per stored day in the range ÷ per stored day before (two decimals; a package
 * without downloads before counts as 1).
 */
growth: number, };

export type TopList = { 
/**
 * First day of the range, `YYYY-MM-DD`.
 */
from: string, 
/**
 * Last day of the range, `YYYY-MM-DD`.
 */
to: string, 
/**
 * Stored days in the range.
 */
days: number, 
/**
 * Packages downloaded on them.
 */
packages: number, 
/**
 * Downloads on them.
 */
downloads: number, 
/**
 * The most downloaded, at most `limit`.
 */
top: Array<TopPackage>, 
/**
 * The period trending compares with: as many days just before `from` (`null` when the
 * range starts with the logs).
 */
before_from: string | null, 
/**
 * Its last day (the day before `from`).
 */
before_to: string | null, 
/**
 * Stored days in it.
 */
before_days: number, 
/**
 * The fastest growing, at most `limit` (empty without stored days before).
 */
trending: Array<TrendingPackage>, 
/**
 * What trending means, in a sentence (shown on the page).
 */
rule: string, 
/**
 * What every count of both lists leaves out (`without=`: whales, small, repeats, in this
 * order; whales are each day's top 100 downloaders); empty: every download.
 */
without: Array<string>, 
/**
 * Stored days of the range or of the period before it not counted: stored before small and
 * repeated downloads were counted, when those are left out (`days` and `before_days` count
 * the others).
 */
days_without_filters: Array<string>, };

export type CalendarDay = { 
/**
 * `YYYY-MM-DD`.
 */
date: string, 
/**
 * Downloads that day.
 */
downloads: number, };

export type Calendar = { 
/**
 * The first day of the CRAN logs, `2012-10-01`.
 */
first: string, 
/**
 * Yesterday (UTC): the newest day that can have a log.
 */
last: string, 
/**
 * Every stored day, oldest first.
 */
days: Array<CalendarDay>, };

export type PackageName = { 
/**
 * The package name as stored (exact case).
 */
package: string, 
/**
 * Downloads over all stored days.
 */
downloads: number, 
/**
 * Stored days with at least one download of it.
 */
days: number, };

export type TrendDay = { 
/**
 * `YYYY-MM-DD`.
 */
date: string, 
/**
 * Downloads that day (all packages).
 */
downloads: number, 
/**
 * Distinct `ip_id`s with a download that day.
 */
downloaders: number, 
/**
 * Downloads of the day's top whale.
 */
top1: number, 
/**
 * Downloads of the day's top 6 whales together (the default count).
 */
top6: number, 
/**
 * Downloads of the day's top 25 whales together (the most the UI shows).
 */
top25: number, 
/**
 * Top-100 whales per behaviour (every behaviour listed); `None` for a day stored before
 * profiles existed.
 */
behaviours: { [key in Behaviour]?: number } | null, };

export type Trends = { 
/**
 * First day asked for, `YYYY-MM-DD`.
 */
from: string, 
/**
 * Last day asked for, `YYYY-MM-DD`.
 */
to: string, 
/**
 * Every stored day in `from..=to`, oldest first.
 */
days: Array<TrendDay>, };

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
