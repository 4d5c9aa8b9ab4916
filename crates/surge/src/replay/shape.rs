//! Load shapes of a replay: how many users are asked for at each moment. Three kinds cover
//! Gatling's injection profiles: a ramp (shinycannon's: user w starts at w × interval; interval 0
//! starts them all at once), stages (`--stages '2m:50, 5m:50, 1m:0'`: a target number of
//! concurrent users, linear between stage ends) and an open model (`--arrival-rate 2/s`: new
//! sessions at a fixed rate whatever the app's speed, bounded by `--max-users`).

use crate::timefmt::parse_duration;
use std::fmt;
use std::time::Duration;

/// One stage of `--stages`: reach `users` concurrent users by the end of `duration`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stage {
    /// How long the stage lasts.
    pub duration: Duration,
    /// Users asked for at its end (linear from the previous stage's value; the first starts at 0).
    pub users: u32,
}

/// How users are started and stopped during a replay.
#[derive(Debug, Clone, PartialEq)]
pub enum Shape {
    /// shinycannon's: `users` users, user w starts at w × `interval`, all loop until `loaded`
    /// after the last start.
    Ramp {
        /// Users in the plan.
        users: u32,
        /// Delay between user starts (0: all at once).
        interval: Duration,
        /// How long all users keep looping after the last one started.
        loaded: Duration,
    },
    /// `--stages`: concurrent users follow the stages' targets.
    Stages(Vec<Stage>),
    /// `--arrival-rate`: one new single-session user every 1/`per_sec` seconds during `duration`,
    /// never more than `max_users` at once (arrivals beyond it are dropped and counted).
    Arrivals {
        /// New sessions per second.
        per_sec: f64,
        /// How long arrivals go on.
        duration: Duration,
        /// Most users at once.
        max_users: u32,
    },
}

/// The stages of `--stages`, in order.
#[derive(Debug, Clone, PartialEq)]
pub struct Stages(pub Vec<Stage>);

/// A `--stages` or `--arrival-rate` that does not parse; quotes the flag's text.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ShapeError {
    /// One stage item is wrong.
    #[error("--stages \"{text}\": \"{item}\" {why}")]
    Stage {
        /// The flag's text.
        text: String,
        /// The item at fault.
        item: String,
        /// What is wrong with it (for a duration, the grammar's reason: a bare `2` says it
        /// needs a unit, as every other duration flag does).
        why: String,
    },
    /// Every stage asks for 0 users.
    #[error("--stages \"{0}\": no stage asks for any user")]
    NoUsers(String),
    /// The stages add up to no time.
    #[error("--stages \"{0}\": the stages last no time")]
    NoTime(String),
    /// Not a positive rate per s, m or h (at most 100,000/s).
    #[error("--arrival-rate \"{0}\": expected sessions per time, e.g. 2/s or 30/m")]
    Rate(String),
}

/// Parses `--stages`: comma-separated `DURATION:USERS` items, e.g. `2m:50, 5m:50, 1m:0`.
pub fn parse_stages(s: &str) -> Result<Stages, ShapeError> {
    let bad = |item: &str, why: String| ShapeError::Stage {
        text: s.to_string(),
        item: item.to_string(),
        why,
    };
    let mut out = Vec::new();
    for item in s.split(',').map(str::trim) {
        let (d, u) = item
            .split_once(':')
            .ok_or_else(|| bad(item, "is not DURATION:USERS (e.g. 2m:50)".into()))?;
        let duration =
            parse_duration(d.trim()).map_err(|e| bad(item, format!("has a bad duration: {e}")))?;
        let users = u
            .trim()
            .parse::<u32>()
            .map_err(|_| bad(item, "has a bad number of users".into()))?;
        out.push(Stage { duration, users });
    }
    if out.iter().all(|st| st.users == 0) {
        return Err(ShapeError::NoUsers(s.to_string()));
    }
    if out.iter().map(|st| st.duration).sum::<Duration>().is_zero() {
        return Err(ShapeError::NoTime(s.to_string()));
    }
    Ok(Stages(out))
}

/// Parses `--arrival-rate`: `2/s`, `30/m`, `0.5/s` or a plain number per second.
pub fn parse_rate(s: &str) -> Result<f64, ShapeError> {
    let bad = || ShapeError::Rate(s.to_string());
    let (n, per) = match s.trim().split_once('/') {
        Some((n, unit)) => {
            let per = match unit.trim() {
                "s" => 1.0,
                "m" | "min" => 60.0,
                "h" => 3600.0,
                _ => return Err(bad()),
            };
            (n, per)
        }
        None => (s, 1.0),
    };
    let n: f64 = n.trim().parse().map_err(|_| bad())?;
    if !n.is_finite() || n <= 0.0 || n / per > 100_000.0 {
        return Err(bad());
    }
    Ok(n / per)
}

impl Shape {
    /// Users asked for `t` after the start (for an open model: the bound, `max_users`).
    pub fn asked_users(&self, t: Duration) -> u32 {
        match self {
            Shape::Ramp {
                users, interval, ..
            } => {
                if interval.is_zero() {
                    *users
                } else {
                    let started = t.as_nanos() / interval.as_nanos() + 1;
                    started.min(u128::from(*users)) as u32
                }
            }
            Shape::Stages(stages) => stage_target(stages, t),
            Shape::Arrivals { max_users, .. } => *max_users,
        }
    }

    /// Sessions asked to have started by `t` (open model only).
    pub fn asked_arrivals(&self, t: Duration) -> Option<u64> {
        match self {
            Shape::Arrivals {
                per_sec, duration, ..
            } => {
                let total = (duration.as_secs_f64() * per_sec).ceil() as u64;
                Some(((t.as_secs_f64() * per_sec).floor() as u64 + 1).min(total))
            }
            _ => None,
        }
    }

    /// When the last user is started: the end of warm-up.
    pub fn warmup(&self) -> Duration {
        match self {
            Shape::Ramp {
                users, interval, ..
            } => *interval * users.saturating_sub(1),
            Shape::Stages(stages) => {
                // The first moment the highest target is reached.
                let peak = stages.iter().map(|s| s.users).max().unwrap_or(0);
                let mut t = Duration::ZERO;
                for s in stages {
                    t += s.duration;
                    if s.users == peak {
                        break;
                    }
                }
                t
            }
            Shape::Arrivals { .. } => Duration::ZERO,
        }
    }

    /// When no new session may start any more (after the start).
    pub fn end(&self) -> Duration {
        match self {
            Shape::Ramp { loaded, .. } => self.warmup() + *loaded,
            Shape::Stages(stages) => stages.iter().map(|s| s.duration).sum(),
            Shape::Arrivals { duration, .. } => *duration,
        }
    }

    /// Most users the shape may run at once (summary.json's `users`).
    pub fn peak_users(&self) -> u32 {
        match self {
            Shape::Ramp { users, .. } => *users,
            Shape::Stages(stages) => stages.iter().map(|s| s.users).max().unwrap_or(0),
            Shape::Arrivals { max_users, .. } => *max_users,
        }
    }
}

/// Users asked by stages at `t`: linear from the previous stage's target (0 before the first).
fn stage_target(stages: &[Stage], t: Duration) -> u32 {
    let (mut from, mut begin) = (0.0, Duration::ZERO);
    for s in stages {
        let end = begin + s.duration;
        if t < end {
            let f = (t - begin).as_secs_f64() / s.duration.as_secs_f64();
            return (from + (f64::from(s.users) - from) * f).round() as u32;
        }
        from = f64::from(s.users);
        begin = end;
    }
    0
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Shape::Ramp {
                users, interval, ..
            } if interval.is_zero() => write!(f, "{users} users at once"),
            Shape::Ramp {
                users, interval, ..
            } => write!(f, "{users} users, one every {interval:?}"),
            Shape::Stages(stages) => {
                let items: Vec<String> = (stages.iter())
                    .map(|s| format!("{}:{}", humantime::format_duration(s.duration), s.users))
                    .collect();
                write!(f, "stages {}", items.join(", "))
            }
            Shape::Arrivals {
                per_sec, max_users, ..
            } => write!(f, "{per_sec}/s arrivals, at most {max_users} users"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(secs: u64) -> Duration {
        Duration::from_secs(secs)
    }

    #[test]
    fn stages_are_linear_between_their_ends() {
        let st = parse_stages("10s:50, 20s:50,10s:0").unwrap();
        let shape = Shape::Stages(st.0);
        assert_eq!(shape.asked_users(s(0)), 0);
        assert_eq!(shape.asked_users(s(5)), 25);
        assert_eq!(shape.asked_users(s(10)), 50);
        assert_eq!(shape.asked_users(s(29)), 50);
        assert_eq!(shape.asked_users(s(35)), 25);
        assert_eq!(shape.asked_users(s(40)), 0);
        assert_eq!(
            (shape.warmup(), shape.end(), shape.peak_users()),
            (s(10), s(40), 50)
        );
        // Gatling's heaviside, piecewise: a step to 20 users held 30 s.
        let step = Shape::Stages(parse_stages("0s:20, 30s:20").unwrap().0);
        assert_eq!(step.asked_users(s(0)), 20);
    }

    #[test]
    fn bad_stages_and_rates_name_the_flag() {
        for bad in ["", "2m", "2x:5", "2m:-1", "2m:0", "0s:5"] {
            let e = parse_stages(bad).unwrap_err().to_string();
            assert!(e.starts_with("--stages"), "{bad}: {e}");
        }
        assert_eq!(parse_rate("2/s").unwrap(), 2.0);
        assert_eq!(parse_rate("30/m").unwrap(), 0.5);
        assert_eq!(parse_rate("4").unwrap(), 4.0);
        for bad in ["0/s", "-1/s", "2/d", "x/s", "NaN"] {
            assert!(
                parse_rate(bad)
                    .unwrap_err()
                    .to_string()
                    .starts_with("--arrival-rate"),
                "{bad}"
            );
        }
    }

    #[test]
    fn ramps_and_arrivals() {
        let r = Shape::Ramp {
            users: 4,
            interval: s(2),
            loaded: s(10),
        };
        assert_eq!(
            (
                r.asked_users(s(0)),
                r.asked_users(s(3)),
                r.asked_users(s(99))
            ),
            (1, 2, 4)
        );
        assert_eq!((r.warmup(), r.end()), (s(6), s(16)));
        let a = Shape::Arrivals {
            per_sec: 2.0,
            duration: s(10),
            max_users: 5,
        };
        assert_eq!(a.asked_arrivals(s(0)), Some(1));
        assert_eq!(a.asked_arrivals(s(3)), Some(7));
        assert_eq!(a.asked_arrivals(s(60)), Some(20));
    }
}
