//! What a reload (SIGHUP) can change, and when each change takes effect: a reload re-reads the
//! flags and the config file, and every setting it can apply is applied, so an operator never
//! has to guess which edits need a restart.
//!
//! Each setting's class is a column of the settings table (`config.rs`), shown in the
//! reload table of docs/manifold.md ([`docs_table`]):
//! - At once ([`When::AtOnce`]): the pool and the proxy read them on each use (requests and
//!   WebSockets that start after the reload).
//! - For new workers ([`When::NewWorkers`]): fixed when a worker starts; a reload starts a new
//!   generation of workers, so they apply to every worker once the old generation has drained.
//!   The command is one of them.
//! - Kept ([`When::Kept`]): they belong to the listening process, not to a pool; so does the set
//!   of `[[app]]` prefixes.

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
/// when it takes effect (the pool logs each one, so a reload says what it did). The settings and
/// their classes come from the settings table (`config.rs`); the command is not a setting.
pub fn changes(old: &Config, new: &Config) -> Vec<Change> {
    let mut out = super::diff(old, new);
    if old.command != new.command {
        out.push(Change {
            flag: "command",
            old: format!("{:?}", old.command),
            new: format!("{:?}", new.command),
            when: When::NewWorkers,
        });
    }
    out
}

/// The re-read `new` with every setting a reload cannot change set back to `old`'s, so what
/// runs after a reload is exactly what status and the log say.
pub fn keep_process_settings(old: &Config, mut new: Config) -> Config {
    super::keep_kept(old, &mut new);
    new
}

/// The reload-class table of docs/manifold.md (between `<!-- reload -->` markers): each setting,
/// its default and when a reload's change of it takes effect, from the settings table.
pub fn docs_table() -> String {
    let defaults = super::shown_defaults();
    let mut out = String::from(
        "| setting (flag / TOML key) | default | a reload applies it |\n|---|---|---|\n",
    );
    for (s, (_, default)) in super::SETTINGS.iter().zip(&defaults) {
        out.push_str(&format!(
            "| `{}` / `{}` | {} | {} |\n",
            s.flag(),
            &s.flag()[2..],
            default.replace('|', "\\|"),
            s.when.as_str()
        ));
    }
    out
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
            // In the settings table's order.
            [
                ("--listen", When::Kept),
                ("--max", When::AtOnce),
                ("--stop-timeout", When::NewWorkers),
                ("--request-timeout", When::AtOnce),
            ]
        );
        assert_eq!((c[3].old.as_str(), c[3].new.as_str()), ("1m", "1s"));
        let kept = keep_process_settings(&old, new);
        assert_eq!(kept.listen, old.listen);
        assert_eq!(kept.max, old.max + 1);
        assert!(changes(&old, &old).is_empty());
    }
}
