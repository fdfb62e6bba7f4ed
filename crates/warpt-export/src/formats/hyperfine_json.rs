//! hyperfine's `--export-json`, with hyperfine's field names, so scripts
//! written for hyperfine read warpt's.

use serde_json::{Value, json};
use warpt_exec::Exit;
use warpt_exec::JobResult;
use warpt_exec::hyperfine::{mean, stddev, walls};

use crate::format::{Document, Exec, ExportError, Format};

/// hyperfine's JSON: results with command, mean, stddev, median, times, exit codes
pub struct HyperfineJson;

impl Format<Exec> for HyperfineJson {
    fn render(&self, input: &[JobResult]) -> Result<Document, ExportError> {
        Ok(Document::Text(format!("{:#}\n", json(input))))
    }
}

/// `--export-json`: `{"results": [{command, mean, stddev, median, user,
/// system, min, max, times, memory_usage_byte, exit_codes, parameters}]}`.
fn json(results: &[JobResult]) -> Value {
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
