//! Bounded waits for conditions that signal nothing: a file another process writes, a child's
//! exit, a port that starts listening, a line in a server's log. One poll loop for them all, so
//! the suite's only sleep between looks is here (issue 29: tests wait on events).

use std::time::{Duration, Instant};

/// Time between two looks at a condition.
const POLL: Duration = Duration::from_millis(20);

/// Whether `cond` held within `within`: looked at once at once, then every [`POLL`].
pub fn wait_until(within: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + within;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() >= end {
            return false;
        }
        // why: what is waited on happens in another process (or a thread of a server under
        // test) that sends no signal we could block on; each look is cheap and bounded by `end`.
        std::thread::sleep(POLL);
    }
}
