//! `warpt results trend`: change points over a stored history, found at the
//! right run, none in flat noise, and the exit status a nightly job alerts on.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

mod common;
use common::{stderr_of, warpt};

use std::path::Path;

use warpt_model::BenchmarkSuiteRun;

/// Deterministic noise in [-1, 1) (splitmix64).
fn noise(i: u64) -> f64 {
    let mut z = i.wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
}

/// Imports one run per level into `store`, an hour apart, each holding
/// cpu_flops gflops (fp64, 1 thread; higher is better) at that level.
fn import(dir: &Path, store: &Path, levels: &[f64]) {
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../warpt-model/tests/data/example_export.json");
    let base: BenchmarkSuiteRun =
        serde_json::from_str(&std::fs::read_to_string(fixture).unwrap()).unwrap();
    let mut cmd = warpt();
    cmd.env("WARPT_STORE", store).args(["results", "import"]);
    for (i, level) in levels.iter().enumerate() {
        let mut run = base.clone();
        run.id = format!("run-{i:02}");
        run.start_time = Some(
            base.start_time
                .unwrap()
                .checked_add(jiff::SignedDuration::from_hours(i as i64))
                .unwrap(),
        );
        run.benchmarks.truncate(1);
        run.benchmarks[0].metrics.truncate(1);
        run.benchmarks[0].metrics[0].value = *level;
        let path = dir.join(format!("run-{i:02}.json"));
        std::fs::write(&path, serde_json::to_vec(&run).unwrap()).unwrap();
        cmd.arg(path);
    }
    cmd.assert().success();
}

/// `results trend --benchmark cpu_flops --metric` on `store` (the metric next).
fn cpu_flops_trend(store: &Path) -> assert_cmd::Command {
    let mut cmd = warpt();
    cmd.env("WARPT_STORE", store)
        .args("results trend --benchmark cpu_flops --metric".split(' '));
    cmd
}

fn trend(store: &Path, extra: &[&str]) -> assert_cmd::assert::Assert {
    cpu_flops_trend(store)
        .args(["gflops", "--tags", "precision=fp64", "--tags", "threads=1"])
        .args(extra)
        .assert()
}

#[test]
fn a_planted_step_is_found_at_its_run_and_alerts() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("results.db");
    // 14 runs at 100 (±1%), then 4 at 92: an 8% regression at run 14.
    let levels: Vec<f64> = (0..18u64)
        .map(|i| if i < 14 { 100.0 } else { 92.0 } * (1.0 + 0.01 * noise(i)))
        .collect();
    import(dir.path(), &store, &levels);
    let out = trend(&store, &["--json"])
        .code(1)
        .get_output()
        .stdout
        .clone();
    let t: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(t["points"].as_array().unwrap().len(), 18);
    let cps = t["change_points"].as_array().unwrap();
    assert_eq!(cps.len(), 1, "{t}");
    assert_eq!(cps[0]["run_id"], "run-14");
    assert_eq!(cps[0]["direction"], "regressed");
    let change = cps[0]["change_pct"].as_f64().unwrap();
    assert!((change + 8.0).abs() < 1.5, "{change}");
    assert!(cps[0]["confidence"].as_f64().unwrap() > 0.99);
    assert!(cps[0]["before"].as_f64().unwrap() > cps[0]["after"].as_f64().unwrap());
    assert_eq!(t["latest_regressed"], true);
    // The table names the step on its run.
    let out = trend(&store, &[]).code(1).get_output().stdout.clone();
    let text = String::from_utf8(out).unwrap();
    let line = text.lines().find(|l| l.contains("run-14")).unwrap();
    assert!(line.contains("regressed -"), "{text}");
}

#[test]
fn a_flat_noisy_history_has_no_change_points_and_bad_input_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("results.db");
    let levels: Vec<f64> = (0..30u64)
        .map(|i| 100.0 * (1.0 + 0.03 * noise(i + 500)))
        .collect();
    import(dir.path(), &store, &levels);
    let out = trend(&store, &["--json"])
        .success()
        .get_output()
        .stdout
        .clone();
    let t: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(t["change_points"].as_array().unwrap().len(), 0, "{t}");
    assert_eq!(t["latest_regressed"], false);
    // A metric that is not there, and a malformed tag, are usage errors.
    let err = stderr_of(cpu_flops_trend(&store).args(["nope"]), 2);
    assert!(err.contains("metric 'nope'"));
    trend(&store, &["--tags", "oops"]).code(2);
}
