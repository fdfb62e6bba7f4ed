//! `warpt score`: a real stored run scored against itself, against a copy
//! of it made exactly twice as slow, against a reference file it wrote,
//! and what cannot be scored named.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use std::path::Path;

use serde_json::Value;

mod common;
use common::{outcome, warpt};

fn score(store: &Path, args: &[&str]) -> (i32, String, String) {
    outcome(
        warpt()
            .env("WARPT_SELFTEST", "1")
            .arg("score")
            .arg("--store")
            .arg(store)
            .args(args),
    )
}

/// The run's export with every `time` figure (median, CI, samples) times
/// `factor`, under another id.
fn scaled(export: &Value, factor: f64, id: &str) -> Value {
    let mut run = export.clone();
    run["id"] = Value::from(id);
    for r in run["benchmarks"].as_array_mut().unwrap() {
        for m in r["metrics"].as_array_mut().unwrap() {
            let times = |v: &mut Value| *v = Value::from(v.as_f64().unwrap() * factor);
            times(&mut m["value"]);
            let s = &mut m["stats"];
            for k in [
                "median",
                "mean",
                "ci95_low",
                "ci95_high",
                "p50",
                "min",
                "max",
            ] {
                if s.get(k).is_some_and(Value::is_number) {
                    times(&mut s[k]);
                }
            }
        }
    }
    run
}

#[test]
fn a_run_is_scored_against_a_reference_run_or_file_with_what_is_missing() {
    let _one = common::one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("results.db");
    let s = store.to_str().unwrap();
    let (code, _, err) = outcome(
        warpt()
            .env("WARPT_SELFTEST", "1")
            .args("benchmark run --suite selftest --benchmark work".split(' '))
            .args(["--duration", "0.2", "--burnin-seconds", "0", "--store", s]),
    );
    assert_eq!(code, 0, "{err}");
    let (_, shown, _) =
        outcome(warpt().args(["results", "show", "latest", "--json", "--store", s]));
    let export: Value = serde_json::from_str(&shown).unwrap();
    let base_id = export["id"].as_str().unwrap().to_string();
    // The same run, twice as slow: every ratio is exactly 0.5.
    let slow = dir.path().join("slow.json");
    std::fs::write(&slow, scaled(&export, 2.0, "slow-copy").to_string()).unwrap();
    let (code, _, err) = outcome(warpt().args(["results", "import", "--store", s]).arg(&slow));
    assert_eq!(code, 0, "{err}");

    let (code, out, err) = score(&store, &["slow-copy", "--reference", &base_id, "--json"]);
    assert_eq!(code, 0, "{err}");
    let j: Value = serde_json::from_str(&out).unwrap();
    let overall = &j["overall"];
    assert!(
        (overall["score"].as_f64().unwrap() - 0.5).abs() < 1e-9,
        "{j:#}"
    );
    let ci = overall["ci95"].as_array().unwrap();
    assert!(
        ci[0].as_f64().unwrap() < 0.5 && ci[1].as_f64().unwrap() > 0.5,
        "{j:#}"
    );
    assert_eq!(j["components"][0]["name"], "cpu");
    assert_eq!(j["suites"][0]["name"], "selftest");
    assert_eq!(j["missing"], Value::Array(vec![]));

    // A reference file written from the base run scores the same; the
    // other way round, the base is twice as fast as the slow copy's file.
    let reference = dir.path().join("ref.json");
    let (code, out, err) = score(
        &store,
        &[
            &base_id,
            "--save-reference",
            reference.to_str().unwrap(),
            "--reference",
            &base_id,
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("score 1.000 ("), "{out}");
    let (_, out, _) = score(
        &store,
        &["slow-copy", "--reference", reference.to_str().unwrap()],
    );
    assert!(out.contains("score 0.500 ("), "{out}");
    let (_, out, _) = score(&store, &[&base_id, "--reference", slow.to_str().unwrap()]);
    assert!(out.contains("score 2.000 ("), "{out}");

    // A reference figure the run lacks is listed, with why.
    let mut file: Value =
        serde_json::from_str(&std::fs::read_to_string(&reference).unwrap()).unwrap();
    let mut extra = file["figures"][0].clone();
    extra["benchmark"] = Value::from("micro/gemm");
    file["figures"].as_array_mut().unwrap().push(extra);
    std::fs::write(&reference, file.to_string()).unwrap();
    let (code, out, _) = score(
        &store,
        &[&base_id, "--reference", reference.to_str().unwrap()],
    );
    assert_eq!(code, 0);
    assert!(out.contains("missing from this run"), "{out}");
    assert!(
        out.contains("micro/gemm time") && out.contains("not in this run"),
        "{out}"
    );

    // `results show` carries a score line (against the shipped reference:
    // selftest is not in it, which the line says).
    let (_, out, _) = outcome(warpt().args(["results", "show", &base_id, "--store", s]));
    assert!(
        out.lines()
            .any(|l| l.starts_with("score: no headline figure in common")),
        "{out}"
    );
    // Nothing in common: exit 1.
    let (code, _, _) = score(&store, &[&base_id]);
    assert_eq!(code, 1);
    // A reference that is neither: a usage error naming it.
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, "{\"schema\": \"other/1\", \"figures\": []}").unwrap();
    let (code, _, err) = score(&store, &[&base_id, "--reference", bad.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("bad.json"), "{err}");
    let (code, _, err) = score(&store, &["no-such-run"]);
    assert_eq!(code, 2, "{err}");
}
