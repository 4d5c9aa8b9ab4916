//! The build script's UI step (crates/cranwhales/build_ui.rs, the same file build.rs runs) on a
//! scratch web/ folder: without npm on the PATH a stale UI stops the build with one line naming
//! what to install; `CRANWHALES_NO_UI=1` gives empty dist folders (an API-only binary); a dist
//! newer than every source is left alone (the Makefile builds it first: no second build).

#[allow(dead_code)]
#[path = "../../build_ui.rs"]
mod ui;

use std::ffi::OsString;
use std::fs;

/// A web/ folder with a source file and, when `built`, dist files written after it.
fn scratch(built: bool) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let web = dir.path();
    fs::create_dir_all(web.join("src/app")).unwrap();
    fs::write(web.join("src/app/main.ts"), "export {};\n").unwrap();
    fs::write(web.join("package.json"), "{}\n").unwrap();
    if built {
        fs::create_dir_all(web.join("dist")).unwrap();
        fs::create_dir_all(web.join("dist-report")).unwrap();
        // Written after the sources: newer (a later mtime, set explicitly so coarse clocks agree).
        for f in ["dist/index.html", "dist-report/report.js"] {
            fs::write(web.join(f), "x").unwrap();
            let later = std::time::SystemTime::now() + std::time::Duration::from_secs(5);
            fs::File::options()
                .write(true)
                .open(web.join(f))
                .unwrap()
                .set_modified(later)
                .unwrap();
        }
    }
    dir
}

#[test]
fn without_npm_a_stale_ui_stops_the_build_with_one_line() {
    let web = scratch(false);
    let empty = tempfile::tempdir().unwrap();
    let path = OsString::from(empty.path());
    let err = ui::build_ui(web.path(), false, Some(&path))
        .unwrap_err()
        .to_string();
    assert!(!err.contains('\n'), "one line: {err}");
    assert!(
        err.contains("Node.js (^20.19 or >= 22.12) with npm") && err.contains("CRANWHALES_NO_UI=1"),
        "{err}"
    );
    // A source newer than dist is stale too: same message.
    let built = scratch(true);
    fs::write(built.path().join("src/app/main.ts"), "export {};\n").unwrap();
    let later = std::time::SystemTime::now() + std::time::Duration::from_secs(60);
    (fs::File::options().write(true))
        .open(built.path().join("src/app/main.ts"))
        .unwrap()
        .set_modified(later)
        .unwrap();
    assert!(ui::stale(built.path()));
    assert!(ui::build_ui(built.path(), false, Some(&path)).is_err());
}

#[test]
fn api_only_and_up_to_date_builds_run_no_npm() {
    let web = scratch(false);
    let empty = tempfile::tempdir().unwrap();
    let path = OsString::from(empty.path());
    assert!(matches!(
        ui::build_ui(web.path(), true, Some(&path)),
        Ok(ui::UiStep::ApiOnly)
    ));
    assert!(web.path().join("dist").is_dir() && web.path().join("dist-report").is_dir());
    let built = scratch(true);
    assert!(!ui::stale(built.path()));
    assert!(matches!(
        ui::build_ui(built.path(), false, Some(&path)),
        Ok(ui::UiStep::UpToDate)
    ));
}
