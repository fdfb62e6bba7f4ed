//! Seed 004's per-kernel contract through `warpt harness run` on real
//! Python files: bench.yaml's `function_name`, `reference` (a function or
//! files of expected numbers, per combination) with `rmse`,
//! `max_abs_error` and `max_rel_error`, `ops_per_call` as
//! `throughput_ops_per_sec`, and JAX's asynchronous dispatch waited for.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use std::path::Path;

use serde_json::Value;

mod common;
use common::{put, warpt};

/// Runs `warpt harness run DIR --targets kernels ARGS` briefly: (exit
/// code, summary.json, export, stderr).
fn run(dir: &Path, out: &Path, extra: &[&str]) -> (i32, Value, Value, String) {
    let export = out.join("export.json");
    let o = warpt()
        .args(["harness", "run"])
        .arg(dir)
        .arg("--output-dir")
        .arg(out)
        .arg("--export-file")
        .arg(&export)
        .arg("--no-store")
        .args(["--duration", "0.2", "--burnin-seconds", "0.05"])
        .args(["--rounds", "2"])
        .args(extra)
        .output()
        .unwrap();
    let read = |p: &Path| {
        std::fs::read_to_string(p)
            .map(|t| serde_json::from_str(&t).unwrap())
            .unwrap_or(Value::Null)
    };
    (
        o.status.code().unwrap_or(-1),
        read(&out.join("summary.json")),
        read(&export),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// The summary entry of `id` at `precision`.
fn at<'a>(s: &'a Value, id: &str, precision: &str) -> &'a Value {
    s["benchmarks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["id"] == id && e["tags"]["precision"] == precision)
        .unwrap_or_else(|| panic!("no {id} at {precision} in {s:#}"))
}

#[test]
fn kernels_are_checked_against_their_reference_at_every_combination() {
    let _turn = common::one_at_a_time();
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("tree");
    // A kernel whose function is not run_benchmark, checked against a
    // reference function in its own file: fp32 carries a rounding error
    // inside the tolerance. 64 numbers per call: 64 ops.
    put(
        &root,
        "kernels/fn/scale.py",
        "def step(problem_size=64, iterations=1, precision='fp64'):\n    \
         xs = [i * 0.5 for i in range(problem_size)]\n    \
         eps = 1e-9 if precision == 'fp32' else 0.0\n    \
         return [x * 2.0 * (1.0 + eps) for x in xs]\n\n\
         def exact(problem_size=64, precision='fp64'):\n    \
         return [float(i) for i in range(problem_size)]\n",
    );
    put(
        &root,
        "kernels/fn/bench.yaml",
        "function_name: step\nreference: exact\nprecisions: [fp32, fp64]\n\
         tolerances: {max_rel_error: 1.0e-6}\nops_per_call: 64\n",
    );
    // A kernel checked against files of expected numbers, one per
    // precision: fp32's file has one number wrong.
    put(
        &root,
        "kernels/files/ramp.py",
        "def run_benchmark(problem_size=4, iterations=1, precision='fp64'):\n    \
         return [[1.0, 2.0], [3.0, 4.0]]\n",
    );
    put(
        &root,
        "kernels/files/bench.yaml",
        "reference: expected_{precision}.json\nprecisions: [fp32, fp64]\n",
    );
    put(&root, "kernels/files/expected_fp64.json", "[1, 2, 3, 4]");
    put(
        &root,
        "kernels/files/expected_fp32.json",
        "[[1, 2], [3, 4.5]]",
    );
    let out = t.path().join("out");
    let (code, s, export, stderr) = run(
        &root,
        &out,
        &["--targets", "kernels", "--percentiles", "99.9"],
    );
    // The wrong answer fails the run.
    assert_eq!(code, 1, "{stderr}");

    for precision in ["fp32", "fp64"] {
        let e = at(&s, "kernels/fn/scale", precision);
        assert_eq!(e["status"], "passed", "{e:#}");
        let a = &e["accuracy"];
        let expected_abs = if precision == "fp32" {
            63.0 * 1e-9
        } else {
            0.0
        };
        assert!(
            (a["max_abs_error"].as_f64().unwrap() - expected_abs).abs() < 1e-12,
            "{e:#}"
        );
        let rel = a["max_rel_error"].as_f64().unwrap();
        if precision == "fp32" {
            assert!((rel - 1e-9).abs() < 1e-12, "{e:#}");
        } else {
            assert_eq!(rel, 0.0, "{e:#}");
        }
        assert!(a["rmse"].as_f64().unwrap() >= 0.0, "{e:#}");
        assert!(
            e["accuracy_note"]
                .as_str()
                .unwrap()
                .contains("64 numbers match: max_rel_error"),
            "{e:#}"
        );
        // --percentiles: beside p50, p90 and p99.
        assert!(e["latency_ms"]["p99.9"].as_f64().unwrap() > 0.0, "{e:#}");
        // 64 ops per call over the seconds per call.
        let per_call_s = e["latency_ms"]["p50"].as_f64().unwrap() / 1e3;
        let ops = e["throughput_ops_per_sec"].as_f64().unwrap();
        assert!((ops * per_call_s / 64.0 - 1.0).abs() < 0.05, "{e:#}");
    }
    // The callable's answer is kept beside the kernel's.
    let kept = std::fs::read_dir(out.join("outputs"))
        .unwrap()
        .filter_map(|d| d.ok())
        .filter(|d| d.file_name().to_string_lossy().ends_with(".reference.json"))
        .count();
    assert_eq!(kept, 2, "one reference answer per combination");

    let good = at(&s, "kernels/files/ramp", "fp64");
    assert_eq!(good["status"], "passed", "{good:#}");
    assert_eq!(good["accuracy"]["max_abs_error"], 0.0, "{good:#}");
    let bad = at(&s, "kernels/files/ramp", "fp32");
    assert_eq!(bad["status"], "failed", "{bad:#}");
    let why = bad["error"].as_str().unwrap();
    assert!(why.contains("wrong answer against its reference"), "{why}");
    assert!((bad["accuracy"]["max_abs_error"].as_f64().unwrap() - 0.5).abs() < 1e-12);
    assert!((bad["accuracy"]["max_rel_error"].as_f64().unwrap() - 0.5 / 4.5).abs() < 1e-12);

    // The metrics are the export's too, under their contract names.
    let names: Vec<&str> = export["benchmarks"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|b| b["metrics"].as_array().unwrap())
        .filter_map(|m| m["name"].as_str())
        .collect();
    for name in [
        "rmse",
        "max_abs_error",
        "max_rel_error",
        "throughput_ops_per_sec",
    ] {
        assert!(names.contains(&name), "{name} not in {names:?}");
    }
    // summary.md's leaderboard gives the throughput.
    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(md.contains("| ops/s |"), "{md}");
    assert!(md.contains("| p99 ms | p99.9 ms |"), "{md}");
}

#[test]
fn bad_kernel_settings_are_usage_errors_naming_the_line() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("tree");
    put(
        &root,
        "kernels/k.py",
        "def run_benchmark(problem_size=1):\n    return [1.0]\n",
    );
    for (yaml, line, says) in [
        (
            "precisions: [fp32]\nfunction_name: 1st\n",
            2,
            "not a Python function name",
        ),
        ("ops_per_call: -3\n", 1, "ops_per_call"),
        ("reference: lib:fn\n", 1, "none of FILE.json"),
        ("labels:\n  a b: 1\n", 1, "label key 'a b'"),
    ] {
        put(&root, "kernels/bench.yaml", yaml);
        let (code, _, _, stderr) = run(&root, &t.path().join("out"), &["--targets", "kernels"]);
        assert_eq!(code, 2, "{yaml}: {stderr}");
        assert!(stderr.contains(&format!("bench.yaml:{line}:")), "{stderr}");
        assert!(stderr.contains(says), "{stderr}");
    }
    // A function_name the file does not define: not a kernel, and
    // `discover --verbose` says why.
    put(&root, "kernels/bench.yaml", "function_name: step\n");
    let o = warpt()
        .args(["harness", "discover"])
        .arg(&root)
        .arg("--verbose")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("defines no step()"), "{text}");
}

/// A pair whose baseline waits for its JAX result inside the call and
/// whose variant returns it unfinished: with the adapter waiting for
/// JAX's dispatch, both time the same matmul (a speedup near 1, not the
/// hundreds that timing the dispatch alone gives).
#[test]
fn jax_results_are_waited_for_before_the_clock_stops() {
    let Ok(python) = std::env::var("WARPT_TEST_NUMPY_PYTHON") else {
        eprintln!("not run here: WARPT_TEST_NUMPY_PYTHON is unset (scripts/test sets it)");
        return;
    };
    let has_jax = std::process::Command::new(&python)
        .args(["-c", "import jax"])
        .status()
        .is_ok_and(|s| s.success());
    if !has_jax {
        eprintln!("not run here: {python} cannot import jax (scripts/test installs it)");
        return;
    }
    let _turn = common::one_at_a_time();
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("tree");
    let class = |sync: &str| {
        format!(
            "import jax, jax.numpy as jnp\nclass MM:\n    def setup(self):\n        \
             self.f = jax.jit(lambda a: a @ a)\n        \
             self.x = jnp.ones((384, 384), jnp.float32)\n        \
             self.f(self.x).block_until_ready()\n    \
             def benchmark_fn(self):\n        return self.f(self.x){sync}\n    \
             def teardown(self): pass\n"
        )
    };
    put(&root, "ch1/baseline_mm.py", &class(".block_until_ready()"));
    put(&root, "ch1/optimized_mm.py", &class(""));
    let out = t.path().join("out");
    // The two time the same matmul: on a noisy host either can read a few
    // percent slower, which the default 5% threshold would call a
    // regression (exit 1). What is tested is the speedup near 1.
    let (code, s, export, stderr) = run(
        &root,
        &out,
        &["--python", &python, "--regression-threshold", "50"],
    );
    assert_eq!(code, 0, "{stderr}");
    let e = common::find_in(&s["benchmarks"], "id", "ch1/mm/optimized_mm");
    let speedup = e["speedup"].as_f64().unwrap();
    assert!((0.5..2.0).contains(&speedup), "{e:#}");
    let details = &export["benchmarks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["spec"]["id"]["name"] == "ch1/mm/optimized_mm")
        .unwrap()["details"];
    assert!(
        details["sync"]
            .as_str()
            .is_some_and(|s| s.contains("jax.block_until_ready")),
        "{details:#}"
    );
}

/// `harness run --suite-timeout`: the file running when the limit passes is
/// stopped, every file after it is not started, each a `timeout` saying
/// why; the run completes with its reports.
#[test]
fn the_suite_limit_ends_a_harness_run_cleanly() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("tree");
    let hang = "import time\nclass B:\n    def setup(self): pass\n    \
                def benchmark_fn(self): time.sleep(3600)\n    def teardown(self): pass\n";
    put(&root, "ch1/baseline_hang.py", hang);
    put(&root, "ch1/optimized_hang.py", hang);
    put(
        &root,
        "kernels/k.py",
        "def run_benchmark(problem_size=1):\n    return [1.0]\n",
    );
    // bench.yaml labels are the whole run's; --label wins over them.
    put(&root, "ch1/bench.yaml", "labels: {team: ml, limit: none}\n");
    put(&root, "kernels/bench.yaml", "labels: {team: ml}\n");
    let out = t.path().join("out");
    let (code, s, export, stderr) = run(
        &root,
        &out,
        &[
            "--suite-timeout",
            "2",
            "--label",
            "limit=2s",
            "--description",
            "a run cut short",
        ],
    );
    assert_eq!(code, 1, "{stderr}");
    // The run's labels and description are in its manifest.
    assert_eq!(
        export["manifest"]["labels"]["limit"], "2s",
        "{:#}",
        export["manifest"]
    );
    assert_eq!(export["manifest"]["labels"]["team"], "ml");
    assert_eq!(export["manifest"]["description"], "a run cut short");
    let all = s["benchmarks"].as_array().unwrap();
    assert_eq!(all.len(), 3, "{s:#}");
    for e in all {
        assert_eq!(e["status"], "timeout", "{e:#}");
        let why = e["error"].as_str().unwrap();
        assert!(why.contains("--suite-timeout 2 s"), "{e:#}");
    }
    let kernel = common::find_in(&s["benchmarks"], "id", "kernels/k");
    assert!(
        kernel["error"].as_str().unwrap().contains("not started"),
        "{kernel:#}"
    );
}
