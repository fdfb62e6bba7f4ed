//! `warpt harness`, driven as a user would: the real binary on the shipped
//! examples and on temporary trees.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use std::path::Path;

use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::Value;

fn warpt() -> Command {
    let mut cmd = Command::cargo_bin("warpt").expect("the warpt binary is built");
    cmd.env("WARPT_NO_PROGRESS", "1");
    cmd
}

fn examples() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/harness")
}

#[test]
fn discover_lists_the_examples_pairs_and_kernel() {
    let out = warpt()
        .args(["harness", "discover", "--json"])
        .arg(examples())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let m: Value = serde_json::from_slice(&out.stdout).unwrap();
    let chapters: Vec<&str> = m["chapters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
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
