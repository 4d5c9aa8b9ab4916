//! Two build steps:
//! - The web UI (web/dist, built by `npm run build`) is embedded by `server::assets`. The folder
//!   must exist for the crate to compile, so a workspace built without npm still builds (with an
//!   empty UI).
//! - Ingest inflates with ISA-L (see `src/inflate.rs`) when Debian's libisal-dev is installed:
//!   the C shim in native/ is compiled and `cfg(isal)` set. Without it (or with
//!   CRANWHALES_NO_ISAL=1) the crate falls back to flate2 and says so once.

fn main() {
    let dist = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../web/dist");
    if !dist.exists() {
        std::fs::create_dir_all(&dist).expect("create web/dist");
    }
    // Rebuild when the UI is rebuilt (new hashed asset names change the folder).
    println!("cargo:rerun-if-changed=../../web/dist");
    println!("cargo:rerun-if-changed=build.rs");

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
