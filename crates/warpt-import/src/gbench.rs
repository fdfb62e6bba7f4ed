//! Google Benchmark's `--benchmark_format=json`: one benchmark per run
//! name; its repetitions (`--benchmark_repetitions`) are the samples of
//! `real_time_ns` and `cpu_time_ns` (each the mean of one repetition's
//! iterations), its `*_per_second` counters metrics of their own. A file of
//! aggregates only (`--benchmark_report_aggregates_only`) gives the median
//! aggregate (or the mean) without a CI.

use std::collections::BTreeMap;

use jiff::Timestamp;
use serde_json::Value;
use warpt_model::{BenchmarkMetric, BenchmarkSuiteRun, ParamValue, Params, RunStatus, Validation};

use crate::common::{num, point, result, sampled, suite_run};

/// The suite Google Benchmark's results are recorded under.
pub const SUITE: &str = "gbench";

/// Fields of an entry that are not user counters.
const KNOWN: [&str; 19] = [
    "name",
    "family_index",
    "per_family_instance_index",
    "run_name",
    "run_type",
    "repetitions",
    "repetition_index",
    "threads",
    "iterations",
    "real_time",
    "cpu_time",
    "time_unit",
    "aggregate_name",
    "aggregate_unit",
    "error_occurred",
    "error_message",
    "label",
    "big_o",
    "rms",
];

fn ns_per(unit: &str) -> Result<f64, String> {
    match unit {
        "ns" => Ok(1.0),
        "us" => Ok(1e3),
        "ms" => Ok(1e6),
        "s" => Ok(1e9),
        other => Err(format!("unknown time_unit '{other}'")),
    }
}

fn is_aggregate(e: &Value) -> bool {
    e.get("run_type").and_then(Value::as_str) == Some("aggregate")
}

/// The time and counter metrics of one run name's entries.
fn metrics_of(entries: &[&Value]) -> Result<(Vec<BenchmarkMetric>, bool), String> {
    let iterations: Vec<&Value> = entries
        .iter()
        .copied()
        .filter(|e| !is_aggregate(e))
        .collect();
    let scale = |e: &Value| ns_per(e.get("time_unit").and_then(Value::as_str).unwrap_or("ns"));
    if !iterations.is_empty() {
        let mut real = Vec::new();
        let mut cpu = Vec::new();
        let mut counters: BTreeMap<String, Vec<f64>> = BTreeMap::new();
        for e in &iterations {
            let k = scale(e)?;
            real.extend(num(e, "real_time").map(|t| t * k));
            cpu.extend(num(e, "cpu_time").map(|t| t * k));
            if let Some(o) = e.as_object() {
                for (key, v) in o {
                    if !KNOWN.contains(&key.as_str())
                        && let Some(x) = v.as_f64()
                    {
                        counters.entry(key.clone()).or_default().push(x);
                    }
                }
            }
        }
        let mut out: Vec<BenchmarkMetric> = [
            sampled("real_time_ns", "ns", false, &real),
            sampled("cpu_time_ns", "ns", false, &cpu),
        ]
        .into_iter()
        .flatten()
        .collect();
        for (name, values) in counters {
            let unit = if name.ends_with("_per_second") {
                "1/s"
            } else {
                "count"
            };
            out.extend(sampled(&name, unit, name.ends_with("_per_second"), &values));
        }
        return Ok((out, true));
    }
    let pick = |which: &str| {
        entries
            .iter()
            .find(|e| e.get("aggregate_name").and_then(Value::as_str) == Some(which))
    };
    let e = pick("median")
        .or_else(|| pick("mean"))
        .ok_or("only aggregates, and neither a median nor a mean among them")?;
    let k = scale(e)?;
    let mut out = Vec::new();
    if let Some(t) = num(e, "real_time") {
        out.push(point("real_time_ns", "ns", false, t * k));
    }
    if let Some(t) = num(e, "cpu_time") {
        out.push(point("cpu_time_ns", "ns", false, t * k));
    }
    Ok((out, false))
}

/// The suite run of Google Benchmark's JSON `doc` (`text` as read).
pub fn import(doc: &Value, text: &str, file_time: Timestamp) -> Result<BenchmarkSuiteRun, String> {
    let context = doc.get("context").ok_or("no 'context'")?;
    let at = context
        .get("date")
        .and_then(Value::as_str)
        .and_then(|d| d.parse::<Timestamp>().ok())
        .unwrap_or(file_time);
    let entries = crate::common::array(doc, "benchmarks")?;
    let mut order: Vec<String> = Vec::new();
    let mut groups: BTreeMap<String, Vec<&Value>> = BTreeMap::new();
    for (i, e) in entries.iter().enumerate() {
        let name = e
            .get("run_name")
            .or_else(|| e.get("name"))
            .and_then(Value::as_str)
            .ok_or_else(|| format!("benchmarks[{i}] has no name"))?;
        if !groups.contains_key(name) {
            order.push(name.to_string());
        }
        groups.entry(name.to_string()).or_default().push(e);
    }
    let mut out = Vec::new();
    for name in order {
        let group = &groups[&name];
        let threads = group
            .iter()
            .find_map(|e| e.get("threads").and_then(Value::as_i64));
        let params: Params = threads
            .filter(|t| *t > 1)
            .map(|t| ("threads".to_string(), ParamValue::Int(t)))
            .into_iter()
            .collect();
        if let Some(err) = group
            .iter()
            .find(|e| e.get("error_occurred").and_then(Value::as_bool) == Some(true))
        {
            let mut r = result(SUITE, &name, "Google Benchmark", params, Vec::new(), at);
            r.set_status(RunStatus::Failed);
            r.error_message = Some(
                err.get("error_message")
                    .and_then(Value::as_str)
                    .unwrap_or("the benchmark reported an error")
                    .to_string(),
            );
            out.push(r);
            continue;
        }
        let (metrics, sampled) = metrics_of(group)?;
        let mut r = result(SUITE, &name, "Google Benchmark", params, metrics, at);
        let reps = group.iter().filter(|e| !is_aggregate(e)).count();
        r.details
            .insert("repetitions".into(), ParamValue::Int(reps as i64));
        if let Some(it) = group
            .iter()
            .find_map(|e| num(e, "iterations").filter(|_| !is_aggregate(e)))
        {
            r.details
                .insert("iterations_per_repetition".into(), ParamValue::Float(it));
        }
        for e in group.iter().filter(|e| is_aggregate(e)) {
            if let (Some(a), Some(t)) = (
                e.get("aggregate_name").and_then(Value::as_str),
                num(e, "real_time"),
            ) {
                r.details
                    .insert(format!("gbench_{a}_real_time"), ParamValue::Float(t));
            }
        }
        if !sampled {
            r.warnings.push("aggregates only (--benchmark_report_aggregates_only): Google Benchmark's own figure, without samples or a CI".into());
        } else if reps < 2 {
            r.warnings.push(
                "one repetition: a single sample (run with --benchmark_repetitions=N for a CI)"
                    .into(),
            );
        }
        r.validation = Some(Validation::pass("no error reported by Google Benchmark"));
        out.push(r);
    }
    if out.is_empty() {
        return Err("'benchmarks' is empty".into());
    }
    let mut metadata = BTreeMap::from([("imported_from".to_string(), "gbench".to_string())]);
    for key in [
        "host_name",
        "executable",
        "library_build_type",
        "num_cpus",
        "mhz_per_cpu",
    ] {
        if let Some(v) = context.get(key) {
            let text = v.as_str().map_or_else(|| v.to_string(), str::to_string);
            metadata.insert(key.into(), text);
        }
    }
    Ok(suite_run(SUITE, out, at, text.as_bytes(), metadata))
}
