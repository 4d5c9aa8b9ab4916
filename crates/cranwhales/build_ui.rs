//! The web UI step of build.rs, in its own file so a test (`tests/it/build_ui.rs`) runs the same
//! code: `cargo build` / `cargo install --path crates/cranwhales` embed the full UI, built here
//! with npm when web/dist is missing or older than the web sources (the Makefile's `web` target
//! builds it first, so then nothing is rebuilt). Without node and npm the build stops with one
//! line naming what to install, unless `CRANWHALES_NO_UI=1` asks for an API-only binary.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::SystemTime;

/// What the web build reads, relative to web/ (a change to any of them rebuilds the UI).
pub const UI_SOURCES: [&str; 7] = [
    "src",
    "index.html",
    "package.json",
    "package-lock.json",
    "tsconfig.json",
    "vite.config.ts",
    "vite.report.config.ts",
];

/// What the UI step did.
#[derive(Debug, PartialEq, Eq)]
pub enum UiStep {
    /// web/dist is newer than every source: nothing to do.
    UpToDate,
    /// npm built it.
    Built,
    /// `CRANWHALES_NO_UI=1`: an empty web/dist, an API-only binary.
    ApiOnly,
}

/// The newest modification time of the files under `p` (`p` itself when it is a file).
pub fn newest(p: &Path) -> Option<SystemTime> {
    let meta = std::fs::metadata(p).ok()?;
    if !meta.is_dir() {
        return meta.modified().ok();
    }
    (std::fs::read_dir(p).ok()?)
        .filter_map(|e| e.ok())
        .filter_map(|e| newest(&e.path()))
        .max()
}

/// True when web/dist (or web/dist-report) is missing or older than a source.
pub fn stale(web: &Path) -> bool {
    let built = ["dist/index.html", "dist-report/report.js"]
        .iter()
        .map(|f| {
            std::fs::metadata(web.join(f))
                .and_then(|m| m.modified())
                .ok()
        })
        .collect::<Option<Vec<_>>>()
        .and_then(|t| t.into_iter().min());
    let Some(built) = built else { return true };
    let source = UI_SOURCES.iter().filter_map(|s| newest(&web.join(s))).max();
    source.is_some_and(|s| s > built)
}

/// `name` on the `PATH` given, if any.
pub fn find_program(name: &str, path: Option<&OsStr>) -> Option<PathBuf> {
    std::env::split_paths(path?)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// Why the UI step failed, as the one line the build prints.
#[derive(Debug)]
pub enum UiError {
    /// Node.js or npm is not on the PATH (and CRANWHALES_NO_UI is not set).
    NoNode,
    /// An output folder could not be made.
    Create(String, std::io::Error),
    /// npm could not be started.
    Spawn(String, std::io::Error),
    /// npm ran and failed (its own output is above the line).
    Failed(String, PathBuf, std::process::ExitStatus),
}

impl std::fmt::Display for UiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            UiError::NoNode => f.write_str(
                "the web UI needs Node.js (^20.19 or >= 22.12) with npm to build: install them \
                 (nodejs.org), or set CRANWHALES_NO_UI=1 for an API-only binary",
            ),
            UiError::Create(dir, e) => write!(f, "create web/{dir}: {e}"),
            UiError::Spawn(args, e) => write!(f, "could not run npm {args}: {e}"),
            UiError::Failed(args, web, status) => write!(
                f,
                "npm {args} in {} failed ({status}); its output is above",
                web.display()
            ),
        }
    }
}

/// Builds the UI in `web` when it is stale (with `npm ci` first when node_modules is missing);
/// `no_ui`: an empty web/dist instead. The error is one line naming what to install or what failed.
pub fn build_ui(web: &Path, no_ui: bool, path: Option<&OsStr>) -> Result<UiStep, UiError> {
    if no_ui {
        for d in ["dist", "dist-report"] {
            std::fs::create_dir_all(web.join(d)).map_err(|e| UiError::Create(d.into(), e))?;
        }
        return Ok(UiStep::ApiOnly);
    }
    if !stale(web) {
        return Ok(UiStep::UpToDate);
    }
    let (Some(npm), Some(_node)) = (find_program("npm", path), find_program("node", path)) else {
        return Err(UiError::NoNode);
    };
    let run = |args: &[&str]| -> Result<(), UiError> {
        let status = Command::new(&npm)
            .args(args)
            .current_dir(web)
            .env("PATH", path.unwrap_or_default())
            .status()
            .map_err(|e| UiError::Spawn(args.join(" "), e))?;
        if status.success() {
            return Ok(());
        }
        Err(UiError::Failed(args.join(" "), web.to_path_buf(), status))
    };
    if !web.join("node_modules").is_dir() {
        run(&["ci", "--no-audit", "--no-fund"])?;
    }
    run(&["run", "build"])?;
    Ok(UiStep::Built)
}
