// Which versions the package chart marks as releases. `/releases` gives every version's first
// stored day with a download; one first downloaded after the package's first stored day (`after`
// set) is a release only when it is newer than every version downloaded before that day. A
// version's first download alone is no release: an archive crawler or a pinned install fetching
// Rcpp 0.7.7 in 2015 is seen the same way, for a popular package on most days, and drew a dotted
// "release" line a day, labelled with versions years old. Nor is a version no one takes up: a
// release has at least 1% of the package's downloads over the 7 days after its first (when any of
// them is stored); Rcpp "1.2" and "1.3", twice each in 2015 (Rcpp was at 0.11.3), are not.
import type { Release } from "./api";

/** The least share of the package's downloads a release has over the 7 days after its first. */
const TAKEN_UP = 0.01;

/** Versions compared as R's package_version does: numbers separated by `.` or `-`, part by
 * part, a missing part lowest (1.0 < 1.0.0 < 1.0.1); text that is not numbers as text. */
export function compareVersions(a: string, b: string): number {
  const pa = a.split(/[.-]/).map(Number);
  const pb = b.split(/[.-]/).map(Number);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const x = pa[i] ?? -1;
    const y = pb[i] ?? -1;
    if (Number.isNaN(x) || Number.isNaN(y)) return a < b ? -1 : a > b ? 1 : 0;
    if (x !== y) return x - y;
  }
  return 0;
}

/** The versions of `all` that are releases by the rule above, in their order. */
export function newReleases(all: Release[]): Release[] {
  return all.filter(
    (v) =>
      v.after !== null &&
      v.version !== null &&
      (v.shares.find((x) => x.days === 7)?.share ?? 1) >= TAKEN_UP &&
      all.every((o) => o.first_day >= v.first_day || o.version === null || compareVersions(o.version, v.version!) < 0),
  );
}
