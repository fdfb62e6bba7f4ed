//! `hyperfine --export-json`: one benchmark per command, recorded under the
//! `exec` suite with `warpt exec`'s names (the command as the benchmark,
//! `wall_time_s` from every run's time), so `compare` sets a hyperfine
//! history against warpt's own runs of the same commands.

use std::collections::BTreeMap;

use jiff::Timestamp;
use serde_json::Value;
use warpt_model::{BenchmarkSuiteRun, ParamValue, Params, Validation};

use crate::common::{num, point, result, sampled, suite_run};

/// The suite hyperfine's results join.
pub const SUITE: &str = "exec";

fn numbers(v: &Value, key: &str) -> Vec<f64> {
    v.get(key)
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_f64).collect())
        .unwrap_or_default()
}

/// The suite run of hyperfine's JSON `doc` (`text` as read).
pub fn import(doc: &Value, text: &str, at: Timestamp) -> Result<BenchmarkSuiteRun, String> {
    let results = crate::common::array(doc, "results")?;
    let mut out = Vec::new();
    for (i, r) in results.iter().enumerate() {
        let command = r
            .get("command")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("results[{i}] has no 'command'"))?;
        let times = numbers(r, "times");
        let mut metrics = Vec::new();
        match sampled("wall_time_s", "s", false, &times) {
            Some(m) => metrics.push(m),
            None => {
                let mean = num(r, "mean").ok_or_else(|| {
                    format!("results[{i}] ('{command}') has neither 'times' nor 'mean'")
                })?;
                metrics.push(point("wall_time_s", "s", false, mean));
            }
        }
        // hyperfine keeps only the means of CPU time.
        if let Some(u) = num(r, "user") {
            metrics.push(point("user_time_s", "s", false, u));
        }
        if let Some(s) = num(r, "system") {
            metrics.push(point("sys_time_s", "s", false, s));
        }
        if let Some(m) = sampled(
            "peak_rss_bytes",
            "B",
            false,
            &numbers(r, "memory_usage_byte"),
        ) {
            metrics.push(m);
        }
        let params: Params = r
            .get("parameters")
            .and_then(Value::as_object)
            .map(|o| {
                o.iter()
                    .map(|(k, v)| (k.clone(), ParamValue::from_json(v)))
                    .collect()
            })
            .unwrap_or_default();
        let mut res = result(SUITE, command, "hyperfine", params, metrics, at);
        let codes = numbers(r, "exit_codes");
        let nonzero = codes.iter().filter(|c| **c != 0.0).count();
        res.details
            .insert("command".into(), ParamValue::Str(command.into()));
        res.details
            .insert("runs".into(), ParamValue::Int(times.len() as i64));
        if nonzero > 0 {
            res.details.insert(
                "exit_statuses".into(),
                ParamValue::Str(
                    codes
                        .iter()
                        .map(|c| format!("exit status {c}"))
                        .collect::<Vec<_>>()
                        .join(", "),
                ),
            );
        }
        res.validation = Some(Validation::pass(if nonzero > 0 {
            format!(
                "{nonzero} of {} runs exited non-zero (hyperfine --ignore-failure)",
                codes.len()
            )
        } else {
            format!(
                "all {} runs exited with status 0 (as hyperfine recorded)",
                codes.len()
            )
        }));
        out.push(res);
    }
    if out.is_empty() {
        return Err("'results' is empty".into());
    }
    let metadata = BTreeMap::from([("imported_from".into(), "hyperfine".into())]);
    Ok(suite_run(SUITE, out, at, text.as_bytes(), metadata))
}
