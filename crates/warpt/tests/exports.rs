//! `warpt results export`: each format checked against the shape its tool reads.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

mod common;
use common::{stdout_of, warpt};

use std::path::{Path, PathBuf};

use serde_json::Value;
use warpt_model::BenchmarkSuiteRun;

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../warpt-model/tests/data/example_export.json")
}

fn example() -> BenchmarkSuiteRun {
    serde_json::from_str(&std::fs::read_to_string(fixture()).unwrap()).unwrap()
}

fn export(args: &[&str]) -> Vec<u8> {
    warpt()
        .env("WARPT_STORE", "/nonexistent/never-used.db")
        .args(["results", "export"])
        .arg(fixture())
        .args(args)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone()
}

fn metric_count(run: &BenchmarkSuiteRun) -> usize {
    run.benchmarks.iter().map(|b| b.metrics.len()).sum()
}

#[test]
fn bmf_is_benchmark_measure_value() {
    let run = example();
    let bmf: Value = serde_json::from_slice(&export(&["--format", "bmf"])).unwrap();
    let benches = bmf.as_object().unwrap();
    assert!(!benches.is_empty());
    let mut measures = 0;
    for (name, b) in benches {
        assert!(name.contains('/'), "{name}");
        for (measure, v) in b.as_object().unwrap() {
            measures += 1;
            let v = v.as_object().unwrap();
            assert!(v["value"].is_number(), "{name} {measure}");
            if let (Some(lo), Some(hi)) = (v.get("lower_value"), v.get("upper_value")) {
                let (lo, hi, x) = (
                    lo.as_f64().unwrap(),
                    hi.as_f64().unwrap(),
                    v["value"].as_f64().unwrap(),
                );
                assert!(lo <= x && x <= hi, "{name} {measure}: {lo} {x} {hi}");
            }
            assert!(
                v.keys()
                    .all(|k| ["value", "lower_value", "upper_value"].contains(&k.as_str()))
            );
        }
    }
    assert_eq!(measures, metric_count(&run));
}

#[test]
fn gab_splits_by_direction_into_two_files() {
    let run = example();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("bench.json");
    warpt()
        .args(["results", "export"])
        .arg(fixture())
        .args(["--format", "gab", "-o"])
        .arg(&out)
        .assert()
        .success();
    let read = |n: &str| -> Vec<Value> {
        serde_json::from_str::<Value>(&std::fs::read_to_string(dir.path().join(n)).unwrap())
            .unwrap()
            .as_array()
            .unwrap()
            .clone()
    };
    let (bigger, smaller) = (read("bench-bigger.json"), read("bench-smaller.json"));
    let hib = run
        .benchmarks
        .iter()
        .flat_map(|b| &b.metrics)
        .filter(|m| m.higher_is_better)
        .count();
    assert_eq!(bigger.len(), hib);
    assert_eq!(bigger.len() + smaller.len(), metric_count(&run));
    for e in bigger.iter().chain(&smaller) {
        assert!(
            e["name"].is_string() && e["unit"].is_string() && e["value"].is_number(),
            "{e}"
        );
    }
}

#[test]
fn junit_parses_and_fails_regressions() {
    let run = example();
    let xml = String::from_utf8(export(&["--format", "junit"])).unwrap();
    let doc = roxmltree::Document::parse(&xml).unwrap();
    let cases: Vec<_> = doc
        .descendants()
        .filter(|n| n.has_tag_name("testcase"))
        .collect();
    assert_eq!(cases.len(), run.benchmarks.len());
    let failed = run
        .benchmarks
        .iter()
        .filter(|b| {
            !matches!(
                b.status,
                warpt_model::RunStatus::Passed | warpt_model::RunStatus::Skipped
            )
        })
        .count();
    let failures = doc
        .descendants()
        .filter(|n| n.has_tag_name("failure"))
        .count();
    assert_eq!(failures, failed);
    let suite = doc
        .descendants()
        .find(|n| n.has_tag_name("testsuite"))
        .unwrap();
    assert_eq!(
        suite.attribute("tests"),
        Some(run.benchmarks.len().to_string().as_str())
    );

    // Against a baseline whose first metric was 20% better (30 samples a side),
    // the first benchmark fails as a regression.
    let dir = tempfile::tempdir().unwrap();
    let mut base = run.clone();
    let mut current = run.clone();
    for (r, level) in [(&mut base, 120.0), (&mut current, 100.0)] {
        let m = &mut r.benchmarks[0].metrics[0];
        m.higher_is_better = true;
        let samples: Vec<f64> = (0..30).map(|i| level + (i % 5) as f64 * 0.1).collect();
        let st = warpt_model::MetricStats::summarize(&samples).unwrap();
        m.value = st.median;
        m.stats = Some(st);
    }
    let (bp, cp) = (dir.path().join("base.json"), dir.path().join("cur.json"));
    std::fs::write(&bp, serde_json::to_vec(&base).unwrap()).unwrap();
    std::fs::write(&cp, serde_json::to_vec(&current).unwrap()).unwrap();
    let junit = |extra: &[&str]| {
        let out = stdout_of(
            warpt()
                .env("WARPT_STORE", dir.path().join("no-history.db"))
                .args(["results", "export"])
                .arg(&cp)
                .args(["--format", "junit", "--baseline"])
                .arg(&bp)
                .args(extra),
        );
        String::from_utf8(out).unwrap()
    };
    // One run a side and no noise known: inconclusive, said, not failed.
    let xml = junit(&[]);
    let doc = roxmltree::Document::parse(&xml).unwrap();
    assert!(
        !doc.descendants().any(|n| n.has_tag_name("failure")),
        "{xml}"
    );
    assert!(
        xml.contains("inconclusive: ") && xml.contains("noise unknown"),
        "{xml}"
    );
    // With a known spread of 2% (band 8%), the 16% drop fails as a regression.
    let xml = junit(&["--assume-noise", "2"]);
    let doc = roxmltree::Document::parse(&xml).unwrap();
    let regression = doc
        .descendants()
        .find(|n| n.has_tag_name("failure") && n.attribute("type") == Some("regression"))
        .unwrap();
    assert!(
        regression.attribute("message").unwrap().contains("-16."),
        "{xml}"
    );
}

#[test]
fn csv_has_one_row_per_metric() {
    let run = example();
    let csv = String::from_utf8(export(&["--format", "csv"])).unwrap();
    let mut lines = csv.lines();
    assert!(
        lines
            .next()
            .unwrap()
            .starts_with("run_id,suite,benchmark,status,metric,tags,value,unit")
    );
    assert_eq!(lines.count(), metric_count(&run));
}

/// Damaged exports handed to `results import` (and through the same loader,
/// to compare and --replay): each is recorded whole (exit 0) or refused with
/// a message (exit 2), never a panic, and a refused file leaves nothing in
/// the store. 40 cases: 20 truncations and 20 byte flips at spread positions.
#[test]
fn damaged_exports_are_imported_whole_or_refused() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("results.db");
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../warpt-model/tests/data/example_export.json");
    let good = std::fs::read(&fixture).unwrap();
    let mut imported = 0;
    for case in 0..40usize {
        let mut bytes = good.clone();
        let at = (case * 7919 + 13) % bytes.len();
        if case % 2 == 0 {
            bytes.truncate(at);
        } else {
            bytes[at] ^= 0x5a;
        }
        // Distinct ids, so every loadable case is a new run.
        let text = String::from_utf8_lossy(&bytes)
            .replace("\"id\": \"", &format!("\"id\": \"case{case}-"));
        let path = dir.path().join(format!("case{case}.json"));
        std::fs::write(&path, text).unwrap();
        let out = warpt()
            .env("WARPT_STORE", &store)
            .args(["results", "import"])
            .arg(&path)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("panicked"), "case {case}: {stderr}");
        match out.status.code() {
            Some(0) => imported += 1,
            Some(2) => assert!(stderr.contains("case"), "case {case}: {stderr}"),
            other => panic!("case {case}: exit {other:?}: {stderr}"),
        }
    }
    if imported > 0 {
        let out = warpt()
            .env("WARPT_STORE", &store)
            .args(["results", "list", "--json"])
            .output()
            .unwrap();
        let runs: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(runs.as_array().unwrap().len(), imported);
    }
}
