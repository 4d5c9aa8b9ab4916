//! Shared by the three programs' `main.rs` tests (included with `#[path]`): every flag of a clap
//! command tree (by its long or short name), and its default, must be written in README.md, so the
//! README cannot fall behind the code.

use clap::{ArgAction, Command};

/// The flags of `cmd` and its subcommands (recursively) that README.md does not mention, or whose
/// default is not on a README line naming the flag; one line each.
pub fn missing_from_readme(cmd: &Command, readme: &str) -> Vec<String> {
    let mut missing = Vec::new();
    walk(cmd, cmd.get_name(), readme, &mut missing);
    missing.sort();
    missing.dedup();
    missing
}

/// Fails the calling test, listing every flag or default of `cmd` that README.md lacks.
pub fn assert_in_readme(cmd: &Command) {
    let missing = missing_from_readme(cmd, include_str!("../README.md"));
    assert!(
        missing.is_empty(),
        "README.md lacks:\n{}",
        missing.join("\n")
    );
}

fn walk(cmd: &Command, path: &str, readme: &str, missing: &mut Vec<String>) {
    for arg in cmd.get_arguments() {
        let id = arg.get_id().as_str();
        if arg.is_hide_set() || id == "help" || id == "version" {
            continue;
        }
        // Positional arguments are shown in the usage lines by example, not by name.
        let names: Vec<String> = arg
            .get_long()
            .map(|l| format!("--{l}"))
            .into_iter()
            .chain(arg.get_short().map(|s| format!("-{s}")))
            .collect();
        let Some(name) = names.first().cloned() else {
            continue;
        };
        let lines: Vec<&str> = readme
            .lines()
            .filter(|l| names.iter().any(|n| mentions(l, n)))
            .collect();
        if lines.is_empty() {
            missing.push(format!("{path} {name}: not in README.md"));
            continue;
        }
        let is_switch = matches!(
            arg.get_action(),
            ArgAction::SetTrue | ArgAction::SetFalse | ArgAction::Count
        );
        let defaults: Vec<String> = arg
            .get_default_values()
            .iter()
            .map(|v| v.to_string_lossy().into_owned())
            .collect();
        if !is_switch && !defaults.is_empty() {
            let default = defaults.join(",");
            if !lines.iter().any(|l| l.contains(&default)) {
                missing.push(format!(
                    "{path} {name}: default {default:?} not on its README line"
                ));
            }
        }
    }
    for sub in cmd.get_subcommands() {
        if sub.get_name() != "help" {
            walk(sub, &format!("{path} {}", sub.get_name()), readme, missing);
        }
    }
}

/// Whether `line` has `word` not followed by another name character (`--db` is not `--db-path`).
fn mentions(line: &str, word: &str) -> bool {
    line.match_indices(word).any(|(i, _)| {
        let next = line[i + word.len()..].chars().next();
        let prev = line[..i].chars().next_back();
        !next.is_some_and(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
            && !prev.is_some_and(|c| c.is_ascii_alphanumeric() || c == '-')
    })
}
