//! The ranking `surge explain` prints: each request or output of the recording (its lines grouped
//! by label, so an output recomputed by several inputs is one row), its time alone, its loaded
//! p50/p95, the share of that p95 spent waiting (everything above its time alone), and its cost
//! per session (time alone × how often a session asks for it), costliest first. A Shiny message
//! naming no output hands its wait to the output message after it ([`steps`](super::steps)).

use super::steps::Steps;
use crate::recording::Kind;
use crate::report::{lines::Lines, load::Session};
use crate::stats::rank;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One row of the ranking.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Row {
    /// What the line is (URL, output or message, as the report labels it).
    pub label: String,
    /// Its event type.
    pub kind: String,
    /// The recording lines it stands for.
    pub lines: Vec<u32>,
    /// Lines naming no output (`frozen`, `custom`, …) whose waits these lines took over: their
    /// time runs from the start of those waits (see `explain::steps`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub after: Vec<u32>,
    /// Times a session asks for it.
    pub per_session: u32,
    /// Its mean time alone (one user), ms.
    pub solo_ms: f64,
    /// Under load: median, ms (null: no loaded event).
    pub loaded_p50_ms: Option<f64>,
    /// Under load: p95 (nearest rank), ms.
    pub loaded_p95_ms: Option<f64>,
    /// Share of the loaded p95 above its time alone: waiting behind other sessions (0–1).
    pub waiting_share: Option<f64>,
    /// Its time alone per session (solo × per session), ms: what it costs the server.
    pub cost_ms: f64,
}

/// Successful event times per recording line; an output line that took waits over (`steps`)
/// counts from the start of the first of them, and the lines it took are left out.
fn times_by_line(sessions: &[Session], steps: &Steps) -> BTreeMap<u32, Vec<i64>> {
    let mut by: BTreeMap<u32, Vec<i64>> = BTreeMap::new();
    for s in sessions {
        let start: BTreeMap<u32, i64> = s.events.iter().map(|e| (e.line, e.start)).collect();
        for e in s
            .events
            .iter()
            .filter(|e| !e.failed && !steps.taken(e.line))
        {
            let from = (steps.after(e.line).iter())
                .filter_map(|l| start.get(l).copied())
                .fold(e.start, i64::min);
            by.entry(e.line).or_default().push(e.end - from);
        }
    }
    by
}

/// Ranks the recording's request and output lines by cost per session, from the solo and the
/// loaded sessions (both paired against `rec`). Lines no solo session reached are left out.
pub fn rank_lines(rec: &Lines, solo: &[Session], loaded: &[Session]) -> Vec<Row> {
    let steps = Steps::of(rec);
    let (alone, busy) = (times_by_line(solo, &steps), times_by_line(loaded, &steps));
    let mut groups: BTreeMap<(String, &'static str), Vec<u32>> = BTreeMap::new();
    for l in &rec.lines {
        let timed = l.kind.is_http() || l.kind == Kind::WsRecv;
        if timed && alone.contains_key(&l.line) {
            groups
                .entry((steps.label(l), l.kind.name()))
                .or_default()
                .push(l.line);
        }
    }
    let mut rows: Vec<Row> = (groups.into_iter())
        .map(|((label, kind), lines)| {
            let solo: Vec<i64> = lines
                .iter()
                .flat_map(|l| alone[l].iter().copied())
                .collect();
            let mut load: Vec<i64> = (lines.iter())
                .flat_map(|l| busy.get(l).into_iter().flatten().copied())
                .collect();
            load.sort_unstable();
            let solo_ms = solo.iter().sum::<i64>() as f64 / solo.len() as f64;
            let p = |q: f64| (!load.is_empty()).then(|| rank(&load, q) as f64);
            let p95 = p(95.0);
            Row {
                label,
                kind: kind.to_string(),
                per_session: lines.len() as u32,
                solo_ms,
                loaded_p50_ms: p(50.0),
                loaded_p95_ms: p95,
                waiting_share: p95.map(|p| {
                    if p > 0.0 {
                        ((p - solo_ms) / p).clamp(0.0, 1.0)
                    } else {
                        0.0
                    }
                }),
                cost_ms: solo_ms * lines.len() as f64,
                after: lines
                    .iter()
                    .flat_map(|l| steps.after(*l))
                    .copied()
                    .collect(),
                lines,
            }
        })
        .collect();
    rows.sort_by(|a, b| b.cost_ms.total_cmp(&a.cost_ms).then(a.lines.cmp(&b.lines)));
    rows
}

/// The ranking as a text table (stdout).
pub fn table(rows: &[Row], users: u32) -> String {
    let ms = |v: Option<f64>| v.map_or("–".to_string(), |v| format!("{v:.0} ms"));
    let mut t = format!(
        "{:<4} {:<40} {:>10} {:>11} {:>11} {:>8} {:>13}\n",
        "rank",
        "request or output",
        "alone",
        format!("p50 @{users}"),
        format!("p95 @{users}"),
        "waiting",
        "cost/session"
    );
    for (i, r) in rows.iter().enumerate() {
        let label = cell(&format!("{} {}", r.kind, r.label), 40);
        let share = r
            .waiting_share
            .map_or("–".into(), |s| format!("{:.0}%", s * 100.0));
        t.push_str(&format!(
            "{:<4} {:<40} {:>10} {:>11} {:>11} {:>8} {:>13}\n",
            i + 1,
            label,
            ms(Some(r.solo_ms)),
            ms(r.loaded_p50_ms),
            ms(r.loaded_p95_ms),
            share,
            ms(Some(r.cost_ms))
        ));
    }
    t
}

/// `s` cut to `width` characters for the table; a label that says where its wait ended keeps its
/// "(after …)" and loses the middle.
fn cell(s: &str, width: usize) -> String {
    if s.chars().count() <= width {
        return s.to_string();
    }
    let tail = s
        .rfind(" (after ")
        .map(|i| &s[i..])
        .filter(|t| t.ends_with(')') && t.chars().count() < width / 2);
    match tail {
        Some(t) => {
            let head: String = s.chars().take(width - 1 - t.chars().count()).collect();
            format!("{head}…{t}")
        }
        None => s.chars().take(width).collect(),
    }
}
