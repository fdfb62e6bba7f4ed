//! `warpt results import` of what other tools wrote, each from a real
//! file made by the real tool: hyperfine (Debian's) and Google Benchmark
//! (Debian's libbenchmark-dev, compiled here) run by the test; criterion
//! and pytest-benchmark captured as fixtures by the commands in
//! crates/warpt-import/tests/fixtures/README.md. Raw samples must survive,
//! so `compare` tests them; anything else is a usage error listing formats.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

mod common;
use common::{dir_with, metric_of as metric, run_on as warpt};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../warpt-import/tests/fixtures")
}

/// Imports `path` and returns (format, the stored run as JSON).
fn import(store: &Path, path: &Path, extra: &[&str]) -> (String, Value) {
    let mut args = vec!["results", "import", "--json"];
    args.extend_from_slice(extra);
    args.push(path.to_str().unwrap());
    let (code, out, err) = warpt(store, &args);
    assert_eq!(code, 0, "{err}");
    let report: Value = serde_json::from_str(&out).unwrap();
    let id = report[0]["run_id"].as_str().unwrap().to_string();
    let (code, shown, err) = warpt(store, &["results", "show", &id, "--json"]);
    assert_eq!(code, 0, "{err}");
    (
        report[0]["format"].as_str().unwrap().to_string(),
        serde_json::from_str(&shown).unwrap(),
    )
}

fn bench<'a>(run: &'a Value, name: &str) -> &'a Value {
    run["benchmarks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["spec"]["id"]["name"] == name)
        .unwrap_or_else(|| panic!("no {name} in {run}"))
}

fn samples(m: &Value) -> Vec<f64> {
    m["stats"]["samples"]
        .as_array()
        .unwrap_or_else(|| panic!("no samples in {m}"))
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect()
}

#[test]
fn hyperfine_json_becomes_an_exec_run_with_every_time_kept() {
    let dir = tempfile::tempdir().unwrap();
    let hf = dir.path().join("hf.json");
    let status = Command::new("hyperfine")
        .args(["--runs", "6", "-N", "--export-json"])
        .arg(&hf)
        .args(["-L", "t", "0.001,0.003", "sleep {t}"])
        .output()
        .expect("hyperfine is installed by scripts/test");
    assert!(status.status.success());
    let original: Value = serde_json::from_slice(&std::fs::read(&hf).unwrap()).unwrap();
    let store = dir.path().join("store.db");
    let (format, run) = import(&store, &hf, &[]);
    assert_eq!(format, "hyperfine");
    assert_eq!(run["suite"], "exec", "joins warpt exec's history");
    for r in original["results"].as_array().unwrap() {
        let b = bench(&run, r["command"].as_str().unwrap());
        let wall = metric(b, "wall_time_s");
        let times: Vec<f64> = r["times"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect();
        assert_eq!(samples(wall), times);
        assert_eq!(
            wall["value"].as_f64().unwrap(),
            r["median"].as_f64().unwrap()
        );
        assert_eq!(wall["tags"]["t"], r["parameters"]["t"]);
        assert_eq!(metric(b, "user_time_s")["value"], r["user"]);
    }
    // The same file again is recognised, not stored twice.
    let (code, _, err) = warpt(&store, &["results", "import", hf.to_str().unwrap()]);
    assert_eq!(code, 0);
    assert!(err.contains("already in the store"), "{err}");
}

#[test]
fn google_benchmark_repetitions_are_samples_and_aggregates_alone_are_points() {
    let dir = dir_with(
        "bench.cc",
        r#"#include <benchmark/benchmark.h>
#include <numeric>
#include <vector>
static void BM_Sum(benchmark::State& state) {
  std::vector<int> v(state.range(0), 1);
  for (auto _ : state) benchmark::DoNotOptimize(std::accumulate(v.begin(), v.end(), 0));
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_Sum)->Arg(100)->Arg(1000);
BENCHMARK_MAIN();
"#,
    );
    let d = dir.path();
    let built = Command::new("g++")
        .current_dir(d)
        .args(["-O2", "bench.cc", "-o", "bench", "-lbenchmark", "-lpthread"])
        .output()
        .expect("g++ is installed by scripts/test");
    assert!(
        built.status.success(),
        "libbenchmark-dev is installed by scripts/test: {}",
        String::from_utf8_lossy(&built.stderr)
    );
    let run_bench = |file: &str, extra: &[&str]| {
        let out = Command::new(d.join("bench"))
            .args([
                "--benchmark_format=json",
                "--benchmark_repetitions=4",
                "--benchmark_min_time=0.01",
            ])
            .args(extra)
            .output()
            .unwrap();
        assert!(out.status.success());
        std::fs::write(d.join(file), &out.stdout).unwrap();
        serde_json::from_slice::<Value>(&out.stdout).unwrap()
    };
    let original = run_bench("gb.json", &[]);
    let store = d.join("store.db");
    let (format, run) = import(&store, &d.join("gb.json"), &[]);
    assert_eq!(format, "gbench");
    assert_eq!(run["suite"], "gbench");
    let b = bench(&run, "BM_Sum/1000");
    let real = samples(metric(b, "real_time_ns"));
    let expected: Vec<f64> = original["benchmarks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["run_name"] == "BM_Sum/1000" && e["run_type"] == "iteration")
        .map(|e| e["real_time"].as_f64().unwrap())
        .collect();
    assert_eq!(expected.len(), 4);
    assert_eq!(real, expected, "each repetition is one sample, in ns");
    let items = metric(b, "items_per_second");
    assert_eq!(items["higher_is_better"], true);
    assert_eq!(samples(items).len(), 4);

    run_bench("agg.json", &["--benchmark_report_aggregates_only=true"]);
    let (_, run) = import(&store, &d.join("agg.json"), &["--format", "gbench"]);
    let b = bench(&run, "BM_Sum/100");
    let real = metric(b, "real_time_ns");
    assert!(
        real["stats"].is_null() && real["value"].as_f64().unwrap() > 0.0,
        "{real}"
    );
    assert!(
        b["warnings"][0]
            .as_str()
            .unwrap()
            .contains("aggregates only"),
        "{b}"
    );
}

#[test]
fn criterion_directories_and_pytest_benchmark_files_keep_their_samples() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store.db");

    let crit = fixtures().join("criterion");
    let (format, run) = import(&store, &crit, &[]);
    assert_eq!(format, "criterion");
    assert_eq!(run["benchmarks"].as_array().unwrap().len(), 3);
    let sample: Value =
        serde_json::from_slice(&std::fs::read(crit.join("fib/15/new/sample.json")).unwrap())
            .unwrap();
    let t = samples(metric(bench(&run, "fib/15"), "time_ns"));
    assert_eq!(t.len(), sample["iters"].as_array().unwrap().len());
    let first = sample["times"][0].as_f64().unwrap() / sample["iters"][0].as_f64().unwrap();
    assert!(
        (t[0] - first).abs() < 1e-9 * first,
        "time per iteration of sample 0"
    );
    assert!(bench(&run, "sum_1000")["details"]["criterion_mean_ns"].is_number());

    let py = fixtures().join("pytest-benchmark.json");
    let original: Value = serde_json::from_slice(&std::fs::read(&py).unwrap()).unwrap();
    let (format, run) = import(&store, &py, &[]);
    assert_eq!(format, "pytest-benchmark");
    for b in original["benchmarks"].as_array().unwrap() {
        let r = bench(&run, b["fullname"].as_str().unwrap());
        let got = samples(metric(r, "time_s"));
        let data: Vec<f64> = b["stats"]["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect();
        assert_eq!(got, data);
        if let Some(n) = b["params"]["n"].as_i64() {
            assert_eq!(r["params"]["n"], n);
        }
    }
}

#[test]
fn files_of_no_known_format_are_usage_errors_listing_the_formats() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store.db");
    let junk = dir.path().join("junk.json");
    std::fs::write(&junk, r#"{"results": 3}"#).unwrap();
    let (code, _, err) = warpt(&store, &["results", "import", junk.to_str().unwrap()]);
    assert_eq!(code, 2);
    for f in ["hyperfine", "criterion", "gbench", "pytest-benchmark"] {
        assert!(err.contains(f), "{f} not in {err}");
    }
    // Forced to the wrong format: says what it was read as.
    let py = fixtures().join("pytest-benchmark.json");
    let (code, _, err) = warpt(
        &store,
        &[
            "results",
            "import",
            "--format",
            "hyperfine",
            py.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 2);
    assert!(err.contains("not a valid hyperfine file"), "{err}");
    // A directory without criterion's measurements.
    let (code, _, err) = warpt(&store, &["results", "import", dir.path().to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
}

#[test]
fn figures_that_are_not_finite_numbers_are_refused_and_nothing_is_stored() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store.db");
    // Times near f64's largest: their mean overflows to infinity, which
    // JSON (and so the store) could only keep as null.
    let huge = dir.path().join("huge.json");
    std::fs::write(
        &huge,
        r#"{"results": [{"command": "sleep 1", "mean": 1e308, "stddev": 0, "median": 1e308,
            "user": 0.001, "system": 0.001, "min": 1e308, "max": 1.7e308,
            "times": [1e308, 1.7e308, 1.5e308], "exit_codes": [0, 0, 0]}]}"#,
    )
    .unwrap();
    let (code, _, err) = warpt(&store, &["results", "import", huge.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("huge.json")
            && err.contains("wall_time_s")
            && err.contains("not a finite number"),
        "{err}"
    );
    // Nothing half-written: the history is empty (or absent).
    if store.exists() {
        let (code, out, err) = warpt(&store, &["results", "list", "--json"]);
        assert_eq!(code, 0, "{err}");
        let runs: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(runs.as_array().map_or(0, Vec::len), 0, "{runs}");
    }
}
