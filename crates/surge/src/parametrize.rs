//! `surge parametrize recording.log date=2015-01-13 -o out.log`: turns recorded values into
//! `${name}` placeholders (in URLs, WebSocket messages and POST bodies), so `replay --data` can
//! give each session its own. The recording's other fields are kept as they are.

use crate::recording::EventLine;
use crate::rundir::write_atomic;
use std::path::{Path, PathBuf};

/// Flags of `surge parametrize`.
#[derive(clap::Args, Debug, Clone)]
pub struct ParametrizeArgs {
    /// recording.log to read
    pub recording: PathBuf,
    /// NAME=VALUE: every recorded VALUE becomes ${NAME} (repeatable; a value that never appears
    /// is an error)
    #[arg(value_name = "NAME=VALUE", required = true)]
    pub params: Vec<String>,
    /// Where to write the new recording (POST bodies are written beside it)
    #[arg(short, long, value_name = "FILE")]
    pub output: PathBuf,
}

/// Why parametrize failed: one line naming the file or the parameter.
#[derive(Debug, thiserror::Error)]
pub enum ParametrizeError {
    /// A NAME=VALUE is malformed or its value never appears.
    #[error("{0}")]
    Usage(String),
    /// A recording line that is not an event, as replay words it (`file:LINE: what`).
    #[error("{path}:{line}: not a JSON event: {what}")]
    Line {
        /// The recording.
        path: PathBuf,
        /// Its 1-based line.
        line: usize,
        /// What the JSON parser said.
        what: String,
    },
    /// A file could not be read or written.
    #[error("{path}: {what}")]
    File {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        what: String,
    },
}

/// What `surge parametrize` did: each placeholder with its value and how often it replaced it.
#[derive(Debug, Clone, PartialEq)]
pub struct Parametrized {
    /// (name, value, places), longest value first.
    pub replaced: Vec<(String, String, usize)>,
    /// The recording written.
    pub output: std::path::PathBuf,
}

/// Runs `surge parametrize` (the recording written whole); prints nothing: the terminal layer
/// says how often each value was replaced.
pub fn run(args: ParametrizeArgs) -> Result<Parametrized, ParametrizeError> {
    let mut params = parse_params(&args.params)?;
    let file = |path: &Path, what: String| ParametrizeError::File {
        path: path.to_path_buf(),
        what,
    };
    let text = std::fs::read_to_string(&args.recording)
        .map_err(|e| file(&args.recording, e.to_string()))?;
    let src_dir = args.recording.parent().unwrap_or(Path::new("."));
    let out_dir = args.output.parent().unwrap_or(Path::new("."));
    let stem = (args.output.file_stem()).map_or("out".into(), |s| s.to_string_lossy().into_owned());
    let mut out = String::with_capacity(text.len());
    for (n, line) in text.lines().enumerate() {
        if line.starts_with('#') || line.trim().is_empty() {
            out.push_str(line);
            out.push('\n');
            continue;
        }
        let mut ev: EventLine = serde_json::from_str(line).map_err(|e| ParametrizeError::Line {
            path: args.recording.clone(),
            line: n + 1,
            what: e.to_string(),
        })?;
        for field in [&mut ev.url, &mut ev.message].into_iter().flatten() {
            *field = replace(field, &mut params);
        }
        if let Some(d) = ev.datafile.clone() {
            let src = src_dir.join(&d);
            let before = std::fs::read(&src).map_err(|e| file(&src, e.to_string()))?;
            let after = match std::str::from_utf8(&before) {
                Ok(t) => replace(t, &mut params).into_bytes(),
                Err(_) => before.clone(),
            };
            // A changed body gets a name of its own: the original recording stays as it was.
            let name = if after == before {
                d
            } else {
                format!("{stem}-{d}")
            };
            let dst = out_dir.join(&name);
            if dst != src {
                write_atomic(&dst, &after).map_err(|e| file(&dst, e.to_string()))?;
            }
            ev.datafile = Some(name);
        }
        out.push_str(&serde_json::to_string(&ev).expect("event serialises"));
        out.push('\n');
    }
    if let Some((name, value, _)) = params.iter().find(|p| p.2 == 0) {
        return Err(ParametrizeError::Usage(format!(
            "{name}={value}: the value does not appear in {}",
            args.recording.display()
        )));
    }
    write_atomic(&args.output, out.as_bytes()).map_err(|e| file(&args.output, e.to_string()))?;
    Ok(Parametrized {
        replaced: params,
        output: args.output,
    })
}

/// NAME=VALUE pairs, longest value first (so a value inside another is replaced last), each
/// with its replacement count.
fn parse_params(raw: &[String]) -> Result<Vec<(String, String, usize)>, ParametrizeError> {
    let mut out = Vec::new();
    for p in raw {
        let (name, value) = p
            .split_once('=')
            .filter(|(n, v)| !n.is_empty() && !v.is_empty())
            .ok_or_else(|| ParametrizeError::Usage(format!("{p}: expected NAME=VALUE")))?;
        if !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            return Err(ParametrizeError::Usage(format!(
                "{p}: {name:?} is not a placeholder name (letters, digits, _)"
            )));
        }
        out.push((name.to_string(), value.to_string(), 0));
    }
    out.sort_by_key(|p| std::cmp::Reverse(p.1.len()));
    Ok(out)
}

fn replace(text: &str, params: &mut [(String, String, usize)]) -> String {
    let mut s = text.to_string();
    for (name, value, count) in params.iter_mut() {
        let n = s.matches(value.as_str()).count();
        if n > 0 {
            *count += n;
            s = s.replace(value.as_str(), &format!("${{{name}}}"));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_longest_values_first_and_counts() {
        let mut p = parse_params(&["d=2015-01-13".into(), "y=2015".into()]).unwrap();
        assert_eq!(replace("/a/2015-01-13?y=2015", &mut p), "/a/${d}?y=${y}");
        assert_eq!((p[0].2, p[1].2), (1, 1));
        assert!(parse_params(&["=x".into()]).is_err());
        assert!(parse_params(&["a-b=x".into()]).is_err());
    }
}
