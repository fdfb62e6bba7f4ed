//! Storage and network benchmarks, run for real on tiny configurations:
//! validated results, no file left behind, bad paths refused, and the
//! network peer surviving malformed clients.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command as StdCommand, Stdio};
use std::time::Duration;

use assert_cmd::Command;
use assert_cmd::cargo::cargo_bin;
use warpt_model::{BenchmarkSuiteRun, RunStatus};

mod common;
use common::{stderr_of, warpt};

fn run_json(cmd: &mut Command, code: i32) -> BenchmarkSuiteRun {
    let out = cmd.assert().code(code).get_output().stdout.clone();
    serde_json::from_slice(&out).unwrap()
}

fn empty(dir: &Path) -> bool {
    std::fs::read_dir(dir).unwrap().next().is_none()
}

fn disk(dir: &Path) -> Command {
    let mut cmd = warpt();
    cmd.args("benchmark run --component storage --duration 0.4 --burnin-seconds 0".split(' '))
        .args("--param size_mb=16 --param queue_depth=4 --json --param".split(' '))
        .arg(format!("path={}", dir.display()));
    cmd
}

#[test]
fn storage_runs_validates_and_leaves_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let run = run_json(&mut disk(dir.path()), 0);
    let r = &run.benchmarks[0];
    assert_eq!(r.spec.id.name, "disk_io");
    assert_eq!(r.status, RunStatus::Passed, "{:?}", r.error_message);
    assert!(r.validation.as_ref().unwrap().passed);
    let find = |name: &str, op: &str| {
        r.metrics
            .iter()
            .find(|m| m.name == name && m.tags["op"] == op)
            .unwrap_or_else(|| panic!("{name} {op} missing"))
    };
    for op in ["seq_read", "seq_write"] {
        let m = find("throughput", op);
        assert_eq!(m.unit, "MB/s");
        assert!(m.value > 0.0 && m.stats.is_some());
    }
    for op in ["rand_read", "rand_write"] {
        assert_eq!(find("iops", op).unit, "IOPS");
        let lat = find("latency_us", op);
        let st = lat.stats.as_ref().unwrap();
        assert!(!lat.higher_is_better && st.n > 0 && st.p50 <= st.p99);
    }
    assert!(empty(dir.path()), "the test file is gone after success");
}

#[test]
fn storage_runs_only_the_ops_asked_for_and_names_a_bad_one() {
    let dir = tempfile::tempdir().unwrap();
    let run = run_json(disk(dir.path()).args(["--param", "ops=rand_read"]), 0);
    let r = &run.benchmarks[0];
    assert_eq!(r.status, RunStatus::Passed, "{:?}", r.error_message);
    let ops: std::collections::BTreeSet<&str> =
        r.metrics.iter().map(|m| m.tags["op"].as_str()).collect();
    assert_eq!(ops.into_iter().collect::<Vec<_>>(), ["rand_read"]);
    let checked = r.validation.as_ref().unwrap();
    assert!(checked.passed, "{}", checked.message);
    let out = stderr_of(
        disk(dir.path()).args(["--param", "ops=rand_read,randwrite"]),
        2,
    );
    let err = out;
    assert!(err.contains("unknown test 'randwrite'"), "{err}");
    assert!(empty(dir.path()));
}

#[test]
fn storage_leaves_nothing_after_a_failure() {
    let dir = tempfile::tempdir().unwrap();
    // Limits at 1%: the measurement stage (30.4 s x 0.01) times out and the worker is killed.
    let run = run_json(disk(dir.path()).args(["--timeout-multiplier", "0.01"]), 1);
    assert_eq!(run.benchmarks[0].status, RunStatus::Timeout);
    assert!(empty(dir.path()), "the test file is gone after a kill");
}

#[test]
fn storage_leaves_nothing_after_sigint() {
    let dir = tempfile::tempdir().unwrap();
    let child = StdCommand::new(cargo_bin("warpt"))
        .env("WARPT_NO_PROGRESS", "1")
        .args("benchmark run --benchmark disk_io --duration 30 --param size_mb=16".split(' '))
        .arg("--param")
        .arg(format!("path={}", dir.path().display()))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    // SAFETY: signalling the child we started.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130));
    assert!(empty(dir.path()), "the test file is gone after SIGINT");
}

#[test]
fn each_bad_path_gets_its_error() {
    let (dir, file) = common::file_in("file", b"x");
    let cases: [(String, &[&str], &str); 4] = [
        (
            dir.path().join("missing").display().to_string(),
            &[],
            "does not exist",
        ),
        (file.display().to_string(), &[], "is not a directory"),
        // procfs accepts no new files, even from root.
        ("/proc".to_string(), &[], "is not writable"),
        (
            dir.path().display().to_string(),
            &["--param", "size_mb=100000000"],
            "MiB free",
        ),
    ];
    for (path, extra, needle) in cases {
        let out = warpt()
            .args(["benchmark", "run", "--benchmark", "disk_io", "--param"])
            .arg(format!("path={path}"))
            .args(extra)
            .assert()
            .code(2)
            .get_output()
            .stderr
            .clone();
        let err = String::from_utf8(out).unwrap();
        assert!(
            err.contains(needle) && err.contains("path"),
            "{path}: {err}"
        );
    }
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        1,
        "nothing but the test's own file"
    );
}

/// `benchmark run --benchmark net_latency`.
fn net_latency() -> assert_cmd::Command {
    let mut cmd = warpt();
    cmd.args(["benchmark", "run", "--benchmark", "net_latency"]);
    cmd
}

/// `benchmark run --component network` for `duration` seconds, no burn-in.
fn network(duration: &str) -> assert_cmd::Command {
    let mut cmd = warpt();
    cmd.args(["benchmark", "run", "--component", "network"])
        .args(["--duration", duration, "--burnin-seconds", "0"]);
    cmd
}

#[test]
fn network_runs_both_benchmarks_on_loopback() {
    let run = run_json(network("0.4").args(["--param", "streams=2", "--json"]), 0);
    let names: Vec<&str> = run
        .benchmarks
        .iter()
        .map(|b| b.spec.id.name.as_str())
        .collect();
    assert_eq!(names, ["net_bandwidth", "net_latency"]);
    for r in &run.benchmarks {
        assert_eq!(r.status, RunStatus::Passed, "{:?}", r.error_message);
        assert!(r.validation.as_ref().unwrap().passed);
    }
    let bw = &run.benchmarks[0];
    let streams: Vec<&str> = bw
        .metrics
        .iter()
        .map(|m| m.tags["streams"].as_str())
        .collect();
    assert_eq!(streams, ["1", "2"]);
    assert!(
        bw.metrics
            .iter()
            .all(|m| m.name == "throughput" && m.unit == "Gbit/s" && m.stats.is_some())
    );
    let rtt = run.benchmarks[1]
        .metrics
        .iter()
        .find(|m| m.name == "rtt_us")
        .unwrap();
    assert!(rtt.stats.as_ref().unwrap().n >= 200 && !rtt.higher_is_better);
}

#[test]
fn net_latency_busy_polls_when_asked_and_still_validates() {
    let run = run_json(
        net_latency()
            .args(["--duration", "0.3", "--burnin-seconds", "0"])
            .args("--param busy_poll=true --param message_bytes=100 --json".split(' ')),
        0,
    );
    let r = &run.benchmarks[0];
    assert_eq!(r.status, RunStatus::Passed, "{:?}", r.error_message);
    assert!(r.validation.as_ref().unwrap().passed);
    assert_eq!(r.details["busy_poll"], warpt_model::ParamValue::Bool(true));
    let rtt = r.metrics.iter().find(|m| m.name == "rtt_us").unwrap();
    assert_eq!(rtt.tags["message_bytes"], "100");
    assert!(rtt.stats.as_ref().unwrap().n >= 200);
}

#[test]
fn net_server_serves_remote_runs_and_survives_garbage() {
    let mut server = StdCommand::new(cargo_bin("warpt"))
        .args(["net-server", "--bind", "127.0.0.1:0", "--max-sessions", "5"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(server.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap()
        .to_string();
    // A client that is not warpt: refused, and the server goes on.
    let mut junk = std::net::TcpStream::connect(&addr).unwrap();
    junk.write_all(b"GET / HTTP/1.0\r\n\r\nxxxxxxxxxxxxxxxxxxxx")
        .unwrap();
    drop(junk);
    // 1 + 2 streams for bandwidth, 1 connection for latency.
    let run = run_json(
        network("0.3")
            .args(["--param", "streams=2", "--json", "--param"])
            .arg(format!("host={addr}")),
        0,
    );
    assert!(run.benchmarks.iter().all(|b| b.status == RunStatus::Passed));
    assert!(
        run.benchmarks[0].details["peer"]
            .to_string()
            .contains("net-server")
    );
    let status = server.wait().unwrap();
    assert!(
        status.success(),
        "the server exits by itself after --max-sessions"
    );
    let mut log = String::new();
    std::io::Read::read_to_string(&mut server.stderr.take().unwrap(), &mut log).unwrap();
    assert!(log.contains("bad magic"), "{log}");
    // An unresolvable host is a usage error.
    net_latency()
        .args(["--param", "host=no.such.host.invalid"])
        .assert()
        .code(2);
}
