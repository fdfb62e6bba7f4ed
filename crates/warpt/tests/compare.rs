//! `warpt benchmark compare` on export files and store runs: verdicts and exit codes.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

mod common;
use common::warpt;

use std::path::{Path, PathBuf};

use warpt_model::BenchmarkSuiteRun;

fn noise(i: usize) -> f64 {
    let x = (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 11;
    x as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
}

/// The example export with its first metric replaced by 30 samples around `level`.
fn export(dir: &Path, name: &str, id: &str, level: f64) -> PathBuf {
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../warpt-model/tests/data/example_export.json");
    let mut run: BenchmarkSuiteRun =
        serde_json::from_str(&std::fs::read_to_string(fixture).unwrap()).unwrap();
    run.id = id.into();
    run.benchmarks.truncate(1);
    let m = &mut run.benchmarks[0].metrics;
    m.truncate(1);
    m[0].higher_is_better = true;
    let samples: Vec<f64> = (0..30).map(|i| level + noise(i + level as usize)).collect();
    let stats = warpt_model::MetricStats::summarize(&samples).unwrap();
    m[0].value = stats.median;
    m[0].stats = Some(stats);
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_vec(&run).unwrap()).unwrap();
    path
}

fn compare(store: &Path, args: &[&str]) -> assert_cmd::assert::Assert {
    warpt()
        .env("WARPT_STORE", store)
        .args(["benchmark", "compare"])
        .args(args)
        .assert()
}

fn verdicts(out: &[u8]) -> serde_json::Value {
    serde_json::from_slice(out).unwrap()
}

#[test]
fn exit_status_says_whether_anything_regressed() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("results.db");
    let base = export(dir.path(), "base.json", "base-run", 100.0);
    let same = export(dir.path(), "same.json", "same-run", 100.0);
    let worse = export(dir.path(), "worse.json", "worse-run", 95.0);
    let better = export(dir.path(), "better.json", "better-run", 105.0);
    let s = |p: &PathBuf| p.display().to_string();

    compare(&store, &[&s(&base), &s(&same)]).code(0);
    // One run a side on a machine whose noise is unknown: a 5% drop may be
    // the next run landing elsewhere. Inconclusive, which fails only a
    // strict gate.
    let out = compare(&store, &[&s(&base), &s(&worse), "--format", "json"])
        .code(0)
        .get_output()
        .stdout
        .clone();
    let json = verdicts(&out);
    assert_eq!(json["metrics"][0]["verdict"], "inconclusive");
    assert_eq!(json["metrics"][0]["noise_source"], "unknown");
    assert!(json["metrics"][0]["noise_band_pct"].is_null());
    assert!(
        json["metrics"][0]["reason"]
            .as_str()
            .unwrap()
            .starts_with("noise unknown")
    );
    compare(&store, &[&s(&base), &s(&worse), "--fail-on-inconclusive"]).code(1);
    compare(&store, &[&s(&base), &s(&better), "--fail-on-inconclusive"]).code(1);
    // Trusting one run's own statistics (a spread of 0) gives the old verdict.
    let out = compare(
        &store,
        &[
            &s(&base),
            &s(&worse),
            "--assume-noise",
            "0",
            "--format",
            "json",
        ],
    )
    .code(1)
    .get_output()
    .stdout
    .clone();
    assert_eq!(verdicts(&out)["metrics"][0]["verdict"], "regressed");
    // A 2% spread: one run a side, the band is 4 x 2% = 8%.
    let out = compare(
        &store,
        &[
            &s(&base),
            &s(&worse),
            "--assume-noise",
            "2",
            "--format",
            "json",
        ],
    )
    .code(0)
    .get_output()
    .stdout
    .clone();
    let json = verdicts(&out);
    assert_eq!(json["metrics"][0]["verdict"], "~");
    assert_eq!(json["metrics"][0]["noise_band_pct"], 8.0);
    // A 5% drop inside a 10% threshold is not a regression.
    compare(
        &store,
        &[
            &s(&base),
            &s(&worse),
            "--threshold",
            "10",
            "--assume-noise",
            "0",
        ],
    )
    .code(0);

    // Store runs by id prefix.
    warpt()
        .env("WARPT_STORE", &store)
        .args(["results", "import"])
        .arg(&base)
        .arg(&worse)
        .assert()
        .success();
    let out = compare(
        &store,
        &["base-r", "worse", "--format", "md", "--assume-noise", "0"],
    )
    .code(1)
    .get_output()
    .stdout
    .clone();
    let md = String::from_utf8(out).unwrap();
    assert!(
        md.contains("| regressed |") && md.contains("run base-run"),
        "{md}"
    );
    let err = compare(&store, &["nothing-like-this", &s(&base)])
        .code(2)
        .get_output()
        .stderr
        .clone();
    assert!(String::from_utf8_lossy(&err).contains("neither a file nor a run"));
}

#[test]
fn five_stored_runs_of_the_machine_give_the_noise_band() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("results.db");
    let s = |p: &PathBuf| p.display().to_string();
    let base = export(dir.path(), "base.json", "base-run", 100.0);
    let worse = export(dir.path(), "worse.json", "worse-run", 90.0);
    // Four earlier runs are not enough history.
    let mut import = warpt();
    import
        .env("WARPT_STORE", &store)
        .args(["results", "import"]);
    for (i, level) in [99.0, 100.0, 101.0, 100.5].iter().enumerate() {
        import.arg(export(
            dir.path(),
            &format!("h{i}.json"),
            &format!("hist-{i}"),
            *level,
        ));
    }
    import.assert().success();
    let out = compare(&store, &[&s(&base), &s(&worse), "--format", "json"])
        .get_output()
        .stdout
        .clone();
    assert_eq!(verdicts(&out)["metrics"][0]["noise_source"], "unknown");
    // A fifth: the spread of the five medians (CV 0.79%, raised by 1.94 to
    // its upper 90% bound for five runs) sets a band of about 6%, and the
    // 10% drop is a regression.
    let fifth = export(dir.path(), "h4.json", "hist-4", 99.5);
    warpt()
        .env("WARPT_STORE", &store)
        .args(["results", "import"])
        .arg(&fifth)
        .assert()
        .success();
    let out = compare(&store, &[&s(&base), &s(&worse), "--format", "json"])
        .code(1)
        .get_output()
        .stdout
        .clone();
    let json = verdicts(&out);
    let m = &json["metrics"][0];
    assert_eq!(m["noise_source"], "history");
    assert_eq!(m["verdict"], "regressed");
    let band = m["noise_band_pct"].as_f64().unwrap();
    assert!((5.5..6.5).contains(&band), "{band}");
    // --no-store reads no history.
    let out = compare(
        &store,
        &[&s(&base), &s(&worse), "--no-store", "--format", "json"],
    )
    .code(0)
    .get_output()
    .stdout
    .clone();
    assert_eq!(verdicts(&out)["metrics"][0]["verdict"], "inconclusive");
}
