//! The machinery behind manifold's one settings table (`settings_table!`, invoked once in
//! `config.rs`): from one declaration per setting (name, type, default, help, value name, reload
//! class, how its flag or file value becomes the running value) it generates everything that
//! used to spell a setting again: the [`super::Options`] struct (clap flags through the builder
//! API, and the TOML keys through serde), its `or` merge (flag > file > default), the
//! [`super::Config`] struct with its defaults and `apply`, the reload diff and the kept
//! settings of `config::live`, the `[default: …]` of each flag's help, and the rows of the
//! reload-class table in docs/manifold.md.
//!
//! Adding a setting is one row in the table plus its behaviour: nothing else names it.

use std::net::SocketAddr;
use std::sync::OnceLock;
use std::time::Duration;

use super::{parse_duration, parse_size, ConfigError, Sticky};

/// How a default is written in `--help`, the docs and the reload log.
pub trait Shown {
    /// The value as an operator would write it (`30s`, `none`, `127.0.0.1:3000`).
    fn shown(&self) -> String;
}

macro_rules! shown_display {
    ($($t:ty),*) => {$(
        impl Shown for $t {
            fn shown(&self) -> String {
                self.to_string()
            }
        }
    )*};
}
shown_display!(bool, usize, u64, String, SocketAddr);

impl Shown for Duration {
    fn shown(&self) -> String {
        if self.is_zero() {
            "0s".into()
        } else {
            humantime::format_duration(*self).to_string()
        }
    }
}

impl Shown for Sticky {
    fn shown(&self) -> String {
        match self {
            Sticky::Cookie => "cookie".into(),
            Sticky::None => "none".into(),
        }
    }
}

impl<T: Shown> Shown for Option<T> {
    fn shown(&self) -> String {
        self.as_ref().map_or_else(|| "none".into(), Shown::shown)
    }
}

/// From a flag's or file key's value to the running value; each takes the flag (`--max-rss`)
/// so an error names it.
pub mod conv {
    use super::*;

    /// Taken as given.
    pub fn same<T>(_flag: &'static str, v: T) -> Result<T, ConfigError> {
        Ok(v)
    }

    /// An optional setting that was given.
    pub fn some<T>(_flag: &'static str, v: T) -> Result<Option<T>, ConfigError> {
        Ok(Some(v))
    }

    /// A duration (`500ms`, `30s`), through [`parse_duration`].
    pub fn duration(flag: &'static str, v: String) -> Result<Duration, ConfigError> {
        parse_duration(flag, &v)
    }

    /// An optional duration that was given.
    pub fn some_duration(flag: &'static str, v: String) -> Result<Option<Duration>, ConfigError> {
        parse_duration(flag, &v).map(Some)
    }

    /// A size (`500MB`, `2GiB`) through [`parse_size`], or `0`.
    pub fn size(flag: &'static str, v: String) -> Result<u64, ConfigError> {
        if v.trim() == "0" {
            return Ok(0);
        }
        parse_size(flag, &v)
    }

    /// An optional size (`500MB`, `2GiB`) that was given, through [`parse_size`].
    pub fn some_size(flag: &'static str, v: String) -> Result<Option<u64>, ConfigError> {
        parse_size(flag, &v).map(Some)
    }
}

/// `--idle-timeout` for the field `idle_timeout`: built once per process from the table's field
/// names, so no flag name is typed as a string anywhere.
pub fn flag(field: &str) -> &'static str {
    static FLAGS: OnceLock<Vec<(&'static str, &'static str)>> = OnceLock::new();
    let all = FLAGS.get_or_init(|| {
        super::SETTINGS
            .iter()
            .map(|s| {
                let dashed: &'static str =
                    Box::leak(format!("--{}", s.name.replace('_', "-")).into_boxed_str());
                (s.name, dashed)
            })
            .collect()
    });
    all.iter()
        .find(|(name, _)| *name == field)
        .map_or("--?", |(_, f)| f)
}

/// `idle-timeout` for the field `idle_timeout`: the TOML key, as a config file spells it.
pub fn key(field: &str) -> &'static str {
    &flag(field)[2..]
}

/// A flag value the setting's conversion refuses, as clap words its own refusals (`invalid
/// value '30' for '--drain-timeout <DURATION>': …`): so a bad duration or size on the command
/// line is the one-line usage error, exit status 2, that cranwhales and surge give for theirs,
/// and not a run-time failure (exit 1) discovered after clap had taken the text.
pub fn invalid_value<T: Shown>(
    flag: &str,
    value_name: &str,
    value: &T,
    err: &ConfigError,
) -> clap::Error {
    let text = err.to_string();
    let why = text.strip_prefix(&format!("{flag}: ")).unwrap_or(&text);
    clap::Error::raw(
        clap::error::ErrorKind::ValueValidation,
        format!(
            "invalid value '{}' for '{flag} <{value_name}>': {why}\n",
            value.shown()
        ),
    )
}

/// Whether a setting of class `when` keeps its running value on reload.
pub fn is_kept(when: super::live::When) -> bool {
    matches!(when, super::live::When::Kept)
}

/// A copy of a running value (for the kept settings).
pub fn copy_of<T: Clone>(v: &T) -> T {
    v.clone()
}

/// One help line: the doc comment's words (without a final period, as clap's derive writes
/// them), then `[default: …]`.
pub fn help(doc: &str, default: &str) -> String {
    let words: Vec<&str> = doc.split_whitespace().collect();
    let text = words.join(" ");
    format!("{} [default: {default}]", text.trim_end_matches('.'))
}

/// A `bool` setting is a switch: `--preload` alone means true, `--preload=false` turns a file's
/// true off.
pub fn switch(arg: clap::Arg, running_type: &str) -> clap::Arg {
    if running_type == "bool" {
        arg.num_args(0..=1)
            .require_equals(true)
            .default_missing_value("true")
    } else {
        arg
    }
}

/// One row of the settings table as data (for the docs table and the single-source test).
#[derive(Debug, Clone, Copy)]
pub struct Setting {
    /// The field name; the flag and the TOML key are it with `-` for `_`.
    pub name: &'static str,
    /// The help text (without its default).
    pub help: &'static str,
    /// When a reload's change of it takes effect.
    pub when: super::live::When,
    /// The value's name in `--help`.
    pub value_name: &'static str,
}

impl Setting {
    /// `--name`.
    pub fn flag(&self) -> &'static str {
        flag(self.name)
    }
}

/// Generates the settings types and functions from the table (see the module docs). Each row:
///
/// ```text
/// /// Help text.
/// field: RunningType = default_expr; ReloadClass, "VALUE", FlagType => conv_fn [, shown "text"];
/// ```
macro_rules! settings_table {
    ($(
        $(#[doc = $doc:literal])+
        $field:ident: $cty:ty = $default:expr;
            $when:ident, $vname:literal, $rty:ty => $conv:ident $(, shown $shown:literal)?;
    )*) => {
        /// Every setting of the table, in its order.
        pub const SETTINGS: &[table::Setting] = &[$(
            table::Setting {
                name: stringify!($field),
                help: concat!($($doc),+),
                when: live::When::$when,
                value_name: $vname,
            },
        )*];

        /// Settings as given by flags or the config file: all optional, so a file and the
        /// defaults can fill gaps (flag > file > default). Generated from the settings table.
        #[derive(Debug, Default, Clone, Deserialize)]
        #[serde(deny_unknown_fields, rename_all = "kebab-case")]
        pub struct Options {
            $($(#[doc = $doc])+ pub $field: Option<$rty>,)*
            /// TOML file with the same settings (kebab-case keys, plus `command = [..]`); read
            /// again on SIGHUP, which applies every pool setting and starts a new generation.
            #[serde(skip)]
            pub config: Option<PathBuf>,
            /// Worker command (config file only; on the command line it follows `--`).
            pub command: Option<Vec<String>>,
            /// Several apps on one port (config file only: `[[app]]` tables, see `config::apps`).
            pub app: Option<Vec<toml::Table>>,
            /// Show debug logs and error causes.
            #[serde(skip)]
            pub verbose: bool,
        }

        impl Options {
            /// Fills every unset field of `self` from `other`.
            pub(crate) fn or(self, other: Options) -> Options {
                Options {
                    $($field: self.$field.or(other.$field),)*
                    config: self.config.or(other.config),
                    command: self.command.or(other.command),
                    app: self.app.or(other.app),
                    verbose: self.verbose || other.verbose,
                }
            }
        }

        impl clap::FromArgMatches for Options {
            fn from_arg_matches(m: &clap::ArgMatches) -> Result<Self, clap::Error> {
                let mut o = Options::default();
                o.update_from_arg_matches(m)?;
                Ok(o)
            }

            fn update_from_arg_matches(&mut self, m: &clap::ArgMatches) -> Result<(), clap::Error> {
                $(if let Some(v) = m.get_one::<$rty>(stringify!($field)).cloned() {
                    let flag = table::flag(stringify!($field));
                    if let Err(e) = table::conv::$conv(flag, v.clone()) {
                        return Err(table::invalid_value(flag, $vname, &v, &e));
                    }
                    self.$field = Some(v);
                })*
                if let Some(v) = m.get_one::<PathBuf>("config") {
                    self.config = Some(v.clone());
                }
                self.verbose |= m.get_flag("verbose");
                Ok(())
            }
        }

        impl clap::Args for Options {
            fn augment_args(cmd: clap::Command) -> clap::Command {
                let defaults = shown_defaults();
                let mut cmd = cmd;
                let mut shown = defaults.iter();
                $(
                    let (_, default) = shown.next().expect("one default per setting");
                    cmd = cmd.arg(table::switch(
                        clap::Arg::new(stringify!($field))
                            .long(&table::flag(stringify!($field))[2..])
                            .value_name($vname)
                            .value_parser(clap::value_parser!($rty))
                            .help(table::help(concat!($($doc),+), default)),
                        stringify!($rty),
                    ));
                )*
                cmd.arg(
                    clap::Arg::new("config")
                        .long("config")
                        .value_name("FILE")
                        .value_parser(clap::value_parser!(PathBuf))
                        .help(
                            "TOML file with the same settings (kebab-case keys, plus `command = [..]`); \
                             read again on SIGHUP, which applies every pool setting and starts a new \
                             generation of workers",
                        ),
                )
                .arg(
                    clap::Arg::new("verbose")
                        .short('v')
                        .long("verbose")
                        .action(clap::ArgAction::SetTrue)
                        .help("Show debug logs and error causes"),
                )
            }

            fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
                Self::augment_args(cmd)
            }
        }

        /// Each setting's default as `--help` and the docs show it, in table order.
        pub fn shown_defaults() -> Vec<(&'static str, String)> {
            let d = Config::new(Vec::new());
            vec![$({
                let over = None::<&'static str> $(.or(Some($shown)))?;
                let s = over.map_or_else(|| table::Shown::shown(&d.$field), String::from);
                (stringify!($field), s)
            }),*]
        }

        /// The resolved settings the pool and proxy run with. Generated from the settings table.
        #[derive(Debug, Clone)]
        pub struct Config {
            $($(#[doc = $doc])+ pub $field: $cty,)*
            /// Program and arguments; `{port}` is substituted per worker.
            pub command: Vec<String>,
            /// Debug logging.
            pub verbose: bool,
            /// `[[app]]` entries of the config file; empty: one app (this config) at `/`.
            pub apps: Vec<apps::App>,
        }

        impl Config {
            /// A config for `command` with every default; tests and embedders start from this.
            pub fn new(command: Vec<String>) -> Config {
                Config {
                    $($field: $default,)*
                    command,
                    verbose: false,
                    apps: Vec::new(),
                }
            }

            /// Each setting's running value by its TOML key, as `--help` shows values (status
            /// `settings`).
            pub fn shown(&self) -> Vec<(&'static str, String)> {
                vec![$((&table::flag(stringify!($field))[2..], table::Shown::shown(&self.$field))),*]
            }

            /// Sets every field `opts` gives (the others keep their value); an error names the
            /// flag.
            ///
            /// # Errors
            /// A duration or size that does not parse.
            pub(crate) fn apply(&mut self, opts: Options) -> Result<(), ConfigError> {
                self.apply_named(opts, table::flag)
            }

            /// [`Config::apply`], an error naming the setting as `name` spells it (the flag, or
            /// the TOML key for a file's value).
            pub(crate) fn apply_named(
                &mut self,
                opts: Options,
                name: fn(&str) -> &'static str,
            ) -> Result<(), ConfigError> {
                self.verbose = opts.verbose;
                $(if let Some(v) = opts.$field {
                    self.$field = table::conv::$conv(name(stringify!($field)), v)?;
                })*
                Ok(())
            }
        }

        /// Every setting that differs between `old` and `new` (see `config::live::changes`).
        fn diff(old: &Config, new: &Config) -> Vec<live::Change> {
            let mut out = Vec::new();
            $(if old.$field != new.$field {
                out.push(live::Change {
                    flag: table::flag(stringify!($field)),
                    old: table::Shown::shown(&old.$field),
                    new: table::Shown::shown(&new.$field),
                    when: live::When::$when,
                });
            })*
            out
        }

        /// `new` with every [`live::When::Kept`] setting set back to `old`'s.
        fn keep_kept(old: &Config, new: &mut Config) {
            $(if table::is_kept(live::When::$when) {
                new.$field = table::copy_of(&old.$field);
            })*
        }
    };
}
pub(crate) use settings_table;
