//! Embeds the report runtime (web/dist-report/report.js, built by `make web`) into the binary.
//! Without npm the file is missing: a stub is embedded instead so the crate still compiles, and
//! `surge report` then says how to build the runtime.
use std::{env, fs, path::PathBuf};

fn main() {
    let manifest =
        PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let src = manifest.join("../../web/dist-report/report.js");
    println!("cargo:rerun-if-changed={}", src.display());
    let out = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("report.js");
    let js =
        fs::read_to_string(&src).unwrap_or_else(|_| "/*surge-report-runtime-missing*/".to_string());
    fs::write(&out, js).expect("write OUT_DIR/report.js");
}
