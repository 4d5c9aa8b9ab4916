//! Day-level numbers stored beside the totals: what trends and the package view read without
//! touching whale or package rows.

use super::{PackageCount, WhaleTable};
use crate::summary::Behaviour;

/// How many top whales the trends report the share of (the last is all of the top 100).
pub const TOPS: [usize; 4] = [1, 6, 25, 100];

/// One day's numbers beyond its totals.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DayStats {
    /// Downloads of the top 1, 6, 25 and 100 whales together.
    pub top: [u64; 4],
    /// Whales of each behaviour, in `Behaviour::ALL` order.
    pub behaviours: [u32; 7],
    /// Rows whose request named no R version.
    pub no_r_rows: u64,
    /// The aggregate-only estimate of automated downloads every package got that day (as
    /// `adjustedcranlogs` estimates it): the 5% quantile of the per-package download counts,
    /// element `floor(0.05 * (m - 1))` of the m sorted counts.
    pub baseline: u64,
    /// Downloads under `filters::SMALL_BYTES` bytes, all packages together.
    pub small: u64,
    /// Repeated downloads (`filters`), all packages together.
    pub repeats: u64,
}

/// The stats of a day from its ranked whales and package counts.
pub(super) fn day_stats(
    whales: &[WhaleTable],
    packages: &[PackageCount],
    no_r_rows: u64,
) -> DayStats {
    let mut top = [0u64; 4];
    for (t, &n) in top.iter_mut().zip(&TOPS) {
        *t = whales.iter().take(n).map(|w| w.downloads).sum();
    }
    let mut behaviours = [0u32; 7];
    for w in whales {
        let k = Behaviour::ALL
            .iter()
            .position(|&b| b == w.profile.behaviour);
        behaviours[k.expect("every behaviour is in ALL")] += 1;
    }
    let mut counts: Vec<u64> = packages.iter().map(|p| p.downloads).collect();
    let baseline = if counts.is_empty() {
        0
    } else {
        let k = (counts.len() - 1) * 5 / 100;
        *counts.select_nth_unstable(k).1
    };
    DayStats {
        top,
        behaviours,
        no_r_rows,
        baseline,
        small: packages.iter().map(|p| p.small).sum(),
        repeats: packages.iter().map(|p| p.repeats).sum(),
    }
}
