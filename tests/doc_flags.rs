//! Shared by the three programs' `main.rs` tests (included with `#[path]`): each program's page
//! `docs/<program>.md` ends with its flag reference, generated from the clap definitions, so the
//! docs cannot fall behind the code (nor keep a flag the code dropped).
//!
//! The reference sits between `<!-- flags -->` and `<!-- /flags -->`. The test compares it with
//! what the code gives; `UPDATE_DOCS=1 cargo test -p <program> flag_reference` (or `make docs`)
//! writes it instead.

use clap::{ArgAction, Command};
use std::path::PathBuf;

const BEGIN: &str =
    "<!-- flags: generated from the code by `make docs`; edit the clap help instead -->";
const END: &str = "<!-- /flags -->";

/// The flag reference of `cmd` and its subcommands: a heading and a table per command that has
/// flags, in the order clap lists them.
pub fn render(cmd: &Command) -> String {
    let mut out = String::new();
    walk(cmd, cmd.get_name(), &mut out);
    out
}

/// Fails the calling test when `docs/<program>.md`'s reference differs from `render(cmd)`, or
/// rewrites it when `UPDATE_DOCS` is set.
pub fn check_docs(cmd: &Command) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../docs")
        .join(format!("{}.md", cmd.get_name()));
    let page = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: cannot read: {e}", path.display()));
    let want = format!("{BEGIN}\n{}{END}", render(cmd));
    let (start, end) = match (page.find(BEGIN), page.find(END)) {
        (Some(s), Some(e)) if e > s => (s, e + END.len()),
        _ => panic!(
            "{}: no generated flag reference; put the two lines\n{BEGIN}\n{END}\nwhere it belongs and run `make docs`",
            path.display()
        ),
    };
    if page[start..end] == want {
        return;
    }
    if std::env::var_os("UPDATE_DOCS").is_some() {
        let new = format!("{}{want}{}", &page[..start], &page[end..]);
        let tmp = path.with_extension("md.tmp");
        std::fs::write(&tmp, new).unwrap_or_else(|e| panic!("{}: {e}", tmp.display()));
        std::fs::rename(&tmp, &path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        return;
    }
    let old: Vec<&str> = page[start..end].lines().collect();
    let first_diff = want
        .lines()
        .zip(old.iter().chain(std::iter::repeat(&"")))
        .find(|(w, o)| w != *o)
        .map(|(w, o)| format!("code gives:\n  {w}\ndocs have:\n  {o}"))
        .unwrap_or_else(|| "the docs have extra lines".into());
    panic!(
        "{}: the flag reference differs from the code; run `make docs`.\n{first_diff}",
        path.display()
    );
}

fn walk(cmd: &Command, path: &str, out: &mut String) {
    let rows: Vec<String> = cmd.get_arguments().filter_map(row).collect();
    if !rows.is_empty() {
        out.push_str(&format!("\n### `{path}`\n\n"));
        if let Some(about) = cmd.get_about() {
            out.push_str(&format!("{}\n\n", one_line(&about.to_string())));
        }
        out.push_str("| flag | default | what |\n|---|---|---|\n");
        for r in rows {
            out.push_str(&r);
        }
    }
    for sub in cmd.get_subcommands() {
        if sub.get_name() != "help" && !sub.is_hide_set() {
            walk(sub, &format!("{path} {}", sub.get_name()), out);
        }
    }
}

/// One table row for a flag; `None` for positionals (shown in the usage lines), help and hidden ones.
fn row(arg: &clap::Arg) -> Option<String> {
    let id = arg.get_id().as_str();
    if arg.is_hide_set() || id == "help" || id == "version" || arg.is_positional() {
        return None;
    }
    let mut names: Vec<String> = Vec::new();
    if let Some(s) = arg.get_short() {
        names.push(format!("-{s}"));
    }
    if let Some(l) = arg.get_long() {
        names.push(format!("--{l}"));
    }
    let takes_value = !matches!(
        arg.get_action(),
        ArgAction::SetTrue | ArgAction::SetFalse | ArgAction::Count | ArgAction::Help
    );
    let mut flag = names.join(", ");
    if takes_value {
        let value = arg
            .get_value_names()
            .and_then(|v| v.first().map(|s| s.to_string()))
            .unwrap_or_else(|| id.to_uppercase());
        flag.push_str(&format!(" {value}"));
    }
    let aliases: Vec<String> = arg
        .get_visible_aliases()
        .unwrap_or_default()
        .iter()
        .map(|a| format!("`--{a}`"))
        .collect();
    let defaults: Vec<String> = arg
        .get_default_values()
        .iter()
        .map(|v| v.to_string_lossy().into_owned())
        .collect();
    let mut default = if defaults.is_empty() || !takes_value {
        String::new()
    } else {
        format!("`{}`", defaults.join(","))
    };
    let mut what = arg
        .get_long_help()
        .or(arg.get_help())
        .map(|h| one_line(&h.to_string()))
        .unwrap_or_default();
    // A default written in the help ("… [default: 10s]") goes to its column.
    if let Some(i) = what.rfind(" [default: ").filter(|_| what.ends_with(']')) {
        if default.is_empty() {
            default = what[i + 11..what.len() - 1].to_string();
        }
        what.truncate(i);
    }
    let values: Vec<String> = arg
        .get_possible_values()
        .iter()
        .filter(|v| !v.is_hide_set())
        .map(|v| format!("`{}`", v.get_name()))
        .collect();
    if !values.is_empty() && takes_value {
        what.push_str(&format!(" (one of {})", values.join(", ")));
    }
    if !aliases.is_empty() {
        what.push_str(&format!(" (alias {})", aliases.join(", ")));
    }
    Some(format!(
        "| `{flag}` | {default} | {} |\n",
        what.replace('|', "\\|")
    ))
}

/// Help text on one table line: paragraphs joined, whitespace collapsed.
fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}
