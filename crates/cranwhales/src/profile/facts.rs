//! Measuring a whale's facts in one pass over its rows (already in time order), with scratch
//! memory reused across the whales of a day: per-package counters are indexed by dictionary id
//! and reset by stamping, so a whale costs time in its own rows only.

use crate::summary::{Facts, Mix};

/// One download of a whale, as the day's dictionary ids.
#[derive(Debug, Clone, Copy)]
pub struct Row {
    /// Seconds since midnight.
    pub secs: u32,
    /// Package id (counts distinct packages and the top package).
    pub package: u32,
    /// Package+version id.
    pub pkgver: u32,
    /// R build id (r_version, r_arch, r_os), classified by `EnvClass`.
    pub env: u32,
}

/// What a profile needs to know about one R build of the day.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EnvClass {
    /// No R version in the row: not an R client (a mirror, crawler or plain HTTP tool).
    pub no_r: bool,
    /// Index into `OS`.
    pub os: u8,
    /// Index into `ARCH`.
    pub arch: u8,
}

const OS: [&str; 5] = ["windows", "macos", "linux", "other", "none"];
const ARCH: [&str; 4] = ["x86_64", "i386", "other", "none"];

impl EnvClass {
    /// Classifies an R build from its `r_version`, `r_arch` and `r_os` fields.
    pub fn of(r_version: Option<&str>, r_arch: Option<&str>, r_os: Option<&str>) -> EnvClass {
        let os = match r_os {
            None => 4,
            Some(s) if s.starts_with("mingw") => 0,
            Some(s) if s.starts_with("darwin") => 1,
            Some(s) if s.starts_with("linux") => 2,
            Some(_) => 3,
        };
        let arch = match r_arch {
            None => 3,
            Some("x86_64") => 0,
            Some("i386" | "i486" | "i586" | "i686") => 1,
            Some(_) => 2,
        };
        EnvClass {
            no_r: r_version.is_none(),
            os,
            arch,
        }
    }
}

/// What the whole day contributes to every whale's facts.
#[derive(Debug, Clone, Copy)]
pub struct DayContext {
    /// Distinct packages downloaded that day.
    pub packages: u64,
    /// Share of the day's downloads that named no R version.
    pub no_r_share: f64,
    /// Downloads of the top-100 whales together.
    pub whale_downloads: u64,
}

/// Reusable per-thread scratch for measuring whales one after the other.
#[derive(Default)]
pub struct Profiler {
    stamp: u32,
    /// Per package id: (stamp, downloads by the current whale).
    package: Vec<(u32, u32)>,
    /// Per package+version id: stamp of the last whale that had it.
    pkgver: Vec<u32>,
    /// Packages of the current whale, in first-download order.
    touched: Vec<u32>,
    times: Vec<u32>,
    gaps: Vec<u32>,
}

impl Profiler {
    /// Measures one whale. `rows` must be in time order; `envs` classifies every env id and
    /// `names` names every package id of the day.
    pub fn measure(
        &mut self,
        rows: impl IntoIterator<Item = Row>,
        envs: &[EnvClass],
        names: &[String],
        day: &DayContext,
    ) -> Facts {
        self.stamp = self.stamp.wrapping_add(1);
        if self.stamp == 0 {
            // Wrapped: old stamps could collide with new ones.
            self.package.iter_mut().for_each(|p| p.0 = 0);
            self.pkgver.iter_mut().for_each(|p| *p = 0);
            self.stamp = 1;
        }
        let st = self.stamp;
        self.touched.clear();
        self.times.clear();
        let (mut versions, mut no_r) = (0u64, 0u64);
        let (mut os, mut arch) = ([0u64; OS.len()], [0u64; ARCH.len()]);
        let mut hours = 0u32;
        for r in rows {
            let p = r.package as usize;
            if p >= self.package.len() {
                self.package.resize(p + 1, (0, 0));
            }
            if self.package[p].0 != st {
                self.package[p] = (st, 0);
                self.touched.push(r.package);
            }
            self.package[p].1 += 1;
            let pv = r.pkgver as usize;
            if pv >= self.pkgver.len() {
                self.pkgver.resize(pv + 1, 0);
            }
            if self.pkgver[pv] != st {
                self.pkgver[pv] = st;
                versions += 1;
            }
            let e = envs[r.env as usize];
            no_r += u64::from(e.no_r);
            os[e.os as usize] += 1;
            arch[e.arch as usize] += 1;
            hours |= 1 << (r.secs / 3600).min(23);
            self.times.push(r.secs);
        }
        let times = &self.times;
        let n = times.len() as u64;
        let (top_package, top_package_downloads) = self.top(names);
        let (burst, burst_start) = burst(times);
        let [gap_q1, gap_median, gap_q3] = quartiles(times, &mut self.gaps);
        Facts {
            downloads: n,
            packages: self.touched.len() as u64,
            day_packages: day.packages,
            top_package,
            top_package_downloads,
            versions,
            no_r_version: no_r,
            day_no_r_share: day.no_r_share,
            os: mix(&OS, &os),
            arch: mix(&ARCH, &arch),
            active_hours: hours.count_ones(),
            first: times.first().copied().unwrap_or(0),
            last: times.last().copied().unwrap_or(0),
            burst,
            burst_start,
            gap_q1,
            gap_median,
            gap_q3,
            whale_downloads: day.whale_downloads,
        }
    }

    /// The current whale's downloads per package id, in first-download order.
    pub fn package_counts(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        (self.touched.iter()).map(|&p| (p, self.package[p as usize].1))
    }

    fn top(&self, names: &[String]) -> (String, u64) {
        let best = self.package_counts().max_by(|a, b| {
            // Most downloads; among equals the alphabetically first name wins.
            (a.1.cmp(&b.1)).then_with(|| names[b.0 as usize].cmp(&names[a.0 as usize]))
        });
        best.map_or((String::new(), 0), |(p, c)| {
            (names[p as usize].clone(), u64::from(c))
        })
    }
}

/// The most downloads in a window `[t, t + 59]` starting at a download, and its earliest `t`.
fn burst(times: &[u32]) -> (u64, u32) {
    let (mut best, mut start, mut hi) = (0usize, times.first().copied().unwrap_or(0), 0usize);
    for lo in 0..times.len() {
        if lo > 0 && times[lo] == times[lo - 1] {
            continue;
        }
        hi = hi.max(lo);
        while hi + 1 < times.len() && times[hi + 1] <= times[lo] + 59 {
            hi += 1;
        }
        if hi - lo + 1 > best {
            (best, start) = (hi - lo + 1, times[lo]);
        }
    }
    (best as u64, start)
}

/// Quartiles of the gaps between consecutive `times`: element `floor(p * (m - 1))` of the m
/// sorted gaps for p = 1/4, 1/2, 3/4, found by selection (linear) rather than a sort.
fn quartiles(times: &[u32], gaps: &mut Vec<u32>) -> [Option<u32>; 3] {
    gaps.clear();
    gaps.extend(times.windows(2).map(|w| w[1] - w[0]));
    let m = gaps.len();
    if m == 0 {
        return [None; 3];
    }
    let at = |num: usize| num * (m - 1) / 4;
    let (k1, k2, k3) = (at(1), at(2), at(3));
    let (left, &mut med, right) = gaps.select_nth_unstable(k2);
    let q1 = if k1 == k2 {
        med
    } else {
        *left.select_nth_unstable(k1).1
    };
    let q3 = if k3 == k2 {
        med
    } else {
        *right.select_nth_unstable(k3 - k2 - 1).1
    };
    [Some(q1), Some(med), Some(q3)]
}

fn mix(names: &[&str], counts: &[u64]) -> Vec<Mix> {
    let mut v: Vec<Mix> = (names.iter().zip(counts))
        .filter(|(_, &n)| n > 0)
        .map(|(name, &downloads)| Mix {
            name: (*name).to_owned(),
            downloads,
        })
        .collect();
    v.sort_by_key(|m| std::cmp::Reverse(m.downloads));
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quartiles_are_lower_nearest_rank() {
        let mut g = Vec::new();
        // gaps 1, 2, 3, 10 → m = 4: q1 = g[0], median = g[1], q3 = g[2].
        assert_eq!(
            quartiles(&[0, 1, 3, 6, 16], &mut g),
            [Some(1), Some(2), Some(3)]
        );
        assert_eq!(quartiles(&[5], &mut g), [None; 3]);
        assert_eq!(quartiles(&[5, 9], &mut g), [Some(4); 3]);
        // Against a sort on pseudo-random data.
        let mut t = vec![0u32];
        let mut x = 7u32;
        for _ in 0..999 {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
            t.push(t.last().unwrap() + (x >> 16) % 300);
        }
        let mut sorted: Vec<u32> = t.windows(2).map(|w| w[1] - w[0]).collect();
        sorted.sort();
        let q = |p: usize| Some(sorted[p * (sorted.len() - 1) / 4]);
        assert_eq!(quartiles(&t, &mut g), [q(1), q(2), q(3)]);
    }

    #[test]
    fn burst_counts_a_60_second_window_from_a_download() {
        assert_eq!(burst(&[]), (0, 0));
        assert_eq!(burst(&[10, 10, 69, 70, 200]), (3, 10));
        assert_eq!(burst(&[0, 100, 100, 159, 300]), (3, 100));
    }

    #[test]
    fn measure_counts_packages_versions_and_clients() {
        let names: Vec<String> = ["b", "a", "c"].map(String::from).to_vec();
        let envs = [
            EnvClass::of(Some("3.1.2"), Some("x86_64"), Some("mingw32")),
            EnvClass::of(None, None, None),
        ];
        let day = DayContext {
            packages: 10,
            no_r_share: 0.5,
            whale_downloads: 100,
        };
        let row = |secs, package, pkgver, env| Row {
            secs,
            package,
            pkgver,
            env,
        };
        let mut p = Profiler::default();
        let rows = [
            row(0, 0, 0, 0),
            row(3600, 1, 1, 1),
            row(3601, 0, 2, 1),
            row(7300, 1, 1, 0),
        ];
        let f = p.measure(rows, &envs, &names, &day);
        assert_eq!(
            (f.downloads, f.packages, f.versions, f.no_r_version),
            (4, 2, 3, 2)
        );
        // "a" and "b" both have 2: the alphabetically first wins.
        assert_eq!((f.top_package.as_str(), f.top_package_downloads), ("a", 2));
        assert_eq!((f.active_hours, f.first, f.last), (3, 0, 7300));
        assert_eq!(f.os[0].downloads + f.os[1].downloads, 4);
        assert_eq!(p.package_counts().collect::<Vec<_>>(), [(0, 2), (1, 2)]);
        // The next whale starts from zero.
        let f = p.measure([row(5, 2, 3, 0)], &envs, &names, &day);
        assert_eq!(
            (f.packages, f.versions, f.top_package.as_str()),
            (1, 1, "c")
        );
        assert_eq!(p.package_counts().collect::<Vec<_>>(), [(2, 1)]);
    }
}
