//! `warpt harness`, driven as a user would: the real binary on the shipped
//! examples and on temporary trees.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use std::path::Path;

use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::Value;

mod common;
use common::{ran, warpt};

fn examples() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/harness")
}

#[test]
fn discover_lists_the_examples_pairs_and_kernel() {
    let out = ran(warpt()
        .args(["harness", "discover", "--json"])
        .arg(examples()));
    let m: Value = serde_json::from_slice(&out.stdout).unwrap();
    let chapters = common::texts(&m["chapters"], "name");
    assert_eq!(chapters, ["ch1_loops", "ch2_containers", "ch3_numpy"]);
    let matmul = &m["chapters"][2]["pairs"][0];
    assert_eq!(matmul["example"], "matmul");
    assert_eq!(matmul["optimized"].as_array().unwrap().len(), 2);
    assert_eq!(m["kernels"][0]["name"], "prefix_sum");
    let skipped = m["skipped"].as_array().unwrap();
    assert_eq!(skipped.len(), 1, "{skipped:?}");
    assert!(skipped[0]["path"].as_str().unwrap().ends_with("_shapes.py"));
}

#[test]
fn discover_says_why_it_skips_only_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let ch = dir.path().join("ch1");
    std::fs::create_dir_all(&ch).unwrap();
    for f in [
        "baseline_a.py",
        "optimized_a.py",
        "test_a.py",
        "optimized_b.py",
    ] {
        std::fs::write(ch.join(f), "").unwrap();
    }
    warpt()
        .args(["harness", "discover"])
        .arg(dir.path())
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "1 chapter, 1 pair (1 optimized variant), 0 kernels",
        ))
        .stdout(predicate::str::contains("skipped 2 Python files"))
        .stdout(predicate::str::contains("test_a.py").not());
    warpt()
        .args(["harness", "discover", "--verbose"])
        .arg(dir.path())
        .assert()
        .success()
        .stdout(predicate::str::contains("test_a.py: test_ files are tests"))
        .stdout(predicate::str::contains("optimized_b.py: no baseline_b.py"));
}

#[test]
fn discover_of_a_missing_directory_is_a_usage_error() {
    warpt()
        .args(["harness", "discover", "no/such/tree"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no/such/tree is not a directory"));
}

/// Whether `python3` here has NumPy (Debian's has not; CI's may).
fn has_numpy() -> bool {
    std::process::Command::new("python3")
        .args(["-c", "import numpy"])
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// `warpt harness run` on the examples with short trials, reports in
/// `out`, recorded in `store`.
fn quick_run(out: &Path, store: &Path) -> Command {
    let mut cmd = warpt();
    cmd.args(["harness", "run"])
        .arg(examples())
        .arg("--output-dir")
        .arg(out)
        .arg("--store")
        .arg(store)
        .args([
            "--duration",
            "0.2",
            "--burnin-seconds",
            "0.05",
            "--rounds",
            "2",
            // optimized_sum is a near tie with its baseline: its verdict is
            // the machine's, not what these tests check.
            "--regression-threshold",
            "50",
        ]);
    cmd
}

#[test]
fn run_on_the_examples_reports_speedups_and_stores_one_harness_run() {
    let t = tempfile::tempdir().unwrap();
    let out = t.path().join("reports");
    let store = t.path().join("results.db");
    let o = quick_run(&out, &store).output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    let s: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let find = |id: &str| common::find_in(&s["benchmarks"], "id", id).clone();
    // optimized_sum (a generator against a loop) is a near tie that a noisy
    // host can read 2x either way between neighbouring seconds, past any
    // threshold: it alone may regress, and the exit status must say so.
    let regressed: Vec<&str> = s["benchmarks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["regression"] == true)
        .map(|e| e["id"].as_str().unwrap())
        .collect();
    assert!(
        regressed
            .iter()
            .all(|id| *id == "ch1_loops/sum/optimized_sum"),
        "{regressed:?}\n{stderr}"
    );
    let expected = if regressed.is_empty() { 0 } else { 1 };
    assert_eq!(o.status.code(), Some(expected), "{stderr}");
    assert_eq!(s["overall"]["regressed"], regressed.len(), "{stderr}");
    // A closed form against a loop over 100 000 numbers, a set against a list.
    for id in [
        "ch1_loops/sum/optimized_sum_formula",
        "ch2_containers/membership/optimized_membership",
    ] {
        let e = find(id);
        assert!(e["speedup"].as_f64().unwrap() > 10.0, "{e:#}");
        assert_eq!(e["accuracy"]["relative_error"], 0.0, "{e:#}");
    }
    let matmul = find("ch3_numpy/matmul/optimized_matmul_vectorized");
    if has_numpy() {
        assert_eq!(matmul["status"], "passed", "{matmul:#}");
        assert!(matmul["speedup"].as_f64().unwrap() > 1.0, "{matmul:#}");
    } else {
        assert_eq!(matmul["status"], "skipped", "{matmul:#}");
        assert_eq!(matmul["error"], "NumPy is not installed for this Python");
    }
    let prefix = find("kernels/prefix_sum");
    assert_eq!(prefix["status"], "passed");
    // The samples' standard deviation, beside the percentiles.
    let latency = &prefix["latency_ms"];
    let std = latency["std"].as_f64().unwrap();
    assert!(
        std > 0.0 && std < latency["p99"].as_f64().unwrap(),
        "{latency:#}"
    );
    assert_eq!(s["overall"]["total"], 9);
    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    for section in [
        "## Overall",
        "## Chapters",
        "## Pairs",
        "## Leaderboard",
        "## Resource usage",
        "## Key findings",
        "## Recommendations",
        "## Environment",
        "| std ms |",
        "| Python | Python 3.",
        "logical CPUs",
    ] {
        assert!(md.contains(section), "{section} missing:\n{md}");
    }
    for f in ["env.json", "manifest.json"] {
        assert!(out.join(f).is_file(), "{f}");
    }
    let listed = warpt()
        .args(["results", "list", "--suite", "harness", "--json", "--store"])
        .arg(&store)
        .output()
        .unwrap();
    let runs: Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(runs.as_array().unwrap().len(), 1, "{runs:#}");
    // The stored run reads back as the same summary (regressions against it).
    let id = runs[0]["id"].as_str().unwrap().to_string();
    let again = t.path().join("again");
    let o = quick_run(&again, &store)
        .args(["--targets", "ch2", "--compare-to", &id])
        .output()
        .unwrap();
    assert!(
        matches!(o.status.code(), Some(0 | 1)),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let md = std::fs::read_to_string(again.join("regressions.md")).unwrap();
    assert!(md.contains(&format!("stored run {id}")), "{md}");
    assert!(md.contains("2 benchmarks compared"), "{md}");
}

#[test]
fn unknown_targets_are_usage_errors_naming_the_chapters() {
    warpt()
        .args(["harness", "run"])
        .arg(examples())
        .args(["--targets", "ch9", "--no-store"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "ch1_loops, ch2_containers, ch3_numpy, kernels",
        ));
}

/// The NumPy chapter with NumPy (scripts/test makes a virtual environment
/// and sets WARPT_TEST_NUMPY_PYTHON): both variants pass, faster, with the
/// baseline's answer to rounding.
#[test]
fn the_numpy_chapter_runs_where_numpy_is_installed() {
    let Ok(python) = std::env::var("WARPT_TEST_NUMPY_PYTHON") else {
        eprintln!("WARPT_TEST_NUMPY_PYTHON unset: scripts/test provides a Python with NumPy");
        return;
    };
    let t = tempfile::tempdir().unwrap();
    let out = t.path().join("reports");
    let o = quick_run(&out, &t.path().join("results.db"))
        .args(["--targets", "ch3", "--python", &python])
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let s: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let all = s["benchmarks"].as_array().unwrap();
    assert_eq!(all.len(), 3, "{s:#}");
    for e in all {
        assert_eq!(e["status"], "passed", "{e:#}");
        if e["role"] == "optimized" {
            assert!(e["speedup"].as_f64().unwrap() > 1.0, "{e:#}");
            assert!(
                e["accuracy"]["relative_error"].as_f64().unwrap() < 1e-12,
                "{e:#}"
            );
        }
    }
}
