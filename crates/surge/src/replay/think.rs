//! Think time: how the pauses of the recording are replayed (`--think-time`).

use std::str::FromStr;

/// How think time (the pauses in the recording) is replayed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ThinkTime {
    /// `recorded` (the default): each pause as long as the recorded user took.
    Recorded,
    /// `none`: no pauses, the most load one user can make.
    None,
    /// `x<factor>`: every pause scaled by the factor (`x0.5` halves them).
    Factor(f64),
}

/// A `--think-time` that is not `recorded`, `none` or `x<factor>`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("think time \"{0}\": expected recorded, none or x<factor>")]
pub struct ThinkTimeError(pub String);

impl FromStr for ThinkTime {
    type Err = ThinkTimeError;
    fn from_str(s: &str) -> Result<Self, ThinkTimeError> {
        match s {
            "recorded" => Ok(ThinkTime::Recorded),
            "none" => Ok(ThinkTime::None),
            _ => s
                .strip_prefix('x')
                .and_then(|f| f.parse::<f64>().ok())
                .filter(|f| f.is_finite() && *f >= 0.0)
                .map(ThinkTime::Factor)
                .ok_or_else(|| ThinkTimeError(s.to_string())),
        }
    }
}

impl ThinkTime {
    /// A recorded pause of `ms`, as replayed.
    pub fn scale(self, ms: i64) -> i64 {
        match self {
            ThinkTime::Recorded => ms,
            ThinkTime::None => 0,
            ThinkTime::Factor(f) => (ms as f64 * f) as i64,
        }
    }
}
impl ThinkTime {
    /// The flag's spelling of this setting (as written to summary.json).
    pub fn name(self) -> String {
        match self {
            ThinkTime::Recorded => "recorded".into(),
            ThinkTime::None => "none".into(),
            ThinkTime::Factor(f) => format!("x{f}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn think_time_parses() {
        assert_eq!(
            "recorded".parse::<ThinkTime>().unwrap(),
            ThinkTime::Recorded
        );
        assert_eq!("x0.5".parse::<ThinkTime>().unwrap(), ThinkTime::Factor(0.5));
        assert!("fast".parse::<ThinkTime>().is_err());
        assert_eq!(ThinkTime::Factor(0.5).scale(1000), 500);
        assert_eq!(ThinkTime::None.scale(1000), 0);
    }
}
