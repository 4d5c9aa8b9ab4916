//! Resident memory of whole process groups, read from /proc: a worker's RSS is its own plus that
//! of every helper it started (R forks), which is what `--max-rss` limits and `/metrics` shows.
//! A fork of a `--preload` parent leads no group (it is in its parent's): its own RSS is listed
//! under its pid, a key no group can have (a pid is never reused while it names a group).

use std::collections::HashMap;

/// Page size in bytes (RSS in /proc/PID/stat is counted in pages).
fn page_size() -> u64 {
    // SAFETY: sysconf has no memory effects.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if n > 0 {
        n as u64
    } else {
        4096
    }
}

/// RSS in bytes summed by process group id, for every process visible in /proc; plus each
/// process that leads no group by its own pid.
pub fn by_group() -> HashMap<u32, u64> {
    let mut out = HashMap::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return out;
    };
    let page = page_size();
    for e in dir.flatten() {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        if let Some((pgrp, rss)) = parse_stat(&stat) {
            *out.entry(pgrp).or_insert(0) += rss * page;
            if let Ok(pid) = pid.parse::<u32>() {
                if pid != pgrp {
                    out.insert(pid, rss * page);
                }
            }
        }
    }
    out
}

/// (process group, RSS pages) from a /proc/PID/stat line; the command name may hold spaces and
/// parentheses, so fields are counted after its last `)`.
fn parse_stat(stat: &str) -> Option<(u32, u64)> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // After the name: state(3) ppid(4) pgrp(5) … rss(24); f[0] is field 3.
    Some((f.get(2)?.parse().ok()?, f.get(21)?.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_after_the_name() {
        let line = "42 (a (weird) name) S 1 40 40 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 100 12345678 321 18446744073709551615";
        assert_eq!(parse_stat(line), Some((40, 321)));
        // This test process: its group has at least its own RSS.
        let me = std::fs::read_to_string("/proc/self/stat").unwrap();
        let (pgrp, pages) = parse_stat(&me).unwrap();
        assert!(pages > 0);
        assert!(by_group()[&pgrp] >= pages * page_size());
    }
}
