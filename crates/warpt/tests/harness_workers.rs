//! `warpt harness run`: each benchmark's trials (and its `get_config()`
//! probe) in one worker and one interpreter, each benchmark in its own;
//! `--cold-start` keeps a fresh worker per trial and a fresh interpreter
//! per sample.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::Value;

mod common;
use common::{put, warpt};

/// A benchmark that writes what ran where to `trace_<name>.txt` beside
/// itself: `load PID` when its module is loaded, `setup PID PPID X` at
/// each setup (X a draw from `random`), and says in `get_config()` how
/// long to measure.
fn tracer(name: &str) -> String {
    format!(
        "import os, random, time\n\
         TRACE = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'trace_{name}.txt')\n\
         def note(line):\n    with open(TRACE, 'a') as f:\n        f.write(line + '\\n')\n\
         note(f'load {{os.getpid()}}')\n\
         class B:\n    def get_config(self): return {{'duration_s': 0.2, 'warmup_s': 0.05}}\n    \
         def setup(self):\n        note(f'setup {{os.getpid()}} {{os.getppid()}} {{random.random()!r}}')\n    \
         def benchmark_fn(self):\n        time.sleep(0.001)\n        return [1.0]\n    \
         def teardown(self): pass\n"
    )
}

/// The trace's lines, split in words.
fn trace(root: &Path, name: &str) -> Vec<Vec<String>> {
    std::fs::read_to_string(root.join(format!("ch1/trace_{name}.txt")))
        .unwrap()
        .lines()
        .map(|l| l.split_whitespace().map(str::to_string).collect())
        .collect()
}

/// Runs `warpt harness run` on `root` with three rounds and `extra`: the
/// summary.
fn run(root: &Path, out: &Path, extra: &[&str]) -> Value {
    let o = warpt()
        .args(["harness", "run"])
        .arg(root)
        .arg("--output-dir")
        .arg(out)
        .args([
            "--no-store",
            "--rounds",
            "3",
            "--regression-threshold",
            "1000",
        ])
        .args(extra)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap()
}

fn setups(lines: &[Vec<String>]) -> Vec<&Vec<String>> {
    lines.iter().filter(|l| l[0] == "setup").collect()
}

#[test]
fn a_benchmarks_trials_share_its_worker_and_interpreter_and_no_other_benchmarks() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("tree");
    put(&root, "ch1/baseline_w.py", &tracer("base"));
    put(&root, "ch1/optimized_w.py", &tracer("opt"));
    let s = run(&root, &t.path().join("out"), &["--reproducible"]);
    let mut interpreters = Vec::new();
    for name in ["base", "opt"] {
        let lines = trace(&root, name);
        // Loaded once, by the probe that read get_config(), in the
        // interpreter that then set it up for each of the three trials.
        let loads: Vec<&Vec<String>> = lines.iter().filter(|l| l[0] == "load").collect();
        assert_eq!(loads.len(), 1, "{name}: {lines:?}");
        let setups = setups(&lines);
        assert_eq!(setups.len(), 3, "{name}: {lines:?}");
        assert!(setups.iter().all(|l| l[1] == loads[0][1]), "{lines:?}");
        let workers: BTreeSet<&String> = setups.iter().map(|l| &l[2]).collect();
        assert_eq!(workers.len(), 1, "{name}: one worker: {lines:?}");
        // --reproducible seeds the generators again before each trial's
        // setup, as the load seeded them for the first.
        let draws: BTreeSet<&String> = setups.iter().map(|l| &l[3]).collect();
        assert_eq!(draws.len(), 1, "{name}: {lines:?}");
        interpreters.push((
            loads[0][1].clone(),
            setups[0][2].clone(),
            setups[0][3].clone(),
        ));
    }
    // Each benchmark its own worker and interpreter; seeded alike.
    assert_ne!(interpreters[0].0, interpreters[1].0);
    assert_ne!(interpreters[0].1, interpreters[1].1);
    assert_eq!(interpreters[0].2, interpreters[1].2);
    // The probe's get_config() set the trials' duration.
    let e = common::find_in(&s["benchmarks"], "id", "ch1/w/optimized_w");
    assert_eq!(e["status"], "passed", "{e:#}");
    assert_eq!(e["trials"], 3, "{e:#}");
    let full: Value = serde_json::from_str(
        &std::fs::read_to_string(t.path().join("out/benchmarks/ch1__w__optimized_w.json")).unwrap(),
    )
    .unwrap();
    let config = full["params"]["config"].as_str().unwrap();
    assert!(
        config.starts_with("duration 0.200 s (get_config())"),
        "{config}"
    );
    let notes = full["resources"]["notes"].to_string();
    assert!(
        notes.contains("one worker ran this benchmark's trials"),
        "{notes}"
    );
    assert!(
        full["resources"]["cpu_user_s"].as_f64().unwrap() > 0.0,
        "{full:#}"
    );
}

#[test]
fn cold_start_runs_each_trial_in_a_fresh_worker() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("tree");
    put(&root, "ch1/baseline_w.py", &tracer("k"));
    put(&root, "ch1/optimized_w.py", &tracer("opt"));
    run(&root, &t.path().join("out"), &["--cold-start"]);
    let lines = trace(&root, "k");
    let setups = setups(&lines);
    // A fresh interpreter per sample: a load before every setup.
    assert!(setups.len() > 3, "{lines:?}");
    let interpreters: BTreeSet<&String> = setups.iter().map(|l| &l[1]).collect();
    assert_eq!(interpreters.len(), setups.len(), "{lines:?}");
    let workers: BTreeSet<&String> = setups.iter().map(|l| &l[2]).collect();
    assert_eq!(workers.len(), 3, "a worker per trial: {lines:?}");
}
