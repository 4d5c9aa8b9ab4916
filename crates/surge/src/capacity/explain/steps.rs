//! Which wait a received WebSocket message stands for. A Shiny app answers each client send
//! (`init`, `update`, a custom input) with messages, and only some of them name outputs: `values`
//! and `errors` (R's `flushOutput` sends every output the flush computed, its value or its error,
//! in one message; the browser hands both to the output's binding). The others name none:
//! `frozen` (`freezeReactiveValue`, sent at once by the observer that calls it, before the flush),
//! `custom` (`sendCustomMessage`), a flush carrying only `inputMessages` (`update*Input`),
//! `config` (the session's handshake). `busy`, `progress` and `recalculating` are neither recorded
//! nor waited for (shinyloadtest's rule), so they never end a wait.
//!
//! A step is the run of received messages between two client sends (any event that is not a
//! received message). The rule: a WS_RECV naming no output hands its wait to the next WS_RECV of
//! the same step that names outputs. That line's time then runs from the start of the first wait
//! it took over (the client's send, when the step opens with it) to its own message, and its label
//! says where the wait ended: `values: all_hour, total_count (after frozen)`. So the time an app
//! spends computing outputs before it sends a `frozen` counts for those outputs, not for the
//! freeze. A message naming no output after the step's last output message (or in a step without
//! one) keeps its own line. Each output message keeps its own time: Shiny sends one message per
//! flush, so a second one in a step comes from a later flush whose work began after the first.
//! WS_RECV_INIT and WS_RECV_BEGIN_UPLOAD (replies replay reads tokens from) stay out, as before.

use crate::recording::Kind;
use crate::report::lines::{Lines, RecLine};
use std::collections::{BTreeMap, BTreeSet};

/// The recording's output messages that take over waits, and the waits they take over.
#[derive(Debug, Default)]
pub struct Steps {
    /// Output line → the lines naming no output just before it in its step, in order.
    after: BTreeMap<u32, Vec<u32>>,
    /// Every line some output line took over.
    taken: BTreeSet<u32>,
    /// Output line → its label with "(after …)".
    labels: BTreeMap<u32, String>,
}

/// True when the message names outputs: the report's label of a message (`report::lines`) begins
/// with `values: ` or `errors: ` exactly when its `values` or `errors` object names one.
fn names_outputs(l: &RecLine) -> bool {
    l.label.starts_with("values: ") || l.label.starts_with("errors: ")
}

impl Steps {
    /// Reads the steps of `rec` (its lines in file order, which replay plays WebSocket events in).
    pub fn of(rec: &Lines) -> Steps {
        let mut s = Steps::default();
        let mut waiting: Vec<&RecLine> = Vec::new();
        for l in &rec.lines {
            if !l.kind.is_recv() {
                waiting.clear();
                continue;
            }
            if l.kind != Kind::WsRecv {
                continue;
            }
            if !names_outputs(l) {
                waiting.push(l);
                continue;
            }
            if waiting.is_empty() {
                continue;
            }
            let mut names: Vec<&str> = Vec::new();
            for w in &waiting {
                if !names.contains(&w.label.as_str()) {
                    names.push(&w.label);
                }
            }
            let label = format!("{} (after {})", l.label, names.join(", "));
            s.labels.insert(l.line, label);
            s.taken.extend(waiting.iter().map(|w| w.line));
            s.after
                .insert(l.line, waiting.drain(..).map(|w| w.line).collect());
        }
        s
    }

    /// The lines naming no output whose waits `line` takes over (empty for most lines).
    pub fn after(&self, line: u32) -> &[u32] {
        self.after.get(&line).map(Vec::as_slice).unwrap_or(&[])
    }

    /// True when an output line took this line's wait over: it is no row of its own.
    pub fn taken(&self, line: u32) -> bool {
        self.taken.contains(&line)
    }

    /// The label of `l` in the ranking: with "(after …)" when it took waits over.
    pub fn label(&self, l: &RecLine) -> String {
        self.labels.get(&l.line).unwrap_or(&l.label).clone()
    }
}
