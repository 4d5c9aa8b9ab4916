//! Several apps on one port: `[[app]]` tables in the config file, each with its path prefix, its
//! command (`command = [..]`, or `shiny = "dir"` / `plumber = "file"`) and its own pool settings
//! (any top-level key; the top level gives the defaults).
//!
//! ```toml
//! listen = "0.0.0.0:3000"
//! [[app]]
//! prefix = "/sales/"
//! shiny = "/srv/sales"
//! max = 4
//! [[app]]
//! prefix = "/api/"
//! plumber = "/srv/api.R"
//! ```

use std::path::{Path, PathBuf};

use super::{Config, ConfigError, Options, RApp, Sticky};

/// One app of a multi-app config.
#[derive(Debug, Clone)]
pub struct App {
    /// Its name (the `app` label in metrics and the access log): `name`, else the prefix's words.
    pub name: String,
    /// Path prefix, starting and ending with `/`; removed before a request reaches a worker.
    pub prefix: String,
    /// Its pool settings and command.
    pub cfg: Config,
}

/// Resolves the `[[app]]` tables of config file `path` over the top-level options `top`.
///
/// # Errors
/// A table without `prefix` or command, two apps on one prefix, or a bad value; each message
/// names the file and the app.
pub fn resolve(
    top: &Options,
    tables: Vec<toml::Table>,
    path: &Path,
) -> Result<Vec<App>, ConfigError> {
    let mut apps: Vec<App> = Vec::new();
    for (i, mut t) in tables.into_iter().enumerate() {
        let bad = |m: String| ConfigError::Parse {
            path: path.to_owned(),
            message: format!("[[app]] #{}: {m}", i + 1),
        };
        let text = |t: &mut toml::Table, k: &str| -> Result<Option<String>, ConfigError> {
            match t.remove(k) {
                None => Ok(None),
                Some(toml::Value::String(s)) => Ok(Some(s)),
                Some(_) => Err(bad(format!("{k} must be a string"))),
            }
        };
        let prefix = text(&mut t, "prefix")?.ok_or_else(|| bad("no prefix".into()))?;
        if !prefix.starts_with('/') {
            return Err(bad(format!("prefix {prefix:?} must start with /")));
        }
        let prefix = if prefix.ends_with('/') {
            prefix
        } else {
            format!("{prefix}/")
        };
        let name = text(&mut t, "name")?.unwrap_or_else(|| {
            let words: Vec<&str> = prefix.split('/').filter(|w| !w.is_empty()).collect();
            if words.is_empty() {
                "root".into()
            } else {
                words.join("-")
            }
        });
        let shiny = text(&mut t, "shiny")?.map(PathBuf::from);
        let plumber = text(&mut t, "plumber")?.map(PathBuf::from);
        let own: Options = toml::Value::Table(t)
            .try_into()
            .map_err(|e: toml::de::Error| {
                bad(e.to_string().lines().collect::<Vec<_>>().join(" "))
            })?;
        let mut base = top.clone();
        // Each app has its own command; a top-level one is not inherited.
        base.command = None;
        let mut opts = own.or(base);
        let (command, preset) = match (&shiny, &plumber, opts.command.take()) {
            (Some(d), None, None) => (Vec::new(), Some(RApp::Shiny(d.clone()))),
            (None, Some(f), None) => (Vec::new(), Some(RApp::Plumber(f.clone()))),
            (None, None, Some(c)) if !c.is_empty() => (c, None),
            _ => return Err(bad("give exactly one of command, shiny, plumber".into())),
        };
        if shiny.is_some() {
            opts = opts.or(Options {
                sticky: Some(Sticky::Cookie),
                per_worker: Some(20),
                ..Options::default()
            });
        }
        let mut cfg = Config::new(command);
        // Flags and the top level were checked as read: a bad value here is this table's.
        cfg.apply_named(opts, super::table::key)
            .map_err(|e| bad(e.to_string()))?;
        if let Some(app) = preset {
            cfg.command = app.command(cfg.preload);
        }
        cfg.validate().map_err(|e| bad(e.to_string()))?;
        if apps.iter().any(|a| a.prefix == prefix || a.name == name) {
            return Err(bad(format!(
                "prefix {prefix:?} or name {name:?} used twice"
            )));
        }
        apps.push(App { name, prefix, cfg });
    }
    Ok(apps)
}
