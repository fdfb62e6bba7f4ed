//! `warpt stress`: sustained load that checks every result, with a timeline
//! from the monitor, and a detector that must catch an injected error.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

mod common;
use common::{stderr_of, stdout_of, warpt};

use assert_cmd::Command;
use serde_json::Value;
use warpt_model::StressRun;

fn stress(args: &[&str]) -> Command {
    let mut cmd = warpt();
    cmd.arg("stress").args(args);
    cmd
}

#[test]
fn stress_cpu_with_monitor_writes_a_plausible_timeline() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("t.json");
    let out = stdout_of(
        stress(&[
            "cpu",
            "--duration",
            "3",
            "--monitor",
            "--monitor-interval",
            "0.5",
            "--json",
            "--monitor-output",
        ])
        .arg(&t),
    );
    let run: StressRun = serde_json::from_slice(&out).unwrap();
    assert!(run.passed && run.errors == 0 && run.checks > 0);
    assert_eq!(run.unit, "GFLOP/s");
    assert!(
        (2..=4).contains(&run.throughput.len()),
        "{:?}",
        run.throughput
    );
    assert!(run.throughput.iter().all(|p| p.value > 0.0));
    let telemetry = run.telemetry.unwrap();
    assert!(
        telemetry.mean_cpu_utilization_percent.unwrap() > 50.0,
        "{telemetry:?}"
    );
    let samples: Vec<Value> = serde_json::from_str(&std::fs::read_to_string(&t).unwrap()).unwrap();
    // 3 s at 0.5 s, plus the calibration and the shutdown around the load.
    assert!(
        (5..=9).contains(&samples.len()),
        "{} samples",
        samples.len()
    );
    for s in &samples {
        assert!(s["total_memory_bytes"].as_u64().unwrap() > 0);
        let cpu = s["cpu_utilization_percent"].as_f64().unwrap();
        assert!((0.0..=100.0).contains(&cpu));
        assert!(s["timestamp"].is_string() && s["gpu_usage"].is_array());
    }
}

#[test]
fn an_injected_error_is_caught_on_every_target() {
    let dir = tempfile::tempdir().unwrap();
    let path = format!("path={}", dir.path().display());
    let cases: [(&str, Vec<&str>); 4] = [
        ("cpu", vec![]),
        ("ram", vec!["--param", "mb=32"]),
        ("storage", vec!["--param", "size_mb=8", "--param", &path]),
        ("network", vec![]),
    ];
    for (target, extra) in cases {
        let out = stress(&[
            target,
            "--duration",
            "1",
            "--json",
            "--param",
            "inject_error=1",
        ])
        .args(&extra)
        .assert()
        .code(1)
        .get_output()
        .stdout
        .clone();
        let run: StressRun = serde_json::from_slice(&out).unwrap();
        assert!(!run.passed, "{target}");
        assert!(
            run.errors >= 1 && !run.error_examples.is_empty(),
            "{target}: {run:?}"
        );
    }
    assert!(
        std::fs::read_dir(dir.path()).unwrap().next().is_none(),
        "storage stress leaves nothing behind"
    );
}

#[test]
fn clean_runs_pass_and_bad_requests_are_refused() {
    for (target, extra) in [("ram", vec!["--param", "mb=32"]), ("network", vec![])] {
        let out = stdout_of(stress(&[target, "--duration", "1", "--json"]).args(&extra));
        let run: StressRun = serde_json::from_slice(&out).unwrap();
        assert!(run.passed, "{target}: {run:?}");
    }
    let err = stderr_of(&mut stress(&["ram", "--param", "mb=100000000"]), 2);
    assert!(err.contains("refuses more than 90%"));
    stress(&["cpu", "--param", "bogus=1"]).assert().code(2);
    stress(&["disk"]).assert().code(2);
    // No hardware GPU here (lavapipe at most): refused, not faked.
    stress(&["gpu"]).assert().code(2);
    stress(&["ram", "--label", "no value"]).assert().code(2);
}

#[test]
fn a_stress_run_keeps_its_labels_and_results_list_finds_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("results.db");
    let out = stdout_of(
        stress(&["ram", "--duration", "1", "--param", "mb=32", "--json"])
            .args(["--label", "rack=b7", "--description", "after the fan swap"])
            .arg("--store")
            .arg(&store),
    );
    let run: StressRun = serde_json::from_slice(&out).unwrap();
    assert_eq!(run.labels["rack"], "b7");
    let listed: Value = serde_json::from_slice(&stdout_of(
        warpt()
            .args(["results", "list", "--label", "rack=b7", "--json", "--store"])
            .arg(&store),
    ))
    .unwrap();
    let listed = listed.as_array().unwrap();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0]["kind"], "stress");
    assert_eq!(listed[0]["id"], run.id.as_str());
    assert_eq!(listed[0]["description"], "after the fan swap");
    let shown = stdout_of(
        warpt()
            .args(["results", "show", &run.id, "--store"])
            .arg(&store),
    );
    let shown: StressRun = serde_json::from_slice(&shown).unwrap();
    assert_eq!(shown, run);
}
