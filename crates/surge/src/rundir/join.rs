//! The one segment join: the sessions of a plan's segments (`--segment K/N` run directories) as
//! one run's, in start order. `surge merge` writes them out in this order (renumbered 0, 1, 2, ...),
//! `surge report` joins segment directories in memory the same way, so a merged run and its
//! segments given to the report directly show the same session ids.

/// `(segment index, session)` pairs in the joined run's order: by start (Unix ms), then segment,
/// then the session's id within its segment; `key` gives a session's (start, id). The position
/// in the result is the session's id in the joined run.
pub fn in_start_order<T>(
    sessions: impl IntoIterator<Item = (u32, T)>,
    key: impl Fn(&T) -> (i64, u32),
) -> Vec<T> {
    let mut all: Vec<(u32, T)> = sessions.into_iter().collect();
    all.sort_by_key(|(seg, s)| {
        let (start, id) = key(s);
        (start, *seg, id)
    });
    all.into_iter().map(|(_, s)| s).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn ties_go_to_the_lower_segment_then_the_lower_id() {
        let got = super::in_start_order(
            [(2, (10, 0)), (1, (10, 1)), (1, (10, 0)), (1, (5, 9))],
            |&(start, id)| (start, id),
        );
        assert_eq!(got, [(5, 9), (10, 0), (10, 1), (10, 0)]);
    }
}
