//! Exports in hyperfine's shapes, so scripts written for hyperfine read
//! warpt's: `--export-json` (hyperfine's field names), `--export-markdown`
//! and `--export-csv`.

use serde_json::{Value, json};

use crate::spawn::Exit;
use crate::state::JobResult;

fn mean(v: &[f64]) -> f64 {
    if v.is_empty() {
        0.0
    } else {
        warpt_stats::mean(v)
    }
}

/// The sample standard deviation, as hyperfine reports it (none below two).
fn stddev(v: &[f64]) -> Option<f64> {
    (v.len() > 1).then(|| warpt_stats::mean_var(v).1.sqrt())
}

fn walls(r: &JobResult) -> Vec<f64> {
    r.samples.iter().map(|s| s.wall_s).collect()
}

/// `--export-json`: `{"results": [{command, mean, stddev, median, user,
/// system, min, max, times, memory_usage_byte, exit_codes, parameters}]}`.
pub fn json(results: &[JobResult]) -> Value {
    let list: Vec<Value> = results
        .iter()
        .filter(|r| !r.samples.is_empty())
        .map(|r| {
            let t = walls(r);
            let mut entry = json!({
                "command": r.job.name,
                "mean": mean(&t),
                "stddev": stddev(&t),
                "median": warpt_stats::median(&t),
                "user": mean(&r.samples.iter().map(|s| s.user_s).collect::<Vec<_>>()),
                "system": mean(&r.samples.iter().map(|s| s.sys_s).collect::<Vec<_>>()),
                "min": t.iter().copied().fold(f64::INFINITY, f64::min),
                "max": t.iter().copied().fold(f64::NEG_INFINITY, f64::max),
                "times": t,
                "memory_usage_byte": r.samples.iter().map(|s| s.peak_rss_bytes as u64).collect::<Vec<_>>(),
                "exit_codes": r.samples.iter().map(|s| match s.exit {
                    Exit::Code(c) => json!(c),
                    _ => Value::Null,
                }).collect::<Vec<_>>(),
                "parameters": r.job.params,
            });
            if !r.counts.is_empty() {
                // `--measure instructions`: warpt's own keys beside hyperfine's.
                entry["instructions"] = json!(r.counts.iter().map(|c| c.instructions).collect::<Vec<_>>());
                entry["count_source"] = json!(r.count_source);
                if r.counts.iter().all(|c| c.cache.is_some()) {
                    entry["estimated_cycles"] = json!(r.counts.iter().filter_map(|c| c.cache.map(|k| k.estimated_cycles(c.instructions))).collect::<Vec<_>>());
                }
            }
            entry
        })
        .collect();
    json!({ "results": list })
}

/// The unit a table of these means reads best in: (name, seconds per unit).
fn unit(results: &[JobResult]) -> (&'static str, f64) {
    let smallest = results
        .iter()
        .filter(|r| !r.samples.is_empty())
        .map(|r| mean(&walls(r)))
        .fold(f64::INFINITY, f64::min);
    if smallest < 1.0 {
        ("ms", 1e-3)
    } else {
        ("s", 1.0)
    }
}

/// `--export-markdown`: hyperfine's table (mean ± σ, min, max, relative).
pub fn markdown(results: &[JobResult]) -> String {
    let (u, scale) = unit(results);
    let done: Vec<&JobResult> = results.iter().filter(|r| !r.samples.is_empty()).collect();
    let fastest = done
        .iter()
        .map(|r| mean(&walls(r)))
        .fold(f64::INFINITY, f64::min);
    let mut out = format!(
        "| Command | Mean [{u}] | Min [{u}] | Max [{u}] | Relative |\n|:---|---:|---:|---:|---:|\n"
    );
    for r in done {
        let t = walls(r);
        let m = mean(&t);
        let sd = stddev(&t).map_or(String::new(), |s| format!(" ± {:.1}", s / scale));
        out += &format!(
            "| `{}` | {:.1}{sd} | {:.1} | {:.1} | {:.2} |\n",
            r.job.name.replace('|', "\\|").replace('`', "'"),
            m / scale,
            t.iter().copied().fold(f64::INFINITY, f64::min) / scale,
            t.iter().copied().fold(f64::NEG_INFINITY, f64::max) / scale,
            m / fastest
        );
    }
    out
}

/// `--export-csv`: `command,mean,stddev,median,user,system,min,max` and a
/// `parameter_NAME` column per parameter.
pub fn csv(results: &[JobResult]) -> String {
    let names: Vec<&String> = results
        .first()
        .map(|r| r.job.params.keys().collect())
        .unwrap_or_default();
    let mut out = String::from("command,mean,stddev,median,user,system,min,max");
    for n in &names {
        out += &format!(",parameter_{n}");
    }
    out.push('\n');
    for r in results.iter().filter(|r| !r.samples.is_empty()) {
        let t = walls(r);
        let cell = |v: f64| format!("{v}");
        let mut line = vec![
            warpt_report::escape::csv(&r.job.name),
            cell(mean(&t)),
            stddev(&t).map_or(String::new(), cell),
            cell(warpt_stats::median(&t)),
            cell(mean(
                &r.samples.iter().map(|s| s.user_s).collect::<Vec<_>>(),
            )),
            cell(mean(&r.samples.iter().map(|s| s.sys_s).collect::<Vec<_>>())),
            cell(t.iter().copied().fold(f64::INFINITY, f64::min)),
            cell(t.iter().copied().fold(f64::NEG_INFINITY, f64::max)),
        ];
        for n in &names {
            line.push(warpt_report::escape::csv(
                r.job.params.get(*n).map_or("", String::as_str),
            ));
        }
        out += &line.join(",");
        out.push('\n');
    }
    out
}

/// A duration as hyperfine prints it.
pub fn time(s: f64) -> String {
    if s < 1e-3 {
        format!("{:.1} µs", s * 1e6)
    } else if s < 1.0 {
        format!("{:.1} ms", s * 1e3)
    } else {
        format!("{s:.3} s")
    }
}

/// The terminal block of job number `i` (from 0), in hyperfine's layout:
/// mean ± σ with user and system time, range and runs, then warnings.
pub fn describe(i: usize, r: &JobResult) -> String {
    let mut out = format!("Benchmark {}: {}\n", i + 1, r.job.name);
    let w = walls(r);
    if let (Some(lo), Some(hi)) = (
        w.iter().copied().reduce(f64::min),
        w.iter().copied().reduce(f64::max),
    ) {
        let user: Vec<f64> = r.samples.iter().map(|s| s.user_s).collect();
        let sys: Vec<f64> = r.samples.iter().map(|s| s.sys_s).collect();
        out += &format!(
            "  Time (mean ± σ):   {} ± {}    [User: {}, System: {}]\n  Range (min … max): {} … {}    {} runs\n",
            time(mean(&w)),
            time(stddev(&w).unwrap_or(0.0)),
            time(mean(&user)),
            time(mean(&sys)),
            time(lo),
            time(hi),
            w.len()
        );
        if r.failed_runs > 0 {
            out += &format!(
                "  Warning: {} runs exited non-zero (--ignore-failure)\n",
                r.failed_runs
            );
        }
    }
    if r.status != warpt_model::RunStatus::Passed {
        out += &format!("  {}: {}\n", r.status, r.message.as_deref().unwrap_or(""));
    }
    out
}
