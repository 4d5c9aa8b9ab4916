//! One plain-English sentence per whale, built only from its facts and label: what it fetched,
//! when and how, which client, and what that suggests.

use crate::numfmt::thousands;
use crate::summary::{Behaviour, Facts};

/// "fetched 4,528 distinct packages (71% of everything downloaded that day), each about twice,
/// from 04:55 to 09:54 UTC in 5 active hours, up to 120 in one minute; no R version in any
/// request: a mirror or crawler, not an R session."
pub fn sentence(f: &Facts, b: Behaviour) -> String {
    let mut s = what(f);
    s.push_str(", ");
    s.push_str(&when(f));
    s.push_str("; ");
    s.push_str(&client(f, b));
    s.push('.');
    s
}

fn what(f: &Facts) -> String {
    let n = f.downloads;
    if f.packages == 1 {
        return format!("fetched {} {}", f.top_package, times(n));
    }
    let mut s = if 2 * f.top_package_downloads >= n {
        format!(
            "fetched {} {} ({} of its {} downloads) and {} other package{}",
            f.top_package,
            times(f.top_package_downloads),
            pct(f.top_package_share()),
            thousands(n),
            thousands(f.packages - 1),
            if f.packages == 2 { "" } else { "s" }
        )
    } else {
        let mut s = format!("fetched {} distinct packages", thousands(f.packages));
        if f.package_share() >= 0.01 {
            s += &format!(
                " ({} of everything downloaded that day)",
                pct(f.package_share())
            );
        }
        s + ", " + &each(n, f.packages)
    };
    if 10 * f.versions >= 13 * f.packages {
        s += &format!(
            ", in {} versions (about {:.1} per package)",
            thousands(f.versions),
            f.versions_per_package()
        );
    }
    s
}

/// "each once", "each about twice", "each about 65 times".
fn each(n: u64, packages: u64) -> String {
    if n == packages {
        return "each once".into();
    }
    let r = n as f64 / packages as f64;
    match r.round() as u64 {
        0 | 1 => "each about once".into(),
        2 => "each about twice".into(),
        k => format!("each about {k} times"),
    }
}

fn times(n: u64) -> String {
    match n {
        1 => "once".into(),
        2 => "twice".into(),
        _ => format!("{} times", thousands(n)),
    }
}

fn when(f: &Facts) -> String {
    let span = f.last - f.first;
    let mut s = if span <= 900 {
        format!(
            "all within {} at {} UTC",
            duration(span.max(1)),
            hm(f.first)
        )
    } else if f.active_hours >= 20 {
        format!(
            "all day from {} to {} UTC ({} active hours)",
            hm(f.first),
            hm(f.last),
            f.active_hours
        )
    } else {
        format!(
            "from {} to {} UTC in {} active hour{}",
            hm(f.first),
            hm(f.last),
            f.active_hours,
            if f.active_hours == 1 { "" } else { "s" }
        )
    };
    if let (true, Some(m)) = (f.regular(), f.gap_median) {
        s += &format!(", like clockwork: one download every {}", duration(m));
    } else if let Some(m) = f.gap_median.filter(|&m| m >= 30) {
        s += &format!(", typically {} between downloads", duration(m));
    }
    if f.burst >= 20 && span > 60 {
        s += &format!(
            ", up to {} in one minute (at {})",
            thousands(f.burst),
            hm(f.burst_start)
        );
    }
    s
}

fn client(f: &Facts, b: Behaviour) -> String {
    let [r, not_r, unknown] = suggests(b);
    if f.day_no_r_share >= 1.0 {
        format!("this day's log records no R versions: {unknown}")
    } else if f.no_r_share() >= 0.95 {
        let all = if f.no_r_version == f.downloads {
            "any request".to_owned()
        } else {
            format!("{} of requests", pct(f.no_r_share()))
        };
        format!("no R version in {all}: {not_r}")
    } else if f.no_r_share() <= 0.05 {
        format!("every request from R: {r}")
    } else {
        format!(
            "{} of requests without an R version: {unknown}",
            pct(f.no_r_share())
        )
    }
}

/// What a behaviour suggests when every request came from R, when none did, and when the log
/// cannot tell.
fn suggests(b: Behaviour) -> [&'static str; 3] {
    match b {
        Behaviour::Archive => [
            "fetching old versions too, an archive crawler",
            "an archive crawler, not an R session",
            "an archive crawler",
        ],
        Behaviour::Mirror => [
            "installing a large part of CRAN, mirror-like",
            "a mirror or crawler, not an R session",
            "a mirror or crawler",
        ],
        Behaviour::Loop => [
            "a script or CI job reinstalling in a loop",
            "a script in a loop, not an R session",
            "a script or CI job in a loop",
        ],
        Behaviour::Classroom => [
            "one set installed many times: a classroom, lab or CI",
            "one set fetched many times by a tool, not an R session",
            "one set installed many times: a classroom, lab or CI",
        ],
        Behaviour::Steady => [
            "busy all day, a scheduled job or shared machine",
            "a crawler or scheduled job, not an R session",
            "a crawler or scheduled job",
        ],
        Behaviour::Burst => [
            "a scripted bulk install",
            "a tool fetching in bulk, not an R session",
            "a scripted bulk fetch",
        ],
        Behaviour::Session => [
            "an R session installing packages",
            "a script or tool, not an R session",
            "an install session",
        ],
    }
}

/// `71%`, `4.2%`, `0.3%`.
fn pct(share: f64) -> String {
    let p = share * 100.0;
    if p >= 10.0 || p == 0.0 {
        format!("{p:.0}%")
    } else {
        format!("{p:.1}%")
    }
}

fn hm(secs: u32) -> String {
    format!("{:02}:{:02}", secs / 3600, secs / 60 % 60)
}

/// `45 s`, `4 min`, `2.5 h`.
fn duration(secs: u32) -> String {
    if secs < 120 {
        format!("{secs} s")
    } else if secs < 7200 {
        format!("{} min", (secs + 30) / 60)
    } else {
        format!("{:.1} h", f64::from(secs) / 3600.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::profile;
    use crate::summary::Mix;

    fn facts() -> Facts {
        Facts {
            downloads: 9_000,
            packages: 4_528,
            day_packages: 6_377,
            top_package: "Rcpp".into(),
            top_package_downloads: 3,
            versions: 4_528,
            no_r_version: 9_000,
            day_no_r_share: 0.1,
            os: vec![Mix {
                name: "none".into(),
                downloads: 9_000,
            }],
            arch: vec![],
            active_hours: 5,
            first: 4 * 3600 + 55 * 60,
            last: 9 * 3600 + 54 * 60,
            burst: 120,
            burst_start: 5 * 3600,
            gap_q1: Some(0),
            gap_median: Some(1),
            gap_q3: Some(2),
            whale_downloads: 30_000,
        }
    }

    #[test]
    fn mirror_sentence_reads_as_the_issue_asks() {
        let p = profile(facts());
        assert_eq!(p.behaviour, Behaviour::Mirror);
        assert_eq!(
            p.sentence,
            "fetched 4,528 distinct packages (71% of everything downloaded that day), each about \
             twice, from 04:55 to 09:54 UTC in 5 active hours, up to 120 in one minute (at 05:00); \
             no R version in any request: a mirror or crawler, not an R session."
        );
    }

    #[test]
    fn single_package_loop_on_a_timer() {
        let mut f = facts();
        (f.downloads, f.packages, f.versions, f.no_r_version) = (212, 1, 1, 212);
        (f.top_package, f.top_package_downloads) = ("polycor".into(), 212);
        (f.gap_q1, f.gap_median, f.gap_q3) = (Some(55), Some(55), Some(55));
        (f.burst, f.active_hours, f.first, f.last) = (2, 18, 332 * 60, 1416 * 60);
        let p = profile(f);
        assert_eq!(p.behaviour, Behaviour::Loop);
        assert_eq!(
            p.sentence,
            "fetched polycor 212 times, from 05:32 to 23:36 UTC in 18 active hours, like \
             clockwork: one download every 55 s; no R version in any request: a script in a \
             loop, not an R session."
        );
    }

    #[test]
    fn a_day_without_r_versions_says_so() {
        let mut f = facts();
        f.day_no_r_share = 1.0;
        (f.first, f.last, f.active_hours) = (100, 400, 1);
        let s = profile(f).sentence;
        assert!(s.contains("all within 5 min at 00:01 UTC"), "{s}");
        assert!(
            s.ends_with("this day's log records no R versions: a mirror or crawler."),
            "{s}"
        );
    }
}
