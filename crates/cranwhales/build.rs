//! Two build steps:
//! - The web UI (web/dist, built by `npm run build`) is embedded by `server::assets`: built here
//!   when it is missing or older than the web sources (build_ui.rs), so `cargo build` and
//!   `cargo install --path crates/cranwhales` give the full UI. Without node and npm the build
//!   stops with one line naming them; `CRANWHALES_NO_UI=1` builds an API-only binary (an empty
//!   web/dist).
//! - Ingest inflates with ISA-L (see `src/inflate.rs`) when Debian's libisal-dev is installed:
//!   the C shim in native/ is compiled and `cfg(isal)` set. Without it (or with
//!   CRANWHALES_NO_ISAL=1) the crate falls back to flate2 and says so once.

#[path = "build_ui.rs"]
mod build_ui;

fn main() {
    let web = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../web");
    let no_ui = std::env::var_os("CRANWHALES_NO_UI").is_some_and(|v| v == "1");
    if let Err(e) = build_ui::build_ui(&web, no_ui, std::env::var_os("PATH").as_deref()) {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
    // Rebuild when the UI is rebuilt (new hashed asset names change the folder) or its sources
    // change (then the step above rebuilds it).
    println!("cargo:rerun-if-changed=../../web/dist");
    for s in build_ui::UI_SOURCES {
        println!("cargo:rerun-if-changed=../../web/{s}");
    }
    println!("cargo:rerun-if-env-changed=CRANWHALES_NO_UI");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=build_ui.rs");

    println!("cargo::rustc-check-cfg=cfg(isal)");
    println!("cargo:rerun-if-changed=native/isal_inflate.c");
    println!("cargo:rerun-if-env-changed=CRANWHALES_NO_ISAL");
    println!("cargo:rerun-if-changed=/usr/include/isa-l/igzip_lib.h");
    if std::env::var_os("CRANWHALES_NO_ISAL").is_some() {
        return;
    }
    if !std::path::Path::new("/usr/include/isa-l/igzip_lib.h").exists() {
        println!(
            "cargo:warning=ISA-L not found (apt-get install libisal-dev): ingest inflates with \
             zlib-rs, ~25% slower"
        );
        return;
    }
    match cc::Build::new()
        .file("native/isal_inflate.c")
        .opt_level(2)
        .try_compile("cw_isal")
    {
        Ok(()) => {
            println!("cargo:rustc-link-lib=isal");
            println!("cargo:rustc-cfg=isal");
        }
        Err(e) => println!("cargo:warning=ISA-L shim did not compile ({e}); using zlib-rs"),
    }
}
