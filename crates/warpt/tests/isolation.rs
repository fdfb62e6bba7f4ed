//! Worker isolation, driven through `warpt benchmark run` with the
//! fault-injection suite: every way a benchmark can go wrong becomes a
//! structured result, and the benchmarks after it still run.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

mod common;
use common::warpt;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command as StdCommand, Stdio};
use std::time::{Duration, Instant};

use assert_cmd::cargo::cargo_bin;
use warpt_model::{BenchmarkRunResult, BenchmarkSuiteRun, RunStatus, StageStatus};

/// The selftest suite, briefly: 0.2 s of measurement, no burn-in.
const SELFTEST_RUN: [&str; 8] = [
    "benchmark",
    "run",
    "--suite",
    "selftest",
    "--duration",
    "0.2",
    "--burnin-seconds",
    "0",
];

fn selftest(benchmarks: &[&str], extra: &[&str], export: &Path) -> assert_cmd::assert::Assert {
    let mut cmd = warpt();
    cmd.env("WARPT_SELFTEST", "1");
    // No backtraces: symbolizing one after a failed allocation reads the
    // whole debug binary (hundreds of MB with the `cuda` feature), which
    // under load outlasts the 5% stage limits and turns a crash into a
    // timeout.
    cmd.env("RUST_BACKTRACE", "0");
    cmd.args(SELFTEST_RUN);
    for b in benchmarks {
        cmd.args(["--benchmark", b]);
    }
    cmd.args(extra).arg("--export-file").arg(export);
    cmd.assert()
}

fn load(path: &Path) -> BenchmarkSuiteRun {
    common::load_export(path)
}

/// Runs `ok`, the fault, then `alloc` (of 8 MiB) with stage limits at 5% of
/// their defaults (setup 1.5 s, measurement about 1.5 s) and returns the
/// fault's result after checking that both neighbours passed.
fn fault(name: &str, extra: &[&str]) -> BenchmarkRunResult {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.json");
    let mut args = vec!["--timeout-multiplier", "0.05", "--param", "mb=8"];
    args.extend_from_slice(extra);
    selftest(&["ok", name, "alloc"], &args, &path).code(1);
    let run = load(&path);
    assert_eq!(run.benchmarks.len(), 3, "the suite went on after {name}");
    for i in [0, 2] {
        assert_eq!(
            run.benchmarks[i].status,
            RunStatus::Passed,
            "{:?}",
            run.benchmarks[i].error_message
        );
    }
    assert!(!run.interrupted);
    let r = run.benchmarks[1].clone();
    assert_eq!(r.spec.id.name, name);
    assert!(!r.success);
    r
}

fn stage(r: &BenchmarkRunResult, name: &str) -> warpt_model::StageRecord {
    let w = r.watchdog.as_ref().expect("watchdog");
    match name {
        "setup" => w.setup.clone(),
        "warmup" => w.warmup.clone(),
        "measure" => w.measure.clone(),
        _ => w.validate.clone(),
    }
    .expect("stage recorded")
}

#[test]
fn a_hang_in_setup_times_out_at_the_setup_limit() {
    let r = fault("hang_setup", &[]);
    assert_eq!(r.status, RunStatus::Timeout);
    let setup = stage(&r, "setup");
    assert_eq!(setup.status, StageStatus::Timeout);
    assert_eq!(setup.limit_s, Some(1.5));
    assert!(
        setup.duration_s >= 1.5 && setup.duration_s < 10.0,
        "{setup:?}"
    );
    assert_eq!(stage(&r, "measure").status, StageStatus::Skipped);
    assert!(r.error_message.unwrap().contains("stage 'setup'"));
    assert!(r.metrics.is_empty());
}

#[test]
fn a_hang_in_measurement_times_out_and_keeps_its_samples() {
    let r = fault("hang_measure", &["--param", "samples=7"]);
    assert_eq!(r.status, RunStatus::Timeout);
    let measure = stage(&r, "measure");
    assert_eq!(measure.status, StageStatus::Timeout);
    // (0.2 s x 3 + 30 s) x 0.05
    let limit = measure.limit_s.unwrap();
    assert!((limit - 1.53).abs() < 1e-9, "{limit}");
    assert!(measure.duration_s >= limit);
    assert_eq!(stage(&r, "setup").status, StageStatus::Completed);
    let spin = &r.metrics[0];
    // 7 measured samples (the warm-up ones are not counted), then the hang.
    assert_eq!(
        spin.stats.as_ref().unwrap().n,
        7,
        "the samples taken before the hang are kept"
    );
}

#[test]
fn the_measure_hang_is_in_measure_at_the_default_burn_in() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.json");
    let mut cmd = warpt();
    cmd.env("WARPT_SELFTEST", "1")
        .args([
            "benchmark",
            "run",
            "--suite",
            "selftest",
            "--benchmark",
            "hang_measure",
            "--duration",
            "0.2",
            // Warm-up limit (15 s + 1 s) x 0.1 = 1.6 s, above the burn-in;
            // measurement (0.6 s + 30 s) x 0.1 = 3.06 s.
            "--timeout-multiplier",
            "0.1",
            "--export-file",
        ])
        .arg(&path)
        .assert()
        .code(1);
    let r = load(&path).benchmarks[0].clone();
    assert_eq!(r.status, RunStatus::Timeout);
    // The default one-second burn-in takes thousands of warm-up samples,
    // more than `samples` = 5: they must not bring the hang forward.
    assert_eq!(stage(&r, "warmup").status, StageStatus::Completed);
    assert_eq!(stage(&r, "measure").status, StageStatus::Timeout);
    assert_eq!(r.metrics[0].stats.as_ref().unwrap().n, 5);
}

#[test]
fn a_segfault_is_a_crash_with_its_signal() {
    let r = fault("segfault", &[]);
    assert_eq!(r.status, RunStatus::Crashed);
    let crash = r.crash.clone().unwrap();
    assert_eq!(crash.signal, Some(libc::SIGSEGV));
    assert_eq!(crash.signal_name.as_deref(), Some("SIGSEGV"));
    assert!(r.error_message.as_deref().unwrap().contains("SIGSEGV"));
    assert_eq!(stage(&r, "setup").status, StageStatus::Completed);
    assert_eq!(
        stage(&r, "warmup").status,
        StageStatus::Failed,
        "it died before its first sample"
    );
}

#[test]
fn an_abort_is_a_crash_with_sigabrt() {
    let r = fault("abort", &[]);
    assert_eq!(r.status, RunStatus::Crashed);
    assert_eq!(r.crash.unwrap().signal, Some(libc::SIGABRT));
}

#[test]
fn memory_exhaustion_is_reported_as_out_of_memory() {
    let r = fault("oom", &["--param", "limit_mb=64"]);
    assert_eq!(r.status, RunStatus::Crashed);
    let msg = r.error_message.unwrap();
    assert!(msg.starts_with("out of memory"), "{msg}");
    let crash = r.crash.unwrap();
    assert_eq!(crash.signal, Some(libc::SIGABRT));
    assert!(
        crash
            .stderr_tail
            .iter()
            .any(|l| l.contains("memory allocation of")),
        "{crash:?}"
    );
    // It got close to the limit before failing, and no further.
    let rss = r.resources.unwrap().peak_rss_bytes.unwrap();
    assert!(rss > 32 << 20 && rss < 128 << 20, "peak RSS {rss}");
}

#[test]
fn garbage_on_stdout_is_a_crash() {
    let r = fault("garbage", &[]);
    assert_eq!(r.status, RunStatus::Crashed);
    let msg = r.error_message.unwrap();
    assert!(
        msg.contains("not a protocol event") && msg.contains("this line is not"),
        "{msg}"
    );
}

#[test]
fn exiting_without_a_result_is_a_crash() {
    let r = fault("no_result", &[]);
    assert_eq!(r.status, RunStatus::Crashed);
    assert!(
        r.error_message
            .unwrap()
            .contains("exited with status 0 without a result")
    );
    assert_eq!(r.crash.unwrap().exit_code, Some(0));
}

#[test]
fn peak_rss_of_a_worker_matches_what_it_allocated() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("alloc.json");
    selftest(&["alloc"], &["--param", "mb=256"], &path).success();
    let r = &load(&path).benchmarks[0];
    assert_eq!(r.status, RunStatus::Passed);
    let res = r.resources.as_ref().unwrap();
    let rss = res.peak_rss_bytes.unwrap() as f64;
    let want = (256u64 << 20) as f64;
    assert!((rss - want).abs() / want < 0.10, "peak RSS {rss} vs {want}");
    assert!(res.cpu_user_s.unwrap() + res.cpu_sys_s.unwrap() > 0.0);
    assert!(
        res.energy_j.is_some() || !res.notes.is_empty(),
        "missing energy is explained"
    );
}

#[test]
fn in_process_mode_runs_without_a_worker() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("inproc.json");
    selftest(&["ok"], &["--in-process"], &path).success();
    let run = load(&path);
    assert!(run.manifest.as_ref().unwrap().config.in_process);
    let r = &run.benchmarks[0];
    assert_eq!(r.status, RunStatus::Passed);
    assert!(r.resources.is_none(), "no worker, no rusage of its own");
    assert_eq!(stage(r, "measure").status, StageStatus::Completed);
}

#[test]
fn sigint_mid_suite_keeps_what_finished() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("interrupted.json");
    let mut child = StdCommand::new(cargo_bin("warpt"))
        .env("WARPT_SELFTEST", "1")
        .args(SELFTEST_RUN)
        .args("--benchmark ok --benchmark hang_measure --benchmark alloc --export-file".split(' '))
        .arg(&path)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut line = String::new();
    while !line.contains("selftest/ok passed") {
        line.clear();
        assert!(
            stderr.read_line(&mut line).unwrap() > 0,
            "warpt ended before the first benchmark finished"
        );
        assert!(Instant::now() < deadline);
    }
    // Now in hang_measure, which would run until its 30.6 s limit.
    std::thread::sleep(Duration::from_millis(700));
    // SAFETY: signalling the child we started.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    let started = Instant::now();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "stopping took {:?}",
        started.elapsed()
    );
    let run = load(&path);
    assert!(run.interrupted);
    assert_eq!(run.benchmarks.len(), 2, "the third benchmark never started");
    assert_eq!(run.benchmarks[0].status, RunStatus::Passed);
    let hung = &run.benchmarks[1];
    assert!(hung.interrupted);
    assert_eq!(hung.spec.id.name, "hang_measure");
    // `samples` = 5 measured samples (warm-up not counted), then the hang.
    assert_eq!(
        hung.metrics[0].stats.as_ref().unwrap().n,
        5,
        "samples before the interrupt are kept"
    );
}

#[test]
fn the_manifest_describes_this_machine() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.json");
    selftest(&["ok"], &["--seed", "99"], &path).success();
    let run = load(&path);
    let m = run.manifest.unwrap();
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    assert_eq!(m.kernel, kernel.trim());
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    assert_eq!(m.hostname, host.trim());
    assert_eq!(m.seed, 99);
    assert_eq!(m.build_profile, "debug");
    assert_eq!(m.warpt_version, env!("CARGO_PKG_VERSION"));
    assert!(m.command_line.iter().any(|a| a == "--seed"));
    assert!(m.load_average.is_some());
    assert!(m.env.contains_key("WARPT_SELFTEST"));
    assert!(!m.cpu_model.is_empty());
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap();
    assert_eq!(m.microcode.is_some(), cpuinfo.contains("microcode"));
    assert_eq!(
        m.smt.is_some(),
        Path::new("/sys/devices/system/cpu/smt/control").exists()
    );
    // Tests run inside the warpt repository.
    let head = StdCommand::new("git")
        .args(["rev-parse", "HEAD"])
        .output()
        .unwrap();
    if head.status.success() {
        let git = m.git.expect("git state recorded");
        assert_eq!(git.commit, String::from_utf8_lossy(&head.stdout).trim());
    }
    assert!(m.warnings.iter().any(|w| w.contains("debug build")));
    let r = &run.benchmarks[0];
    assert_eq!(
        r.quality,
        Some(warpt_model::Quality::Unreliable),
        "debug builds are not to be trusted for speed"
    );
}

#[test]
fn selftest_is_hidden_unless_asked_for() {
    let mut cmd = warpt();
    let out = cmd
        .args(["benchmark", "list", "--json"])
        .env_remove("WARPT_SELFTEST")
        .assert()
        .success();
    assert!(!String::from_utf8_lossy(&out.get_output().stdout).contains("selftest"));
    let mut cmd = warpt();
    let out = cmd
        .args(["benchmark", "list", "--json"])
        .env("WARPT_SELFTEST", "1")
        .assert()
        .success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).to_string();
    for name in warpt_selftest::NAMES {
        assert!(text.contains(&format!("\"{name}\"")), "{name} missing");
    }
}

/// `--suite-timeout`: the benchmark running when the limit passes is
/// stopped (its stage limit was tens of seconds away) and the one after it
/// is not started; both are `timeout` results saying why, the one before
/// passed and is kept.
#[test]
fn the_suite_limit_stops_the_run_and_keeps_what_finished() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.json");
    selftest(
        &["ok", "hang_measure", "alloc"],
        &["--suite-timeout", "5"],
        &path,
    )
    .code(1);
    let run = load(&path);
    let by = |name: &str| {
        run.benchmarks
            .iter()
            .find(|r| r.spec.id.name == name)
            .unwrap_or_else(|| panic!("no {name}"))
    };
    assert_eq!(by("ok").status, RunStatus::Passed);
    let hung = by("hang_measure");
    assert_eq!(hung.status, RunStatus::Timeout);
    let why = hung.error_message.as_deref().unwrap();
    assert!(
        why.contains("suite's time limit (--suite-timeout 5 s) passed during stage 'measure'"),
        "{why}"
    );
    let rest = by("alloc");
    assert_eq!(rest.status, RunStatus::Timeout);
    assert!(
        rest.error_message
            .as_deref()
            .unwrap()
            .contains("not started: the suite's time limit"),
        "{rest:?}"
    );
}
