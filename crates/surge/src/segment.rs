//! Execution segments: one test plan spread over several generator processes (hosts).
//!
//! `--segment K/N` runs the share of segment K (1-based) of N of one plan; `--start-at` makes every
//! generator start the plan at the same wall-clock instant. Shares are *interleaved*: user w
//! (0-based, in start order) belongs to segment `w mod N + 1`, request k of the open-model bench
//! schedule to segment `k mod N + 1`. So each generator ramps up with the plan and carries ~1/N of
//! the load at every moment (contiguous blocks would put the whole early ramp on segment 1 and
//! leave segment N idle until the end of the ramp). Ids, start times and the loaded phase stay
//! the plan's, so merged runs have unique worker ids and the schedule of one big run.
//!
//! [`RunConfig`] is the session CSVs' JSON comment line (the run's settings, shinycannon's keys),
//! written and read by serde as one type; `Tag` is what it says about a segment's plan;
//! `check_set` decides whether run directories are exactly the segments of one plan.

use crate::timefmt;
use std::fmt;
use std::str::FromStr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Segment K (1-based) of N of a plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Segment {
    /// K, 1..=count.
    pub index: u32,
    /// N, at least 1.
    pub count: u32,
}

/// A bad `--segment`, `--start-at`, or a set of segments that is not one plan's 1..=N.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SegmentError {
    /// `--segment` text that is not K/N with 1 <= K <= N.
    #[error("segment \"{text}\": {why}")]
    Segment {
        /// As given.
        text: String,
        /// What is wrong with it.
        why: String,
    },
    /// `--start-at` that is not an RFC 3339 time.
    #[error("start time \"{0}\": expected an RFC 3339 time, e.g. 2026-05-01T12:00:00Z")]
    StartAt(String),
    /// One of the two flags, named.
    #[error("{flag}: {err}")]
    Flag {
        /// `--segment` or `--start-at`.
        flag: &'static str,
        /// What is wrong with its value.
        err: Box<SegmentError>,
    },
    /// `--start-at` more than [`MAX_AHEAD`] ahead.
    #[error("--start-at {at}: {ahead} from now; a plan may start at most {max} ahead")]
    TooFarAhead {
        /// The time, RFC 3339.
        at: String,
        /// How far ahead it is.
        ahead: String,
        /// The limit.
        max: String,
    },
    /// `check_set` of nothing.
    #[error("no segments given")]
    NoSegments,
    /// Two runs of different plans.
    #[error("{0}")]
    DifferentPlans(Box<PlanMismatch>),
    /// A segment given twice.
    #[error("segment {seg} given twice: {other} and {name}")]
    Twice {
        /// The segment.
        seg: Segment,
        /// Its first run.
        other: String,
        /// Its second run.
        name: String,
    },
    /// Segments missing from the set.
    #[error("segment{} {} missing (got {given_n} of {n}: {})", if missing.len() > 1 { "s" } else { "" }, missing.join(", "), given.join(", "))]
    Missing {
        /// The missing ones, `K/N`.
        missing: Vec<String>,
        /// How many were given.
        given_n: usize,
        /// N.
        n: u32,
        /// The runs given.
        given: Vec<String>,
    },
}

/// Two runs given as segments of one plan whose plans differ.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{name} (segment {seg}) and {first_name} (segment {first_seg}) are segments of different plans: {what} {a} vs {b}")]
pub struct PlanMismatch {
    /// The run that differs.
    pub name: String,
    /// Its segment.
    pub seg: Segment,
    /// The first run.
    pub first_name: String,
    /// Its segment.
    pub first_seg: Segment,
    /// Which part of the plan differs.
    pub what: &'static str,
    /// Its value in `name`.
    pub a: String,
    /// Its value in `first_name`.
    pub b: String,
}

impl FromStr for Segment {
    type Err = SegmentError;
    fn from_str(s: &str) -> Result<Segment, SegmentError> {
        let bad = |why: &str| SegmentError::Segment {
            text: s.to_string(),
            why: why.to_string(),
        };
        let (k, n) = s
            .split_once('/')
            .ok_or_else(|| bad("expected K/N, e.g. 2/4"))?;
        let num = |x: &str| {
            x.trim()
                .parse::<u32>()
                .map_err(|_| bad("expected K/N, e.g. 2/4"))
        };
        let (index, count) = (num(k)?, num(n)?);
        if count == 0 {
            return Err(bad("N must be at least 1"));
        }
        if index == 0 || index > count {
            return Err(bad(&format!("K must be 1..={count}")));
        }
        Ok(Segment { index, count })
    }
}

impl fmt::Display for Segment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl Segment {
    /// Whether item `i` of the plan (a user, or a request of the bench schedule) is this segment's.
    pub fn owns(&self, i: u64) -> bool {
        i % u64::from(self.count) == u64::from(self.index - 1)
    }

    /// The plan's index of this segment's `j`-th item (j = 0, 1, ...).
    pub fn nth(&self, j: u64) -> u64 {
        j * u64::from(self.count) + u64::from(self.index - 1)
    }

    /// The plan's user ids this segment runs, in start order.
    pub fn users(&self, plan_users: u32) -> impl Iterator<Item = u32> {
        (self.index - 1..plan_users).step_by(self.count as usize)
    }
}

/// Parses `--start-at`: an RFC 3339 time (`2026-05-01T12:00:00Z`, `...T14:00:00.250+02:00`) as
/// Unix ms.
pub fn parse_start_at(s: &str) -> Result<i64, SegmentError> {
    timefmt::parse_iso(s.trim()).ok_or_else(|| SegmentError::StartAt(s.to_string()))
}

/// `--segment` and `--start-at` as given on the command line, checked: each error is one line
/// naming the flag.
pub fn parse_flags(
    segment: Option<&str>,
    start_at: Option<&str>,
) -> Result<(Option<Segment>, Option<i64>), SegmentError> {
    let flag = |flag| {
        move |e| SegmentError::Flag {
            flag,
            err: Box::new(e),
        }
    };
    let segment = (segment.map(str::parse::<Segment>).transpose()).map_err(flag("--segment"))?;
    let start_at = (start_at.map(parse_start_at).transpose()).map_err(flag("--start-at"))?;
    if let Some(ms) = start_at {
        let ahead = ms.saturating_sub(now_ms());
        if ahead > MAX_AHEAD.as_millis() as i64 {
            return Err(SegmentError::TooFarAhead {
                at: timefmt::format_iso(ms),
                ahead: clock(Duration::from_millis(ahead as u64)),
                max: clock(MAX_AHEAD),
            });
        }
    }
    Ok((segment, start_at))
}

/// How far ahead `--start-at` may be: generators are started for a run, not parked for days (a
/// typo in the year would otherwise wait silently for decades).
pub const MAX_AHEAD: Duration = Duration::from_secs(24 * 3600);

fn now_ms() -> i64 {
    (SystemTime::now().duration_since(UNIX_EPOCH))
        .unwrap_or_default()
        .as_millis() as i64
}

/// A wait as `1h 02m 03s` / `2m 03s` / `3s`.
pub fn clock(d: Duration) -> String {
    let s = d.as_secs();
    match (s / 3600, s / 60 % 60, s % 60) {
        (0, 0, sec) => format!("{sec}s"),
        (0, m, sec) => format!("{m}m {sec:02}s"),
        (h, m, sec) => format!("{h}h {m:02}m {sec:02}s"),
    }
}

/// Where a run starts: the shared plan start (`--start-at`) or now, as a monotonic instant and
/// as Unix ms, and how late this process is for it.
#[derive(Debug, Clone, Copy)]
pub struct Start {
    /// The plan's start on the monotonic clock (in the past for a late start).
    pub t0: tokio::time::Instant,
    /// The same instant as Unix ms.
    pub unix_ms: i64,
    /// How long after the plan's start this process got there (0 when on time).
    pub late: Duration,
}

impl Start {
    /// The start of the plan: `start_at_ms` (a barrier every generator waits for) or now.
    pub fn at(start_at_ms: Option<i64>) -> Start {
        let now = tokio::time::Instant::now();
        let now_wall = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        let Some(ms) = start_at_ms else {
            return Start {
                t0: now,
                unix_ms: now_wall.as_millis() as i64,
                late: Duration::ZERO,
            };
        };
        let at = Duration::from_millis(ms.max(0) as u64);
        match at.checked_sub(now_wall) {
            Some(ahead) => Start {
                t0: now + ahead,
                unix_ms: ms,
                late: Duration::ZERO,
            },
            None => {
                let late = now_wall - at;
                Start {
                    t0: now.checked_sub(late).unwrap_or(now),
                    unix_ms: ms,
                    late,
                }
            }
        }
    }

    /// Announces a future start on stderr and counts down to it until `t0` or until `stopped()`:
    /// on a terminal one line rewritten every second, otherwise a line a minute (every 10 s in
    /// the last minute). Returns at once when the start is not ahead.
    pub async fn count_down(&self, stopped: impl Fn() -> bool) {
        use std::io::Write as _;
        let now = tokio::time::Instant::now();
        if self.t0 <= now {
            return;
        }
        let tty = std::io::IsTerminal::is_terminal(&std::io::stderr());
        eprintln!(
            "surge: waiting for --start-at {} (in {})",
            timefmt::format_iso(self.unix_ms),
            clock(self.t0 - now)
        );
        let mut last_line = now;
        loop {
            let left = self
                .t0
                .saturating_duration_since(tokio::time::Instant::now());
            if left.is_zero() || stopped() {
                break;
            }
            let every = match (tty, left > Duration::from_secs(60)) {
                (true, _) => Duration::from_secs(1),
                (false, true) => Duration::from_secs(60),
                (false, false) => Duration::from_secs(10),
            };
            if tty {
                eprint!("\rsurge: starting in {}   ", clock(left));
                let _ = std::io::stderr().flush();
            } else if last_line.elapsed() >= every {
                eprintln!("surge: starting in {}", clock(left));
                last_line = tokio::time::Instant::now();
            }
            let tick = tokio::time::Instant::now() + Duration::from_millis(200);
            tokio::time::sleep_until(self.t0.min(tick)).await;
        }
        if tty {
            eprintln!("\rsurge: started                    ");
        }
    }

    /// The one stderr line of a late start (None when on time).
    pub fn late_line(&self, what: &str) -> Option<String> {
        (!self.late.is_zero()).then(|| {
            format!(
                "surge: late start: --start-at {} passed {:.3} s before this process was ready; {what} start at once",
                timefmt::format_iso(self.unix_ms),
                self.late.as_secs_f64()
            )
        })
    }
}

/// The run's settings in the second `#` line of every session CSV, in shinycannon's JSON shape
/// (its keys, camelCase); surge adds `tool`, `shape` (a shape other than a ramp), `segment`
/// ("K/N") and `startAt` (RFC 3339) for a segment, and `surge merge` marks its copies `merged`.
/// Every field has a default, so a shinycannon CSV's line reads too.
#[derive(serde::Serialize, serde::Deserialize, Debug, Clone, Default, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct RunConfig {
    /// The app's base URL.
    pub app_url: String,
    /// `--debug-log`.
    pub debug_log: bool,
    /// The loaded phase, minutes.
    pub loaded_duration_minutes: f64,
    /// `--log-level` (`WARN`, ...).
    pub log_level: String,
    /// A merged run's copy of a segment's CSV (`surge merge`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub merged: Option<bool>,
    /// `--message-timeout`, ms.
    pub message_timeout_ms: u64,
    /// The run directory.
    pub output_dir: String,
    /// `--overwrite-output`.
    pub overwrite_output: bool,
    /// The recording replayed, as given.
    pub recording_path: String,
    /// `--segment`, "K/N".
    #[serde(skip_serializing_if = "Option::is_none")]
    pub segment: Option<String>,
    /// A load shape other than a ramp, as printed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shape: Option<String>,
    /// `--start-at`, RFC 3339.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_at: Option<String>,
    /// A ramp's start interval, ms (0 for other shapes).
    pub start_interval_ms: u64,
    /// `--think-time`.
    pub think_time: String,
    /// `surge <version>`.
    pub tool: String,
    /// Users at the peak (shinycannon's workers).
    pub workers: u32,
}

impl RunConfig {
    /// The config of a session CSV's `#` lines (`#` removed or not): the first JSON object line
    /// among its first two; None when there is none or it is not one.
    pub fn from_comments<S: AsRef<str>>(lines: &[S]) -> Option<RunConfig> {
        let line = lines.iter().take(2).find_map(|l| {
            let l = l.as_ref().trim();
            let l = l.strip_prefix('#').unwrap_or(l).trim();
            l.starts_with('{').then_some(l)
        })?;
        serde_json::from_str(line).ok()
    }

    /// The JSON text of the line (without its `#`).
    pub fn to_line(&self) -> String {
        serde_json::to_string(self).expect("a run config serialises")
    }
}

/// What a segment's run directory says about its plan (fields of its [`RunConfig`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Tag {
    /// Which segment this run is.
    pub segment: Segment,
    /// The plan: (what, value) of users, start interval, loaded duration, think time, start
    /// time and segment count.
    pub plan: Vec<(&'static str, String)>,
}

impl Tag {
    /// The tag of a session CSV's config; None for a run that is not a segment, or a merged
    /// run.
    pub fn from_config(config: &RunConfig) -> Option<Result<Tag, SegmentError>> {
        let seg = config.segment.as_deref()?;
        if config.merged.is_some() {
            return None;
        }
        let segment = match seg.parse::<Segment>() {
            Ok(s) => s,
            Err(e) => return Some(Err(e)),
        };
        let minutes = serde_json::to_string(&config.loaded_duration_minutes).unwrap_or_default();
        let plan = vec![
            ("users", config.workers.to_string()),
            ("start interval (ms)", config.start_interval_ms.to_string()),
            ("loaded duration (min)", minutes),
            ("think time", config.think_time.clone()),
            (
                "--start-at",
                config.start_at.clone().unwrap_or_else(|| "none".into()),
            ),
            ("segment count", segment.count.to_string()),
        ];
        Some(Ok(Tag { segment, plan }))
    }

    /// The tag in the `#` lines of a session CSV's text, if it has one.
    pub fn from_csv_head(text: &str) -> Option<Result<Tag, SegmentError>> {
        let lines: Vec<&str> = text.lines().take(2).collect();
        Tag::from_config(&RunConfig::from_comments(&lines)?)
    }
}

/// Checks that `runs` (name, tag) are exactly the segments 1..=N of one plan, each once; the
/// error says which run differs, or which segment is duplicated or missing.
pub fn check_set(runs: &[(String, Tag)]) -> Result<(), SegmentError> {
    let Some((first_name, first)) = runs.first() else {
        return Err(SegmentError::NoSegments);
    };
    for (name, t) in &runs[1..] {
        if let Some(((what, a), (_, b))) = t.plan.iter().zip(&first.plan).find(|(x, y)| x != y) {
            return Err(SegmentError::DifferentPlans(Box::new(PlanMismatch {
                name: name.clone(),
                seg: t.segment,
                first_name: first_name.clone(),
                first_seg: first.segment,
                what,
                a: a.clone(),
                b: b.clone(),
            })));
        }
    }
    let n = first.segment.count;
    let mut seen: Vec<Option<&str>> = vec![None; n as usize];
    for (name, t) in runs {
        let slot = &mut seen[(t.segment.index - 1) as usize];
        if let Some(other) = slot {
            return Err(SegmentError::Twice {
                seg: t.segment,
                other: other.to_string(),
                name: name.clone(),
            });
        }
        *slot = Some(name);
    }
    let missing: Vec<String> = (1..=n)
        .filter(|k| seen[(k - 1) as usize].is_none())
        .map(|k| format!("{k}/{n}"))
        .collect();
    if !missing.is_empty() {
        return Err(SegmentError::Missing {
            missing,
            given_n: runs.len(),
            n,
            given: runs.iter().map(|(name, _)| name.clone()).collect(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_rejects() {
        assert_eq!("2/4".parse::<Segment>(), Ok(Segment { index: 2, count: 4 }));
        for bad in ["0/4", "5/4", "1/0", "x", "2-4", "/4", "1/", "-1/4", "a/b"] {
            assert!(bad.parse::<Segment>().is_err(), "{bad}");
        }
        assert!(parse_start_at("2026-05-01T12:00:00Z").is_ok());
        assert!(parse_start_at("tomorrow").is_err());
    }

    #[test]
    fn interleaved_shares_cover_the_plan_once() {
        let n = 4;
        let mut seen = vec![0; 10];
        for k in 1..=n {
            let s = Segment { index: k, count: n };
            for w in s.users(10) {
                assert!(s.owns(u64::from(w)));
                seen[w as usize] += 1;
            }
            assert_eq!(s.nth(0), u64::from(k - 1));
            assert_eq!(s.nth(2), u64::from(k - 1 + 2 * n));
        }
        assert_eq!(seen, vec![1; 10]);
        let s = Segment { index: 2, count: 4 };
        assert_eq!(s.users(10).collect::<Vec<_>>(), vec![1, 5, 9]);
    }

    fn tag(seg: &str, users: u32) -> (String, Tag) {
        let cfg = RunConfig {
            segment: Some(seg.into()),
            workers: users,
            start_interval_ms: 50,
            ..Default::default()
        };
        (
            format!("run{seg}"),
            Tag::from_config(&cfg).unwrap().unwrap(),
        )
    }

    #[test]
    fn set_must_be_complete_and_of_one_plan() {
        assert!(check_set(&[tag("1/2", 8), tag("2/2", 8)]).is_ok());
        let e = check_set(&[tag("1/3", 8), tag("3/3", 8)])
            .unwrap_err()
            .to_string();
        assert!(e.contains("segment 2/3 missing"), "{e}");
        let e = check_set(&[tag("1/2", 8), tag("1/2", 8)])
            .unwrap_err()
            .to_string();
        assert!(e.contains("segment 1/2 given twice"), "{e}");
        let e = check_set(&[tag("1/2", 8), tag("2/2", 9)])
            .unwrap_err()
            .to_string();
        assert!(e.contains("different plans: users 9 vs 8"), "{e}");
        let merged = RunConfig {
            segment: Some("1/2".into()),
            merged: Some(true),
            ..Default::default()
        };
        assert!(Tag::from_config(&merged).is_none());
        let line =
            RunConfig::from_comments(&["# surge replay", &format!("# {}", merged.to_line())]);
        assert_eq!(line.as_ref(), Some(&merged));
    }
}
