//! Every `${name}` a replay would send, checked before the first user starts. A placeholder is
//! filled by replay itself (`${WORKER}`, `${SESSION}`, … from live responses: `tokens::NAMES`),
//! by a `--data` column or by a `--capture`; one that none of them names (a typo in the CSV's
//! header, a forgotten `--data`) would go out as it is, the same wrong request from every user,
//! and an app that answers 200 to anything would pass the run. So the run stops here instead,
//! with one line naming the placeholder, where it is, and the names there are.
//!
//! What is sent: every event's URL, WS_SEND messages, POST bodies (text ones) and `-H` headers.
//! Received messages are not sent (only compared), so they are not checked.

use super::journey::Journey;
use crate::capture::Capture;
use crate::data::DataSet;
use crate::recording::Kind;
use crate::tokens;

/// A placeholder nothing fills: where it is, its name, and what the run does fill.
#[derive(Debug, thiserror::Error)]
#[error("{place}: placeholder ${{{name}}} has no value: {known}; it would be sent as it is")]
pub struct UnfilledPlaceholder {
    /// `recording.log:5` (its datafile's body too), or `-H 'X-Day: ${day}'`.
    place: String,
    /// The placeholder's name.
    name: String,
    /// The run's `--data` columns and `--capture` names, as a sentence.
    known: String,
}

/// Checks every placeholder of `journeys` and of the `-H` `headers` against the built-in names,
/// `data`'s columns and the `captures`' names.
pub(super) fn check(
    journeys: &[Journey],
    data: Option<&DataSet>,
    captures: &[Capture],
    headers: &[String],
) -> Result<(), UnfilledPlaceholder> {
    let filled = |name: &str| {
        tokens::is_builtin(name)
            || data.is_some_and(|d| d.columns.iter().any(|c| &**c == name))
            || captures.iter().any(|c| &*c.name == name)
    };
    let unfilled = |place: &dyn Fn() -> String, text: &str| match tokens::placeholders(text)
        .find(|n| !filled(n))
    {
        Some(name) => Err(UnfilledPlaceholder {
            place: place(),
            name: name.to_string(),
            known: known(data, captures),
        }),
        None => Ok(()),
    };
    for j in journeys {
        for (ev, body) in j.rec.events.iter().zip(&j.bodies) {
            let at = || format!("{}:{}", j.rec.path.display(), ev.line);
            unfilled(&at, &ev.url)?;
            if ev.kind == Kind::WsSend {
                unfilled(&at, &ev.message)?;
            }
            if let Some(text) = body.as_deref().and_then(|b| std::str::from_utf8(b).ok()) {
                let file = ev.datafile.as_deref().unwrap_or(std::path::Path::new(""));
                let at = || format!("{} (its POST body {})", at(), file.display());
                unfilled(&at, text)?;
            }
        }
    }
    for h in headers {
        unfilled(&|| format!("-H '{h}'"), h)?;
    }
    Ok(())
}

/// The names a run fills besides the built-in ones, as the end of the one-line error.
fn known(data: Option<&DataSet>, captures: &[Capture]) -> String {
    let data = match data {
        Some(d) => {
            let cols: Vec<&str> = d.columns.iter().map(|c| &**c).collect();
            format!(
                "the columns of --data {} are {}",
                d.path.display(),
                cols.join(", ")
            )
        }
        None => "no --data file given (its header row names the placeholders)".into(),
    };
    let names: Vec<&str> = captures.iter().map(|c| &*c.name).collect();
    match names.as_slice() {
        [] => format!("{data}, and no --capture names it"),
        _ => format!("{data}; --capture names {}", names.join(", ")),
    }
}
