//! Shared by the fault suites of cranwhales and surge (included with `#[path]`): file systems the
//! tests mount to make a real full disk or a real read-only store. Mounting needs root; where it
//! is refused the constructors return `None` and the test skips with a printed reason.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// A small tmpfs (unmounted on drop), or `None` where this process may not mount.
pub struct Tmpfs(pub PathBuf);

impl Tmpfs {
    pub fn mount(at: &Path, size: &str) -> Option<Tmpfs> {
        std::fs::create_dir_all(at).unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(at)
            .output()
            .is_ok_and(|o| o.status.success());
        ok.then(|| Tmpfs(at.to_owned()))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).output();
    }
}

/// A read-only bind mount of `dir` (unmounted on drop), or `None` where this process may not
/// mount (not root, or no mount namespace rights).
pub struct ReadOnlyMount(PathBuf);

impl ReadOnlyMount {
    pub fn of(dir: &Path, at: &Path) -> Option<ReadOnlyMount> {
        std::fs::create_dir_all(at).unwrap();
        let run = |args: &[&str]| {
            Command::new("mount")
                .args(args)
                .output()
                .is_ok_and(|o| o.status.success())
        };
        let (d, a) = (dir.to_str().unwrap(), at.to_str().unwrap());
        if !run(&["--bind", d, a]) {
            return None;
        }
        let m = ReadOnlyMount(at.to_owned());
        run(&["-o", "remount,ro,bind", a]).then_some(m)
    }
}

impl Drop for ReadOnlyMount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).output();
    }
}
