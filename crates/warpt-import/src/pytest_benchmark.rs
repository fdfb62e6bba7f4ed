//! `pytest --benchmark-json`: one benchmark per test (its full name), the
//! per-round times of `--benchmark-save-data` as samples of `time_s`.

use std::collections::BTreeMap;

use jiff::Timestamp;
use serde_json::Value;
use warpt_model::{BenchmarkSuiteRun, ParamValue, Params, Validation};

use crate::common::{num, point, result, sampled, suite_run};

/// The suite pytest-benchmark's results are recorded under.
pub const SUITE: &str = "pytest-benchmark";

/// The suite run of pytest-benchmark's JSON `doc` (`text` as read).
pub fn import(doc: &Value, text: &str, file_time: Timestamp) -> Result<BenchmarkSuiteRun, String> {
    let at = doc
        .get("datetime")
        .and_then(Value::as_str)
        .and_then(|d| {
            d.parse::<Timestamp>().ok().or_else(|| {
                // pytest-benchmark writes UTC without an offset.
                d.parse::<jiff::civil::DateTime>()
                    .ok()
                    .and_then(|c| c.to_zoned(jiff::tz::TimeZone::UTC).ok())
                    .map(|z| z.timestamp())
            })
        })
        .unwrap_or(file_time);
    let benchmarks = crate::common::array(doc, "benchmarks")?;
    let mut out = Vec::new();
    for (i, b) in benchmarks.iter().enumerate() {
        let name = b
            .get("fullname")
            .or_else(|| b.get("name"))
            .and_then(Value::as_str)
            .ok_or_else(|| format!("benchmarks[{i}] has no name"))?;
        let stats = b
            .get("stats")
            .ok_or_else(|| format!("benchmarks[{i}] ('{name}') has no 'stats'"))?;
        let data: Vec<f64> = stats
            .get("data")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_f64).collect())
            .unwrap_or_default();
        let metric = match sampled("time_s", "s", false, &data) {
            Some(m) => m,
            None => point(
                "time_s",
                "s",
                false,
                num(stats, "median").ok_or_else(|| {
                    format!("benchmarks[{i}] ('{name}') has neither stats.data nor stats.median")
                })?,
            ),
        };
        let params: Params = b
            .get("params")
            .and_then(Value::as_object)
            .map(|o| {
                o.iter()
                    .map(|(k, v)| (k.clone(), ParamValue::from_json(v)))
                    .collect()
            })
            .unwrap_or_default();
        let mut r = result(SUITE, name, "pytest-benchmark", params, vec![metric], at);
        for key in [
            "mean",
            "stddev",
            "min",
            "max",
            "ops",
            "rounds",
            "iterations",
        ] {
            if let Some(v) = num(stats, key) {
                r.details
                    .insert(format!("pytest_benchmark_{key}"), ParamValue::Float(v));
            }
        }
        if let Some(g) = b.get("group").and_then(Value::as_str) {
            r.details.insert("group".into(), ParamValue::Str(g.into()));
        }
        if data.is_empty() {
            r.warnings.push(
                "no per-round times in the file (run pytest with --benchmark-save-data to keep them): the median is pytest-benchmark's, without a CI".into(),
            );
        }
        r.validation = Some(Validation::pass("the test passed under pytest-benchmark"));
        out.push(r);
    }
    if out.is_empty() {
        return Err("'benchmarks' is empty".into());
    }
    let mut metadata =
        BTreeMap::from([("imported_from".to_string(), "pytest-benchmark".to_string())]);
    let mi = doc.get("machine_info");
    for (key, path) in [
        ("host", "/node"),
        ("python", "/python_version"),
        ("cpu", "/cpu/brand_raw"),
    ] {
        if let Some(v) = mi.and_then(|m| m.pointer(path)).and_then(Value::as_str) {
            metadata.insert(key.into(), v.into());
        }
    }
    if let Some(v) = doc.get("version").and_then(Value::as_str) {
        metadata.insert("tool_version".into(), v.into());
    }
    if let Some(c) = doc.pointer("/commit_info/id").and_then(Value::as_str) {
        metadata.insert("commit".into(), c.into());
    }
    Ok(suite_run(SUITE, out, at, text.as_bytes(), metadata))
}
