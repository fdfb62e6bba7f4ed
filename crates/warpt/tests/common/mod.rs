//! Helpers shared by integration tests (`mod common;`).

#![allow(clippy::unwrap_used, dead_code)] // tests: a panic is the failure report

use std::path::{Path, PathBuf};
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

/// This test process's own data and configuration directories, so no test
/// reads the user's warpt.toml or writes the user's result history.
/// Statics are never dropped, so the directory outlives its process: the
/// first test of each process removes those of test processes that have
/// exited.
fn scratch() -> &'static Path {
    static DIR: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        remove_exited_scratch();
        let dir = std::env::temp_dir().join(format!("warpt-tests-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    })
}

/// Removes the `warpt-tests-<pid>` directories of processes that no longer
/// run (Linux: no `/proc/<pid>`; elsewhere nothing is removed).
fn remove_exited_scratch() {
    if !Path::new("/proc/self").exists() {
        return;
    }
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let pid = name.to_str().and_then(|n| n.strip_prefix("warpt-tests-"));
        if let Some(pid) = pid.filter(|p| p.parse::<u32>().is_ok())
            && !Path::new("/proc").join(pid).exists()
        {
            // Another process may be removing it too: either way it goes.
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// The environment variables of warpt's configuration layer.
const CONFIG_VARIABLES: [&str; 8] = [
    "WARPT_DURATION",
    "WARPT_BURNIN_SECONDS",
    "WARPT_SEED",
    "WARPT_PRECISION",
    "WARPT_TIMEOUT_MULTIPLIER",
    "WARPT_IN_PROCESS",
    "WARPT_PARAMS",
    "WARPT_STORE",
];

/// The warpt binary as the tests run it: no progress lines on stderr, the
/// XDG data and configuration directories of this test process (its own
/// default store, no user configuration), and no configuration variable
/// inherited from the caller's environment.
pub fn warpt() -> assert_cmd::Command {
    let mut cmd = assert_cmd::Command::cargo_bin("warpt").expect("the warpt binary is built");
    for k in CONFIG_VARIABLES {
        cmd.env_remove(k);
    }
    cmd.env("WARPT_NO_PROGRESS", "1")
        .env("XDG_DATA_HOME", scratch().join("data"))
        .env("XDG_CONFIG_HOME", scratch().join("config"));
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

/// Runs `cmd`, which must succeed (its stderr is the failure message):
/// its stdout.
pub fn stdout_of(cmd: &mut assert_cmd::Command) -> Vec<u8> {
    cmd.assert().success().get_output().stdout.clone()
}

/// Runs `cmd`, which must succeed: its stdout parsed as JSON.
pub fn json_of(cmd: &mut assert_cmd::Command) -> serde_json::Value {
    let out = stdout_of(cmd);
    serde_json::from_slice(&out)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out)))
}

/// `warpt ARGS` (no progress lines), which must succeed: its stdout as JSON.
pub fn run_json(args: &[&str]) -> serde_json::Value {
    json_of(warpt().args(args))
}

/// Runs a program, which must succeed (its stderr is the failure
/// message): its output.
pub fn succeeded(cmd: &mut Command) -> std::process::Output {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Reads a warpt export (or any suite run) back.
pub fn load_export(path: &Path) -> warpt_model::BenchmarkSuiteRun {
    warpt_model::load_suite_run(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// `warpt benchmark run ARGS --param P... --no-store --json`, as the suite
/// tests run one benchmark: (exit status, the first result, stderr).
pub fn first_result<P: AsRef<std::ffi::OsStr>>(
    args: &[&str],
    params: &[P],
) -> (Option<i32>, serde_json::Value, String) {
    let mut cmd = warpt();
    cmd.args(["benchmark", "run"]).args(args);
    for p in params {
        cmd.arg("--param").arg(p);
    }
    let out = cmd.args(["--no-store", "--json"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    let v: serde_json::Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    (out.status.code(), v["benchmarks"][0].clone(), stderr)
}

/// The element of the JSON array `list` whose `key` is `want`.
pub fn find_in<'a>(list: &'a serde_json::Value, key: &str, want: &str) -> &'a serde_json::Value {
    list.as_array()
        .unwrap_or_else(|| panic!("not an array: {list}"))
        .iter()
        .find(|e| e[key] == want)
        .unwrap_or_else(|| panic!("no {key} = {want} in {list:#}"))
}

/// The text under `key` of each element of the JSON array `list`.
pub fn texts<'a>(list: &'a serde_json::Value, key: &str) -> Vec<&'a str> {
    list.as_array()
        .unwrap_or_else(|| panic!("not an array: {list}"))
        .iter()
        .map(|e| {
            e[key]
                .as_str()
                .unwrap_or_else(|| panic!("no text {key} in {e}"))
        })
        .collect()
}

/// The metric named `name` of a result (JSON): the whole metric object.
pub fn metric_of<'a>(result: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    find_in(&result["metrics"], "name", name)
}

/// The value of the metric `name` in a result (JSON).
pub fn metric(result: &serde_json::Value, name: &str) -> f64 {
    metric_of(result, name)["value"].as_f64().unwrap()
}

/// Runs `cmd`, which must succeed (its stderr is the failure message):
/// its whole output.
pub fn ran(cmd: &mut assert_cmd::Command) -> std::process::Output {
    cmd.assert().success().get_output().clone()
}

/// Runs `cmd` (a `--json` run), which must succeed: the suite run it printed.
pub fn suite_run_of(cmd: &mut assert_cmd::Command) -> warpt_model::BenchmarkSuiteRun {
    let out = stdout_of(cmd);
    warpt_model::load_suite_run(&String::from_utf8_lossy(&out))
        .unwrap_or_else(|e| panic!("not a suite run ({e}): {}", String::from_utf8_lossy(&out)))
}

/// Runs `cmd`, which must exit with status `code`: its stderr.
pub fn stderr_of(cmd: &mut assert_cmd::Command, code: i32) -> String {
    let out = cmd.assert().code(code).get_output().stderr.clone();
    String::from_utf8_lossy(&out).into_owned()
}

/// A new temporary directory holding the file `name` with `text`.
pub fn dir_with(name: &str, text: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(name), text).unwrap();
    dir
}

/// A temporary directory holding file `name` with `text`: the directory
/// (the file lives as long as it does) and the file's path.
pub fn file_in(name: &str, text: impl AsRef<[u8]>) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    (dir, path)
}

/// `warpt benchmark run --benchmark NAME --param P... --duration SECONDS
/// --burnin-seconds 0 --json`, which must succeed: the suite run.
pub fn bench_run(name: &str, params: &[&str], seconds: &str) -> warpt_model::BenchmarkSuiteRun {
    let mut cmd = warpt();
    cmd.args(["benchmark", "run", "--benchmark", name]);
    for p in params {
        cmd.args(["--param", p]);
    }
    suite_run_of(cmd.args(["--duration", seconds, "--burnin-seconds", "0", "--json"]))
}

/// The arguments of `benchmark run --suite selftest --benchmark NAME` (the
/// command also needs `WARPT_SELFTEST=1`).
pub fn selftest_run(name: &str) -> [&str; 6] {
    [
        "benchmark",
        "run",
        "--suite",
        "selftest",
        "--benchmark",
        name,
    ]
}

/// `warpt benchmark run --suite SUITE --benchmark NAME` (more arguments to add).
pub fn suite_cmd(suite: &str, name: &str) -> assert_cmd::Command {
    let mut cmd = warpt();
    cmd.args(["benchmark", "run", "--suite", suite, "--benchmark", name]);
    cmd
}

/// `warpt benchmark run --benchmark NAME` (more arguments to add).
pub fn bench_cmd(name: &str) -> assert_cmd::Command {
    let mut cmd = warpt();
    cmd.args(["benchmark", "run", "--benchmark", name]);
    cmd
}

/// A run of micro's `mem_latency` over 1 MiB for 0.1 s: the quickest real
/// benchmark (after `benchmark run`).
pub const QUICK_MEM_LATENCY: [&str; 8] = [
    "--benchmark",
    "mem_latency",
    "--duration",
    "0.1",
    "--burnin-seconds",
    "0",
    "--param",
    "max_mb=1",
];

/// The plan of `--component ram` as `--dry-run --json` prints it (after
/// `benchmark run`).
pub const RAM_PLAN: [&str; 4] = ["--component", "ram", "--dry-run", "--json"];

/// The repository's root (examples/, scripts/ and docs/ are under it).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// Writes `text` to `root/rel`, making its directories: the path.
pub fn put(root: &Path, rel: &str, text: &str) -> PathBuf {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(&p, text).unwrap();
    p
}
