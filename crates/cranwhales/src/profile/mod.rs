//! Behaviour profiles of a day's top whales: facts measured from each whale's rows (`facts`), one
//! named behaviour chosen by fixed rules (`classify`), and one plain-English sentence built from
//! the facts (`sentence`). The shapes served are in `summary`.
//!
//! The definitions and thresholds are documented, with the real days that justify them, in
//! `docs/whale-behaviours.md`; `tests/reference/recount.py` computes the same facts independently.
//! Computed once during ingest, stored with the day, served as is.

mod facts;
mod sentence;

pub use crate::summary::{Behaviour, Facts, Mix, Profile};
pub use facts::{DayContext, EnvClass, Profiler, Row};
pub use sentence::sentence;

/// The rules of `docs/whale-behaviours.md`, in integers so that no rounding decides a label.
pub fn classify(f: &Facts) -> Behaviour {
    let (n, pk) = (f.downloads, f.packages);
    if pk >= 20 && 10 * f.versions >= 13 * pk {
        Behaviour::Archive
    } else if pk >= 500 || (pk >= 100 && 10 * pk >= f.day_packages) {
        Behaviour::Mirror
    } else if n >= 10 * pk {
        Behaviour::Loop
    } else if pk >= 5 && n >= 3 * pk {
        Behaviour::Classroom
    } else if f.active_hours >= 20 {
        Behaviour::Steady
    } else if 2 * f.burst >= n || f.last - f.first <= 900 {
        Behaviour::Burst
    } else {
        Behaviour::Session
    }
}

/// Labels and describes `facts`.
pub fn profile(facts: Facts) -> Profile {
    let behaviour = classify(&facts);
    Profile {
        behaviour,
        label: behaviour.label().to_owned(),
        sentence: sentence(&facts, behaviour),
        facts,
    }
}
