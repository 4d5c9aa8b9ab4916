//! `surge capacity --workers 1,2,4 --manifold-cmd '…{workers}…'`: how the answer scales with
//! processes. For each worker count the command starts manifold (in its own process group, its
//! output in `workers-N/manifold.log`), the search waits until `--manifold` shows that many
//! ready workers, runs into `workers-N/`, and stops the group; then one table: workers → users
//! held, users per worker, and with `--audience` the workers that many users need.

use super::search::{self, prepare, stop_watch, stopped};
use super::{CapacityArgs, CapacityError, CapacityPlan};
use crate::capfile::CapacityResult;
use crate::manifold_poll::{status_url, Poller};
use serde::Serialize;
use std::future::Future;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

/// How long a started manifold gets to have its workers ready.
const READY_WITHIN: Duration = Duration::from_secs(180);
/// How long it gets to stop after SIGTERM before the group is killed.
const STOP_WITHIN: Duration = Duration::from_secs(20);

/// One worker count's search.
#[derive(Debug, Clone, Serialize)]
pub struct ScalingRow {
    /// `--workers` entry.
    pub workers: u32,
    /// Its capacity directory, relative to the output directory.
    pub dir: String,
    /// The load it held (null when the first step broke).
    pub holds: Option<f64>,
    /// The load that broke it (null when none did).
    pub breaks: Option<f64>,
    /// holds / workers.
    pub per_worker: Option<f64>,
    /// The search's answer line.
    pub answer: String,
}

/// scaling.json: every count's row, the audience's answer and the table as printed.
#[derive(Debug, Clone, Serialize)]
pub struct Scaling {
    /// One row per worker count, in `--workers` order.
    pub rows: Vec<ScalingRow>,
    /// `--audience` and the workers it needs (from the largest count's users per worker).
    pub audience: Option<(u32, u32)>,
    /// The table and the audience line, as printed.
    pub table: String,
    /// Stopped by Ctrl-C before every count was searched.
    pub interrupted: bool,
}

impl Scaling {
    /// 0 when every count held something, 1 when one broke at its first step, 130 interrupted.
    pub fn exit_code(&self) -> u8 {
        if self.interrupted {
            130
        } else if self.rows.iter().any(|r| r.holds.is_none()) {
            1
        } else {
            0
        }
    }
}

/// Runs one search per `--workers` count with manifold started by `--manifold-cmd`.
pub async fn run_scaling(
    plan: CapacityPlan,
    stop: impl Future<Output = ()> + Send + 'static,
) -> Result<Scaling, CapacityError> {
    let args = &plan.args;
    let usage = |m: &str| CapacityError::Usage(m.to_string());
    let cmd = (args.manifold_cmd.clone()).ok_or_else(|| usage("--workers needs --manifold-cmd"))?;
    let url = (args.manifold.as_deref()).ok_or_else(|| {
        usage("--workers needs --manifold (manifold's address, to see its workers ready)")
    })?;
    if !cmd.contains("{workers}") {
        return Err(usage("--manifold-cmd: no {workers} in the command"));
    }
    if args.workers.contains(&0) {
        return Err(usage("--workers: counts must be at least 1"));
    }
    let usage_of = |e: crate::manifold_poll::PollError| CapacityError::Usage(e.to_string());
    let poller = Poller::new(&status_url(url).map_err(usage_of)?).map_err(usage_of)?;
    let root = prepare(args)?;
    let stop = stop_watch(stop);
    let dash = search::start_dashboard(args).await?;
    let mut rows = Vec::new();
    let mut last_dir = None;
    let mut interrupted = false;
    for &w in &args.workers {
        let name = format!("workers-{w}");
        let dir = root.join(&name);
        std::fs::create_dir_all(&dir).map_err(|err| CapacityError::Io {
            path: dir.clone(),
            err,
        })?;
        let mut child = start(&cmd.replace("{workers}", &w.to_string()), &dir)?;
        let ready = tokio::select! {
            r = poller.wait_ready(w, READY_WITHIN) => r.map_err(|e| e.to_string()),
            status = child.wait() => Err(format!("--manifold-cmd exited before its workers were ready ({})", status.map(|s| s.to_string()).unwrap_or_default())),
        };
        if let Err(e) = ready {
            stop_group(&mut child).await;
            return Err(CapacityError::Usage(format!(
                "{w} workers: {e}; its output: {}",
                dir.join("manifold.log").display()
            )));
        }
        eprintln!(
            "surge capacity: manifold with {w} workers ready; searching into {}",
            dir.display()
        );
        let res = search::search(&plan, &dir, &stop, dash.as_ref()).await;
        stop_group(&mut child).await;
        let res = res?;
        println!("{w} workers: {}", res.answer);
        interrupted = res.interrupted;
        rows.push(row(w, name, &res));
        last_dir = Some(dir);
        if interrupted {
            break;
        }
    }
    let audience = args.audience.and_then(|a| needed(&rows, a));
    let table = table(&rows, args.audience, audience, &unit(args));
    let out = Scaling {
        rows,
        audience: audience.map(|(a, n, _)| (a, n)),
        table,
        interrupted,
    };
    let path = root.join("scaling.json");
    let json = serde_json::to_string_pretty(&out).expect("scaling serialises");
    crate::rundir::write_atomic(&path, format!("{json}\n").as_bytes())
        .map_err(|err| CapacityError::Io { path, err })?;
    if let Some(d) = dash {
        d.finish(last_dir.as_deref(), stopped(&stop)).await;
    }
    Ok(out)
}

fn unit(args: &CapacityArgs) -> String {
    if args.open { "sessions/s" } else { "users" }.to_string()
}

fn row(workers: u32, dir: String, res: &CapacityResult) -> ScalingRow {
    ScalingRow {
        workers,
        dir,
        holds: res.holds,
        breaks: res.breaks,
        per_worker: res.holds.map(|h| h / f64::from(workers)),
        answer: res.answer.clone(),
    }
}

/// (audience, workers needed, users per worker used): from the largest count that held, whose
/// users per worker include what sharing one host costs.
fn needed(rows: &[ScalingRow], audience: u32) -> Option<(u32, u32, f64)> {
    let r = rows
        .iter()
        .filter(|r| r.per_worker.is_some_and(|p| p > 0.0))
        .max_by_key(|r| r.workers)?;
    let per = r.per_worker?;
    Some((audience, (f64::from(audience) / per).ceil() as u32, per))
}

/// The scaling table as printed.
fn table(
    rows: &[ScalingRow],
    asked: Option<u32>,
    audience: Option<(u32, u32, f64)>,
    unit: &str,
) -> String {
    let f = |v: Option<f64>| {
        v.map_or("-".to_string(), |v| {
            format!("{}", (v * 1000.0).round() / 1000.0)
        })
    };
    let mut t = format!("workers  holds ({unit})  breaks at  {unit} per worker\n");
    for r in rows {
        let per = r.per_worker.map_or("-".into(), |p| format!("{p:.1}"));
        t.push_str(&format!(
            "{:>7}  {:>13}  {:>9}  {:>16}\n",
            r.workers,
            f(r.holds),
            f(r.breaks),
            per
        ));
    }
    match (asked, audience) {
        (_, Some((a, n, per))) => t.push_str(&format!(
            "--audience {a}: {n} workers (at {per:.1} {unit} per worker, as the largest count held)\n"
        )),
        (Some(a), None) => t.push_str(&format!("--audience {a}: no count held any load to scale from\n")),
        _ => {}
    }
    t
}

/// Starts `cmd` with `sh -c` in a process group of its own, output into `dir/manifold.log`.
fn start(cmd: &str, dir: &Path) -> Result<tokio::process::Child, CapacityError> {
    let log_path = dir.join("manifold.log");
    let io_err = |err| CapacityError::Io {
        path: log_path.clone(),
        err,
    };
    let log = std::fs::File::create(&log_path).map_err(io_err)?;
    let err_log = log.try_clone().map_err(io_err)?;
    tokio::process::Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(err_log)
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| CapacityError::Usage(format!("--manifold-cmd: {e}")))
}

/// SIGTERM to the command's process group (manifold drains and stops its workers), SIGKILL to
/// the group if it is not gone within [`STOP_WITHIN`].
async fn stop_group(child: &mut tokio::process::Child) {
    let Some(pid) = child.id() else { return };
    let group = -(pid as i32);
    // SAFETY: kill(2) with a negative pid signals that process group; no memory is involved.
    unsafe { libc::kill(group, libc::SIGTERM) };
    if tokio::time::timeout(STOP_WITHIN, child.wait())
        .await
        .is_err()
    {
        // SAFETY: as above.
        unsafe { libc::kill(group, libc::SIGKILL) };
        let _ = child.wait().await;
    }
    // The shell may be gone before manifold's workers: give the group a moment, then make sure.
    tokio::time::sleep(Duration::from_millis(300)).await;
    // SAFETY: as above; ESRCH (nothing left) is the expected result.
    unsafe { libc::kill(group, libc::SIGKILL) };
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table's figures: users per worker, and the audience from the largest count.
    #[test]
    fn table_and_audience() {
        let r = |workers, holds: f64| ScalingRow {
            workers,
            dir: String::new(),
            holds: Some(holds),
            breaks: Some(holds + 1.0),
            per_worker: Some(holds / f64::from(workers)),
            answer: String::new(),
        };
        let rows = vec![r(1, 4.0), r(2, 8.0), r(4, 14.0)];
        let a = needed(&rows, 100).unwrap();
        assert_eq!((a.0, a.1), (100, 29));
        let t = table(&rows, Some(100), Some(a), "users");
        assert!(
            t.contains("      4             14         15               3.5"),
            "{t}"
        );
        assert!(t.contains("--audience 100: 29 workers"), "{t}");
    }
}
