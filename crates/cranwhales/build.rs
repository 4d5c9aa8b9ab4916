//! The web UI (web/dist, built by `npm run build`) is embedded by `server::assets`. The folder must
//! exist for the crate to compile, so a workspace built without npm still builds (with an empty UI).

fn main() {
    let dist = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../web/dist");
    if !dist.exists() {
        std::fs::create_dir_all(&dist).expect("create web/dist");
    }
    // Rebuild when the UI is rebuilt (new hashed asset names change the folder).
    println!("cargo:rerun-if-changed=../../web/dist");
    println!("cargo:rerun-if-changed=build.rs");
}
