//! `linpack_external` and the BLAS under HPL: the reference BLAS is refused
//! with the fix, a forced OpenBLAS core type is named, and a timeout names
//! the part of HPL's run that was slow.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

mod common;
use common::warpt;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use warpt_model::{BenchmarkRunResult, BenchmarkSuiteRun, ParamValue, RunStatus};

/// Runs `linpack_external` with `params` under `env`; its result and the exit code.
fn run(env: &[(&str, &str)], params: &[&str], extra: &[&str]) -> (BenchmarkRunResult, i32) {
    let mut cmd = warpt();
    cmd.env_remove("OPENBLAS_CORETYPE")
        .args("benchmark run --benchmark linpack_external --json".split(' '))
        .args(extra);
    for (k, v) in env {
        cmd.env(k, v);
    }
    for p in params {
        cmd.args(["--param", p]);
    }
    let out = cmd.output().unwrap();
    let run: BenchmarkSuiteRun = serde_json::from_slice(&out.stdout).unwrap();
    (run.benchmarks[0].clone(), out.status.code().unwrap_or(-1))
}

fn detail(r: &BenchmarkRunResult, key: &str) -> String {
    match r.details.get(key) {
        Some(ParamValue::Str(s)) => s.clone(),
        other => panic!("{key}: {other:?} in {:?}", r.details),
    }
}

/// Netlib's reference `libblas.so.3` (Debian's libblas3, which hpcc pulls in).
fn reference_blas() -> Option<PathBuf> {
    std::fs::read_dir("/usr/lib")
        .ok()?
        .filter_map(Result::ok)
        .map(|e| e.path().join("blas/libblas.so.3"))
        .find(|p| p.exists())
}

fn hpcc() -> bool {
    warpt_system::which("hpcc").is_some()
}

#[test]
fn the_reference_blas_is_skipped_with_the_fix_unless_allowed() {
    if !hpcc() {
        return; // scripts/test installs hpcc; without it the benchmark skips (tests/linpack.rs).
    }
    let lib =
        reference_blas().expect("the reference BLAS (apt-get install libblas3; scripts/test does)");
    // A library path where libblas.so.3 resolves to the reference BLAS,
    // as on a machine where apt chose it for hpcc.
    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(&lib, dir.path().join("libblas.so.3")).unwrap();
    let path = dir.path().to_str().unwrap();
    let (r, code) = run(&[("LD_LIBRARY_PATH", path)], &["n=300"], &[]);
    assert_eq!(code, 0, "a skip is not a failure");
    assert_eq!(r.status, RunStatus::Skipped);
    let why = r.error_message.unwrap();
    for needle in [
        "reference BLAS",
        "apt-get install libopenblas0-pthread",
        "update-alternatives --config libblas.so.3-",
        "allow_reference_blas=true",
    ] {
        assert!(why.contains(needle), "{needle}: {why}");
    }

    let (r, code) = run(
        &[("LD_LIBRARY_PATH", path)],
        &["n=300", "runs=1", "allow_reference_blas=true"],
        &[],
    );
    assert_eq!(
        (r.status, code),
        (RunStatus::Passed, 0),
        "{:?}",
        r.error_message
    );
    assert_eq!(detail(&r, "blas"), "reference");
    assert_eq!(
        Path::new(&detail(&r, "blas_path")).canonicalize().unwrap(),
        lib.canonicalize().unwrap()
    );
    assert!(
        r.warnings.iter().any(|w| w.contains("reference BLAS")),
        "{:?}",
        r.warnings
    );
}

#[test]
fn openblas_is_named_with_its_core_and_a_forced_core_is_a_warning() {
    if !hpcc() {
        return;
    }
    let (r, _) = run(&[], &["n=300", "runs=1"], &[]);
    assert_eq!(r.status, RunStatus::Passed, "{:?}", r.error_message);
    // scripts/test installs OpenBLAS beside hpcc: HPL runs on what users run.
    assert_eq!(detail(&r, "blas"), "openblas", "{:?}", r.details);
    assert!(detail(&r, "blas_path").contains("openblas"));
    let native = detail(&r, "openblas_coretype");
    assert!(!native.is_empty());
    assert!(r.warnings.iter().all(|w| !w.contains("OPENBLAS_CORETYPE")));
    if native.eq_ignore_ascii_case("Prescott") || std::env::consts::ARCH != "x86_64" {
        return; // nothing older to force on this CPU
    }
    let (r, _) = run(
        &[("OPENBLAS_CORETYPE", "Prescott")],
        &["n=300", "runs=1"],
        &[],
    );
    assert_eq!(r.status, RunStatus::Passed, "{:?}", r.error_message);
    assert_eq!(detail(&r, "openblas_coretype"), "Prescott");
    let warning = r
        .warnings
        .iter()
        .find(|w| w.contains("OPENBLAS_CORETYPE=Prescott"))
        .unwrap_or_else(|| panic!("{:?}", r.warnings));
    assert!(warning.contains(&native), "{warning}");
}

/// A stand-in for xhpl: a script printing `lines` and then hanging.
fn hanging_xhpl(dir: &Path, lines: &str) -> String {
    let path = dir.join("xhpl");
    std::fs::write(
        &path,
        format!("#!/bin/sh\nprintf '{lines}'\nexec sleep 600\n"),
    )
    .unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.to_str().unwrap().to_string()
}

#[test]
fn a_timeout_names_the_part_of_hpls_run_that_was_slow() {
    // Limits are reckoned from the work; a tiny multiplier makes them
    // expire at once, so each part's limit is seen to apply (setup, which
    // starts the worker, keeps a minute).
    let (dir, config) = common::file_in(
        "warpt.toml",
        "timeout_multiplier = 0.01\n[timeouts]\nsetup = 6000\n",
    );
    let fast = ["--config", config.to_str().unwrap()];
    let binary = format!("binary={}", hanging_xhpl(dir.path(), ""));
    let (r, code) = run(&[], &["n=300", &binary], &fast);
    assert_eq!((r.status, code), (RunStatus::Timeout, 1));
    let msg = r.error_message.unwrap();
    assert!(
        msg.contains("stage 'warmup' (HPL's warm-up solve of N = 300"),
        "{msg}"
    );

    let sub = dir.path().join("b");
    std::fs::create_dir(&sub).unwrap();
    let first = "WR11C2R4  300  192  1  1  0.01  1.000e+00\\n";
    let binary = format!("binary={}", hanging_xhpl(&sub, first));
    let (r, _) = run(&[], &["n=300", "runs=2", &binary], &fast);
    assert_eq!(r.status, RunStatus::Timeout);
    let msg = r.error_message.unwrap();
    assert!(
        msg.contains("stage 'measure' (HPL's 2 measured solve(s) of N = 300")
            && msg.contains("1.00 GFLOP/s"),
        "{msg}"
    );
}
