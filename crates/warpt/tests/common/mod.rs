//! Helpers shared by integration tests (`mod common;`).

#![allow(clippy::unwrap_used, dead_code)] // tests: a panic is the failure report

use std::path::Path;
use std::process::Command;
use std::sync::{Mutex, MutexGuard};

/// Held by the tests of one test binary that measure and judge the
/// measurement: they run one at a time, or each would see the others as
/// foreign CPU time (and rightly call its results unreliable) or have its
/// latencies decided by a neighbour on the same two cores.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Waits for this test's turn among those that measure (see
/// [`ONE_AT_A_TIME`]); the turn lasts as long as the guard.
pub fn one_at_a_time() -> MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// The warpt binary as the tests run it: no progress lines on stderr.
pub fn warpt() -> assert_cmd::Command {
    let mut cmd = assert_cmd::Command::cargo_bin("warpt").expect("the warpt binary is built");
    cmd.env("WARPT_NO_PROGRESS", "1");
    cmd
}

/// Runs `warpt ARGS` recording into `store`: (exit code, stdout, stderr).
pub fn run_on(store: &Path, args: &[&str]) -> (i32, String, String) {
    outcome(warpt().env("WARPT_STORE", store).args(args))
}

/// Runs `cmd` to the end: (exit code, stdout, stderr).
pub fn outcome(cmd: &mut assert_cmd::Command) -> (i32, String, String) {
    let out = cmd.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Runs git in `dir` with a fixed identity; its trimmed stdout.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .current_dir(dir)
        .args([
            "-c",
            "user.name=warpt",
            "-c",
            "user.email=warpt@example.org",
        ])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}
