//! Shared by cranwhales' `server/wire.rs` and surge's `report/model.rs` tests (included with
//! `#[path]`; the crates depend on none of each other): a browser bundle's TypeScript types are
//! generated from the Rust types it reads (ts-rs) and committed; the test fails when the committed
//! file differs, so a field added in Rust reaches the TypeScript compiler.

use std::path::Path;

/// The generated file: `header` (comment lines naming the sources and the command that writes
/// it), then each declaration, exported, in the order given.
pub fn render(header: &str, decls: &[String]) -> String {
    let mut out = String::from(header);
    for d in decls {
        out.push_str("export ");
        out.push_str(d);
        out.push_str("\n\n");
    }
    out.truncate(out.trim_end().len());
    out.push('\n');
    out
}

/// Fails the calling test when `path` differs from `render(header, decls)`, or writes it first
/// when the environment variable `write_var` is set; the failure names `command`, which does.
pub fn check(path: &Path, header: &str, decls: &[String], write_var: &str, command: &str) {
    let want = render(header, decls);
    if std::env::var_os(write_var).is_some() {
        std::fs::write(path, &want).unwrap();
    }
    let have = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        have == want,
        "{} is not what the Rust types generate; run `{command}` and commit it",
        path.display()
    );
}
