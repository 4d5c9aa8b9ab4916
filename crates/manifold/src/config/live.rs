//! What a reload (SIGHUP) can change, and when each change takes effect: a reload re-reads the
//! flags and the config file, and every setting it can apply is applied, so an operator never
//! has to guess which edits need a restart.
//!
//! - At once (the pool and the proxy read them on each use): `--min`, `--max`, `--per-worker`,
//!   `--spare`, `--queue-size`, `--queue-timeout`, `--idle-timeout`, `--sticky`,
//!   `--request-timeout` and `--ws-idle-timeout` (for requests and WebSockets that start after
//!   the reload), `--max-lifetime`, `--max-rss`, `--drain-timeout`, `--health-interval`.
//! - For new workers (fixed when a worker starts; a reload starts a new generation of workers,
//!   so they apply to every worker once the old generation has drained): the command,
//!   `--stop-timeout`, `--ready-timeout`, `--health-path`, `--max-requests` (+ jitter).
//! - Kept (they belong to the listening process, not to a pool): `--listen`,
//!   `--max-connections`, `--header-timeout`, `--access-log`, and the set of `[[app]]` prefixes.

use super::Config;

/// When a changed setting takes effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum When {
    /// Read on each use: from the reload on.
    AtOnce,
    /// Fixed when a worker starts: for the new generation's workers.
    NewWorkers,
    /// Cannot change without a restart; the running value is kept.
    Kept,
}

impl When {
    /// The words the reload log uses.
    pub fn as_str(self) -> &'static str {
        match self {
            When::AtOnce => "at once",
            When::NewWorkers => "for new workers",
            When::Kept => "kept (needs a restart)",
        }
    }
}

/// One setting a reload changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// The flag's name, e.g. `--max`.
    pub flag: &'static str,
    /// The running value.
    pub old: String,
    /// The value read again.
    pub new: String,
    /// When it takes effect.
    pub when: When,
}

/// Every setting that differs between the running config `old` and the re-read `new`, with
/// when it takes effect (the pool logs each one, so a reload says what it did).
pub fn changes(old: &Config, new: &Config) -> Vec<Change> {
    let mut out = Vec::new();
    macro_rules! diff {
        ($($flag:literal $field:ident $when:ident),* $(,)?) => {$(
            if old.$field != new.$field {
                out.push(Change {
                    flag: $flag,
                    old: format!("{:?}", old.$field),
                    new: format!("{:?}", new.$field),
                    when: When::$when,
                });
            }
        )*};
    }
    diff!(
        "--min" min AtOnce,
        "--max" max AtOnce,
        "--per-worker" per_worker AtOnce,
        "--spare" spare AtOnce,
        "--queue-size" queue_size AtOnce,
        "--queue-timeout" queue_timeout AtOnce,
        "--idle-timeout" idle_timeout AtOnce,
        "--sticky" sticky AtOnce,
        "--request-timeout" request_timeout AtOnce,
        "--ws-idle-timeout" ws_idle_timeout AtOnce,
        "--max-lifetime" max_lifetime AtOnce,
        "--max-rss" max_rss AtOnce,
        "--drain-timeout" drain_timeout AtOnce,
        "--health-interval" health_interval AtOnce,
        "command" command NewWorkers,
        "--stop-timeout" stop_timeout NewWorkers,
        "--ready-timeout" ready_timeout NewWorkers,
        "--health-path" health_path NewWorkers,
        "--max-requests" max_requests NewWorkers,
        "--max-requests-jitter" max_requests_jitter NewWorkers,
        "--listen" listen Kept,
        "--max-connections" max_connections Kept,
        "--header-timeout" header_timeout Kept,
        "--access-log" access_log Kept,
    );
    out
}

/// The re-read `new` with every setting a reload cannot change set back to `old`'s, so what
/// runs after a reload is exactly what status and the log say.
pub fn keep_process_settings(old: &Config, mut new: Config) -> Config {
    new.listen = old.listen;
    new.max_connections = old.max_connections;
    new.header_timeout = old.header_timeout;
    new.access_log = old.access_log.clone();
    new
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn each_change_says_when_it_applies() {
        let old = Config::new(vec!["a".into()]);
        let mut new = old.clone();
        new.max = old.max + 1;
        new.request_timeout = Duration::from_secs(1);
        new.stop_timeout = Duration::from_secs(9);
        new.listen = "127.0.0.1:9".parse().unwrap();
        let c = changes(&old, &new);
        let got: Vec<(&str, When)> = c.iter().map(|c| (c.flag, c.when)).collect();
        assert_eq!(
            got,
            [
                ("--max", When::AtOnce),
                ("--request-timeout", When::AtOnce),
                ("--stop-timeout", When::NewWorkers),
                ("--listen", When::Kept),
            ]
        );
        assert_eq!((c[1].old.as_str(), c[1].new.as_str()), ("60s", "1s"));
        let kept = keep_process_settings(&old, new);
        assert_eq!(kept.listen, old.listen);
        assert_eq!(kept.max, old.max + 1);
        assert!(changes(&old, &old).is_empty());
    }
}
