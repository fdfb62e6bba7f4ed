//! The linpack suite through the CLI: every solve passes HPL's residual test.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

mod common;
use common::{bench_cmd, bench_run, stderr_of, suite_run_of, warpt};

use warpt_model::{BenchmarkSuiteRun, RunStatus};

#[test]
fn suite_linpack_solves_validates_and_reports_hpl_metrics() {
    let run = suite_run_of(
        warpt()
            .args("benchmark run --suite linpack --param n=300 --duration 0.3".split(' '))
            .args(["--burnin-seconds", "0", "--json"]),
    );
    let names: Vec<&str> = run
        .benchmarks
        .iter()
        .map(|b| b.spec.id.name.as_str())
        .collect();
    assert_eq!(
        names,
        [
            "linpack_fp64_cpu",
            "linpack_fp32_cpu",
            "linpack_mxp_cpu",
            "linpack_external",
            "linpack_fp64_gpu"
        ]
    );
    // This build has no CUDA path: skipped, saying so.
    assert_eq!(run.benchmarks[4].status, RunStatus::Skipped);
    // scripts/test installs hpcc, so HPL itself runs here; elsewhere the
    // benchmark must say it was skipped and how to install HPL.
    let external = &run.benchmarks[3];
    if warpt_system::which("xhpl").is_some() || warpt_system::which("hpcc").is_some() {
        assert_eq!(
            external.status,
            RunStatus::Passed,
            "{:?}",
            external.error_message
        );
        let gflops = external
            .metrics
            .iter()
            .find(|m| m.name == "gflops")
            .unwrap();
        assert_eq!(gflops.stats.as_ref().unwrap().n, 3, "three measured solves");
        assert!(gflops.value > 0.0);
        assert_eq!(external.details["n"], warpt_model::ParamValue::Int(300));
        // The BLAS it ran on is named (scripts/test installs OpenBLAS).
        assert_eq!(
            external.details["blas"],
            warpt_model::ParamValue::from("openblas")
        );
    } else {
        assert_eq!(external.status, RunStatus::Skipped);
    }
    for r in &run.benchmarks[..3] {
        assert_eq!(r.status, RunStatus::Passed, "{:?}", r.error_message);
        let metric = |name: &str| {
            r.metrics
                .iter()
                .find(|m| m.name == name)
                .unwrap_or_else(|| panic!("{name}"))
        };
        assert!(metric("gflops").value > 0.0 && metric("gflops").unit == "GFLOP/s");
        assert!(metric("scaled_residual").value < 16.0);
        assert!(metric("factor_s").value > 0.0 && metric("solve_s").value > 0.0);
        assert_eq!(r.details["n"], warpt_model::ParamValue::Int(300));
        // The peak's clock is named; a share above 1 comes with its reason.
        assert!(r.details.contains_key("clock_source") && r.details.contains_key("effective_mhz"));
        if let warpt_model::ParamValue::Float(share) = r.details["peak_share"] {
            assert!(
                share <= 1.0 || r.warnings.iter().any(|w| w.starts_with("peak_share")),
                "{share}: {:?}",
                r.warnings
            );
        }
    }
    let mxp = &run.benchmarks[2];
    assert!(
        mxp.metrics
            .iter()
            .any(|m| m.name == "refinement_iterations")
    );
}

/// Runs `benchmark` with `param`, recording into `store`, which must be
/// refused as bad usage (exit 2) before anything runs; the message.
fn refused_in(store: &std::path::Path, benchmark: &str, param: &str) -> String {
    stderr_of(
        bench_cmd(benchmark)
            .args(["--param", param, "--store"])
            .arg(store),
        2,
    )
}

/// [`refused_in`] a throw-away store.
fn refused(benchmark: &str, param: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    refused_in(&dir.path().join("results.db"), benchmark, param)
}

#[test]
fn memory_sizing_refuses_more_than_ninety_percent() {
    let msg = refused("linpack_fp64_cpu", "mem_fraction=0.95");
    assert!(
        msg.contains("mem_fraction") && msg.contains("90%") && msg.contains("MiB"),
        "{msg}"
    );
}

/// A value outside a parameter's declared range is a usage error when the
/// plan is made: no worker starts and nothing is recorded (it used to
/// start one, fail, be stored and exit 1).
#[test]
fn out_of_range_parameters_are_refused_before_anything_runs() {
    let store = tempfile::tempdir().unwrap();
    for (benchmark, param) in [
        ("linpack_fp64_cpu", "n=-5"),
        ("linpack_fp32_cpu", "nb=0"),
        ("linpack_external", "q=0"),
    ] {
        let err = refused_in(&store.path().join("results.db"), benchmark, param);
        let key = param.split('=').next().unwrap();
        assert!(
            err.contains(&format!("parameter '{key}' must be at least 1")),
            "{err}"
        );
    }
    assert!(
        !store.path().join("results.db").exists(),
        "a refused plan opened the store"
    );
}

#[test]
fn faers_own_lu_is_selectable_and_a_bad_solver_is_refused() {
    let run = bench_run("linpack_mxp_cpu", &["n=200", "solver=faer", "nb=32"], "0.2");
    let r = &run.benchmarks[0];
    assert_eq!(r.status, RunStatus::Passed, "{:?}", r.error_message);
    assert_eq!(
        r.details["solver"],
        warpt_model::ParamValue::from("faer partial_piv_lu")
    );
    let msg = refused("linpack_fp64_cpu", "solver=lapack");
    assert!(
        msg.contains("'lapack' is not one of blocked, faer"),
        "{msg}"
    );
}

fn run_external(path_env: Option<&std::path::Path>, params: &[&str]) -> BenchmarkSuiteRun {
    let mut cmd = warpt();
    if let Some(p) = path_env {
        cmd.env("PATH", p);
    }
    cmd.env("WARPT_NO_PROGRESS", "1")
        .args("benchmark run --benchmark linpack_external --json".split(' '));
    for p in params {
        cmd.args(["--param", p]);
    }
    let out = cmd.assert().get_output().stdout.clone();
    serde_json::from_slice(&out).unwrap()
}

#[test]
fn external_hpl_is_skipped_with_an_install_hint_when_absent() {
    let empty = tempfile::tempdir().unwrap();
    let run = run_external(Some(empty.path()), &["n=200"]);
    let r = &run.benchmarks[0];
    assert_eq!(r.status, RunStatus::Skipped);
    let msg = r.error_message.as_deref().unwrap();
    assert!(
        msg.contains("neither xhpl nor hpcc is on PATH") && msg.contains("apt-get install hpcc"),
        "{msg}"
    );
}

#[test]
fn external_output_that_is_not_hpls_fails_with_the_lines() {
    // A real program that prints no HPL result: the run fails and says why.
    let run = run_external(None, &["n=200", "binary=/bin/echo"]);
    let r = &run.benchmarks[0];
    assert_eq!(r.status, RunStatus::Failed);
    let msg = r.error_message.as_deref().unwrap();
    assert!(msg.contains("no HPL result line"), "{msg}");
    let msg = refused("linpack_external", "binary=/nonexistent/xhpl");
    assert!(msg.contains("/nonexistent/xhpl is not a file"), "{msg}");
    let msg = refused("linpack_external", "runs=20");
    assert!(msg.contains("'runs' must be from 1 to 19, not 20"), "{msg}");
}

#[test]
fn mixed_precision_with_bf16_updates_refines_by_gmres_to_hpls_test() {
    let run = bench_run(
        "linpack_mxp_cpu",
        &["n=400", "factor_precision=bf16"],
        "0.3",
    );
    let r = &run.benchmarks[0];
    assert_eq!(r.status, RunStatus::Passed, "{:?}", r.error_message);
    // bf16 factors are too coarse for plain refinement on HPL's matrices:
    // GMRES-IR finishes the solves.
    assert_eq!(
        r.details["refinement_method"],
        warpt_model::ParamValue::from("gmres-ir")
    );
    assert!(r.details.contains_key("gmres_iterations_max"));
    let residual = r
        .metrics
        .iter()
        .find(|m| m.name == "scaled_residual")
        .unwrap();
    assert!(residual.value < 16.0);
    let msg = refused("linpack_mxp_cpu", "factor_precision=fp8");
    assert!(msg.contains("factor_precision"), "{msg}");

    // HPL-MxP's diagonally dominant matrix: bf16 factors stay accurate, and
    // plain refinement suffices.
    let run = bench_run(
        "linpack_mxp_cpu",
        &["n=400", "factor_precision=bf16", "matrix=hpl-mxp"],
        "0.3",
    );
    let r = &run.benchmarks[0];
    assert_eq!(r.status, RunStatus::Passed, "{:?}", r.error_message);
    assert_eq!(
        r.details["matrix"],
        warpt_model::ParamValue::from("hpl-mxp")
    );
    assert_eq!(
        r.details["refinement_method"],
        warpt_model::ParamValue::from("ir")
    );
}
