//! criterion's `target/criterion` directory: one benchmark per
//! `**/new/` (its `benchmark.json` names it), the time per iteration of
//! each of `sample.json`'s samples (`times[i] / iters[i]`) as the samples
//! of `time_ns`, and a throughput metric where the benchmark declared one.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use jiff::Timestamp;
use serde_json::Value;
use warpt_model::{BenchmarkSuiteRun, ParamValue, Params, Validation};

use crate::common::{file_time, num, read, result, sampled, suite_run};

/// The suite criterion's results are recorded under.
pub const SUITE: &str = "criterion";

/// Every `new` directory under `dir` holding an `estimates.json`, sorted.
/// Symlinks are not followed: criterion writes none, and one pointing up
/// the tree would make the walk endless.
pub fn measurements(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            // The entry's own type: a symlink is not a directory here.
            let is_dir = e.file_type().is_ok_and(|t| t.is_dir());
            if !is_dir || p.file_name().is_some_and(|n| n == "report") {
                continue;
            }
            if p.file_name().is_some_and(|n| n == "new") && p.join("estimates.json").is_file() {
                found.push(p);
            } else {
                stack.push(p);
            }
        }
    }
    found.sort();
    found
}

fn json(path: &Path, content: &mut Vec<u8>) -> Result<Value, String> {
    let text = read(path).map_err(|e| e.to_string())?;
    content.extend_from_slice(text.as_bytes());
    serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// The suite run of the criterion directory `dir`.
pub fn import(dir: &Path) -> Result<BenchmarkSuiteRun, String> {
    let found = measurements(dir);
    if found.is_empty() {
        return Err("no */new/estimates.json under it (run cargo bench first)".into());
    }
    let mut content = Vec::new();
    let mut at: Option<Timestamp> = None;
    let mut out = Vec::new();
    for new in &found {
        let bench = json(&new.join("benchmark.json"), &mut content)?;
        let estimates = json(&new.join("estimates.json"), &mut content)?;
        let sample = json(&new.join("sample.json"), &mut content)?;
        let t = file_time(&new.join("estimates.json"));
        at = Some(at.map_or(t, |a| a.max(t)));
        let relative = new
            .parent()
            .and_then(|p| p.strip_prefix(dir).ok())
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        let name = bench
            .get("full_id")
            .and_then(Value::as_str)
            .map_or(relative, str::to_string);
        let column = |key: &str| -> Vec<f64> {
            sample
                .get(key)
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_f64).collect())
                .unwrap_or_default()
        };
        let (iters, times) = (column("iters"), column("times"));
        if iters.len() != times.len() || iters.iter().any(|i| *i <= 0.0) {
            return Err(format!(
                "{}: 'iters' and 'times' do not pair up",
                new.display()
            ));
        }
        let per_iter: Vec<f64> = times.iter().zip(&iters).map(|(t, i)| t / i).collect();
        let mut metrics: Vec<_> = sampled("time_ns", "ns", false, &per_iter)
            .into_iter()
            .collect();
        if metrics.is_empty() {
            return Err(format!("{}: no samples in sample.json", new.display()));
        }
        if let Some(tp) = bench.get("throughput").and_then(Value::as_object) {
            for (kind, amount) in tp {
                let Some(n) = amount.as_f64() else { continue };
                let unit = if kind.starts_with("Bytes") {
                    "B/s"
                } else {
                    "elements/s"
                };
                let rates: Vec<f64> = per_iter.iter().map(|ns| n / (ns * 1e-9)).collect();
                metrics.extend(sampled("throughput", unit, true, &rates));
            }
        }
        let params: Params = bench
            .get("value_str")
            .and_then(Value::as_str)
            .map(|v| ("value".to_string(), ParamValue::Str(v.into())))
            .into_iter()
            .collect();
        let mut r = result(SUITE, &name, "criterion", params, metrics, t);
        for est in ["mean", "median", "slope"] {
            if let Some(e) = estimates.get(est).filter(|e| !e.is_null()) {
                if let Some(p) = num(e, "point_estimate") {
                    r.details
                        .insert(format!("criterion_{est}_ns"), ParamValue::Float(p));
                }
                if let Some(ci) = e.get("confidence_interval") {
                    for bound in ["lower_bound", "upper_bound"] {
                        if let Some(b) = num(ci, bound) {
                            r.details.insert(
                                format!("criterion_{est}_{bound}_ns"),
                                ParamValue::Float(b),
                            );
                        }
                    }
                }
            }
        }
        if let Some(mode) = sample.get("sampling_mode").and_then(Value::as_str) {
            r.details
                .insert("sampling_mode".into(), ParamValue::Str(mode.into()));
        }
        r.validation = Some(Validation::pass("measured by criterion"));
        out.push(r);
    }
    let at = at.unwrap_or_else(Timestamp::now);
    let metadata = BTreeMap::from([("imported_from".to_string(), "criterion".to_string())]);
    Ok(suite_run(SUITE, out, at, &content, metadata))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// A symlink loop (`a/up -> ..`) and a link to a measurement elsewhere
    /// are not walked: the walk ends, finding only the real measurement.
    #[cfg(unix)]
    #[test]
    fn the_walk_does_not_follow_symlinks() {
        let root = tempfile::tempdir().unwrap();
        let real = root.path().join("group/bench/new");
        std::fs::create_dir_all(&real).unwrap();
        std::fs::write(real.join("estimates.json"), "{}").unwrap();
        std::os::unix::fs::symlink("..", root.path().join("group/up")).unwrap();
        let outside = tempfile::tempdir().unwrap();
        let other = outside.path().join("x/new");
        std::fs::create_dir_all(&other).unwrap();
        std::fs::write(other.join("estimates.json"), "{}").unwrap();
        std::os::unix::fs::symlink(outside.path(), root.path().join("elsewhere")).unwrap();
        assert_eq!(measurements(root.path()), vec![real]);
    }
}
