//! Bencher Metric Format: `{benchmark: {measure: {value, lower_value,
//! upper_value}}}`, the measure being the metric name, the bounds its
//! median's 95% CI.

use serde_json::{Map, Value, json};

use super::{bench_name, finite_metrics};
use crate::format::{Document, ExportError, Format, Run, RunExport};

/// Bencher Metric Format JSON.
pub struct Bmf;

impl Format<Run> for Bmf {
    fn render(&self, input: &RunExport<'_>) -> Result<Document, ExportError> {
        let mut out = Map::new();
        for (r, m) in finite_metrics(input.run) {
            let entry = out
                .entry(bench_name(r, m))
                .or_insert_with(|| Value::Object(Map::new()));
            let mut measure = Map::new();
            measure.insert("value".into(), json!(m.value));
            // The bounds are the median's CI: only for metrics whose value is the
            // median (not, say, a best-of).
            if let Some(s) = m.stats.as_ref().filter(|s| s.median == m.value) {
                measure.insert("lower_value".into(), json!(s.ci95_low));
                measure.insert("upper_value".into(), json!(s.ci95_high));
            }
            if let Value::Object(e) = entry {
                e.insert(m.name.clone(), Value::Object(measure));
            }
        }
        Document::json(&Value::Object(out))
    }
}
