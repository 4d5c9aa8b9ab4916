//! Flag, file and preset resolution.
use super::*;

fn parse(args: &[&str]) -> Result<Config, ConfigError> {
    let mut v = vec!["manifold"];
    v.extend_from_slice(args);
    Config::from_cli(Cli::try_parse_from(v).expect("clap parse"))
}

#[test]
fn defaults_and_command() {
    let c = parse(&["--", "python3", "app.py", "{port}"]).unwrap();
    assert_eq!(c.command, ["python3", "app.py", "{port}"]);
    assert_eq!((c.min, c.max, c.per_worker), (1, default_max(), 1));
    assert_eq!(c.queue_timeout, Duration::from_secs(30));
    assert_eq!(c.drain_timeout, Duration::ZERO, "no drain unless asked");
    assert_eq!(c.sticky, Sticky::None);
}

#[test]
fn shiny_preset_turns_on_sticky() {
    let c = parse(&["shiny", "app dir's", "--max", "3"]).unwrap();
    assert_eq!(c.sticky, Sticky::Cookie);
    assert_eq!(c.max, 3);
    assert_eq!(c.command[0], "Rscript");
    assert!(
        c.command[2].contains(r"shiny::runApp('app dir\'s'"),
        "{}",
        c.command[2]
    );
}

#[test]
fn plumber_preset() {
    let c = parse(&["--min", "2", "plumber", "api.R"]).unwrap();
    assert_eq!(c.min, 2);
    assert!(c.command[2].contains("plumber::pr('api.R')"));
}

/// What clap says of a command line it refuses: its first line, without `error: `.
fn refused(args: &[&str]) -> String {
    let mut v = vec!["manifold"];
    v.extend_from_slice(args);
    let e = Cli::try_parse_from(v).expect_err("refused by clap");
    assert_eq!(e.kind(), clap::error::ErrorKind::ValueValidation, "{e}");
    let text = e.render().to_string();
    text.lines()
        .next()
        .unwrap()
        .trim_start_matches("error: ")
        .to_string()
}

#[test]
fn errors_name_the_field() {
    // A flag's value is refused by clap itself (exit status 2, as in surge and cranwhales),
    // in clap's words, with the one grammar's reason.
    let e = refused(&["--queue-timeout", "soon", "--", "x"]);
    assert!(
        e.starts_with(
            "invalid value 'soon' for '--queue-timeout <DURATION>': \"soon\": not a duration ("
        ),
        "{e}"
    );
    // The one grammar of the three programs: a bare number is refused with the same words.
    assert_eq!(
        refused(&["--queue-timeout", "25", "--", "x"]),
        "invalid value '25' for '--queue-timeout <DURATION>': \"25\": a duration needs a unit, e.g. 25s or 500ms"
    );
    assert_eq!(
        refused(&["shiny", "app", "--max-rss", "lots"]),
        "invalid value 'lots' for '--max-rss <SIZE>': \"lots\": not a size; write e.g. 65536, 64KiB, 16MiB or 1GB"
    );
    let e = parse(&["--min", "3", "--max", "2", "--", "x"]).unwrap_err();
    assert_eq!(e.to_string(), "--min 3 is above --max 2");
    assert!(parse(&[])
        .unwrap_err()
        .to_string()
        .starts_with("no worker command"));
}

#[test]
fn sizes() {
    assert_eq!(parse_size("x", "500MB").unwrap(), 500_000_000);
    assert_eq!(parse_size("x", "2GiB").unwrap(), 2 << 30);
    assert_eq!(parse_size("x", "64m").unwrap(), 64 << 20);
    assert_eq!(parse_size("x", "1024").unwrap(), 1024);
    assert_eq!(
        parse_size("--max-rss", "lots").unwrap_err().to_string(),
        "--max-rss: \"lots\": not a size; write e.g. 65536, 64KiB, 16MiB or 1GB"
    );
    assert!(parse_size("--max-rss", "0").is_err());
    assert!(parse_size("x", "5 parsecs").is_err());
}

#[test]
fn file_fills_gaps_and_flags_win() {
    let dir = std::env::temp_dir().join(format!("manifold-cfg-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("m.toml");
    std::fs::write(
        &f,
        "max = 7\nmin = 2\nqueue-timeout = \"2s\"\ndrain-timeout = \"3s\"\ncommand = [\"python3\", \"w.py\"]\n",
    )
    .unwrap();
    let c = parse(&["--config", f.to_str().unwrap(), "--min", "1"]).unwrap();
    assert_eq!((c.min, c.max), (1, 7));
    assert_eq!(c.queue_timeout, Duration::from_secs(2));
    assert_eq!(c.drain_timeout, Duration::from_secs(3));
    assert_eq!(c.command, ["python3", "w.py"]);
    // A bad value in the file names the file and its key, not a flag nobody typed.
    std::fs::write(&f, "queue-timeout = \"10\"\ncommand = [\"x\"]\n").unwrap();
    let e = parse(&["--config", f.to_str().unwrap()]).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "config file {}: queue-timeout: \"10\": a duration needs a unit, e.g. 10s or 500ms",
            f.display()
        )
    );
    std::fs::write(&f, "maxx = 7\n").unwrap();
    let e = parse(&["--config", f.to_str().unwrap()])
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with(&format!("config file {}:", f.display())),
        "{e}"
    );
    assert!(e.contains("line 1"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn app_tables_resolve_and_errors_name_the_app() {
    let dir = std::env::temp_dir().join(format!("manifold-apps-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("apps.toml");
    std::fs::write(
        &f,
        "max = 3\n[[app]]\nprefix = \"/sales\"\nshiny = \"/srv/sales\"\n[[app]]\nname = \"api\"\nprefix = \"/api/\"\nplumber = \"api.R\"\nmax = 1\n",
    )
    .unwrap();
    let c = parse(&["--config", f.to_str().unwrap()]).unwrap();
    let names: Vec<(&str, &str, usize)> = c
        .apps
        .iter()
        .map(|a| (a.name.as_str(), a.prefix.as_str(), a.cfg.max))
        .collect();
    assert_eq!(names, [("sales", "/sales/", 3), ("api", "/api/", 1)]);
    assert_eq!(
        c.apps[0].cfg.sticky,
        Sticky::Cookie,
        "shiny preset defaults"
    );
    std::fs::write(&f, "[[app]]\nprefix = \"/a/\"\n").unwrap();
    let e = parse(&["--config", f.to_str().unwrap()])
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        format!(
            "config file {}: [[app]] #1: give exactly one of command, shiny, plumber",
            f.display()
        )
    );
    std::fs::write(&f, "[[app]]\nprefix = \"a\"\ncommand = [\"x\"]\n").unwrap();
    let e = parse(&["--config", f.to_str().unwrap()])
        .unwrap_err()
        .to_string();
    assert!(
        e.ends_with("[[app]] #1: prefix \"a\" must start with /"),
        "{e}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Field names of a struct's `Debug` output (`Name { a: 1, b: None }` → `[a, b]`).
fn debug_fields(dbg: &str) -> Vec<String> {
    let inner = &dbg[dbg.find('{').expect("struct") + 1..dbg.rfind('}').expect("struct")];
    inner
        .split(", ")
        .filter_map(|f| f.trim().split_once(": ").map(|(k, _)| k.to_string()))
        .collect()
}

/// The settings table is the single source by construction: every field of `Config` and of
/// `Options` (but the few that are not settings) is exactly one row of it, and every row is a
/// flag of each command, a TOML key and has a reload class and a default in `--help`.
#[test]
fn settings_table_is_the_single_source() {
    use clap::CommandFactory;
    let names: Vec<String> = SETTINGS.iter().map(|s| s.name.to_string()).collect();
    let mut unique = names.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), names.len(), "a setting declared twice");
    let with = |extra: &[&str]| -> Vec<String> {
        names
            .iter()
            .cloned()
            .chain(extra.iter().map(|s| s.to_string()))
            .collect()
    };
    let config = debug_fields(&format!("{:?}", Config::new(Vec::new())));
    assert_eq!(config, with(&["command", "verbose", "apps"]));
    let options = debug_fields(&format!("{:?}", Options::default()));
    assert_eq!(options, with(&["config", "command", "app", "verbose"]));
    let cmd = Cli::command();
    let preset = cmd.find_subcommand("shiny").expect("shiny preset");
    for s in SETTINGS {
        for c in [&cmd, preset] {
            let arg = c
                .get_arguments()
                .find(|a| a.get_id().as_str() == s.name)
                .unwrap_or_else(|| panic!("{} is not a flag of {}", s.name, c.get_name()));
            assert_eq!(arg.get_long(), Some(&s.flag()[2..]));
            let help = arg.get_help().expect("help").to_string();
            assert!(help.contains("[default: "), "{help}");
        }
        let key = &s.flag()[2..];
        let e = toml::from_str::<Options>(&format!("{key} = [[]]")).unwrap_err();
        assert!(!e.to_string().contains("unknown field"), "{key}: {e}");
        assert!(!s.when.as_str().is_empty());
    }
    let e = toml::from_str::<Options>("no-such-setting = 1").unwrap_err();
    assert!(e.to_string().contains("unknown field"), "{e}");
    let shown = Config::new(Vec::new()).shown();
    assert_eq!(shown.len(), SETTINGS.len(), "status settings: one per row");
    assert!(shown
        .iter()
        .zip(SETTINGS)
        .all(|((k, _), s)| *k == &s.flag()[2..]));
    let table = live::docs_table();
    assert_eq!(table.lines().count(), SETTINGS.len() + 2, "{table}");
}

#[test]
fn preload_is_a_switch_that_turns_a_preset_into_its_parent() {
    let c = parse(&["--preload", "plumber", "api.R"]).unwrap();
    assert!(c.preload);
    assert!(c.command[2].contains("manifold_preload('plumber', 'api.R')"));
    let c = parse(&["shiny", "app", "--preload"]).unwrap();
    assert!(c.command[2].contains("manifold_preload('shiny', 'app')"));
    // Rscript truncates an `-e` longer than 10,000 bytes as it encodes it (the parent then fails
    // to parse): preload.R's comments are left out of the command.
    let e = &c.command[2];
    let encoded = e.len() + 2 * e.matches([' ', '\n']).count();
    assert!(encoded < 10_000, "Rscript -e would be {encoded} bytes");
    assert!(!e.lines().any(|l| l.trim_start().starts_with('#')), "{e}");
    assert_eq!(c.sticky, Sticky::Cookie, "the preset's settings hold");
    let c = parse(&["--preload=false", "plumber", "api.R"]).unwrap();
    assert!(!c.preload);
    assert!(c.command[2].contains("plumber::pr('api.R')"));
    // A command after `--` is the parent itself.
    let c = parse(&["--preload", "--", "python3", "preload.py"]).unwrap();
    assert_eq!(c.command, ["python3", "preload.py"]);
}
